"""A real headless Chromium starts a packing analysis from a run's page and reads its charts, then one of an imported
Google trace's production tasks (its minimum-priority filter)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dashboard.experiments.services import create_experiment
from dashboard.models import PackingAnalysis, TraceUpload
from dashboard.traces import imports
from tests.dashboard.conftest import ARTIFACTS, small_scenario, wait_for
from tests.dashboard.test_browser import CHROMIUM, browser_page  # noqa: F401 (the fixture)

GOOGLE_TASKS = (Path(__file__).resolve().parents[1] / "data" / "google2011" / "task_events.csv").read_bytes()

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
    pytest.mark.skipif(
        not __import__("pathlib").Path(CHROMIUM).exists() and not __import__("os").environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it)",
    ),
]


def test_a_user_starts_a_packing_analysis_from_a_run_and_reads_figure_three(live_server, owner, browser_page):  # noqa: F811
    page = browser_page
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: blocked.append(str(e)))
    exp = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy"]), name="to pack"))
    run = exp.runs.get()

    page.goto(f"{live_server.url}{exp.get_absolute_url()}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{exp.get_absolute_url()}")
    page.click(f"#packing-run-{run.pk}")
    page.wait_for_url("**/packing/new/?run=*")
    # The run source is preselected; only its fields are shown.
    assert page.is_checked("input[name=source][value=run]")
    assert page.is_visible("#id_run") and not page.is_visible("#id_trace")
    page.fill("#id_time_s", "1800")
    page.fill("#id_factors", "1,1.5")
    page.fill("#id_taus", "0,0.005,0.01")
    page.fill("#id_trials", "3")
    page.click("#submit-packing")
    page.wait_for_url("**/packing/*/")
    a = PackingAnalysis.objects.get()

    # Progress is polled; when the analysis ends the page reloads with the charts.
    page.wait_for_selector("#packing-status.finished", timeout=120_000)
    # Charts are drawn as they come near the viewport (the predicate is checked once, without polling:
    # polling evaluates a string, which the page's Content-Security-Policy refuses).
    page.locator("#chart-compaction").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-compaction .main-svg", timeout=30_000)
    a.refresh_from_db()
    band = a.results["compaction"]["fraction"]
    y = page.evaluate("document.getElementById('chart-compaction').data[0].y")
    x = page.evaluate("document.getElementById('chart-compaction').data[0].x")
    plus = page.evaluate("document.getElementById('chart-compaction').data[0].error_y.array")
    assert x == pytest.approx([0.0, 0.5, 1.0])
    assert y == pytest.approx([100 * p for p in band["p"]])
    assert plus == pytest.approx([100 * (h - p) for h, p in zip(band["hi"], band["p"], strict=True)])
    assert page.query_selector("#chart-compaction .main-svg") is not None  # Plotly drew it
    page.locator("#chart-compare-compaction").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-compare-compaction .main-svg", timeout=30_000)
    n_policies = page.evaluate("document.getElementById('chart-compare-compaction').data.length")
    assert n_policies == 4  # the four orderings
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "packing-page.png"), full_page=True)

    # Issue 28, a cheap step: a Google import's "packing analysis" link, its own machines and production work
    # only (minimum priority 9). At t = 66 s the sample runs a priority-0 and a priority-9 task: one is kept.
    trace = imports.create_trace_import(owner, "g", "task_events.csv", GOOGLE_TASKS, options={"format": "google2011"})
    deadline = time.monotonic() + 60
    while TraceUpload.objects.get(pk=trace.pk).status != "ready":
        assert time.monotonic() < deadline, TraceUpload.objects.get(pk=trace.pk).error
        time.sleep(0.2)
    page.goto(f"{live_server.url}/packing/new/?trace={trace.pk}")
    assert page.is_checked("input[name=source][value=trace]")
    assert page.is_visible("#id_min_priority") and not page.is_visible("#id_run")
    page.fill("#id_time_s", "66")
    page.fill("#id_min_priority", "9")
    for technique in ("inflation", "compaction", "compare"):
        page.uncheck(f"input[name=techniques][value={technique}]")
    page.fill("#id_trials", "1")
    page.click("#submit-packing")
    page.wait_for_url("**/packing/*/")
    page.wait_for_selector("#packing-status.finished", timeout=60_000)
    b = PackingAnalysis.objects.exclude(pk=a.pk).get()
    assert b.source_spec["min_priority"] == 9 and b.results["snapshot"]["tasks"] == 1
    assert "(priority >= 9)" in page.inner_text("h1 + p.meta") and "t = 66 s" in page.inner_text("h1 + p.meta")
    assert page.inner_text("#snapshot-table td:nth-of-type(2)") == "1"
    assert external == []
    assert blocked == []
