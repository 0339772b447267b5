"""Fuzzing every URL pattern, pages and API alike: arbitrary Unicode (NUL included) in path and
query values, and nested or oversized JSON bodies, never get a server error.

Complements test_api_fuzz.py (schemathesis over the OpenAPI operations): this walks Django's
URL resolver, so the HTML pages, shared links and downloads are covered too. Derandomised
and bounded, so CI sees the same requests every time.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import quote

import pytest
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dashboard.models import ApiToken


def _routes(resolver: URLResolver | None = None, prefix: str = "") -> list[str]:
    out: list[str] = []
    for p in (resolver or get_resolver()).url_patterns:
        route = str(p.pattern)
        if isinstance(p, URLResolver):
            if route.startswith("admin/"):
                continue  # Django's own admin
            out += _routes(p, prefix + route)
        elif isinstance(p, URLPattern):
            out.append(prefix + route)
    return out


ROUTES = sorted(set(_routes()))
PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")

# Any Unicode scalar value (no surrogates: they cannot be encoded in a URL), NUL and controls included.
text = st.text(st.characters(blacklist_categories=["Cs"]), max_size=30)
values = st.one_of(text, st.integers(-(2**70), 2**70).map(str), st.just("\x00"))


def _fill(route: str, draw_value: Any) -> str:
    def sub(m: re.Match[str]) -> str:
        return quote(draw_value(), safe="")

    return "/" + PARAM.sub(sub, route)


@pytest.fixture
def client(db: None, django_user_model: Any) -> Client:
    user = django_user_model.objects.create_user("fuzzer", password="fuzzer-password-1")
    _, secret = ApiToken.issue(user, "fuzz")
    c = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    c.force_login(user)
    return c


def test_the_resolver_walk_finds_the_pages_and_the_api() -> None:
    assert "shared/<str:token>/" in ROUTES and "api/experiments/<id:pk>/" in ROUTES and len(ROUTES) > 40


@pytest.mark.parametrize("route", ROUTES)
def test_no_url_with_arbitrary_path_and_query_values_gets_a_server_error(client: Client, route: str) -> None:
    @settings(max_examples=8, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck))
    @given(st.data(), st.dictionaries(text, st.lists(values, max_size=2), max_size=3), st.sampled_from(["get", "post"]))
    def check(data: st.DataObject, query: dict[str, list[str]], method: str) -> None:
        url = _fill(route, lambda: data.draw(values))
        resp = getattr(client, method)(url, query)
        assert resp.status_code < 500, (method, url, query, resp.status_code)

    check()


def _nested(depth: int, kind: str) -> str:
    return ("[" * depth + "]" * depth) if kind == "list" else ('{"a": ' * depth + "1" + "}" * depth)


API_POSTS = [r for r in ROUTES if r.startswith("api/") and "openapi" not in r]


@pytest.mark.parametrize("route", API_POSTS)
def test_nested_and_oversized_bodies_never_get_a_server_error(client: Client, route: str) -> None:
    url = _fill(route, lambda: "1")
    for body in (_nested(100_000, "list"), _nested(50_000, "object"), '{"x": "' + "y" * 3_000_000 + '"}', "\x00"):
        for method in ("post", "patch", "put"):
            resp = getattr(client, method)(url, body, content_type="application/json")
            assert resp.status_code < 500, (method, url, len(body), resp.status_code)
            assert resp["Content-Type"].startswith("application/json"), (method, url, resp["Content-Type"])
