"""A real headless Chromium (Debian's package, driven by Playwright) submits an experiment and reads the charts."""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

import pytest

from dashboard.models import Experiment, Run, Status
from tests.dashboard.conftest import ARTIFACTS

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
    # Skipped on a developer machine without chromium, never on CI (CI=true): there it must run.
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it)",
    ),
]


@pytest.fixture
def browser_page():
    # Playwright's sync API runs an event loop in this thread; the ORM calls in the test are still synchronous.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()
            # ORM calls made while Playwright's loop ran may hold their own connection; close it
            # so that the test database can be dropped at the end of the session.
            from django.db import connections

            connections.close_all()


def test_a_user_submits_an_experiment_and_sees_one_trace_per_scheduler(live_server, owner, browser_page, tmp_path):
    page = browser_page
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
    # Every page is served with a Content-Security-Policy; the browser reports what it blocks.
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: blocked.append(str(e)))

    page.goto(f"{live_server.url}/experiments/new/")
    assert "/accounts/login/" in page.url
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/experiments/new/")

    page.select_option("#id_cluster", "preset:google-balanced")
    # Only the chosen preset's parameters are shown.
    assert page.is_visible("#id_cluster__google-balanced__machines_per_config")
    page.fill("#id_cluster__google-balanced__machines_per_config", "2")
    page.select_option("#id_workload", "preset:google-like")
    page.fill("#id_load", "0.9")
    page.fill("#id_hours", "1")
    for box in page.query_selector_all("input[name=schedulers]"):
        if box.is_checked():
            box.uncheck()
    page.check("input[name=schedulers][value=greedy]")
    page.check("input[name=schedulers][value=fcfs]")
    page.fill("#id_seeds", "0")
    page.click("#submit-experiment")
    page.wait_for_url("**/experiments/*/")
    exp = Experiment.objects.get()

    # Progress updates without reload; when all runs finish the page shows the results.
    page.wait_for_selector("#experiment-status.finished", timeout=90_000)
    # Charts are drawn as they come near the viewport.
    page.locator("#chart-util").scroll_into_view_if_needed()
    page.locator("#chart-cdf").scroll_into_view_if_needed()
    page.wait_for_function(
        "() => ['chart-cdf', 'chart-per-day'].every(id => document.getElementById(id).data)", timeout=30_000
    )
    page.wait_for_function(
        "() => document.getElementById('chart-cdf') && document.getElementById('chart-cdf').data", timeout=30_000
    )
    n_cdf = page.evaluate("document.getElementById('chart-cdf').data.length")
    n_day = page.evaluate("document.getElementById('chart-per-day').data.length")
    names = page.evaluate("document.getElementById('chart-cdf').data.map(t => t.legendgroup)")
    assert n_cdf == 2 and n_day == 2
    assert sorted(names) == ["fcfs", "greedy"]
    assert page.evaluate("document.getElementById('chart-cdf').layout.xaxis.type") == "log"
    assert page.query_selector("#chart-cdf .main-svg") is not None  # Plotly drew an SVG
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "experiment-page.png"), full_page=True)

    with page.expect_download() as dl:
        page.click("#download-jobs-csv")
    path = tmp_path / "jobs.csv"
    dl.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    runs = {r.scheduler: r for r in Run.objects.filter(experiment=exp).select_related("result")}
    assert all(r.status == Status.FINISHED for r in runs.values())
    assert len(rows) == sum(r.result.summary["jobs"] for r in runs.values())
    assert {r["scheduler"] for r in rows} == {"greedy", "fcfs"}

    # The owner makes a public read-only link; a visitor who is not signed in reads the charts through it.
    page.click("#share-panel summary")
    page.select_option("#share-form select[name=visibility]", "public")
    page.click("#share-form button[type=submit]")
    link = page.input_value("#share-url")
    exp.refresh_from_db()
    assert exp.share_token and link.endswith(f"/shared/{exp.share_token}/")
    visitor = page.context.browser.new_context()
    try:
        anon = visitor.new_page()
        anon.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
        anon.goto(link)
        anon.locator("#chart-cdf").scroll_into_view_if_needed()
        anon.wait_for_function(
            "() => document.getElementById('chart-cdf') && document.getElementById('chart-cdf').data", timeout=30_000
        )
        assert anon.evaluate("document.getElementById('chart-cdf').data.length") == 2
        assert anon.query_selector("#share-panel") is None and anon.query_selector("#cancel-all") is None
        anon.goto(f"{live_server.url}{exp.get_absolute_url()}")  # the id-based page still needs a sign-in
        assert "/accounts/login/" in anon.url
    finally:
        visitor.close()
    assert external == []  # works offline: no CDN, nothing outside the server
    assert blocked == []  # nothing the CSP refused, no script errors


def test_the_default_experiment_shows_the_schedulers_differ(live_server, owner, browser_page):
    """Defaults that differ: the form as it opens, checked, then run (LoTES section 5.4.2 on 200 machines, 25 h)."""
    page = browser_page
    page.goto(f"{live_server.url}/experiments/new/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/experiments/new/")
    page.click("#check-experiment")
    assert "Scale checked: enough jobs" in page.locator(".scale-ok").text_content()
    assert page.query_selector(".scale-warnings") is None and not Experiment.objects.exists()
    page.click("#submit-experiment")
    page.wait_for_url("**/experiments/*/")
    page.wait_for_selector("#experiment-status.finished", timeout=300_000)
    page.reload()
    assert page.query_selector(".scale-warnings") is None
    wait = {r.scheduler: r.result.summary["mean_response_s"] for r in Run.objects.select_related("result")}
    # Measured at seed 0 (docs/notes/defaults.md): Greedy 752 s, Tetris 13.7 s, LoTES 2.2 s.
    assert wait["greedy"] > 10 * wait["tetris"] and wait["tetris"] > 3 * wait["lotes"] > 0
    # Charts are drawn as they come near the viewport: scroll past each, so the full-page screenshot has them all.
    for chart in page.locator(".chart").all():
        chart.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.chart')).every(e => e.data && e.querySelector('.main-svg'))",
        timeout=30_000,
    )
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "default-experiment.png"), full_page=True)
