"""Error answers: JSON under /api/ (scripts parse them), the usual pages elsewhere.

Django's own error handlers answer with HTML, also for API requests it
rejects before a view runs (a body larger than DATA_UPLOAD_MAX_MEMORY_SIZE,
an unknown URL). These handlers keep the API's promise that every answer is
JSON with a ``detail`` that says what is wrong.
"""

from __future__ import annotations

import sys
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

MESSAGES = {
    400: "bad request",
    403: "you may not do this",
    404: "not found, or not visible to you",
    405: "method not allowed",
    500: "internal error; the administrators have the details",
}


def is_api(request: HttpRequest) -> bool:
    return request.path_info.startswith("/api/")


def error_response(request: HttpRequest, status: int, detail: str) -> HttpResponse:
    """``detail`` as JSON for the API, as plain text for pages (a guard that answers before any view)."""
    if is_api(request):
        return JsonResponse({"detail": detail}, status=status)
    return HttpResponse(f"{detail}\n", status=status, content_type="text/plain; charset=utf-8")


def bad_request(request: HttpRequest, exception: Exception, **kwargs: Any) -> HttpResponse:
    if is_api(request):
        reason = str(exception) if exception else ""
        if type(exception).__name__ == "RequestDataTooBig":
            reason = "the request body is larger than the server accepts"
        return JsonResponse({"detail": reason or MESSAGES[400]}, status=400)
    return defaults.bad_request(request, exception, **kwargs)


def permission_denied(request: HttpRequest, exception: Exception, **kwargs: Any) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": MESSAGES[403]}, status=403)
    return defaults.permission_denied(request, exception, **kwargs)


def page_not_found(request: HttpRequest, exception: Exception, **kwargs: Any) -> HttpResponse:
    if is_api(request):
        return JsonResponse({"detail": MESSAGES[404]}, status=404)
    return defaults.page_not_found(request, exception, **kwargs)


def server_error(request: HttpRequest, **kwargs: Any) -> HttpResponse:
    from dashboard.common.outages import DATABASE_ERRORS, unavailable

    # Django calls this while handling the uncaught exception: a database outage met outside a view
    # (the session or the user, read by middleware) is a 503 with Retry-After too (dashboard.common.outages).
    if isinstance(sys.exc_info()[1], DATABASE_ERRORS):
        return unavailable(request)
    if is_api(request):
        return JsonResponse({"detail": MESSAGES[500]}, status=500)
    return defaults.server_error(request, **kwargs)
