"""Request guards and response headers that apply to every page and API operation.

- :class:`InputGuardMiddleware` answers 400 to a NUL character anywhere in the
  path or the query string. PostgreSQL can neither store nor compare text
  holding NUL, so a lookup with one used to fail inside the database (a 500);
  no name, token or filter value of ours needs it.
- :class:`SecurityHeadersMiddleware` adds a Content-Security-Policy that the
  pages pass (scripts only from our own origin: Plotly and app.js are served
  from ``static/``, data reaches scripts through ``json_script`` blocks, which
  are not executed) and ``Cache-Control: private, no-store`` on every response
  to a signed-in user, so a shared cache or the back button never shows one
  user's page to another.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse

from dashboard.common.errors import error_response

#: Scripts and everything else from our own origin only. Styles allow 'unsafe-inline'
#: because Plotly writes style elements at run time; images allow data: for its exports.
CONTENT_SECURITY_POLICY = "; ".join(
    [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self' 'unsafe-inline'",
        "img-src 'self' data: blob:",
        "font-src 'self'",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'self'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    ]
)


class InputGuardMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path_info:
            return error_response(request, 400, "the address contains a NUL character (%00), which no page accepts")
        for key, values in request.GET.lists():
            if "\x00" in key or any("\x00" in v for v in values):
                name = key.replace("\x00", "\\0")
                return error_response(request, 400, f"query parameter {name!r} contains a NUL character (%00)")
        return self.get_response(request)


class SecurityHeadersMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        response.headers.setdefault("Content-Security-Policy", CONTENT_SECURITY_POLICY)
        user = getattr(request, "user", None)
        if user is not None and user.is_authenticated:
            response.headers["Cache-Control"] = "private, no-store"
        return response
