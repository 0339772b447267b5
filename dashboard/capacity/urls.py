"""URLs of capacity plans (included by dashboard.urls)."""

from django.urls import path

from dashboard.capacity import views
from dashboard.common import converters  # noqa: F401 (converters registers <id:>)

urlpatterns = [
    path("capacity/", views.plan_list, name="capacity-list"),
    path("capacity/new/", views.plan_new, name="capacity-new"),
    path("capacity/<id:pk>/", views.plan_detail, name="capacity-detail"),
    path("capacity/<id:pk>/progress.json", views.plan_progress, name="capacity-progress"),
    path("capacity/<id:pk>/cancel/", views.plan_cancel, name="capacity-cancel"),
    path("capacity/<id:pk>/fork/", views.plan_fork, name="capacity-fork"),
    path("capacity/<id:pk>/share/", views.plan_share, name="capacity-share"),
    path("capacity/<id:pk>/share/new-link/", views.plan_new_link, name="capacity-new-link"),
    path("capacity/<id:pk>/share/revoke/", views.plan_revoke_link, name="capacity-revoke-link"),
    path("capacity/<id:pk>/download/<str:kind>", views.plan_download, name="capacity-download"),
    path("shared/capacity/<str:token>/", views.shared_plan_detail, name="shared-capacity-detail"),
    path("shared/capacity/<str:token>/progress.json", views.shared_plan_progress, name="shared-capacity-progress"),
    path("shared/capacity/<str:token>/fork/", views.shared_plan_fork, name="shared-capacity-fork"),
    path(
        "shared/capacity/<str:token>/download/<str:kind>",
        views.shared_plan_download,
        name="shared-capacity-download",
    ),
]
