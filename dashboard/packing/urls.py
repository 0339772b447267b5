"""URLs: Packing analyses (included by dashboard.urls)."""

from django.urls import path

from dashboard.common import converters  # noqa: F401 (converters registers <id:>)
from dashboard.packing import views

urlpatterns = [
    path("packing/", views.packing_list, name="packing-list"),
    path("packing/new/", views.packing_new, name="packing-new"),
    path("packing/<id:pk>/", views.packing_detail, name="packing-detail"),
    path("packing/<id:pk>/progress.json", views.packing_progress, name="packing-progress"),
    path("packing/<id:pk>/cancel/", views.packing_cancel, name="packing-cancel"),
    path("packing/<id:pk>/share/", views.packing_share, name="packing-share"),
    path("packing/<id:pk>/download/<str:kind>", views.packing_download, name="packing-download"),
    path("packing/shared/<str:token>/", views.packing_shared_detail, name="packing-shared-detail"),
    path(
        "packing/shared/<str:token>/progress.json",
        views.packing_shared_progress,
        name="packing-shared-progress",
    ),
    path(
        "packing/shared/<str:token>/download/<str:kind>",
        views.packing_shared_download,
        name="packing-shared-download",
    ),
]
