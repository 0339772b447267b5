"""A real headless Chromium starts a design-space search from the form and reads its charts and explanations."""

from __future__ import annotations

import csv
import io

from dashboard.models import Search, Status
from tests.dashboard.conftest import ARTIFACTS
from tests.dashboard.test_browser import browser_page  # noqa: F401 (the fixture)
from tests.dashboard.test_browser import pytestmark as browser_marks

pytestmark = browser_marks


def test_a_user_starts_a_search_and_reads_the_elite_timeline(live_server, owner, browser_page, tmp_path):  # noqa: F811
    page = browser_page
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(f"{live_server.url}/searches/new/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/searches/new/")

    page.select_option("#id_cluster", "preset:dse-2020")
    assert page.is_visible("#id_cluster__dse-2020__machines")  # only the chosen preset's parameters show
    page.fill("#id_cluster__dse-2020__machines", "8")
    page.select_option("#id_workload", "preset:workflows-short-long")
    page.fill("#id_hours", "0.25")
    page.select_option("#id_metric", "trt")
    page.fill("#id_population", "6")
    page.fill("#id_generations", "4")
    page.fill("#id_seed", "2")
    page.fill("#id_name", "browser search")
    page.click("#submit-search")
    page.wait_for_url("**/searches/*/")
    search = Search.objects.get(name="browser search")

    # The page follows the search without a reload and shows the results when it ends.
    page.wait_for_selector("#search-status.finished", timeout=120_000)
    page.wait_for_function(
        "document.getElementById('chart-elite') && document.getElementById('chart-elite').data", timeout=30_000
    )
    search.refresh_from_db()
    assert search.status == Status.FINISHED
    traces = page.evaluate("document.getElementById('chart-elite').data.map(t => t.name)")
    assert traces == ["elite TRT", "J1", "J2", "J3", "T1", "T2", "R5"]
    fitness = page.evaluate("document.getElementById('chart-elite').data[0].y")
    assert fitness == [g.elite_fitness for g in search.generations.order_by("index")]
    assert page.query_selector("#chart-elite .main-svg") is not None  # Plotly drew it
    metrics = page.evaluate("document.getElementById('chart-metrics').data.map(t => t.name)")
    assert metrics == ["TRT", "JMS", "NJSL", "JWT"]
    elite = search.generations.order_by("-index").first().elite_policy
    assert page.inner_text("#elite-policy") == elite
    assert page.query_selector("#explanations") is not None
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "search-page.png"), full_page=True)

    with page.expect_download() as dl:
        page.click("#download-generations-csv")
    path = tmp_path / "generations.csv"
    dl.value.save_as(path)
    rows = list(csv.DictReader(io.StringIO(path.read_text())))
    assert len(rows) == 4 * 6 and {r["generation"] for r in rows} == {"0", "1", "2", "3"}

    # Searches are listed, and nothing came from outside the server, and no script was blocked.
    page.click("#searches-link")
    page.wait_for_selector("#searches")
    assert "browser search" in page.inner_text("#searches")
    assert external == [] and problems == []
