from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from dashboard import account_views, converters, mapping_views, packing_views, search_urls, sweep_views, views  # noqa: F401 (converters registers <id:>)
from dashboard.docs_site import docs as documentation

urlpatterns = [
    path("", views.experiment_list, name="experiment-list"),
    path("favicon.ico", views.favicon, name="favicon"),
    path("experiments/new/", views.experiment_new, name="experiment-new"),
    path("experiments/<id:pk>/", views.experiment_detail, name="experiment-detail"),
    path("experiments/<id:pk>/progress.json", views.experiment_progress, name="experiment-progress"),
    path("experiments/<id:pk>/cancel/", views.experiment_cancel, name="experiment-cancel"),
    path("experiments/<id:pk>/fork/", views.experiment_fork, name="experiment-fork"),
    path("experiments/<id:pk>/share/", views.experiment_share, name="experiment-share"),
    path("experiments/<id:pk>/share/new-link/", views.experiment_new_link, name="experiment-new-link"),
    path("experiments/<id:pk>/share/revoke/", views.experiment_revoke_link, name="experiment-revoke-link"),
    path("experiments/<id:pk>/download/<str:kind>", views.experiment_download, name="experiment-download"),
    path("experiments/<id:pk>/runs/<id:run>/download/<str:kind>", views.run_download, name="run-download"),
    path("experiments/<id:pk>/sweep.json", sweep_views.sweep_json, name="experiment-sweep"),
    path("experiments/<id:pk>/sweep/<str:kind>", sweep_views.sweep_data, name="experiment-sweep-data"),
    path("experiments/<id:pk>/extend/", sweep_views.experiment_extend, name="experiment-extend"),
    path("runs/<id:pk>/cancel/", views.run_cancel, name="run-cancel"),
    path("runs/<id:pk>/retry/", sweep_views.run_retry, name="run-retry"),
    path("reproduce/", sweep_views.reproduce, name="reproduce"),
    path("shared/<str:token>/", views.shared_detail, name="shared-detail"),
    path("shared/<str:token>/progress.json", views.shared_progress, name="shared-progress"),
    path("shared/<str:token>/fork/", views.shared_fork, name="shared-fork"),
    path("shared/<str:token>/sweep.json", sweep_views.shared_sweep_json, name="shared-sweep"),
    path("shared/<str:token>/sweep/<str:kind>", sweep_views.shared_sweep_data, name="shared-sweep-data"),
    path("shared/<str:token>/download/<str:kind>", views.shared_download, name="shared-download"),
    path("shared/<str:token>/runs/<id:run>/download/<str:kind>", views.shared_run_download, name="shared-run-download"),
    *search_urls.urlpatterns,
    path("compare/", views.compare, name="compare"),
    path("packing/", packing_views.packing_list, name="packing-list"),
    path("packing/new/", packing_views.packing_new, name="packing-new"),
    path("packing/<id:pk>/", packing_views.packing_detail, name="packing-detail"),
    path("packing/<id:pk>/progress.json", packing_views.packing_progress, name="packing-progress"),
    path("packing/<id:pk>/cancel/", packing_views.packing_cancel, name="packing-cancel"),
    path("packing/<id:pk>/share/", packing_views.packing_share, name="packing-share"),
    path("packing/<id:pk>/download/<str:kind>", packing_views.packing_download, name="packing-download"),
    path("packing/shared/<str:token>/", packing_views.packing_shared_detail, name="packing-shared-detail"),
    path(
        "packing/shared/<str:token>/progress.json",
        packing_views.packing_shared_progress,
        name="packing-shared-progress",
    ),
    path(
        "packing/shared/<str:token>/download/<str:kind>",
        packing_views.packing_shared_download,
        name="packing-shared-download",
    ),
    path("uploads/", views.uploads, name="uploads"),
    path("uploads/trace/map/", mapping_views.trace_map, name="trace-map"),
    path("uploads/trace/map/discard/", mapping_views.trace_map_discard, name="trace-map-discard"),
    path("uploads/trace/map/<id:pk>/delete/", mapping_views.trace_map_delete, name="trace-map-delete"),
    path("uploads/trace/<id:pk>/", views.trace_import_detail, name="trace-import-detail"),
    path("uploads/trace/<id:pk>/progress.json", views.trace_import_progress, name="trace-import-progress"),
    path("uploads/trace/<id:pk>/cancel/", views.trace_import_cancel, name="trace-import-cancel"),
    path("uploads/<str:kind>/<id:pk>/delete/", views.upload_delete, name="upload-delete"),
    path("teams/", account_views.team_list, name="team-list"),
    path("teams/<id:pk>/", account_views.team_detail, name="team-detail"),
    path("teams/<id:pk>/invite/", account_views.team_invite, name="team-invite"),
    path(
        "teams/<id:pk>/invitations/<id:inv>/revoke/",
        account_views.team_invitation_revoke,
        name="team-invitation-revoke",
    ),
    path("teams/<id:pk>/members/<id:member>/role/", account_views.team_member_role, name="team-member-role"),
    path("teams/<id:pk>/members/<id:member>/remove/", account_views.team_member_remove, name="team-member-remove"),
    path("invite/<str:token>/", account_views.invitation, name="invitation"),
    path("account/", account_views.account, name="account"),
    path("account/tokens/new/", account_views.token_create, name="token-create"),
    path("account/tokens/<id:pk>/revoke/", account_views.token_revoke, name="token-revoke"),
    path("account/password/", auth_views.PasswordChangeView.as_view(success_url="/account/"), name="password-change"),
    path("accounts/login/", account_views.ThrottledLoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("dashboard.api.urls")),
    path("docs/", documentation, name="docs"),
    path("docs/<path:path>", documentation, name="docs-page"),
    path("admin/", admin.site.urls),
]

# JSON errors under /api/, Django's pages elsewhere (dashboard.errors).
handler400 = "dashboard.errors.bad_request"
handler403 = "dashboard.errors.permission_denied"
handler404 = "dashboard.errors.page_not_found"
handler500 = "dashboard.errors.server_error"
