"""URLs of design-space searches (included by dashboard.urls)."""

from django.urls import path

from dashboard.common import converters  # noqa: F401 (converters registers <id:>)
from dashboard.searches import views

urlpatterns = [
    path("searches/", views.search_list, name="search-list"),
    path("searches/new/", views.search_new, name="search-new"),
    path("searches/<id:pk>/", views.search_detail, name="search-detail"),
    path("searches/<id:pk>/progress.json", views.search_progress, name="search-progress"),
    path("searches/<id:pk>/charts.json", views.search_charts_json, name="search-charts"),
    path("searches/<id:pk>/cancel/", views.search_cancel, name="search-cancel"),
    path("searches/<id:pk>/fork/", views.search_fork, name="search-fork"),
    path("searches/<id:pk>/share/", views.search_share, name="search-share"),
    path("searches/<id:pk>/share/new-link/", views.search_new_link, name="search-new-link"),
    path("searches/<id:pk>/share/revoke/", views.search_revoke_link, name="search-revoke-link"),
    path("searches/<id:pk>/download/<str:kind>", views.search_download, name="search-download"),
    path("shared/search/<str:token>/", views.shared_search_detail, name="shared-search-detail"),
    path("shared/search/<str:token>/progress.json", views.shared_search_progress, name="shared-search-progress"),
    path("shared/search/<str:token>/charts.json", views.shared_search_charts_json, name="shared-search-charts"),
    path("shared/search/<str:token>/fork/", views.shared_search_fork, name="shared-search-fork"),
    path(
        "shared/search/<str:token>/download/<str:kind>",
        views.shared_search_download,
        name="shared-search-download",
    ),
]
