"""URLs: The uploads page, trace imports and the column-mapping page (included by dashboard.urls)."""

from django.urls import path

from dashboard.common import converters  # noqa: F401 (converters registers <id:>)
from dashboard.traces import mapping_views, views

urlpatterns = [
    path("uploads/", views.uploads, name="uploads"),
    path("uploads/trace/map/", mapping_views.trace_map, name="trace-map"),
    path("uploads/trace/map/discard/", mapping_views.trace_map_discard, name="trace-map-discard"),
    path("uploads/trace/map/<id:pk>/delete/", mapping_views.trace_map_delete, name="trace-map-delete"),
    path("uploads/trace/<id:pk>/", views.trace_import_detail, name="trace-import-detail"),
    path("uploads/trace/<id:pk>/progress.json", views.trace_import_progress, name="trace-import-progress"),
    path("uploads/trace/<id:pk>/cancel/", views.trace_import_cancel, name="trace-import-cancel"),
    path("uploads/<str:kind>/<id:pk>/delete/", views.upload_delete, name="upload-delete"),
]
