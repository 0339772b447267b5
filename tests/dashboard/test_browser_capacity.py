"""A real headless Chromium makes a tiny capacity plan from the form and reads its chart (issue 30's screenshot)."""

from __future__ import annotations

from dashboard.capacity.models import CapacityPlan
from dashboard.common.models import Status
from tests.dashboard.conftest import ARTIFACTS
from tests.dashboard.test_browser import browser_page  # noqa: F401 (the fixture)
from tests.dashboard.test_browser import pytestmark as browser_marks

pytestmark = browser_marks


def test_a_user_makes_a_capacity_plan_and_reads_its_chart(live_server, owner, browser_page):  # noqa: F811
    page = browser_page
    external: list[str] = []
    page.on("request", lambda r: external.append(r.url) if not r.url.startswith(live_server.url) else None)
    problems: list[str] = []
    page.on("console", lambda m: problems.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: problems.append(str(e)))

    page.goto(f"{live_server.url}/capacity/new/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/capacity/new/")

    page.select_option("#id_cluster", "preset:google-balanced")
    page.fill("#id_cluster__google-balanced__machines_per_config", "2")
    page.select_option("#id_workload", "preset:google-like")
    page.fill("#id_load", "0.9")
    page.fill("#id_hours", "0.25")
    for box in page.query_selector_all("input[name=schedulers]"):
        box.set_checked(box.get_attribute("value") in ("greedy", "tetris"))
    page.fill("#id_seeds", "0,1")
    page.fill("#id_target", "p99_wait_s<=30")
    page.fill("#id_curve_points", "3")
    page.fill("#id_name", "browser plan")
    page.click("#submit-capacity")
    page.wait_for_url("**/capacity/*/")
    plan = CapacityPlan.objects.get(name="browser plan")

    # The page follows the plan (probes, rounds, bounds) and reloads with the chart when it ends.
    page.wait_for_selector("#capacity-status.finished", timeout=180_000)
    plan.refresh_from_db()
    assert plan.status == Status.FINISHED, plan.error
    page.locator("#chart-capacity").scroll_into_view_if_needed()
    page.wait_for_selector("#chart-capacity .main-svg", timeout=30_000)
    names = page.evaluate("document.getElementById('chart-capacity').data.map(t => t.name)")
    answers = {e["scheduler"]: e["machines"] for e in plan.result["plans"]}
    assert names == [
        "greedy",
        f"greedy: {answers['greedy']:,} machines",
        "tetris",
        f"tetris: {answers['tetris']:,} machines",
        "target p99_wait_s<=30",
    ]
    xs = page.evaluate("document.getElementById('chart-capacity').data[0].x")
    assert xs == [c["machines"] for c in plan.result["plans"][0]["curve"]]
    assert page.query_selector("#chart-capacity .main-svg .scatterlayer") is not None  # Plotly drew the lines
    assert page.inner_text("#answer-greedy td:nth-child(2)") == f"{answers['greedy']:,}"
    ARTIFACTS.mkdir(exist_ok=True)
    page.locator("#chart-capacity").screenshot(path=str(ARTIFACTS / "capacity-chart.png"))
    page.screenshot(path=str(ARTIFACTS / "capacity-page.png"), full_page=True)
    assert not external, external  # every asset from static/
    assert not problems, problems
