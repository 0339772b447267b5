"""Scenarios, the compact per-job format, experiment archives and `simcore rerun`."""

from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest

from simcore import api, archive
from simcore.cli import main
from simcore.core.errors import InputError, ParameterError, UnknownNameError
from simcore.scenario import run_scenario, validate_scenario

SCENARIO = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 0.5,
    "drain": False,
    "schedulers": ["greedy", "fcfs"],
    "seeds": [1],
}


def test_validate_fills_defaults_and_keeps_the_choices():
    s = validate_scenario({**SCENARIO, "drain": 0})
    assert s["scheduler_params"]["fcfs"] == {"pick": "longest-idle"}
    assert s["cluster"]["params"] == {"machines_per_config": 2} and s["drain"] is False


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"cluster": {"preset": "nope"}}, UnknownNameError, "valid clusters: .*google-2011"),
        ({"cluster": {"preset": "google-balanced", "file": "x.json"}}, ParameterError, "either 'preset' or 'file'"),
        (
            {"cluster": {"preset": "google-balanced", "params": {"machines_per_config": 0}}},
            ParameterError,
            "'machines_per_config' must be at least 1",
        ),
        ({"workload": {"file": "../etc/passwd"}}, ParameterError, "plain file name"),
        ({"load": "x"}, ParameterError, "load must be a number"),
        ({"load": 0}, ParameterError, "load must be a positive"),
        ({"hours": float("inf")}, ParameterError, "hours must be finite"),
        ({"schedulers": []}, ParameterError, "non-empty list of schedulers"),
        ({"schedulers": ["greedy", "nope"]}, UnknownNameError, "valid schedulers"),
        ({"schedulers": ["greedy", "greedy"]}, ParameterError, "twice"),
        ({"seeds": [-1]}, ParameterError, "non-negative integers"),
        ({"seeds": [True]}, ParameterError, "non-negative integers"),
        ({"scheduler_params": {"fcfs": {"speed": 2}}}, ParameterError, "no parameter 'speed'"),
    ],
)
def test_bad_scenarios_name_what_is_wrong(change, error, match):
    with pytest.raises(error, match=match):
        validate_scenario({**SCENARIO, **change})


def test_packed_jobs_unpack_to_the_same_columns():
    outcome = run_scenario(validate_scenario(SCENARIO), "greedy", 1)
    cols = outcome.jobs_columns()
    blob = archive.pack_jobs(cols)
    back = archive.unpack_jobs(blob)
    assert list(back) == list(archive.JOB_COLUMNS) == list(cols)
    for k in cols:
        np.testing.assert_array_equal(back[k], cols[k])
        assert back[k].dtype == cols[k].dtype
    assert len(blob) < 40 * len(cols["job"]) + 2000  # ~36 bytes a job


def test_an_archive_reads_back_and_reruns_to_the_same_numbers(tmp_path, capsys):
    sc = validate_scenario(SCENARIO)
    runs = []
    for s in sc["schedulers"]:
        o = run_scenario(sc, s, 1)
        runs.append(
            archive.ArchivedRun(
                s,
                1,
                summary=o.summary,
                series=o.series,
                per_class=o.per_class,
                offline=o.offline,
                jobs=archive.pack_jobs(o.jobs_columns()),
            )
        )
    path = tmp_path / "e.zip"
    archive.write_archive(path, sc, {}, runs, name="t")
    back = archive.read_archive(path)
    assert back.scenario == sc and back.name == "t" and [r.scheduler for r in back.runs] == ["fcfs", "greedy"]
    assert back.runs[1].summary == json.loads(json.dumps(runs[0].summary))

    assert main(["rerun", str(path), "--schedulers", "greedy"]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["matches_archive"] is True and line["scheduler"] == "greedy"


def test_rerun_reports_a_mismatch_with_exit_status_1(tmp_path, capsys):
    sc = validate_scenario({**SCENARIO, "schedulers": ["greedy"]})
    o = run_scenario(sc, "greedy", 1)
    forged = {**o.summary, "mean_response_s": o.summary["mean_response_s"] + 1.0}
    path = tmp_path / "e.zip"
    archive.write_archive(path, sc, {}, [archive.ArchivedRun("greedy", 1, summary=forged)])
    assert main(["rerun", str(path)]) == 1
    assert json.loads(capsys.readouterr().out)["matches_archive"] is False


def test_rerun_reads_uploaded_files_from_the_archive(tmp_path, capsys):
    cluster = {
        "name": "c",
        "resources": ["cpu", "mem"],
        "configurations": [{"name": "a", "count": 3, "capacity": {"cpu": 1.0, "mem": 1.0}}],
    }
    trace = "submit_s,duration_s,cpu,mem\n0,10,0.5,0.5\n1,10,0.5,0.5\n2,10,0.5,0.5\n"
    sc = validate_scenario(
        {
            **SCENARIO,
            "cluster": {"file": "c.json"},
            "workload": {"file": "t.csv"},
            "hours": None,
            "schedulers": ["greedy"],
            "seeds": [0],
        }
    )
    path = tmp_path / "e.zip"
    archive.write_archive(path, sc, {"c.json": json.dumps(cluster).encode(), "t.csv": trace.encode()}, [])
    assert main(["rerun", str(path)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line["jobs"] == 3 and line["machines"] == 3 and line["matches_archive"] is None
    assert line["mean_response_s"] == 0.0  # three half-size jobs fit on three machines at once


@pytest.mark.parametrize(
    ("content", "match"),
    [
        (b"not a zip", "not a simcore experiment archive"),
        (None, "no scenario.json"),
        ({"format": "other"}, "is not a simcore-experiment file"),
        ({"format": "simcore-experiment", "format_version": 99}, "version 99 is not supported"),
    ],
)
def test_bad_archives_are_refused_with_a_reason(tmp_path, content, match):
    path = tmp_path / "bad.zip"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        with zipfile.ZipFile(path, "w") as z:
            z.writestr("x.txt", "x")
            if content is not None:
                z.writestr("scenario.json", json.dumps(content))
    with pytest.raises(InputError, match=match):
        archive.read_archive(path)
    assert main(["rerun", str(path)]) == 2


def test_archives_can_be_written_to_a_stream():
    buf = io.BytesIO()
    archive.write_archive(buf, validate_scenario(SCENARIO), {}, [], version="v-test")
    assert archive.read_archive(io.BytesIO(buf.getvalue())).code_version == "v-test"


@pytest.fixture(scope="module")
def greedy_outcome() -> api.RunOutcome:
    return run_scenario(validate_scenario(SCENARIO), "greedy", 1)


@pytest.mark.parametrize("delta", [-1, 0, 1])  # n = size + 1, size, size - 1 jobs
def test_job_chunks_split_at_the_boundaries_and_read_back_to_the_engines_records(greedy_outcome, delta):
    cols = greedy_outcome.jobs_columns()
    n = len(cols["job"])
    size = n + delta
    blobs = list(archive.job_chunks(greedy_outcome, size))
    assert len(blobs) == (2 if delta == -1 else 1)
    parts = list(archive.iter_jobs(blobs))
    assert [len(p["job"]) for p in parts] == ([n - 1, 1] if delta == -1 else [n])
    back = archive.concat_jobs(parts)
    for k in archive.JOB_COLUMNS:
        np.testing.assert_array_equal(back[k], cols[k])
    # Packing the chunks from the engine's arrays gives the bytes pack_jobs gives from the download columns.
    assert blobs[0] == archive.pack_jobs({k: v[:size] for k, v in cols.items()})


def test_job_chunks_of_a_small_size_cover_every_job_once(greedy_outcome):
    cols = greedy_outcome.jobs_columns()
    n = len(cols["job"])
    parts = list(archive.iter_jobs(archive.job_chunks(greedy_outcome, 7)))
    assert [len(p["job"]) for p in parts] == [7] * (n // 7) + ([n % 7] if n % 7 else [])
    np.testing.assert_array_equal(archive.concat_jobs(parts)["job"], np.arange(n))
    with pytest.raises(ParameterError, match="job chunk size must be at least 1, got 0"):
        list(archive.job_chunks(greedy_outcome, 0))


def test_an_archive_keeps_a_chunked_runs_records_in_order(tmp_path, greedy_outcome):
    sc = validate_scenario({**SCENARIO, "schedulers": ["greedy"]})
    o = greedy_outcome
    chunked = archive.ArchivedRun("greedy", 1, summary=o.summary, jobs=archive.job_chunks(o, 10))
    path = tmp_path / "e.zip"
    archive.write_archive(path, sc, {}, [chunked])
    names = zipfile.ZipFile(path).namelist()
    n = len(o.jobs_columns()["job"])
    assert [x for x in names if "/jobs" in x] == [f"runs/greedy/seed-1/jobs/{k:06d}.npz" for k in range(-(-n // 10))]
    back = archive.read_archive(path)
    assert isinstance(back.runs[0].jobs, list)
    cols = archive.concat_jobs(archive.iter_jobs(back.runs[0].jobs))
    for k in archive.JOB_COLUMNS:
        np.testing.assert_array_equal(cols[k], o.jobs_columns()[k])
    assert archive.read_archive(path, jobs=False).runs[0].jobs is None
    # A run of one chunk keeps the one-file layout.
    archive.write_archive(path, sc, {}, [archive.ArchivedRun("greedy", 1, jobs=archive.job_chunks(o))])
    assert "runs/greedy/seed-1/jobs.npz" in zipfile.ZipFile(path).namelist()
    assert isinstance(archive.read_archive(path).runs[0].jobs, bytes)
