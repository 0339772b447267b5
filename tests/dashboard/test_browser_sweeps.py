"""A real headless Chromium submits a sweep, watches partial results appear, and reads the aggregated chart's data."""

from __future__ import annotations

import csv
import io
import os
import re

import pytest

from dashboard.experiments.sweeps import aggregated, ordered_runs
from dashboard.models import Experiment, Status
from tests.dashboard.conftest import ARTIFACTS
from tests.dashboard.test_browser import ARGS, CHROMIUM, pytestmark  # noqa: F401 (same markers: browser, worker)

PARTIAL = """() => {
  const m = /(\\d+) of (\\d+) cells finished/.exec(document.getElementById('sweep-progress-text').textContent);
  const chart = document.getElementById('chart-sweep');
  const points = chart && chart.data ? chart.data.reduce((n, t) => n + t.y.length, 0) : 0;
  return m && +m[1] > 0 && +m[1] < +m[2] && points > 0
    ? {finished: +m[1], cells: +m[2], points: points, rows: document.querySelectorAll('#sweep-table tbody tr').length}
    : null;
}"""


#: Each drawn trace's name and line colour (as Plotly holds them after drawing).
COLOURS_JS = """(id) => document.getElementById(id).data
  .filter(t => t.line && t.line.color && t.showlegend !== false)
  .map(t => ({name: t.name, colour: t.line.color}))"""


@pytest.fixture
def browser_page():
    import os

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
            from django.db import connections

            connections.close_all()


def sign_in(page, live_server, path: str) -> None:
    page.goto(f"{live_server.url}{path}")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"**{path}")


def test_a_user_submits_a_sweep_watches_partial_results_and_reads_the_chart(live_server, owner, browser_page, tmp_path):
    page = browser_page
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    sign_in(page, live_server, "/experiments/new/")

    page.select_option("#id_cluster", "preset:google-balanced")
    page.fill("#id_cluster__google-balanced__machines_per_config", "2")
    page.select_option("#id_workload", "preset:google-like")
    # 72 h makes a cell take about a second even on an idle machine with the compiled engine: shorter cells all
    # finished between two polls of the page, and the partial state this test watches for was never on screen.
    page.fill("#id_hours", "72")
    for box in page.query_selector_all("input[name=schedulers]"):
        if box.is_checked():
            box.uncheck()
    page.check("input[name=schedulers][value=greedy]")
    page.check("input[name=schedulers][value=fcfs]")
    page.fill("#id_seeds", "0-1")
    page.fill("#id_vary", "load=0.5,0.9")
    page.click("#submit-experiment")
    page.wait_for_url("**/experiments/*/")
    exp = Experiment.objects.get()
    assert exp.runs.count() == 2 * 2 * 2

    # Partial results: some cells finished, not all, and the chart already has their points.
    partial = page.wait_for_function(PARTIAL, timeout=120_000).json_value()
    assert 0 < partial["finished"] < partial["cells"] == 8 and partial["points"] >= 1 and partial["rows"] >= 1

    page.wait_for_selector("#experiment-status.finished", timeout=180_000)
    page.wait_for_function(
        "() => document.getElementById('chart-sweep') && document.getElementById('chart-sweep').data"
    )
    traces = page.evaluate(
        "document.getElementById('chart-sweep').data.map(t => ({name: t.name, x: t.x, y: t.y, up: t.error_y.array}))"
    )
    rows = {(r.point["load"], r.scheduler): r for r in aggregated(ordered_runs(exp), "mean_response_s")}
    assert sorted(t["name"] for t in traces) == ["fcfs", "greedy"]
    assert [t["name"] for t in traces] == exp.scenario["schedulers"]  # one line per scheduler, in the grid's order
    for t in traces:
        assert t["x"] == [0.5, 0.9]
        for x, y, up in zip(t["x"], t["y"], t["up"], strict=True):
            r = rows[(x, t["name"])]
            assert y == pytest.approx(r.mean) and r.n == 2
            assert up == pytest.approx(r.ci_high - r.mean)
    assert any(r.mean > 0 for r in rows.values())  # load 0.9 queues some jobs
    assert page.query_selector("#chart-sweep .main-svg") is not None
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "sweep-page.png"), full_page=True)

    with page.expect_download() as dl:
        page.click("#download-sweep-csv")
    path = tmp_path / "metric.csv"
    dl.value.save_as(path)
    data = list(csv.DictReader(io.StringIO(path.read_text())))
    assert sorted((float(d["point.load"]), d["scheduler"]) for d in data) == sorted(rows)
    for d in data:
        assert float(d["mean"]) == pytest.approx(rows[(float(d["point.load"]), d["scheduler"])].mean)
    assert all(r.status == Status.FINISHED for r in exp.runs.all())

    # The per-seed summary download: every row carries its point (two loads x two schedulers x two seeds).
    with page.expect_download() as dl:
        page.click("#download-summary-csv")
    path = tmp_path / "summary.csv"
    dl.value.save_as(path)
    summary = list(csv.DictReader(io.StringIO(path.read_text())))
    got = sorted((float(d["point.load"]), d["scheduler"], int(d["seed"])) for d in summary)
    assert got == sorted((x, s, seed) for x in (0.5, 0.9) for s in ("greedy", "fcfs") for seed in (0, 1))

    # One colour per scheduler on two pages: the sweep's chart here and the compare page's charts.
    sweep_colours = {t["name"]: t["colour"] for t in page.evaluate(COLOURS_JS, "chart-sweep")}
    assert sweep_colours["greedy"] != sweep_colours["fcfs"]
    # Compared in the other order than the sweep's: a colour by position would swap them.
    order = exp.scenario["schedulers"][::-1]
    cells = sorted(
        (r for r in exp.runs.filter(seed=0) if r.point["load"] == 0.9), key=lambda r: order.index(r.scheduler)
    )
    runs = "&".join(f"run={r.pk}" for r in cells)
    page.goto(f"{live_server.url}/compare/?{runs}")
    page.locator("#chart-cdf").scroll_into_view_if_needed()
    page.wait_for_function("() => document.getElementById('chart-cdf').data")
    compare_colours = page.evaluate(COLOURS_JS, "chart-cdf")
    assert {t["name"].split(" ")[1] for t in compare_colours} == {"greedy", "fcfs"}
    for t in compare_colours:  # "#7 greedy at load=0.9 s0 · 12.5% waited 0 s": the scheduler is the second word
        assert t["colour"] == sweep_colours[t["name"].split(" ")[1]], t
    assert not problems, problems


def test_the_figure_11_preset_runs_from_the_reproduce_page(live_server, owner, browser_page):
    page = browser_page
    sign_in(page, live_server, "/reproduce/")
    page.fill("#id_lotes-fig11-machines_per_config", "1")
    page.fill("#id_lotes-fig11-hours", "0.2")
    page.fill("#id_lotes-fig11-seeds", "1")
    # Checked before it runs: the form says this scale shows nothing, and why, and nothing is created.
    page.click("#check-lotes-fig11")
    warning = page.locator("#reproduction-lotes-fig11 .scale-warnings")
    warning.wait_for()
    assert "This scale may show nothing" in warning.text_content()
    assert re.search(r"About \d+ jobs a run: too few", warning.text_content())
    assert "Use at least" in warning.text_content() and not Experiment.objects.exists()
    assert page.input_value("#id_lotes-fig11-hours") == "0.2"  # the scale checked is the one that runs
    page.click("#run-lotes-fig11")
    page.wait_for_url("**/experiments/*/")
    page.wait_for_selector("#experiment-status.finished", timeout=600_000)
    page.wait_for_selector("#paper-table")
    # And the result page says so after (once the finished runs are in the page: reloaded).
    page.reload()
    after = page.locator(".scale-warnings").text_content()
    assert "At this scale the runs cannot show the schedulers differ" in after and "jobs" in after
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "figure-11-small-scale.png"), full_page=True)
    assert page.text_content("#sweep h2").startswith("Reproduction: Figure 11")
    names = page.evaluate("document.getElementById('chart-sweep').data.map(t => t.name)")
    assert names == ["lotes", "tetris", "greedy"]
    assert page.evaluate("document.getElementById('chart-sweep').layout.yaxis.type") == "log"
    assert re.search(
        r"simcore sweep .*--vary phi=0\.0,0\.003,0\.006,0\.009,0\.012,0\.015", page.text_content("#sweep-command")
    )
    assert "gives these results only as a figure" in page.text_content("#figure-only")


@pytest.mark.skipif(
    not os.environ.get("SIMCORE_SCREENSHOTS"),
    reason="opt-in (SIMCORE_SCREENSHOTS=1): Figure 11's quick scale is 90 runs, minutes of CPU, too long for CI",
)
def test_figure_11_at_its_quick_scale_shows_the_wait_growing_with_phi(live_server, owner, browser_page):
    page = browser_page
    sign_in(page, live_server, "/reproduce/")
    page.click("#run-lotes-fig11")  # the form's defaults: 20 machines per configuration, 25 h, 5 seeds
    page.wait_for_url("**/experiments/*/")
    page.wait_for_selector("#experiment-status.finished", timeout=1_800_000)
    page.reload()
    page.wait_for_selector("#paper-table")
    assert page.query_selector(".scale-warnings") is None
    exp = Experiment.objects.get()
    rows = {(r.point["phi"], r.scheduler): r.mean for r in aggregated(ordered_runs(exp), "mean_response_s")}
    assert rows[(0.015, "greedy")] > 10 * max(rows[(0.0, "greedy")], 1.0)  # measured: 0 -> 61 s
    assert rows[(0.015, "lotes")] > rows[(0.0, "lotes")]
    page.locator("#chart-sweep").scroll_into_view_if_needed()
    page.wait_for_function("() => document.getElementById('chart-sweep').data", timeout=30_000)
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "figure-11-quick-scale.png"), full_page=True)
