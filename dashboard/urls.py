"""The project's URLs: each feature's own (dashboard.<feature>.urls), the API, the admin, the error pages."""

from django.contrib import admin
from django.urls import include, path

from dashboard.accounts import urls as account_urls
from dashboard.capacity import urls as capacity_urls
from dashboard.docs_site import docs as documentation
from dashboard.experiments import urls as experiment_urls
from dashboard.packing import urls as packing_urls
from dashboard.searches import urls as search_urls
from dashboard.traces import urls as trace_urls

urlpatterns = [
    *experiment_urls.urlpatterns,
    *search_urls.urlpatterns,
    *packing_urls.urlpatterns,
    *capacity_urls.urlpatterns,
    *trace_urls.urlpatterns,
    *account_urls.urlpatterns,
    path("api/", include("dashboard.api.urls")),
    path("docs/", documentation, name="docs"),
    path("docs/<path:path>", documentation, name="docs-page"),
    path("admin/", admin.site.urls),
]

# JSON errors under /api/, Django's pages elsewhere (dashboard.common.errors).
handler400 = "dashboard.common.errors.bad_request"
handler403 = "dashboard.common.errors.permission_denied"
handler404 = "dashboard.common.errors.page_not_found"
handler500 = "dashboard.common.errors.server_error"
