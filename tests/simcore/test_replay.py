"""``--load`` on a trace file replays it at that rate (issue 17: it used to be ignored but echoed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcore import api
from simcore.cli import main
from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, Workload
from simcore.traces.tracefile import write_trace

CLUSTER = Cluster("one", ("cpu", "mem"), ("a",), np.array([1]), np.array([[1.0, 1.0]]))


@pytest.fixture()
def trace(tmp_path: Path) -> Path:
    wl = Workload(
        "t",
        ("cpu", "mem"),
        submit=[0.0, 30.0, 60.0],
        request=[[0.5, 0.5]] * 3,
        work=[10.0] * 3,
        job_class=[-1] * 3,
        horizon_s=120.0,
    )
    p = tmp_path / "trace.csv"
    write_trace(wl, p)
    return p


def test_a_rate_divides_the_inter_arrival_times_and_the_window(trace: Path) -> None:
    wl = api.resolve_workload(str(trace), CLUSTER, 0, load=1.5)
    assert wl.submit.tolist() == [0.0, 20.0, 40.0]
    assert wl.horizon_s == 80.0
    assert wl.work.tolist() == [10.0] * 3  # the same jobs, arriving faster
    assert wl.params["replay_rate"] == 1.5


def test_without_a_load_the_trace_runs_as_recorded(trace: Path) -> None:
    wl = api.resolve_workload(str(trace), CLUSTER, 0)
    assert wl.submit.tolist() == [0.0, 30.0, 60.0]
    assert "replay_rate" not in wl.params


def test_a_non_positive_rate_is_refused(trace: Path) -> None:
    with pytest.raises(ParameterError, match="load must be a positive number"):
        api.resolve_workload(str(trace), CLUSTER, 0, load=0.0)


def test_the_run_summary_records_the_replay_rate(trace: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(["run", "--cluster", "google-2011", "--workload", str(trace), "--scheduler", "greedy", "--load", "2"]) == 0
    )
    s = json.loads(capsys.readouterr().out)
    assert s["replay_rate"] == 2.0 and s["load"] == 2.0
    assert s["hours"] == pytest.approx(60.0 / 3600)
    assert s["arrival_rate"] == pytest.approx(3 / 60.0)
