"""The command line on jobs made of tasks: presets listed, runs print TRT/JMS/NJSL/JWT, WfCommons import and run."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simcore.cli import main
from simcore.traces.tracefile import read_trace

SIMCORE = Path(sys.executable).with_name("simcore")
DATA = Path(__file__).resolve().parents[1] / "data" / "wfcommons"
DAG_KEYS = ("task_jobs", "task_jobs_finished", "mean_trt_s", "mean_jms_s", "mean_njsl", "mean_jwt_s")


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    rc = main(list(argv))
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 and out.strip().startswith("{") else out), err


def test_presets_lists_the_dse_cluster_and_the_workflow_workloads(capsys: pytest.CaptureFixture[str]) -> None:
    rc, data, _ = _run(capsys, "presets", "--json")
    assert rc == 0
    assert "dse-2020" in {c["name"] for c in data["clusters"]}
    work = {w["name"]: w for w in data["workloads"]}
    assert work["workflows"]["default_cluster"] == "dse-2020" and "workflows-short-long" in work
    assert {p["name"] for p in work["workflows"]["params"]} >= {"shape", "min_tasks", "max_tasks", "arrival"}


def test_run_on_the_workflow_generator_prints_the_job_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    rc, s, _ = _run(
        capsys,
        *("run", "--cluster", "dse-2020", "--workload", "workflows", "--scheduler", "greedy"),
        *("--machines", "16", "--max-tasks", "8", "--hours", "0.5", "--drain"),
    )
    assert rc == 0 and s["machines"] == 16 and s["task_jobs"] == s["task_jobs_finished"] > 0
    assert all(s[k] is not None for k in DAG_KEYS) and s["mean_njsl"] >= 1.0


def test_run_on_a_wfcommons_file_runs_it_to_the_end(capsys: pytest.CaptureFixture[str]) -> None:
    wf = DATA / "helloworld-chain-5-chameleon.json"
    rc, s, _ = _run(capsys, "run", "--cluster", "dse-2020", "--workload", str(wf), "--scheduler", "greedy")
    # A chain on an idle cluster: each task starts when its parent ends, on the first (4.1 GHz) machine.
    assert rc == 0 and s["task_jobs_finished"] == 1 and s["completed"] == 5
    assert s["mean_jms_s"] == pytest.approx(501.24) and s["mean_njsl"] == pytest.approx(1.0)


def test_a_wfcommons_file_on_a_cluster_without_cores_is_a_one_line_error() -> None:
    wf = DATA / "diamond-v1.5.json"
    p = subprocess.run(
        [str(SIMCORE), "run", "--cluster", "google-2011", "--workload", str(wf), "--scheduler", "greedy"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr == (
        "simcore: error: WfCommons tasks request 'cores'; cluster 'google-2011' has ['cpu', 'mem'] "
        "(use a cluster with a cores resource, e.g. dse-2020)\n"
    )


def test_import_replays_instances_as_a_stream_with_job_and_parents_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(DATA / "diamond-v1.5.json"), str(DATA / "chain-v1.3.json")]
    rc, s, _ = _run(
        capsys,
        *("import", "--format", "wfcommons", *files, "--jobs", "3", "--arrival", "fixed", "--interarrival", "60"),
        *("--out", str(tmp_path)),
    )
    assert rc == 0 and s["jobs"] == 12 and s["task_jobs"] == 3 and s["cluster"]["name"] == "dse-2020"
    wl = read_trace(tmp_path / "trace.csv")
    assert wl.graph is not None and wl.graph.job_size.tolist() == [4, 4, 4] and wl.graph.n_edges == 10
    assert sorted(set(wl.submit.tolist())) == [0.0, 60.0, 120.0] and wl.horizon_s == 180.0
    rc, run, _ = _run(
        capsys,
        *("run", "--cluster", str(tmp_path / "cluster.json"), "--workload", str(tmp_path / "trace.csv")),
        *("--scheduler", "greedy", "--drain"),
    )
    # Idle cluster: every job runs in its critical path (8, 10.5, 8 s).
    assert rc == 0 and run["mean_jms_s"] == pytest.approx((8 + 10.5 + 8) / 3)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--arrival", "poisson"],
            "simcore: error: --arrival poisson needs --interarrival (mean seconds between jobs)\n",
        ),
        (
            ["--format", "swf", "--jobs", "2"],
            "simcore: error: --jobs, --arrival and --interarrival apply to --format wfcommons only\n",
        ),
    ],
)
def test_import_refuses_stream_options_that_do_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    fmt = [] if "--format" in argv else ["--format", "wfcommons"]
    rc, _, err = _run(capsys, "import", *fmt, str(DATA / "diamond-v1.5.json"), *argv, "--out", str(tmp_path))
    assert rc == 2 and err == message


def test_import_of_a_bad_instance_names_the_json_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    doc = json.loads((DATA / "diamond-v1.5.json").read_text())
    doc["workflow"]["specification"]["tasks"][1]["parents"] = ["d"]
    bad.write_text(json.dumps(doc))
    rc, _, err = _run(capsys, "import", "--format", "wfcommons", str(bad), "--out", str(tmp_path / "o"))
    assert rc == 2
    assert err == (
        f"simcore: error: {bad}: workflow.specification.tasks[0] (id 'd'): the parents form a cycle: "
        "'d' -> 'a' -> 'b' -> 'd'\n"
    )
    assert not (tmp_path / "o").exists()
