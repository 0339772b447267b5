"""URLs: Teams, invitations, the account page and its API tokens, sign-in (included by dashboard.urls)."""

from django.contrib.auth import views as auth_views
from django.urls import path

from dashboard.accounts import views
from dashboard.common import converters  # noqa: F401 (converters registers <id:>)

urlpatterns = [
    path("teams/", views.team_list, name="team-list"),
    path("teams/<id:pk>/", views.team_detail, name="team-detail"),
    path("teams/<id:pk>/invite/", views.team_invite, name="team-invite"),
    path(
        "teams/<id:pk>/invitations/<id:inv>/revoke/",
        views.team_invitation_revoke,
        name="team-invitation-revoke",
    ),
    path("teams/<id:pk>/members/<id:member>/role/", views.team_member_role, name="team-member-role"),
    path("teams/<id:pk>/members/<id:member>/remove/", views.team_member_remove, name="team-member-remove"),
    path("invite/<str:token>/", views.invitation, name="invitation"),
    path("account/", views.account, name="account"),
    path("account/tokens/new/", views.token_create, name="token-create"),
    path("account/tokens/<id:pk>/revoke/", views.token_revoke, name="token-revoke"),
    path("account/password/", auth_views.PasswordChangeView.as_view(success_url="/account/"), name="password-change"),
    path("accounts/login/", views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
