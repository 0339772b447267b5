"""Headless Chromium maps a foreign CSV (an Alibaba-like batch_task table) on the upload page, then runs on it.

Same start-up as tests/dashboard/test_browser.py (Debian's chromium through Playwright). Predicates passed to
``wait_for_function`` are functions: a string would be eval'd, which the page's CSP refuses.
"""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from dashboard.models import Experiment, ImportStatus, Status, TraceUpload
from simcore.traces.tracefile import read_trace
from tests.dashboard.conftest import ARTIFACTS
from tests.dashboard.test_browser import browser_page as browser_page  # the fixture
from tests.dashboard.test_browser import pytestmark as pytestmark  # browser, live database, the worker

HEADER = "task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem"


def _batch_task(n: int = 60) -> tuple[str, int, int]:
    """Rows every 30 s; every 7th is Running (filtered), every 11th has no end time; the kept and skipped counts.

    The filter comes first: a Running row without an end time is filtered, not skipped.
    """
    lines = [HEADER]
    kept = skipped = 0
    for i in range(n):
        status = "Running" if i % 7 == 3 else "Terminated"
        start = 1000 + 30 * i
        end = "" if i % 11 == 5 else str(start + 60 + 10 * (i % 5))
        lines.append(f"M{i},1,j_{i // 3},1,{status},{start},{end},{50 + 10 * (i % 6)},{0.1 + 0.01 * (i % 9):.2f}")
        kept += status == "Terminated" and end != ""
        skipped += status == "Terminated" and end == ""
    return "\n".join(lines) + "\n", kept, skipped


def test_a_user_maps_a_foreign_csv_previews_imports_and_runs_an_experiment(live_server, owner, browser_page, tmp_path):
    page = browser_page
    blocked: list[str] = []
    page.on("console", lambda m: blocked.append(m.text) if "Content Security Policy" in m.text else None)
    page.on("pageerror", lambda e: blocked.append(str(e)))
    text, kept, skipped = _batch_task()
    path = tmp_path / "batch_task.csv"
    path.write_text(text)

    page.goto(f"{live_server.url}/uploads/")
    page.fill("#id_username", "alice")
    page.fill("#id_password", "alice-password-1")
    page.click("button[type=submit]")
    page.wait_for_url("**/uploads/")
    # The upload page describes the format with an example, and links to the mapping page.
    page.click("#csv-format summary")
    assert "submit_s,duration_s,cpu,mem" in page.inner_text("#csv-format pre")
    page.click("#map-link")
    page.wait_for_url("**/uploads/trace/map/")

    page.fill("#id_name", "alibaba sample")
    page.set_input_files("#id_file", str(path))
    page.click("#send-file")
    page.wait_for_selector("#head")
    assert page.inner_text("#head thead").split() == HEADER.split(",")
    assert "M0" in page.inner_text("#head tbody")

    page.select_option("#id_submit_s_col", "start_time")
    page.select_option("#id_duration_s_col", "end_time")
    page.select_option("#id_duration_s_minus", "start_time")
    page.select_option("#id_cpu_col", "plan_cpu")
    page.select_option("#id_cpu_op", "/")
    page.fill("#id_cpu_factor", "100")
    page.select_option("#id_mem_col", "plan_mem")
    page.fill("#id_where", "status=Terminated")
    page.select_option("#id_on_error", "skip")
    page.fill("#id_save_as", "alibaba batch_task")
    page.click("#preview-button")
    page.wait_for_selector("#preview")
    assert page.inner_text("#map-text") == (
        "submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem"
    )
    first = page.inner_text("#preview tbody tr:first-child").split()
    # Row M0: start 1000, end 1060, plan_cpu 50, plan_mem 0.10.
    assert first == ["1000", "60", "0.5", "0.1"]
    assert "end_time: empty" in page.inner_text("#preview-problems")
    page.screenshot(path=str(ARTIFACTS / "trace-map-preview.png"), full_page=True)

    page.click("#import-button")
    page.wait_for_url("**/uploads/")
    up = TraceUpload.objects.get()
    page.wait_for_function(
        "() => { const s = document.querySelector('#traces .import-status .status'); "
        "return s && ['ready', 'failed'].includes(s.textContent.trim()); }",
        timeout=90_000,
    )
    up.refresh_from_db()
    assert up.status == ImportStatus.READY, up.error
    assert up.info["jobs"] == kept and up.info["rows_skipped"] == skipped == 4
    wl = read_trace(gzip.decompress(bytes(up.content_gz)))
    assert wl.submit[0] == 1000.0 and wl.work[0] == 60.0
    np.testing.assert_allclose(wl.request[0], [0.5, 0.1])

    # Run an experiment on it from its row's link.
    page.goto(f"{live_server.url}/uploads/")
    page.click(f"#trace-{up.pk} a:has-text('run')")
    page.wait_for_url("**/experiments/new/**")
    assert page.input_value("#id_workload") == f"upload:{up.pk}"
    assert page.input_value("#id_load") == "1.0"  # a trace replays as recorded unless the reader says otherwise
    page.select_option("#id_workload", "preset:google-like")
    assert page.input_value("#id_load") == "0.9"  # a preset's load: the fraction of lambda*
    page.select_option("#id_workload", f"upload:{up.pk}")
    assert page.input_value("#id_load") == "1"
    page.select_option("#id_cluster", "preset:google-balanced")
    page.fill("#id_cluster__google-balanced__machines_per_config", "2")
    page.fill("#id_load", "0.5")
    for box in page.query_selector_all("input[name=schedulers]"):
        if box.is_checked():
            box.uncheck()
    page.check("input[name=schedulers][value=greedy]")
    page.fill("#id_seeds", "0")
    page.click("#submit-experiment")
    page.wait_for_url("**/experiments/*/")
    page.wait_for_selector("#experiment-status.finished", timeout=90_000)
    exp = Experiment.objects.get()
    run = exp.runs.get()
    assert exp.trace_upload_id == up.pk and run.status == Status.FINISHED
    assert run.result.summary["jobs"] > 0
    assert not blocked, blocked


@pytest.fixture(autouse=True)
def _artifacts() -> None:
    ARTIFACTS.mkdir(exist_ok=True)
