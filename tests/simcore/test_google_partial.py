"""Google 2011 parts from mid-trace: the window opens at the first event and tasks already running are kept."""

from __future__ import annotations

import gzip

import numpy as np
import pytest

from simcore.core.model import Cluster
from simcore.traces import importer
from simcore.traces.google2011 import K_ORPHAN_END, K_ORPHAN_SCHED, R_END_ORPHAN, R_SCHED_ORPHAN, read_google2011
from tests.conftest import shared_data
from tests.simcore.test_traces_google2011 import PART0, _row

# A part that starts at 1000 s: (2,0) is submitted in it; (3,0) was pending and (1,0) running before it.
PART = (
    _row(1000, 2, 0, 0)
    + _row(1020, 2, 0, 1)
    + _row(1030, 3, 0, 1, cpu="", mem="")
    + _row(1050, 1, 0, 4, cpu=0.2, mem=0.1)
    + _row(1060, 3, 0, 4)
    + _row(1100, 2, 0, 4)
).encode()

ONE_MACHINE = Cluster("one", ("cpu", "mem"), ("m",), np.array([1]), np.array([[1.0, 1.0]]))


def test_the_window_starts_at_the_parts_first_event() -> None:
    wl = read_google2011([PART]).workload
    assert wl.horizon_s == pytest.approx(100.0)
    assert wl.params["window_start_s"] == pytest.approx(1000.0)


def test_tasks_seen_only_by_their_end_or_schedule_join_the_initial_batch() -> None:
    res = read_google2011([PART])
    wl = res.workload
    # In end order: (1,0) ran 1000-1050, (3,0) scheduled 1030 ended 1060, (2,0) ran 1020-1100.
    np.testing.assert_allclose(wl.submit, [0, 0, 0])
    np.testing.assert_allclose(wl.work, [50, 30, 80])
    np.testing.assert_allclose(wl.request[0], [0.2, 0.1])
    assert res.report.kept_notes[K_ORPHAN_END] == 1
    assert res.report.kept_notes[K_ORPHAN_SCHED] == 1
    assert R_END_ORPHAN not in res.report.dropped


def test_running_at_start_drop_counts_them_as_before() -> None:
    res = read_google2011([PART], running_at_start="drop")
    np.testing.assert_allclose(res.workload.work, [80])
    # (3,0)'s SCHEDULE is ignored, so its end is an orphan too.
    assert res.report.dropped == {R_END_ORPHAN: 2, R_SCHED_ORPHAN: 1}


def _long_runners() -> bytes:
    # A short task opens the part at 1000 s; three tasks running since before it end at 1100 s.
    rows = _row(1000, 9, 0, 0, cpu=0.1) + _row(1000, 9, 0, 1, cpu=0.1) + _row(1010, 9, 0, 4, cpu=0.1)
    rows += "".join(_row(1100, 10 + k, 0, 4, cpu=0.25) for k in range(3))
    return rows.encode()


def test_a_mid_trace_part_reports_the_utilisation_it_will_load_the_cluster_with() -> None:
    res = importer.import_trace("google2011", [_long_runners()], cluster=ONE_MACHINE)
    s = importer.summary(res)
    # cpu: 3 x 0.25 x 100 s + 0.1 x 10 s over one machine for 100 s.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(0.76)
    # Issue 26: the part begins at 1000 s, so tasks running through it unseen may be missing.
    assert s["utilisation_estimate_is"].startswith("a lower bound: the input begins mid-trace (first event at 1000 s)")
    assert len(s["warnings"]) == 1 and s["warnings"][0].startswith("the input begins mid-trace")


def test_the_old_reading_from_time_0_without_the_running_tasks_warns_of_an_idle_cluster() -> None:
    res = importer.import_trace(
        "google2011", [_long_runners()], cluster=ONE_MACHINE, start_s=0.0, running_at_start="drop"
    )
    s = importer.summary(res)
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(1.0 / 1100, abs=1e-6)
    assert s["warnings"][0].startswith("the input begins mid-trace")
    assert "nearly idle" in s["warnings"][1] and "only a lower bound" in s["warnings"][1]


@pytest.mark.slow
def test_the_second_half_of_the_real_part_0_alone_keeps_its_running_tasks() -> None:
    shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    lines = gzip.decompress(PART0.read_bytes()).splitlines(keepends=True)
    half = b"".join(lines[len(lines) // 2 :])
    keep = importer.summary(importer.import_trace("google2011", [half]))
    drop = importer.summary(importer.import_trace("google2011", [half], running_at_start="drop", start_s=0.0))
    assert keep["kept_but_changed"][K_ORPHAN_END] > 1_000
    assert keep["time_span_s"][0] == 0.0
    assert keep["utilisation_estimate"]["cpu"] > 5 * drop["utilisation_estimate"]["cpu"]


def test_a_task_first_seen_by_update_running_runs_from_the_start_to_the_window_end() -> None:
    from simcore.traces.google2011 import K_ORPHAN_UPDATE

    # (4,0) has been running since before the part (a long-running service): only an UPDATE_RUNNING shows it.
    text = PART + _row(1100, 4, 0, 8, cpu=0.3, mem=0.2).encode()
    res = read_google2011([text])
    wl = res.workload
    np.testing.assert_allclose(wl.work, [50, 30, 80, 100])
    np.testing.assert_allclose(wl.request[-1], [0.3, 0.2])
    assert res.report.kept_notes[K_ORPHAN_UPDATE] == 1


def test_update_running_of_an_unseen_task_is_ignored_with_drop() -> None:
    text = PART + _row(1100, 4, 0, 8, cpu=0.3, mem=0.2).encode()
    assert read_google2011([text], running_at_start="drop").workload.n_jobs == 1
