"""/docs/: the documentation site that ``make docs`` builds (MkDocs), served as the static files it is.

The site is public (it holds nobody's data) and read-only. Its pages come from the repository, not from
users, but they still get a Content-Security-Policy: the theme's two small inline scripts are allowed by
their SHA-256 hashes, computed from the page served, so ``script-src`` needs no 'unsafe-inline'.
Until the site is built, /docs/ says how to build it.
"""

from __future__ import annotations

import base64
import hashlib
import re
from pathlib import Path

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.http.response import HttpResponseBase
from django.views.decorators.http import require_safe
from django.views.static import serve

from dashboard.middleware import CONTENT_SECURITY_POLICY

NOT_BUILT = (
    "The documentation site is not built yet. Run `make docs` in the project (or `make run`, which builds it "
    "when it is missing), then reload this page. Its sources are docs/ and mkdocs.yml.\n"
)
INLINE_SCRIPT = re.compile(r"<script>(.*?)</script>", re.S)


def _policy(page: str) -> str:
    hashes = [
        "'sha256-" + base64.b64encode(hashlib.sha256(m.group(1).encode()).digest()).decode() + "'"
        for m in INLINE_SCRIPT.finditer(page)
    ]
    return CONTENT_SECURITY_POLICY.replace("script-src 'self'", " ".join(["script-src 'self'", *hashes]))


@require_safe
def docs(request: HttpRequest, path: str = "") -> HttpResponseBase:
    root = Path(settings.DOCS_ROOT)
    if not (root / "index.html").is_file():
        return HttpResponse(NOT_BUILT, status=404, content_type="text/plain; charset=utf-8")
    try:
        if path and not path.endswith("/") and (root / path).is_dir():
            return HttpResponseRedirect(request.path + "/")  # relative links inside a page need the slash
        if path == "" or path.endswith("/"):
            path += "index.html"
        response = serve(request, path, document_root=str(root))  # Http404 when missing; refuses ../ escapes
        if path.endswith(".html"):
            response["Content-Security-Policy"] = _policy((root / path).read_text(errors="replace"))
    except OSError as e:  # a name the file system refuses (too long, ...): no such page
        raise Http404("no such documentation page") from e
    return response
