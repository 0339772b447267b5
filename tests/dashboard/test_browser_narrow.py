"""Every page kind on a 390 px wide screen (a phone) in a real headless Chromium, and how soon each opens.

For each page kind (lists, forms, an experiment, a sweep, a search, a packing
analysis, a team, the account, the sign-in page) the test loads the page in a
fresh browser context (empty cache: a cold load) 390 px wide and checks that
the page does not scroll sideways, that the menu is reachable (folded behind
its button, which opens it with every link inside the screen), and that no
script blocks in ``<head>``. It writes each page's DOMContentLoaded time to
test-artifacts/narrow-pages.json and a screenshot of each page to
test-artifacts/narrow-*.png (issue 28).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.experiments.services import create_experiment
from dashboard.models import PackingAnalysis, PackingSource, Search, Status
from dashboard.packing.services import SourceChoice, create_analysis
from dashboard.searches.services import check_search, create_search
from simcore.dse.explore.search import SearchSettings
from tests.dashboard.conftest import ARTIFACTS, small_scenario, wait_for
from tests.dashboard.test_browser import ARGS, CHROMIUM
from tests.dashboard.test_packing import SPEC, T
from tests.dashboard.test_search_worker import SCENARIO as SEARCH_SCENARIO
from tests.dashboard.test_sweeps import sweep_scenario

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it)",
    ),
]

WIDTH = 390
#: Measures of a page, read once it has loaded: DOMContentLoaded after the navigation started, and how
#: wide the page scrolls.
MEASURE_JS = """() => {
  const nav = performance.getEntriesByType('navigation')[0];
  return {dcl_ms: nav.domContentLoadedEventEnd - nav.startTime, scroll_width: document.scrollingElement.scrollWidth};
}"""
#: A script that blocks parsing: in <head> as the server sent it, neither defer nor async.
HEAD = re.compile(r"<head>(.*?)</head>", re.S)
BLOCKING = re.compile(r"<script\b(?![^>]*\b(?:defer|async)\b)[^>]*\bsrc=[^>]*>")
#: The menu's links that lie inside the screen and can be clicked (not hidden, not covered).
MENU_JS = """(width) => Array.from(document.querySelectorAll('header nav a, header nav button.link')).filter(a => {
  const r = a.getBoundingClientRect();
  if (r.width === 0 || r.left < 0 || r.right > width) return false;
  const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
  return hit === a || a.contains(hit);
}).map(a => a.textContent.trim())"""


def _wait_done(obj: Any, timeout: float = 400.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        obj.refresh_from_db()
        if obj.status not in (Status.PENDING, Status.RUNNING):
            return obj
        time.sleep(0.3)
    raise AssertionError(f"{type(obj).__name__} {obj.pk} still {obj.status} after {timeout} s")


def _pages(owner, team) -> dict[str, str]:
    """One page of each kind, with the objects they show finished by the real worker."""
    # Generous timeouts: a kernel's first compile takes over a minute on a busy machine.
    exp = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy"]), name="narrow"), timeout=400)
    sweep = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    sweep = wait_for(sweep, timeout=400)
    run = exp.runs.get()
    analysis = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC)
    settings = SearchSettings("trt", population=4, generations=1, seed=3)
    search = create_search(owner, check_search(dict(SEARCH_SCENARIO), settings, 3), settings, 3)
    a = _wait_done(PackingAnalysis.objects.get(pk=analysis.pk))
    s = _wait_done(Search.objects.get(pk=search.pk))
    assert (a.status, s.status) == (Status.FINISHED, Status.FINISHED), (a.error, s.error)
    return {
        "experiment list": "/",
        "new experiment": "/experiments/new/",
        "experiment": exp.get_absolute_url(),
        "sweep": sweep.get_absolute_url(),
        "reproduce": "/reproduce/",
        "search list": "/searches/",
        "new search": "/searches/new/",
        "search": search.get_absolute_url(),
        "packing list": "/packing/",
        "new packing": "/packing/new/",
        "packing": analysis.get_absolute_url(),
        "compare": f"/compare/?experiments={exp.pk}",
        "uploads": "/uploads/",
        "teams": "/teams/",
        "team": team.get_absolute_url(),
        "account": "/account/",
    }


def _measure(browser, url: str, state: Any, name: str) -> dict[str, Any]:
    # A fresh context per page: an empty cache, as a first visit.
    context = browser.new_context(viewport={"width": WIDTH, "height": 844}, storage_state=state)
    page = context.new_page()
    page.set_default_timeout(60_000)
    problems: list[str] = []
    page.on("pageerror", lambda e: problems.append(str(e)))
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    try:
        response = page.goto(url, wait_until="load")
        out = page.evaluate(MEASURE_JS)
        head = HEAD.search(response.text())
        out["blocking"] = BLOCKING.findall(head.group(1)) if head else []
        out["menu_folded"] = page.is_visible("#menu-toggle")
        if out["menu_folded"]:
            page.click("#menu-toggle")
        out["menu_links"] = page.evaluate(MENU_JS, WIDTH)
        out["problems"] = problems
        page.screenshot(path=str(ARTIFACTS / f"narrow-{name.replace(' ', '-')}.png"), full_page=True)
        return out
    finally:
        context.close()


def test_every_page_fits_a_390_px_screen_with_its_menu_reachable(live_server, owner, team):
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    pages = _pages(owner, team)
    ARTIFACTS.mkdir(exist_ok=True)
    results: dict[str, dict[str, Any]] = {}
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            context = browser.new_context(viewport={"width": WIDTH, "height": 844})
            page = context.new_page()
            results["sign in"] = _measure(browser, f"{live_server.url}/accounts/login/", None, "sign in")
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("#id_username", "alice")
            page.fill("#id_password", "alice-password-1")
            page.click("button[type=submit]")
            page.wait_for_url(f"{live_server.url}/")
            state = context.storage_state()
            context.close()
            for name, path in pages.items():
                results[name] = _measure(browser, f"{live_server.url}{path}", state, name)
        finally:
            browser.close()
            from django.db import connections

            connections.close_all()
    (ARTIFACTS / "narrow-pages.json").write_text(json.dumps(results, indent=1))

    for name, r in results.items():
        assert r["scroll_width"] <= WIDTH, (name, r["scroll_width"])
        assert r["blocking"] == [], (name, r["blocking"])
        assert r["problems"] == [], (name, r["problems"])
        assert r["menu_folded"], name  # behind its button on a phone
    signed_in = [r["menu_links"] for n, r in results.items() if n != "sign in"]
    for links in signed_in:
        assert {"Experiments", "New experiment", "Searches", "Packing", "Uploads", "Teams", "Sign out"} <= set(links)
    assert "Sign in" in results["sign in"]["menu_links"]


def test_on_a_wide_screen_the_menu_shows_every_link_without_a_button(live_server, owner):
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{live_server.url}/accounts/login/")
            page.fill("#id_username", "alice")
            page.fill("#id_password", "alice-password-1")
            page.click("button[type=submit]")
            page.wait_for_url(f"{live_server.url}/")
            assert not page.is_visible("#menu-toggle")
            links = page.evaluate(MENU_JS, 1400)
            assert {"Experiments", "Reproduce papers", "Compare", "Packing", "alice", "Sign out"} <= set(links)
        finally:
            browser.close()
            from django.db import connections

            connections.close_all()
