"""Jobs made of tasks in the project's CSV trace: the job, task and parents columns, and Google 2011's job IDs."""

from __future__ import annotations

import io
import json
from pathlib import Path

import numpy as np
import pytest

from simcore.api import run_objects
from simcore.cli import main
from simcore.clusterfile import read_cluster
from simcore.core.errors import InputError
from simcore.traces.google2011 import read_google2011
from simcore.traces.importer import import_trace
from simcore.traces.tracefile import read_trace, write_trace
from tests.conftest import shared_data

GOOGLE = Path(__file__).resolve().parents[1] / "data" / "google2011"

DAG = """\
submit_s,duration_s,cores,job,task,parents
0.0,5.0,1,7,merge,left right
0.0,10.0,1,7,split,
0.0,30.0,2,7,left,split
0.0,50.0,1,7,right,split
1.0,3.0,1,2,a,
"""


def _read(text: str) -> object:
    f = io.BytesIO(text.encode())
    f.name = "t.csv"
    return read_trace(f)


def _err(text: str) -> str:
    with pytest.raises(InputError) as e:
        _read(text)
    return str(e.value)


def test_a_job_column_groups_rows_into_bags_of_tasks() -> None:
    wl = read_trace(io.BytesIO(b"submit_s,duration_s,cpu,job\n0,4,1,30\n1,5,1,10\n2,6,1,30\n"))
    assert wl.graph is not None and wl.graph.n_edges == 0
    assert wl.graph.job_of.tolist() == [0, 1, 0] and wl.graph.job_ids is not None
    assert wl.graph.job_ids.tolist() == [30, 10] and wl.params["task_jobs"] == 2


def test_task_and_parents_columns_make_a_dag_with_parents_first() -> None:
    wl = _read(DAG)
    g = wl.graph  # type: ignore[attr-defined]
    assert wl.work.tolist() == [10.0, 30.0, 50.0, 5.0, 3.0]  # type: ignore[attr-defined]
    assert [g.parents_of(t).tolist() for t in range(5)] == [[], [0], [0], [1, 2], []]
    assert g.job_ids.tolist() == [7, 2] and g.critical_path(wl.work).tolist() == [65.0, 3.0]  # type: ignore[attr-defined]
    assert wl.params["sorted_on_read"] is True  # type: ignore[attr-defined]


def test_a_dag_trace_written_and_read_back_keeps_its_jobs_and_edges() -> None:
    wl = _read(DAG)
    buf = io.StringIO()
    write_trace(wl, buf)  # type: ignore[arg-type]
    text = buf.getvalue()
    assert "submit_s,duration_s,cores,job,task,parents\n0.0,10.0,1.0,7,0,\n" in text
    assert "0.0,5.0,1.0,7,3,1 2\n" in text
    back = _read(text)
    for name in ("job_of", "parent_ptr", "parents", "job_ids"):
        np.testing.assert_array_equal(getattr(back.graph, name), getattr(wl.graph, name))  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "submit_s,duration_s,cpu,job,parents\n0,1,1,0,\n",
            "t.csv, line 1: a parents column needs a task column (parents are task ids)",
        ),
        (
            "submit_s,duration_s,cpu,task\n0,1,1,a\n",
            "t.csv, line 1, column 'task': a task column needs a job column (tasks belong to jobs)",
        ),
        (
            "submit_s,duration_s,cpu,job,task,parents\n0,1,1,0,a,\n0,1,1,0,b,c\n",
            "t.csv, line 3, column 'parents': parent 'c' is not a task of job 0",
        ),
        (
            "submit_s,duration_s,cpu,job,task,parents\n0,1,1,0,a,\n0,1,1,1,b,a\n",
            "t.csv, line 3, column 'parents': parent 'a' is not a task of job 1",
        ),
        (
            "submit_s,duration_s,cpu,job,task,parents\n0,1,1,0,a,\n0,1,1,0,a,\n",
            "t.csv, line 3, column 'task': task 'a' appears twice in job 0 (first on line 2)",
        ),
        (
            "submit_s,duration_s,cpu,job,task,parents\n0,1,1,0,a,b\n0,1,1,0,b,a\n",
            "t.csv, line 2: task 'a' of job 0: the parents form a cycle: 'a' (line 2) -> 'b' (line 3) -> 'a' (line 2)",
        ),
        (
            "submit_s,duration_s,cpu,job,task,parents\n5,1,1,0,a,\n1,1,1,0,b,a\n",
            "t.csv, line 3: task 'b' of job 0: its parent 'a' (line 2) is submitted later (5 s)",
        ),
        ("submit_s,duration_s,cpu,job\n0,1,1,1.5\n", "t.csv, line 2, column 'job': job id must be an integer"),
        ("submit_s,duration_s,cpu,job\n0,1,1,-1\n", "t.csv, line 2, column 'job': job id must be an integer"),
        ("submit_s,duration_s,cpu,job\n0,1,1,x\n", "t.csv, line 2, column 'job': not a number: 'x'"),
        (
            "submit_s,duration_s,cpu,job,task\n0,1,1,0,\n",
            "t.csv, line 2, column 'task': empty task id",
        ),
        (
            'submit_s,duration_s,cpu,job,task\n0,1,1,0,"a b"\n',
            "t.csv, line 2, column 'task': task id 'a b' contains a space (parents are separated by spaces)",
        ),
    ],
)
def test_each_bad_task_column_names_the_line_and_column(text: str, message: str) -> None:
    assert _err(text).startswith(message), _err(text)


# -- Google 2011: every task of a job stays together -------------------------------------------------------------


def test_google_task_instances_keep_their_job_id() -> None:
    # The crafted part: kept instances are job 1 task 0 (0-50 s) and task 1 (running, cut at 80 s), job 2 task 0
    # twice (failed after 25 s, resubmitted, 20 s) and job 5 task 0 (evicted after 10 s); jobs 3 and 4 never ran.
    res = read_google2011([GOOGLE / "task_events.csv"])
    g = res.workload.graph
    assert g is not None and g.job_ids is not None
    assert g.job_ids.tolist() == [1, 2, 5] and g.job_of.tolist() == [0, 0, 1, 1, 2]
    assert res.workload.work.tolist() == [50.0, 80.0, 25.0, 20.0, 10.0]
    assert g.critical_path(res.workload.work).tolist() == [80.0, 25.0, 10.0]


def test_google_import_writes_the_job_column_and_runs_give_job_metrics(tmp_path: Path) -> None:
    res = import_trace("google2011", [GOOGLE / "task_events.csv"])
    write_trace(res.workload, tmp_path / "trace.csv")
    text = (tmp_path / "trace.csv").read_text()
    assert text.splitlines()[3] == "submit_s,duration_s,cpu,mem,job"
    wl = read_trace(tmp_path / "trace.csv")
    assert wl.graph is not None and wl.graph.job_ids is not None and wl.graph.job_ids.tolist() == [1, 2, 5]
    s = run_objects(res.cluster, wl, "greedy", 0, drain=True).summary  # type: ignore[arg-type]
    # Job 1's tasks both start at 0: its makespan is its longer task; job 2 waits for nothing either.
    assert s["task_jobs"] == 3 and s["task_jobs_finished"] == 3 and s["mean_jwt_s"] == 0.0
    assert s["mean_jms_s"] == pytest.approx((80.0 + (41.0 + 20.0 - 10.0) + 10.0) / 3)


@pytest.mark.slow
def test_the_shared_google_part_keeps_every_task_of_a_job_together(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    jobs = shared_data("google-clusterdata-2011-2", "job_events", "part-00000-of-00500.csv.gz")
    rc = main(["import", "--format", "google2011", str(part), "--job-events", str(jobs), "--out", str(tmp_path)])
    assert rc == 0
    s = json.loads(capsys.readouterr().out)
    wl = read_trace(tmp_path / "trace.csv")
    g = wl.graph
    assert g is not None and g.job_ids is not None and wl.n_jobs == s["jobs"] == 189_994
    column = np.loadtxt(tmp_path / "trace.csv", delimiter=",", comments="#", skiprows=4, usecols=4, dtype=np.int64)
    # The job column holds the Google job IDs the reader paired with job_events: one job per distinct ID.
    assert g.n_jobs == len(np.unique(column)) == s["job_events"]["jobs_with_tasks_kept"]
    np.testing.assert_array_equal(g.job_ids[g.job_of], column)
    # Jobs are numbered by their first task: the first tasks of successive jobs arrive in order.
    first = np.full(g.n_jobs, np.inf)
    np.minimum.at(first, g.job_of, wl.submit)
    assert (np.diff(first) >= 0).all()
    assert int(g.job_size.max()) > 1 and wl.params["task_jobs"] == g.n_jobs
    assert read_cluster(tmp_path / "cluster.json").n_machines > 0
