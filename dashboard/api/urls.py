from django.urls import path
from drf_spectacular.views import SpectacularJSONAPIView

from dashboard.api import mappings, packing, searches, views

urlpatterns = [
    path("", views.ApiRoot.as_view(), name="api-root"),
    # Swagger UI from static/ (drf-spectacular-sidecar); its start-up script is served by the same view
    # (?script), so the page passes the Content-Security-Policy (no inline script).
    path(
        "docs/",
        views.ApiDocs.as_view(url_name="api-schema"),
        name="api-docs",
    ),
    path(
        "openapi.json",
        SpectacularJSONAPIView.as_view(permission_classes=[], authentication_classes=[]),
        name="api-schema",
    ),
    path("me/", views.Me.as_view(), name="api-me"),
    path("catalog/", views.Catalog.as_view(), name="api-catalog"),
    path("experiments/", views.ExperimentList.as_view(), name="api-experiment-list"),
    path("experiments/<id:pk>/", views.ExperimentDetail.as_view(), name="api-experiment-detail"),
    path("experiments/<id:pk>/cancel/", views.ExperimentCancel.as_view(), name="api-experiment-cancel"),
    path("experiments/<id:pk>/fork/", views.ExperimentFork.as_view(), name="api-experiment-fork"),
    path("experiments/<id:pk>/share-link/", views.ExperimentShareLink.as_view(), name="api-experiment-share-link"),
    path("experiments/<id:pk>/progress/", views.ExperimentProgress.as_view(), name="api-experiment-progress"),
    path("experiments/<id:pk>/summary/", views.ExperimentSummary.as_view(), name="api-experiment-summary"),
    path("experiments/<id:pk>/series/", views.ExperimentSeries.as_view(), name="api-experiment-series"),
    path("experiments/<id:pk>/download/<str:kind>", views.ExperimentDownload.as_view(), name="api-experiment-download"),
    path("experiments/<id:pk>/sweep/", views.ExperimentSweep.as_view(), name="api-experiment-sweep"),
    path("experiments/<id:pk>/sweep/<str:kind>", views.ExperimentSweepData.as_view(), name="api-experiment-sweep-data"),
    path("experiments/<id:pk>/extend/", views.ExperimentExtend.as_view(), name="api-experiment-extend"),
    path("reproductions/", views.ReproductionList.as_view(), name="api-reproduction-list"),
    path("reproductions/<str:name>/", views.ReproductionStart.as_view(), name="api-reproduction-start"),
    path("searches/", searches.SearchList.as_view(), name="api-search-list"),
    path("searches/<id:pk>/", searches.SearchDetail.as_view(), name="api-search-detail"),
    path("searches/<id:pk>/cancel/", searches.SearchCancel.as_view(), name="api-search-cancel"),
    path("searches/<id:pk>/fork/", searches.SearchFork.as_view(), name="api-search-fork"),
    path("searches/<id:pk>/progress/", searches.SearchProgress.as_view(), name="api-search-progress"),
    path("searches/<id:pk>/generations/", searches.SearchGenerations.as_view(), name="api-search-generations"),
    path("searches/<id:pk>/download/<str:kind>", searches.SearchDownload.as_view(), name="api-search-download"),
    path("runs/<id:pk>/", views.RunDetail.as_view(), name="api-run-detail"),
    path("runs/<id:pk>/retry/", views.RunRetry.as_view(), name="api-run-retry"),
    path("runs/<id:pk>/cancel/", views.RunCancel.as_view(), name="api-run-cancel"),
    path("runs/<id:pk>/download/<str:kind>", views.RunDownload.as_view(), name="api-run-download"),
    path("uploads/<str:kind>/", views.UploadList.as_view(), name="api-upload-list"),
    path("uploads/<str:kind>/<id:pk>/", views.UploadDetail.as_view(), name="api-upload-detail"),
    path("uploads/trace/<id:pk>/cancel/", views.UploadCancel.as_view(), name="api-upload-cancel"),
    path("trace-mappings/", mappings.MappingList.as_view(), name="api-mapping-list"),
    path("trace-mappings/<id:pk>/", mappings.MappingDetail.as_view(), name="api-mapping-detail"),
    path("packing/", packing.PackingList.as_view(), name="api-packing-list"),
    path("packing/<id:pk>/", packing.PackingDetail.as_view(), name="api-packing-detail"),
    path("packing/<id:pk>/cancel/", packing.PackingCancel.as_view(), name="api-packing-cancel"),
    path("packing/<id:pk>/download/<str:kind>", packing.PackingDownload.as_view(), name="api-packing-download"),
    path("teams/", views.TeamList.as_view(), name="api-team-list"),
    path("teams/<id:pk>/", views.TeamDetail.as_view(), name="api-team-detail"),
]
