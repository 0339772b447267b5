"""Real traces uploaded from the browser and the API: imported in the background, errors precise, nothing half-stored.

The worker tests use the real Celery worker (conftest.celery_worker); the
bad-input tests run the worker's code path (``imports.execute_import``) in
this process, as the other upload tests do, and read the outcome through the
pages and the API. The crafted files are the readers' own test files
(tests/data), so every count below is checked against simcore's direct import
of the same bytes.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from dashboard.common.heartbeat import clean_json
from dashboard.experiments.execution import execute_run
from dashboard.experiments.results import write_experiment_archive
from dashboard.experiments.services import check_scenario, create_experiment
from dashboard.models import (
    ApiToken,
    ClusterUpload,
    Experiment,
    ImportStatus,
    Status,
    TraceFormat,
    TraceImportFile,
    TraceUpload,
)
from dashboard.traces import imports
from dashboard.traces.uploads import InputFile, create_upload, upload_specs, usable_traces
from simcore import archive
from simcore.scenario import run_scenario
from simcore.traces import importer
from simcore.traces.tracefile import read_trace, write_trace
from tests.conftest import shared_data
from tests.dashboard.conftest import wait_for

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
TASKS = (DATA / "google2011" / "task_events.csv").read_bytes()
JOBS = (DATA / "google2011" / "job_events.csv").read_bytes()
MACHINES = (DATA / "google2011" / "machine_events.csv").read_bytes()
SWF = (DATA / "swf" / "small.swf").read_bytes()


def _lines(data: bytes) -> list[bytes]:
    return data.split(b"\n")


def _with(data: bytes, i: int, line: bytes) -> bytes:
    rows = _lines(data)
    rows[i] = line
    return b"\n".join(rows)


def _swapped(data: bytes, i: int) -> bytes:
    rows = _lines(data)
    rows[i], rows[i + 1] = rows[i + 1], rows[i]
    return b"\n".join(rows)


GZ = gzip.compress(TASKS)
#: Each bad input, the file it is in, and the precise message it must give.
BAD: dict[str, tuple[str, str, bytes, str]] = {
    "truncated gzip": (
        "google2011",
        "task_events.csv.gz",
        GZ[: len(GZ) // 2],
        "task_events.csv.gz, line 7: truncated or corrupt gzip data: the stream ends early after line 6 "
        "(truncated download?)",
    ),
    "wrong column count": (
        "google2011",
        "task_events.csv",
        _with(TASKS, 2, b",".join(_lines(TASKS)[2].split(b",")[:12])),
        "task_events.csv, line 3: expected 13 comma-separated fields, found 12",
    ),
    "non-numeric field": (
        "google2011",
        "task_events.csv",
        _with(TASKS, 5, b"6l5" + _lines(TASKS)[5][3:]),
        "task_events.csv, line 6, column 'time': expected an integer, found '6l5000000'",
    ),
    "time goes backwards": (
        "google2011",
        "task_events.csv",
        _swapped(TASKS, 8),
        "task_events.csv, line 10, column 'time': time stamp 640000000 is earlier than 641000000 on an earlier row",
    ),
    "negative duration": (
        "swf",
        "small.swf",
        _with(SWF, 7, b"2 10 0 -5 -1 -1 -1 16 60 1024 1 2 1 1 1 -1 -1 -1"),
        "small.swf, line 8, column 'run time': run time -5 is negative",
    ),
    "negative duration (csv)": (
        "csv",
        "t.csv",
        b"submit_s,duration_s,cpu,mem\n0,5,0.1,0.1\n1,-3,0.1,0.1\n",
        "t.csv, line 3, column 'duration_s': negative value -3.0",
    ),
}
#: Under on_error=skip: the reason each bad row is counted under.
SKIP_REASON = {
    "truncated gzip": "truncated gzip file",
    "wrong column count": "wrong column count",
    "non-numeric field": "non-numeric field",
    "time goes backwards": "time stamp goes backwards",
    "negative duration": "negative run time",
}


def _page_upload(client: Client, fmt: str, files: list[tuple[str, bytes]], **fields: Any) -> Any:
    data: dict[str, Any] = {
        "kind": "trace",
        "trace-name": fields.pop("name", "t"),
        "trace-format": fmt,
        "trace-file": [SimpleUploadedFile(n, c) for n, c in files],
    }
    for k, v in fields.items():
        if k == "job_events":
            v = [SimpleUploadedFile(n, c) for n, c in v]
        elif k == "machine_events":
            v = SimpleUploadedFile(*v)
        data[f"trace-{k}"] = v
    return client.post(reverse("uploads"), data)


def _direct(fmt: str, name: str, content: bytes, **kw: Any) -> importer.ImportResult:
    f = io.BytesIO(content)
    f.name = name
    return importer.import_trace(fmt, [f], **kw)  # type: ignore[arg-type]


def _text(resp: Any) -> str:
    return resp.content.decode().replace("&#x27;", "'").replace("&quot;", '"')


# ---------------------------------------------------------------------------- bad input, in this process


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_input_fails_the_import_with_file_line_and_field_and_stores_nothing(owner_client, owner, case):
    fmt, name, content, message = BAD[case]
    # Given an upload that passes the cheap checks of the request
    assert _page_upload(owner_client, fmt, [(name, content)]).status_code == 302
    up = TraceUpload.objects.get()
    assert up.status == ImportStatus.PENDING and up.inputs.count() == 1
    # When the worker imports it
    assert imports.execute_import(up.pk) == ImportStatus.FAILED
    # Then the row keeps the precise message and nothing usable
    up.refresh_from_db()
    assert message in up.error, up.error
    assert bytes(up.content_gz) == b"" and up.classes is None and up.cluster_upload is None
    assert not TraceImportFile.objects.exists() and not ClusterUpload.objects.exists()
    assert usable_traces(owner).count() == 0
    assert message in _text(owner_client.get(reverse("uploads")))
    assert message in _text(owner_client.get(reverse("trace-import-detail", args=[up.pk])))
    assert owner_client.get(reverse("trace-import-progress", args=[up.pk])).json()["error"] == up.error
    _, secret = ApiToken.issue(owner, "t")
    body = Client(HTTP_AUTHORIZATION=f"Bearer {secret}").get(f"/api/uploads/trace/{up.pk}/").json()
    assert body["status"] == "failed" and message in body["trace_import"]["error"]


@pytest.mark.parametrize("case", list(SKIP_REASON))
def test_skip_mode_counts_and_reports_each_bad_row(owner_client, case):
    fmt, name, content, _ = BAD[case]
    assert _page_upload(owner_client, fmt, [(name, content)], on_error="skip").status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY
    up.refresh_from_db()
    expected = _direct(fmt, name, content, on_error="skip")
    assert up.report["rows_skipped"] == {SKIP_REASON[case]: 1} == expected.report.rows_skipped
    assert up.info["rows_skipped"] == 1 and up.info["jobs"] == expected.workload.n_jobs
    assert up.report["skipped_examples"] == expected.report.skipped_examples
    page = _text(owner_client.get(reverse("trace-import-detail", args=[up.pk])))
    assert SKIP_REASON[case] in page and expected.report.skipped_examples[0] in page


def test_the_request_refuses_what_it_can_check_cheaply_and_stores_nothing(owner_client, owner):
    # every stored format has its file rules; alibaba and azure wait for a TraceFormat migration
    assert set(imports.FORMATS) == set(TraceFormat.values)
    cases = [
        ({"format": "csv", "start_s": 5.0}, [("trace", "t.csv", b"submit_s\n")], "start_s apply to google2011"),
        ({"format": "csv"}, [("trace", "t.csv", b"a\n"), ("job_events", "j.csv", b"a\n")], "takes no job_events"),
        ({"format": "google2011"}, [("machine_events", "m.csv", MACHINES)], "at least 1 task_events"),
        ({"format": "swf"}, [("trace", "t.csv", SWF)], "must be a .swf or .swf.gz or .gz file"),
        ({"format": "google2011"}, [("task_events", "t.csv.gz", b"\x1f\x8b" + b"\x00" * 40)], "corrupt gzip data"),
        ({"format": "google2011"}, [("task_events", "t.csv.gz", gzip.compress(b"\x00\x01" * 50))], "binary"),
        ({"format": "nope"}, [("trace", "t.csv", b"a\n")], "format must be one of csv, swf, google2011"),
        ({"classes": 0}, [("trace", "t.csv", b"a\n")], "classes must be between 1 and 100"),
        ({"format": "swf", "cluster": "no-such"}, [("trace", "t.swf", SWF)], "no-such"),
        ({"bogus": 1}, [("trace", "t.csv", b"a\n")], "unknown import option"),
    ]
    for options, files, message in cases:
        with pytest.raises(Exception, match=message):
            create_upload("trace", owner, "x", files=[InputFile(*f) for f in files], options=options)
    # The page puts an option's error next to that option.
    resp = _page_upload(owner_client, "csv", [("t.csv", b"submit_s\n")], start_s="5")
    assert resp.status_code == 400 and 'id="error-trace-start_s"' in resp.content.decode()
    assert TraceUpload.objects.count() == 0 and TraceImportFile.objects.count() == 0


def test_a_cancelled_import_stops_at_its_next_progress_report_and_stores_nothing(owner_client, monkeypatch):
    # Given an import that is cancelled (as the Cancel button does) while the reader is running
    assert (
        _page_upload(
            owner_client, "google2011", [("task_events.csv", TASKS)], machine_events=("machine_events.csv", MACHINES)
        ).status_code
        == 302
    )
    up = TraceUpload.objects.get()
    real_write = imports._Reporter.write
    seen: list[str] = []

    def cancel_then_write(self: Any, stage: str, fraction: float | None = None) -> None:
        seen.append(stage)
        if len(seen) == 1:
            assert owner_client.post(reverse("trace-import-cancel", args=[up.pk])).status_code == 302
        real_write(self, stage, fraction)

    monkeypatch.setattr(imports._Reporter, "write", cancel_then_write)
    monkeypatch.setattr(imports, "PROGRESS_EVERY_S", 0.0)
    # When the worker goes on, then the import ends cancelled with nothing stored
    assert imports.execute_import(up.pk) == ImportStatus.CANCELLED
    up.refresh_from_db()
    assert len(seen) == 1 and up.status == ImportStatus.CANCELLED and bytes(up.content_gz) == b""
    assert not ClusterUpload.objects.exists() and not TraceImportFile.objects.exists()
    # A cancelled or finished import cannot be claimed again.
    assert imports.execute_import(up.pk) == ImportStatus.CANCELLED


def test_progress_is_written_to_the_row_while_reading(owner_client, monkeypatch):
    monkeypatch.setattr(imports, "PROGRESS_EVERY_S", 0.0)
    real_write = imports._Reporter.write
    rows: list[dict[str, Any]] = []

    def observe(self: Any, stage: str, fraction: float | None = None) -> None:
        real_write(self, stage, fraction)
        rows.append(TraceUpload.objects.values("status", "stage", "fraction", "rows_read").get(pk=self.upload_id))

    monkeypatch.setattr(imports._Reporter, "write", observe)
    assert (
        _page_upload(
            owner_client, "google2011", [("task_events.csv", TASKS)], job_events=[("job_events.csv", JOBS)], classes="2"
        ).status_code
        == 302
    )
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY
    # job events (4 rows) are read before the task events (19 rows); fractions never go back.
    assert [r["stage"] for r in rows] == [
        "job_events 1/1",
        "task_events 1/1",
        "fitting job classes",
        "storing the trace",
    ]
    assert [r["rows_read"] for r in rows] == [4, 23, 23, 23] and all(r["status"] == "running" for r in rows)
    fractions = [r["fraction"] for r in rows]
    assert fractions == sorted(fractions) and 0 < fractions[0] < fractions[1] <= 0.99
    up.refresh_from_db()
    assert (up.fraction, up.stage, up.rows_read) == (1.0, "done", 23)


# ---------------------------------------------------------------------------- classes and runs, in this process


def test_kmeans_classes_are_stored_with_the_trace_and_runs_get_them(owner_client, owner):
    trace = "# simcore trace v1\n# horizon_s: 7200\nsubmit_s,duration_s,cpu,mem\n" + "".join(
        f"{i * 30.0},{60 + (i % 5) * 30},{0.05 if i % 2 else 0.4},{0.05 if i % 2 else 0.3}\n" for i in range(200)
    )
    assert (
        _page_upload(
            owner_client, "csv", [("t.csv", trace.encode())], classes="2", class_window_hours="1", class_seed="3"
        ).status_code
        == 302
    )
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY
    up.refresh_from_db()
    # The same classes as simcore's import with the same options (and the same default cluster, google-2011).
    direct = importer.classify(
        importer.import_trace("csv", [io.BytesIO(trace.encode())]),
        2,
        window_hours=1.0,
        seed=3,
    )
    assert up.classes == json.loads(json.dumps(importer.class_table_dict(direct.workload)))
    assert [c["jobs_in_trace"] for c in up.classes["classes"]] == [100, 100]
    assert up.info["classes"] == 2 and up.filename == "t.csv"
    stored = read_trace(io.BytesIO(up.content()))
    np.testing.assert_array_equal(stored.job_class, direct.workload.job_class)

    resp = owner_client.post(
        reverse("experiment-new"),
        {
            "cluster": "preset:google-balanced",
            "cluster__google-balanced__machines_per_config": "2",
            "workload": f"upload:{up.pk}",
            "load": "1",
            "schedulers": ["lotes"],
            "seeds": "0",
        },
    )
    assert resp.status_code == 302, resp.context["form"].errors
    exp = Experiment.objects.get()
    assert exp.scenario["workload"] == {"file": "trace_t.csv", "name": "t", "classes": "classes_t.json"}
    run = exp.runs.get()
    assert execute_run(run.pk) == Status.FINISHED, exp.runs.get().error
    run.refresh_from_db()
    # LoTES planned on the trace's own classes, not on k-means of its own.
    assert run.result.offline["class_source"] == {"source": "workload"}
    # The archive carries the class table, and re-running it gives the same numbers.
    buf = io.BytesIO()
    write_experiment_archive(exp, buf)
    arch = archive.read_archive(io.BytesIO(buf.getvalue()))
    assert json.loads(arch.files["classes_t.json"]) == up.classes
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for n, c in arch.files.items():
            (Path(tmp) / n).write_bytes(c)
            files[n] = Path(tmp) / n
        again = run_scenario(arch.scenario, "lotes", 0, files)
    assert archive.same_numbers(run.result.summary, json.loads(json.dumps(clean_json(again.summary))))


def test_used_uploads_cannot_be_deleted_unused_ones_can(owner_client, owner):
    assert _page_upload(owner_client, "swf", [("small.swf", SWF)]).status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY
    up.refresh_from_db()
    cluster = up.cluster_upload
    assert cluster is not None and cluster.info["machines"] == 1
    exp = create_experiment(
        owner,
        check_scenario({**upload_specs(cluster, up), "schedulers": ["greedy"], "seeds": [0]}),
        cluster_upload=cluster,
        trace_upload=up,
    )
    resp = owner_client.post(reverse("upload-delete", args=["trace", up.pk]), follow=True)
    assert "is in use by 1 experiment(s) you can see" in _text(resp) and TraceUpload.objects.filter(pk=up.pk).exists()
    exp.delete()
    assert owner_client.post(reverse("upload-delete", args=["trace", up.pk])).status_code == 302
    assert not TraceUpload.objects.filter(pk=up.pk).exists()


# ---------------------------------------------------------------------------- the real worker


def _wait_import(client: Client, pk: int, timeout: float = 120.0) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Poll the page's progress endpoint until the import ends; returns the last answer and all of them."""
    seen: list[dict[str, Any]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = client.get(reverse("trace-import-progress", args=[pk])).json()
        seen.append(p)
        if p["status"] not in ("pending", "running"):
            return p, seen
        time.sleep(0.05)
    raise AssertionError(f"import {pk} still active after {timeout} s: {seen[-1]}")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_google_upload_is_imported_by_the_worker_and_an_experiment_runs_on_it(owner_client, owner):
    # Given the crafted Google part, gzipped, with its job and machine events, and 2 k-means classes
    resp = _page_upload(
        owner_client,
        "google2011",
        [("task_events.csv.gz", gzip.compress(TASKS))],
        name="g",
        job_events=[("job_events.csv", JOBS)],
        machine_events=("machine_events.csv", MACHINES),
        classes="2",
    )
    assert resp.status_code == 302
    up = TraceUpload.objects.get()
    # When the worker has imported it
    last, seen = _wait_import(owner_client, up.pk)
    assert last["status"] == "ready", last
    assert all(0.0 <= p["fraction"] <= 1.0 for p in seen) and last["fraction"] == 1.0 and last["rows_read"] == 33
    up.refresh_from_db()
    # Then the trace is simcore's import of the same bytes, and the machines became a cluster upload
    f = io.BytesIO(gzip.compress(TASKS))
    f.name = "task_events.csv.gz"
    expected = importer.classify(
        importer.import_trace(
            "google2011", [f], job_events=[io.BytesIO(JOBS)], machine_events=io.BytesIO(MACHINES), name="g"
        ),
        2,
        window_hours=24.0,
        seed=0,
    )
    buf = io.BytesIO()
    write_trace(expected.workload, buf, priority=expected.priority)  # with each task's priority (issue 28)
    assert up.content() == buf.getvalue() and up.sha256 == hashlib.sha256(buf.getvalue()).hexdigest()
    assert expected.priority is not None and expected.priority.tolist() == [0, 0, 2, 2, 9]
    assert up.info["jobs"] == 5 and up.report["rows_read"] == {"machine_events": 10, "job_events": 4, "task_events": 19}
    assert up.report["dropped"] == {
        "ended before it was scheduled (killed/failed while pending)": 1,
        "still pending at the window's end (never ran)": 1,
    }
    cluster = up.cluster_upload
    assert cluster.info == {"machines": 4, "configurations": 2, "resources": ["cpu", "mem"], "from_trace": up.pk}
    assert not TraceImportFile.objects.exists()

    # An experiment (greedy and LoTES on the trace's classes) runs on it in the worker.
    resp = owner_client.post(
        reverse("experiment-new"),
        {
            "cluster": f"upload:{cluster.pk}",
            "workload": f"upload:{up.pk}",
            "load": "1",
            "schedulers": ["greedy", "lotes"],
            "seeds": "0",
        },
    )
    assert resp.status_code == 302, resp.context["form"].errors
    exp = wait_for(Experiment.objects.get())
    assert exp.status == Status.FINISHED, list(exp.runs.values_list("scheduler", "error"))
    runs = {r.scheduler: r for r in exp.runs.select_related("result")}
    assert runs["greedy"].result.summary["jobs"] == 5 and runs["greedy"].result.summary["machines"] == 4
    assert runs["lotes"].result.offline["class_source"] == {"source": "workload"}


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_api_uploads_are_imported_by_the_worker_with_skip_counts(owner):
    _, secret = ApiToken.issue(owner, "t")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    fmt, name, content, _ = BAD["negative duration"]
    resp = api.post(
        "/api/uploads/trace/", {"file": SimpleUploadedFile(name, content), "format": fmt, "on_error": "skip"}
    )
    assert resp.status_code == 201 and resp.json()["status"] == "pending", resp.content
    pk = resp.json()["id"]
    deadline = time.monotonic() + 60
    while (body := api.get(f"/api/uploads/trace/{pk}/").json())["status"] in ("pending", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert body["status"] == "ready", body
    rep = body["trace_import"]["report"]
    assert rep["rows_skipped"] == {"negative run time": 1} and rep["rows_read"] == {"swf": 5}
    assert rep["dropped"] == {"no run time (-1)": 1, "request larger than every machine of the cluster": 1}
    assert body["info"]["jobs"] == 2 and body["trace_import"]["cluster_upload"] is not None
    # Private: another user's token sees nothing of it.
    other = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(type(owner).objects.create_user('eve'), 'e')[1]}")
    assert other.get(f"/api/uploads/trace/{pk}/").status_code == 404
    assert other.post(f"/api/uploads/trace/{pk}/cancel/").status_code == 404

    # A bad upload through the API: the same precise message, and nothing usable.
    fmt, name, content, message = BAD["time goes backwards"]
    resp = api.post("/api/uploads/trace/", {"file": SimpleUploadedFile(name, content), "format": fmt})
    pk = resp.json()["id"]
    deadline = time.monotonic() + 60
    while (body := api.get(f"/api/uploads/trace/{pk}/").json())["status"] in ("pending", "running"):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    assert body["status"] == "failed" and message in body["trace_import"]["error"]


def _shared(*parts: str) -> Path:
    return shared_data(*parts)  # fails under CI=true when the extracts are missing


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_the_shared_swf_and_google_samples_import_through_the_worker(owner_client, owner):
    swf = _shared("pwa-swf", "NASA-iPSC-1993-3.1-cln.swf.gz")
    part = _shared("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    jobs = _shared("google-clusterdata-2011-2", "job_events", "part-00000-of-00500.csv.gz")
    assert _page_upload(owner_client, "swf", [(swf.name, swf.read_bytes())], name="nasa").status_code == 302
    assert (
        _page_upload(
            owner_client,
            "google2011",
            [(part.name, part.read_bytes())],
            name="google-part-0",
            job_events=[(jobs.name, jobs.read_bytes())],
        ).status_code
        == 302
    )
    t0 = time.monotonic()
    for up in TraceUpload.objects.order_by("pk"):
        last, _ = _wait_import(owner_client, up.pk, timeout=300)
        assert last["status"] == "ready", last
    wall = time.monotonic() - t0
    nasa, google = TraceUpload.objects.order_by("pk")
    assert nasa.info["jobs"] == importer.import_trace("swf", [str(swf)]).workload.n_jobs == 18239
    expected = importer.import_trace("google2011", [str(part)], job_events=[str(jobs)])
    assert google.info["jobs"] == expected.workload.n_jobs
    assert google.report["rows_read"] == {"job_events": 10704, "task_events": 450146}
    took = (google.finished_at - google.started_at).total_seconds()
    (ROOT / "test-artifacts").mkdir(exist_ok=True)
    (ROOT / "test-artifacts" / "trace-import-timing.json").write_text(
        json.dumps(
            {
                "google_part_0_claim_to_ready_s": took,
                "google_part_0_read_wall_s": google.report["wall_s"],
                "google_part_0_read_cpu_s": google.report["cpu_s"],
                "both_uploads_wall_s": wall,
                "google_jobs": google.info["jobs"],
            },
            indent=2,
        )
    )
