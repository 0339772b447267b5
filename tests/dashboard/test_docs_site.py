"""/docs/ serves the site ``make docs`` builds: public, read-only, strict CSP, and a clear page before it is built."""

from __future__ import annotations

import base64
import hashlib

import pytest

SCRIPT = "__md_scope=new URL('.',location)"


@pytest.fixture
def site(tmp_path, settings):
    (tmp_path / "guide").mkdir()
    (tmp_path / "index.html").write_text(f"<html><script>{SCRIPT}</script><a href='guide/'>guide</a></html>")
    (tmp_path / "guide" / "index.html").write_text("<html><p>the guide</p></html>")
    (tmp_path / "style.css").write_text("p { color: red }")
    settings.DOCS_ROOT = tmp_path
    return tmp_path


def test_before_the_build_docs_says_how_to_build_it(client, settings, tmp_path):
    settings.DOCS_ROOT = tmp_path / "missing"
    response = client.get("/docs/")
    assert response.status_code == 404
    assert "make docs" in response.content.decode()


def test_pages_are_served_to_anyone_with_their_inline_scripts_hashed(client, site):
    response = client.get("/docs/")
    assert response.status_code == 200
    assert SCRIPT in b"".join(response.streaming_content).decode()
    digest = base64.b64encode(hashlib.sha256(SCRIPT.encode()).digest()).decode()
    policy = response["Content-Security-Policy"]
    script_src = next(d for d in policy.split("; ") if d.startswith("script-src"))
    assert script_src == f"script-src 'self' 'sha256-{digest}'"
    assert "unsafe-inline" not in script_src
    guide = client.get("/docs/guide/")
    assert guide.status_code == 200 and b"the guide" in b"".join(guide.streaming_content)
    css = client.get("/docs/style.css")
    assert css.status_code == 200 and css["Content-Type"].startswith("text/css")


def test_a_folder_without_its_slash_is_redirected(client, site):
    response = client.get("/docs/guide")
    assert response.status_code == 302 and response["Location"] == "/docs/guide/"


@pytest.mark.parametrize(
    "path", ["/docs/nope.html", "/docs/../dashboard/settings.py", "/docs/%2e%2e/manage.py", "/docs/" + "x" * 5000]
)
def test_nothing_outside_the_site_is_served(client, site, path):
    response = client.get(path)
    assert response.status_code in (400, 404)
    assert b"SECRET_KEY" not in b"".join(getattr(response, "streaming_content", [response.content]))


def test_docs_are_read_only(client, site):
    assert client.post("/docs/").status_code == 405
    assert client.delete("/docs/index.html").status_code == 405
