"""`simcore import`: files that `simcore run` accepts, the JSON summary, classes, bad input, real extracts."""

from __future__ import annotations

import dataclasses
import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simcore import cli
from simcore.api import cut_to_hours, run_objects
from simcore.clusterfile import read_cluster
from simcore.core.model import Cluster, Workload
from simcore.schedulers import SCHEDULERS
from simcore.traces.importer import classify, import_trace
from simcore.traces.tracefile import read_trace
from tests.conftest import shared_data

DATA = Path(__file__).resolve().parents[1] / "data"
TASKS = DATA / "google2011" / "task_events.csv"
JOBS = DATA / "google2011" / "job_events.csv"
MACHINES = DATA / "google2011" / "machine_events.csv"
SWF = DATA / "swf" / "small.swf"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data"
GOOGLE = SHARED / "google-clusterdata-2011-2"
NASA = SHARED / "pwa-swf" / "NASA-iPSC-1993-3.1-cln.swf.gz"

SCHEDULERS_TO_RUN = [s for s in ("greedy", "tetris", "lotes", "mris") if s in SCHEDULERS]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 and out.strip() else out), err


def test_import_writes_a_trace_and_cluster_that_run_accepts(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, s, _ = _cli(
        capsys,
        "import",
        "--format",
        "google2011",
        str(TASKS),
        "--job-events",
        str(JOBS),
        "--machine-events",
        str(MACHINES),
        "--out",
        str(tmp_path),
    )
    assert rc == 0
    # The worked example of test_traces_google2011: five task instances, two dropped.
    assert s["jobs"] == 5 and s["time_span_s"] == [0.0, 65.0] and s["horizon_s"] == 80.0
    assert s["requests"]["cpu"] == {"min": 0.05, "mean": pytest.approx(0.21), "max": 0.4}
    assert s["duration_s"]["max"] == 80.0
    assert sum(s["dropped"].values()) == 2 and s["rows_skipped"] == {}
    assert s["cluster"] == {"name": "google-2011-machines", "machines": 4, "configurations": 2}
    wl = read_trace(tmp_path / "trace.csv")
    np.testing.assert_allclose(wl.submit, [0, 0, 10, 41, 65])
    np.testing.assert_allclose(wl.work, [50, 80, 25, 20, 10])
    assert read_cluster(tmp_path / "cluster.json").counts.tolist() == [3, 1]
    # Every job fits at once on the 4 machines: greedy starts each on arrival; all end by t = 80.
    rc, r, _ = _cli(
        capsys,
        "run",
        "--cluster",
        str(tmp_path / "cluster.json"),
        "--workload",
        str(tmp_path / "trace.csv"),
        "--scheduler",
        "greedy",
    )
    assert rc == 0 and r["jobs"] == 5 and r["completed"] == 5 and r["mean_response_s"] == 0.0


def test_a_dataset_directory_finds_its_task_job_and_machine_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "clusterdata"
    for sub, src in (("task_events", TASKS), ("job_events", JOBS), ("machine_events", MACHINES)):
        (root / sub).mkdir(parents=True)
        (root / sub / "part-00000-of-00001.csv.gz").write_bytes(gzip.compress(src.read_bytes()))
    rc, s, _ = _cli(capsys, "import", "--format", "google2011", str(root), "--out", str(tmp_path / "out"))
    assert rc == 0 and s["jobs"] == 5
    assert s["cluster"]["machines"] == 4
    assert s["job_events"]["jobs_submitted"] == 4


def test_csv_reimport_cuts_the_window_and_classifies_deterministically(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _cli(capsys, "import", "--format", "google2011", str(TASKS), "--out", str(tmp_path / "a"))[0] == 0
    outs = []
    for d in ("b", "c"):
        rc, s, _ = _cli(
            capsys,
            "import",
            "--format",
            "csv",
            str(tmp_path / "a" / "trace.csv"),
            "--start",
            "5",
            "--end",
            "70",
            "--classes",
            "2",
            "--seed",
            "3",
            "--out",
            str(tmp_path / d),
        )
        assert rc == 0
        outs.append(s)
    # Jobs submitted in [5, 70): at 10, 41 and 65, shifted by 5.
    assert outs[0]["jobs"] == 3 and outs[0]["time_span_s"] == [5.0, 60.0] and outs[0]["horizon_s"] == 65.0
    assert outs[0]["dropped"] == {"submitted before the window's start": 2}
    classes = json.loads((tmp_path / "b" / "classes.json").read_text())
    assert len(classes["classes"]) == 2
    assert sum(c["proportion"] for c in classes["classes"]) == pytest.approx(1.0)
    assert (tmp_path / "b" / "classes.json").read_text() == (tmp_path / "c" / "classes.json").read_text()
    assert (tmp_path / "b" / "trace.csv").read_text() == (tmp_path / "c" / "trace.csv").read_text()
    wl = read_trace(tmp_path / "b" / "trace.csv")
    assert sorted(set(wl.job_class.tolist())) == [0, 1]


def test_swf_import_from_the_command_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, s, _ = _cli(capsys, "import", "--format", "swf", str(SWF), "--out", str(tmp_path), "--gzip")
    assert rc == 0 and s["jobs"] == 3 and s["cluster"]["machines"] == 1
    assert s["written"]["trace"].endswith("trace.csv.gz")
    assert read_trace(tmp_path / "trace.csv.gz").n_jobs == 3


def test_bad_input_exits_2_with_file_and_line_or_is_skipped_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "task_events.csv.gz"
    bad.write_bytes(gzip.compress(TASKS.read_bytes())[:-30])
    rc, _, err = _cli(capsys, "import", "--format", "google2011", str(bad), "--out", str(tmp_path / "o"))
    assert rc == 2 and "Traceback" not in err
    assert str(bad) in err and "line" in err and "truncated" in err
    rc, s, _ = _cli(
        capsys, "import", "--format", "google2011", str(bad), "--on-error", "skip", "--out", str(tmp_path / "o")
    )
    assert rc == 0 and s["rows_skipped"] == {"truncated gzip file": 1}
    rc, _, err = _cli(capsys, "import", "--format", "google2011", str(TASKS), "--start", "50", "--end", "10")
    assert rc == 2 and "--end" in err
    rc, _, err = _cli(capsys, "import", "--format", "csv", str(TASKS), "--out", str(tmp_path / "o"))
    assert rc == 2 and "header" in err  # a Google file is not a project CSV


def test_classes_are_a_function_of_the_seed() -> None:
    res = import_trace("swf", [SWF])
    a = classify(res, 2, seed=5)
    b = classify(res, 2, seed=5)
    np.testing.assert_array_equal(a.workload.job_class, b.workload.job_class)
    assert a.workload.classes is not None and a.workload.classes.n_classes == 2
    assert res.workload.classes is None  # the input result is left as it was


# -- the real extracts, end to end ------------------------------------------------------------------------


def _thin(wl: Workload, cluster: Cluster, step: int, hours: float) -> tuple[Workload, Cluster]:
    """Every ``step``-th job on a cluster with ``1/step`` of the machines: the same load, ``step`` times faster."""
    sel = np.arange(0, wl.n_jobs, step)
    # Thinned tasks no longer make whole jobs: run them as independent units (graph=None).
    sub = dataclasses.replace(
        wl, submit=wl.submit[sel], request=wl.request[sel], work=wl.work[sel], job_class=wl.job_class[sel], graph=None
    )
    small = Cluster(
        f"{cluster.name}/{step}",
        cluster.resources,
        cluster.config_names,
        np.maximum(cluster.counts // step, 1),
        cluster.capacity,
    )
    return cut_to_hours(sub, hours), small


def _assert_sane(outcome: Any, wl: Workload) -> None:
    s, r = outcome.summary, outcome.result
    assert 0 < s["completed"] <= s["jobs"] == wl.n_jobs
    started = r.started_mask
    assert np.isfinite(r.start[started] - r.submit[started]).all()
    assert (r.start[started] >= r.submit[started]).all()
    done = r.completed_mask
    np.testing.assert_allclose(r.finish[done] - r.start[done], wl.work[done], atol=1e-6)
    assert np.isfinite(s["mean_response_s"]) and s["mean_response_s"] >= 0


@pytest.mark.slow
def test_google_part_0_imports_classifies_and_runs_every_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    part = shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    rc, s, _ = _cli(
        capsys,
        "import",
        "--format",
        "google2011",
        str(part),
        "--job-events",
        str(GOOGLE / "job_events" / "part-00000-of-00500.csv.gz"),
        "--classes",
        "4",
        "--out",
        str(tmp_path),
    )
    assert rc == 0
    assert s["jobs"] == 189_994 and s["time_span_s"] == [0.0, pytest.approx(4979.679674)]
    assert s["rows_read"] == {"task_events": 450_146, "job_events": 10_704} and s["rows_skipped"] == {}
    assert sum(s["dropped"].values()) == 76 + 11_421
    assert len(s["classes"]) == 4 and sum(c["proportion"] for c in s["classes"]) == pytest.approx(1.0)
    wl = read_trace(tmp_path / "trace.csv")
    cluster = read_cluster(tmp_path / "cluster.json")
    assert wl.n_jobs == 189_994 and sorted(set(wl.job_class.tolist())) == [0, 1, 2, 3]
    from simcore.workloads.classify import kmeans_classes

    labels, table = kmeans_classes(wl, 4, 24 * 3600.0, np.random.default_rng(0), n_configs=cluster.n_configs)
    np.testing.assert_array_equal(labels, wl.job_class)  # the file holds the seed-0 classes
    wl.classes = table
    thin, small = _thin(wl, cluster, 25, 1 / 6)
    for name in SCHEDULERS_TO_RUN:
        _assert_sane(run_objects(small, thin, name, 0), thin)


@pytest.mark.slow
def test_the_nasa_swf_log_imports_classifies_and_runs_every_scheduler(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared_data("pwa-swf", "NASA-iPSC-1993-3.1-cln.swf.gz")
    rc, s, _ = _cli(
        capsys,
        "import",
        "--format",
        "swf",
        str(NASA),
        "--classes",
        "4",
        "--class-window-hours",
        "168",
        "--out",
        str(tmp_path),
    )
    assert rc == 0 and s["jobs"] == 18_239 and s["dropped"] == {}
    wl = read_trace(tmp_path / "trace.csv")
    cluster = read_cluster(tmp_path / "cluster.json")
    res = classify(import_trace("swf", [NASA]), 4, window_hours=168)
    np.testing.assert_array_equal(res.workload.job_class, wl.job_class)
    ten_days = cut_to_hours(res.workload, 240)
    for name in SCHEDULERS_TO_RUN:
        out = run_objects(cluster, ten_days, name, 0)
        _assert_sane(out, ten_days)
        if name == "greedy":
            # The log's submit times are its start times (header note), so the recorded schedule fits the
            # 128 processors and a scheduler that starts every job that fits never makes one wait.
            assert out.summary["max_response_s"] == 0.0


def test_a_run_on_an_imported_trace_uses_the_class_table_written_beside_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from simcore.api import resolve_workload

    rc, _, _ = _cli(
        capsys,
        "import",
        "--format",
        "google2011",
        str(TASKS),
        "--machine-events",
        str(MACHINES),
        "--classes",
        "2",
        "--seed",
        "3",
        "--out",
        str(tmp_path),
    )
    assert rc == 0
    cluster = read_cluster(tmp_path / "cluster.json")
    table = json.loads((tmp_path / "classes.json").read_text())["table"]
    wl = resolve_workload(str(tmp_path / "trace.csv"), cluster, seed=0)
    assert wl.classes is not None
    assert list(wl.classes.names) == table["names"]
    np.testing.assert_allclose(wl.classes.proportions, table["proportions"])
    # Without classes.json the same trace has no table (the allocation LP then pools all jobs in one class).
    (tmp_path / "classes.json").unlink()
    assert resolve_workload(str(tmp_path / "trace.csv"), cluster, seed=0).classes is None


def test_a_class_window_with_fewer_classes_than_asked_warns_in_the_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Issue 17: --classes 4 on a window of 4 jobs found 2 classes without a word.
    trace = tmp_path / "t.csv"
    rows = ["0,10,0.1,0.1", "1,10,0.1,0.1", "2,10,0.3,0.3", "3,10,0.3,0.3", "7200,10,0.5,0.5", "7201,10,0.7,0.7"]
    trace.write_text("submit_s,duration_s,cpu,mem\n" + "\n".join(rows) + "\n")
    rc, s, _ = _cli(
        capsys, "import", "--format", "csv", str(trace), "--classes", "4", "--class-window-hours", "1",
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert rc == 0
    c = s["classification"]
    assert c["k"] == 4 and c["found"] == 2
    assert c["warning"] == "4 classes asked for, 2 found: the training jobs have fewer distinct requests"


def test_a_class_window_holding_fewer_jobs_than_classes_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    trace = tmp_path / "t.csv"
    rows = ["0,10,0.1,0.1", "1,10,0.3,0.3", "7200,10,0.5,0.5", "7201,10,0.7,0.7"]
    trace.write_text("submit_s,duration_s,cpu,mem\n" + "\n".join(rows) + "\n")
    rc, s, _ = _cli(
        capsys, "import", "--format", "csv", str(trace), "--classes", "4", "--class-window-hours", "1",
        "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert rc == 0
    assert s["classification"]["warning"] == "the 1 h window holds only 2 job(s); the first 4 jobs trained"
