"""The charts in a real headless Chromium: a 10-run experiment and a compare page, laid out without overlaps.

Runs go through the real Celery worker. For every chart the test compares the
bounding boxes Chromium computed for the legend and for the title and axis
titles, and checks that the legend stays right of the plot area; it drives the
choices above the charts (each seed, smoothing, CDF), reads a hover label, and
saves a screenshot of every chart to test-artifacts/ (charts-*.png).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from dashboard.experiments.services import create_experiment
from dashboard.models import Status
from tests.dashboard.conftest import ARTIFACTS, small_scenario, wait_for
from tests.dashboard.test_browser import ARGS, CHROMIUM

pytestmark = [
    pytest.mark.browser,
    pytest.mark.django_db(transaction=True),
    pytest.mark.usefixtures("celery_worker"),
    pytest.mark.skipif(
        not Path(CHROMIUM).exists() and not os.environ.get("CI"),
        reason="Debian's chromium is not installed (make test installs it)",
    ),
]

#: The profile study on a short trace: 5 schedulers x 2 seeds = 10 runs of about 3,000 jobs.
PROFILE_10 = {
    "cluster": {"preset": "ncbi-heterogeneous", "params": {}},
    "workload": {"preset": "ncbi-blast", "params": {}},
    "hours": 2.0,
    "schedulers": ["fcfs", "affinity", "greedy1", "greedy2", "greedy3"],
    "seeds": [0, 1],
}

#: Every text block of a chart that the legend must not cover: the title and every axis title.
TEXT_BOXES_JS = """
(id) => {
  const gd = document.getElementById(id);
  const box = (el) => { const r = el.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; };
  const legend = gd.querySelector('g.legend');
  const titles = Array.from(gd.querySelectorAll('.infolayer g[class$="title"]'))
    .filter((g) => g.textContent.trim() !== '')
    .map((g) => [g.getAttribute('class'), box(g)]);
  const plot = Array.from(gd.querySelectorAll('.draglayer .nsewdrag')).map(box);
  return {legend: legend ? box(legend) : null, titles: titles, plot: plot};
}
"""


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


@pytest.fixture
def chromium():
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        page = context.new_page()
        page.set_default_timeout(30_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()
            from django.db import connections

            connections.close_all()


def _watch(page, live_server):
    problems: list[str] = []
    page.on("request", lambda r: problems.append(r.url) if not r.url.startswith(live_server.url) else None)
    page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(str(e)))
    return problems


def _sign_in(page, live_server):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")


def _charts_drawn(page) -> list[str]:
    # Charts are drawn as they come near the viewport: scroll past each, as a reader does.
    for chart in page.locator(".chart").all():
        chart.scroll_into_view_if_needed()
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.chart')).every(e => e.data && e.querySelector('.main-svg'))",
        timeout=30_000,
    )
    return page.evaluate("Array.from(document.querySelectorAll('.chart')).map(e => e.id)")


def _assert_no_overlaps(page, ids: list[str]) -> None:
    for chart in ids:
        boxes = page.evaluate(TEXT_BOXES_JS, chart)
        assert boxes["legend"] is not None, chart
        kinds = {re.sub(r"\d", "", c) for c, _ in boxes["titles"]}  # g-x3title: the third panel's x axis
        assert kinds >= {"g-gtitle", "g-xtitle", "g-ytitle"}, (chart, boxes["titles"])
        for cls, title in boxes["titles"]:
            assert not _overlap(boxes["legend"], title), (chart, cls, boxes["legend"], title)
        for plot in boxes["plot"]:
            assert boxes["legend"][0] >= plot[2], (chart, "legend over the plot area", boxes["legend"], plot)


def _screenshots(page, ids: list[str], prefix: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    for chart in ids:
        page.locator(f"#{chart}-box").screenshot(path=str(ARTIFACTS / f"{prefix}-{chart}.png"))


def test_a_ten_run_experiment_has_charts_whose_legends_never_cover_a_title(live_server, owner, chromium):
    page = chromium
    problems = _watch(page, live_server)
    exp = wait_for(create_experiment(owner, small_scenario(**PROFILE_10)), timeout=240)
    assert exp.runs.filter(status=Status.FINISHED).count() == 10
    _sign_in(page, live_server)
    page.goto(f"{live_server.url}{exp.get_absolute_url()}")
    ids = _charts_drawn(page)
    assert ids == ["chart-completion", "chart-cdf", "chart-per-day", "chart-queue", "chart-util"]
    _assert_no_overlaps(page, ids)
    _screenshots(page, ids, "charts-experiment")
    page.screenshot(path=str(ARTIFACTS / "charts-experiment-page.png"), full_page=True)

    # One legend entry per scheduler, seeds aggregated: 5 mean lines, 10 seed lines hidden.
    legend = page.evaluate(
        "document.getElementById('chart-queue').data.filter(t => t.visible === true && t.showlegend).length"
    )
    assert legend == 5
    # Each seed is one choice away.
    page.select_option("#chart-queue-box select >> nth=0", label="each seed")
    shown = page.evaluate("document.getElementById('chart-queue').data.filter(t => t.visible === true).length")
    assert shown == 10
    _assert_no_overlaps(page, ["chart-queue"])
    # Smoothing: a moving average keeps the number of points and flattens the series.
    spread = (
        "(() => { const y = document.getElementById('chart-util').data.find(t => t.visible === true).y"
        ".filter(v => v !== null); const m = y.reduce((a, b) => a + b, 0) / y.length;"
        " return [y.length, y.reduce((a, b) => a + (b - m) * (b - m), 0) / y.length]; })()"
    )
    page.select_option("#chart-util-box select >> nth=1", label="off")
    n_raw, var_raw = page.evaluate(spread)
    page.select_option("#chart-util-box select >> nth=1", label="15 min")
    n_smooth, var_smooth = page.evaluate(spread)
    assert n_smooth == n_raw and var_smooth < var_raw
    # The CDF is one choice away from the log-log view.
    page.select_option("#chart-cdf-box select >> nth=0", index=1)
    assert page.evaluate("document.getElementById('chart-cdf').layout.yaxis.type") == "linear"
    _assert_no_overlaps(page, ["chart-cdf"])
    page.locator("#chart-cdf-box").screenshot(path=str(ARTIFACTS / "charts-experiment-chart-cdf-as-cdf.png"))
    # Hover labels give the scheduler, the seeds and units.
    page.evaluate("Plotly.Fx.hover(document.getElementById('chart-completion'), [{curveNumber: 1, pointNumber: 0}])")
    hover = page.evaluate("document.querySelector('#chart-completion .hoverlayer').textContent")
    assert "fcfs" in hover and "wait" in hover and " s" in hover and "completion" in hover
    assert problems == []


def test_the_compare_page_overlays_experiments_without_overlapping_text(live_server, owner, chromium):
    page = chromium
    problems = _watch(page, live_server)
    a = wait_for(create_experiment(owner, small_scenario(**{**PROFILE_10, "schedulers": ["fcfs", "greedy2"]})))
    b = wait_for(create_experiment(owner, small_scenario(seeds=[0, 1])))
    runs = list(a.runs.all()) + list(b.runs.all())
    assert all(r.status == Status.FINISHED for r in runs)
    _sign_in(page, live_server)
    page.goto(f"{live_server.url}/compare/?" + "&".join(f"run={r.pk}" for r in runs))
    ids = _charts_drawn(page)
    assert ids == ["chart-cdf", "chart-per-day", "chart-queue", "chart-util"]
    groups = page.evaluate("[...new Set(document.getElementById('chart-cdf').data.map(t => t.legendgroup))]")
    assert groups == [f"#{a.pk} fcfs", f"#{a.pk} greedy2", f"#{b.pk} greedy", f"#{b.pk} fcfs"]
    # slot (the profile cluster) and cpu, mem (the Google one): a panel each
    titles = page.evaluate(
        "(() => { const l = document.getElementById('chart-util').layout;"
        " return ['yaxis', 'yaxis2', 'yaxis3'].map(k => l[k].title.text); })()"
    )
    assert titles == ["slot in use (%)", "cpu in use (%)", "mem in use (%)"]
    _assert_no_overlaps(page, ids)
    _screenshots(page, ids, "charts-compare")
    assert page.locator("table.summary th", has_text="Experiment").count() == 1
    assert problems == []


def test_the_api_documentation_page_renders_from_our_static_files_within_the_csp(live_server, chromium):
    page = chromium
    problems = _watch(page, live_server)
    page.goto(f"{live_server.url}/api/")
    assert '"docs"' in page.content()
    page.goto(f"{live_server.url}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=30_000)
    assert page.locator(".swagger-ui .opblock").count() > 20
    assert problems == []  # no CSP violation, script error or request outside the server


def test_a_200_character_name_does_not_widen_the_pages(live_server, owner, chromium):
    page = chromium
    exp = create_experiment(owner, small_scenario(), name="x" * 200)
    _sign_in(page, live_server)
    for path in ("/", exp.get_absolute_url()):
        page.goto(f"{live_server.url}{path}")
        assert page.evaluate("document.documentElement.scrollWidth") <= 1400, path


def test_the_form_disables_what_the_workload_cannot_take_and_says_why(live_server, owner, chromium):
    page = chromium
    problems = _watch(page, live_server)
    _sign_in(page, live_server)
    page.goto(f"{live_server.url}/experiments/new/")
    checked = page.evaluate("Array.from(document.querySelectorAll('input[name=schedulers]:checked')).map(c => c.value)")
    assert sorted(checked) == ["greedy", "lotes", "tetris"]
    # google-like has no run-time profile: the profile schedulers are disabled, with the reason beside them
    affinity = page.locator("input[name=schedulers][value=affinity]")
    assert affinity.is_disabled()
    reason = page.evaluate("document.querySelector('input[value=affinity]').parentNode.textContent")
    assert "not with this workload: needs a workload with a run-time profile" in reason
    assert page.is_enabled("#id_load")
    # ncbi-blast has one, and sets its own arrival rate: load is disabled, with the reason
    page.select_option("#id_workload", "preset:ncbi-blast")
    assert affinity.is_enabled() and page.is_disabled("#id_load")
    assert "load does not apply to ncbi-blast" in page.inner_text("#field-load")
    page.select_option("#id_cluster", "preset:ncbi-heterogeneous")
    page.fill("#id_hours", "1")
    for box in page.query_selector_all("input[name=schedulers]:checked"):
        box.uncheck()
    page.check("input[name=schedulers][value=affinity]")
    page.click("#submit-experiment")
    page.wait_for_url("**/experiments/*/")
    assert "Load does not apply to ncbi-blast" in page.inner_text("#simulated")
    assert problems == []
