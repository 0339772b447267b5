"""A workload with no jobs (issue 25, item 7): a clear one-line error, never a numpy traceback.

A short window at a low load can draw no arrival at all; a trace cut to a window before its first
job keeps none. Both used to end in ``ValueError: cannot reshape array of size 0`` from the model.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from simcore import api
from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, Workload
from simcore.dse.explore.pool import build
from simcore.presets import CLUSTERS
from simcore.traces.tracefile import write_trace

SIMCORE = Path(sys.executable).with_name("simcore")
EMPTY = "the workload 'workflows' generated no jobs in 0.05 h at load 0.5; raise hours or load (seed 0)"
ARGS = ("--cluster", "dse-2020", "--machines", "8", "--workload", "workflows", "--load", "0.5", "--hours", "0.05")


def test_a_workload_without_jobs_takes_its_request_width_from_its_resources() -> None:
    wl = Workload("none", ("cpu", "mem"), submit=[], request=[], work=[], job_class=[], horizon_s=60.0)
    assert wl.n_jobs == 0 and wl.request.shape == (0, 2)


def test_a_preset_that_draws_no_job_is_a_parameter_error_naming_hours_and_load() -> None:
    cluster = CLUSTERS.get("dse-2020").build(machines=8)
    with pytest.raises(ParameterError) as e:
        api.resolve_workload("workflows", cluster, 0, load=0.5, hours=0.05)
    assert str(e.value) == EMPTY


def test_the_same_preset_over_a_longer_window_draws_jobs() -> None:
    cluster = CLUSTERS.get("dse-2020").build(machines=8)
    assert api.resolve_workload("workflows", cluster, 0, load=0.5, hours=2.0).n_jobs > 0


def test_a_search_scenario_without_jobs_is_refused_with_the_same_message() -> None:
    scenario = {
        "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
        "workload": {"preset": "workflows", "params": {}},
        "load": 0.5,
        "hours": 0.05,
    }
    with pytest.raises(ParameterError) as e:
        build(scenario, 0)
    assert str(e.value) == EMPTY


def test_a_trace_cut_before_its_first_job_is_refused(tmp_path: Path) -> None:
    wl = Workload("late", ("cpu", "mem"), [100.0, 200.0], [[0.5, 0.5]] * 2, [10.0] * 2, [-1] * 2, horizon_s=300.0)
    trace = tmp_path / "late.csv"
    write_trace(wl, trace)
    cluster = Cluster("one", ("cpu", "mem"), ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    with pytest.raises(ParameterError) as e:
        api.resolve_workload(str(trace), cluster, 0, hours=0.01)
    assert str(e.value) == f"trace file {str(trace)!r} has no jobs in its first 0.01 h; raise hours"


@pytest.mark.skipif(not SIMCORE.exists(), reason="the simcore script is not installed next to python")
@pytest.mark.parametrize("command", [("run", "--scheduler", "greedy", "--drain"), ("explore", "--generations", "1")])
def test_the_command_line_prints_one_line_and_exits_2(command: tuple[str, ...]) -> None:
    p = subprocess.run([str(SIMCORE), command[0], *ARGS, *command[1:]], capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == f"simcore: error: {EMPTY}\n"
