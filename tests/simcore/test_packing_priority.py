"""Production-priority snapshots of the Google 2011 trace (the paper kept production work only)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster
from simcore.packing.sources import from_google2011, from_trace
from simcore.traces.google2011 import PRODUCTION_PRIORITY, read_google2011
from simcore.traces.importer import read_against
from simcore.traces.tracefile import read_trace, read_trace_with_priority, write_trace
from tests.simcore.test_packing_cli import _run

OFFSET_US = 600_000_000
CLUSTER = Cluster("one", ("cpu", "mem"), ("m",), np.array([4]), np.array([[1.0, 1.0]]))


def _row(t_s: float, job: int, ev: int, priority: int, cpu: float = 0.1) -> str:
    t = 0 if t_s == 0 else OFFSET_US + int(round(t_s * 1e6))
    return f"{t},,{job},0,7,{ev},user,0,{priority},{cpu},0.1,0.0,0\n"


#: Four tasks, SUBMIT then SCHEDULE at 10 s, priorities 0, 8, 9 and 11; the priority-0 one ends at 20 s.
EVENTS = "".join(
    [_row(5, j, 0, p, cpu=0.1 * (j + 1)) for j, p in enumerate((0, 8, 9, 11))]
    + [_row(10, j, 1, p, cpu=0.1 * (j + 1)) for j, p in enumerate((0, 8, 9, 11))]
    + [_row(20, 0, 4, 0)]
)


def test_production_is_priority_nine_and_above() -> None:
    assert PRODUCTION_PRIORITY == 9


def test_only_tasks_of_the_minimum_priority_or_more_are_read() -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0, min_priority=9)
    assert sorted(res.workload.request[:, 0].round(6).tolist()) == [0.3, 0.4]
    assert res.report.extra["rows_ignored"]["rows of tasks below priority 9"] == 5  # 2 + 2 + the FINISH
    assert any("priority >= 9" in n for n in res.report.notes)


def test_without_a_minimum_every_priority_is_read() -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0)
    assert res.workload.n_jobs == 4


def test_a_production_snapshot_holds_the_production_tasks_running_at_t(tmp_path: Path) -> None:
    f = tmp_path / "task_events.csv"
    f.write_text(EVENTS)
    snap = from_google2011([str(f)], CLUSTER, 15.0, min_priority=PRODUCTION_PRIORITY)
    assert sorted(snap.request[:, 0].round(6).tolist()) == [0.3, 0.4]
    assert snap.meta["min_priority"] == 9 and snap.n_pending == 2


def test_a_non_integer_minimum_priority_is_refused() -> None:
    with pytest.raises(ParameterError, match="min_priority must be an integer, got 9.5"):
        read_google2011([EVENTS.encode()], cluster=CLUSTER, min_priority=9.5)  # type: ignore[arg-type]


def test_the_cli_refuses_a_minimum_priority_without_a_trace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = _run(
        capsys, "packing", "utilisation", "--workload", "google-like", "--scheduler", "greedy", "--min-priority", "9"
    )
    assert code == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()] and "--min-priority applies to --trace" in err


def test_the_cli_reads_a_production_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    f = tmp_path / "task_events.csv"
    f.write_text(EVENTS)

    code, out, _ = _run(
        capsys,
        "packing",
        "utilisation",
        "--trace",
        str(f),
        "--time",
        "15",
        "--min-priority",
        "9",
        "--cluster",
        "google-2011",
    )
    assert code == 0
    summary = json.loads(out)
    assert summary["tasks"] == 2 and summary["snapshot"]["min_priority"] == 9


# ---------------------------------------------------------------------------- priorities kept by an import (issue 28)


def test_an_import_keeps_each_tasks_priority_in_the_workloads_order() -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0)
    assert res.priority is not None
    # Job j requests 0.1 (j + 1) cpu and has priority (0, 8, 9, 11)[j].
    by_cpu = dict(zip(res.workload.request[:, 0].round(6).tolist(), res.priority.tolist(), strict=True))
    assert by_cpu == {0.1: 0, 0.2: 8, 0.3: 9, 0.4: 11}


def test_the_priority_column_is_written_and_read_back_beside_the_workload() -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0)
    buf = io.BytesIO()
    write_trace(res.workload, buf, priority=res.priority)
    assert buf.getvalue().decode().splitlines()[3].endswith(",priority,job")
    wl, priority = read_trace_with_priority(io.BytesIO(buf.getvalue()), resources=("cpu", "mem"))
    assert priority is not None and priority.tolist() == res.priority.tolist()
    # A simulation reads the same file without it (not a resource).
    assert read_trace(io.BytesIO(buf.getvalue())).resources == ("cpu", "mem")


def test_a_bad_priority_names_its_line_and_column() -> None:
    text = "submit_s,duration_s,cpu,mem,priority\n0,1,0.1,0.1,9\n1,1,0.1,0.1,2.5\n"
    with pytest.raises(InputError, match="line 3.*priority.*integer from -1") as e:
        read_trace(io.BytesIO(text.encode()))
    assert e.value is not None


def test_a_trace_snapshot_keeps_the_production_tasks_like_the_google_snapshot(tmp_path: Path) -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0)
    snap = from_trace(res.workload, CLUSTER, 15.0, priority=res.priority, min_priority=PRODUCTION_PRIORITY)
    f = tmp_path / "task_events.csv"
    f.write_text(EVENTS)
    google = from_google2011([str(f)], CLUSTER, 15.0, min_priority=PRODUCTION_PRIORITY)
    assert sorted(snap.request[:, 0].round(6).tolist()) == sorted(google.request[:, 0].round(6).tolist())
    # The import's window opens at the first event (5 s): the priority-0 task, ending at 20 s, has ended by
    # 15 s of the window; the priority-8 one is the one left out.
    assert snap.meta["min_priority"] == 9 and snap.meta["below_min_priority"] == 1


def test_a_trace_without_priorities_cannot_be_filtered_by_priority() -> None:
    res = read_google2011([EVENTS.encode()], cluster=CLUSTER, end_s=30.0)
    with pytest.raises(ParameterError, match="records no task priorities"):
        from_trace(res.workload, CLUSTER, 15.0, min_priority=9)


def test_a_google_import_without_machines_was_read_against_the_google_preset() -> None:
    assert read_against("google2011", ("cpu", "mem")) == "google-2011"
    assert read_against("csv", ("cpu", "mem")) == "google-2011"
    assert read_against("csv", ("cores",)) is None
    assert read_against("swf", ("cpu",)) is None  # SWF imports derive their machines
