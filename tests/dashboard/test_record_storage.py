"""Per-job records as Parquet objects in the "records" storage (issue 29): where SIMCORE_STORAGE_URL says, on S3
too, deleted with their experiment, never named by a row half-way, and downloaded a row group at a time.

The S3 test speaks the S3 protocol over HTTP to moto's S3 server (``moto[s3]`` with Flask, a development
dependency), started in this process on a free port: no real S3 runs here, and any S3-compatible store
(MinIO, Ceph, a cloud's) answers the same requests django-storages' S3 backend sends.
"""

from __future__ import annotations

import hashlib
import io
import os
import runpy
import tempfile
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pytest
from django.conf import settings as django_settings
from django.core.exceptions import ImproperlyConfigured
from django.urls import reverse

from dashboard.experiments import aggregates, execution, jobs, storage
from dashboard.experiments.execution import claim_run, execute_run, store_outcome
from dashboard.experiments.jobs import run_job_chunks, run_jobs
from dashboard.models import Experiment, Run, RunRecordsObject, RunResult, Status
from dashboard.settings import records_storage
from simcore import archive
from simcore.api import RunOutcome
from simcore.scenario import run_scenario, validate_scenario
from tests.dashboard.test_job_chunks import SCENARIO, _assert_same, _download_columns, _table_columns
from tests.dashboard.test_worker_loss import _experiment

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def engine() -> RunOutcome:
    """What the engine gives for the run the tests store (greedy, seed 0 of the small scenario)."""
    return run_scenario(validate_scenario(SCENARIO), "greedy", 0)


# ---------------------------------------------------------------------------- settings


def test_the_storage_url_names_a_folder_or_a_bucket(monkeypatch):
    local = records_storage(None)
    assert local["BACKEND"] == "django.core.files.storage.FileSystemStorage"
    assert local["OPTIONS"]["location"] == str(django_settings.VAR_DIR / "records")
    assert records_storage("file:///srv/simcore/records")["OPTIONS"] == {"location": "/srv/simcore/records"}
    for k, v in {
        "AWS_S3_ENDPOINT_URL": "http://minio.lab:9000",
        "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret",
        "AWS_S3_REGION_NAME": "eu-west-3",
    }.items():
        monkeypatch.setenv(k, v)
    s3 = records_storage("s3://lab-results/simcore/records/")
    assert s3["BACKEND"] == "storages.backends.s3.S3Storage"
    opts = s3["OPTIONS"]
    assert (opts["bucket_name"], opts["location"], opts["endpoint_url"]) == (
        "lab-results",
        "simcore/records",
        "http://minio.lab:9000",
    )
    assert (opts["access_key"], opts["secret_key"], opts["region_name"]) == ("key", "secret", "eu-west-3")


@pytest.mark.parametrize(
    "raw", ["records", "file://relative/path", "file:records", "s3://", "s3://Bad_Bucket/x", "http://host/x"]
)
def test_a_malformed_storage_url_stops_the_start_naming_the_variable(raw, monkeypatch):
    with pytest.raises(ImproperlyConfigured, match=f"SIMCORE_STORAGE_URL must be .*got {raw!r}"):
        records_storage(raw)
    # As the process starts: reading the settings module fails with the same message.
    monkeypatch.setenv("SIMCORE_STORAGE_URL", raw)
    with pytest.raises(ImproperlyConfigured, match="SIMCORE_STORAGE_URL"):
        runpy.run_path(str(ROOT / "dashboard" / "settings.py"))


# ---------------------------------------------------------------------------- nothing half-way, no orphans


def _stored_run(owner: Any, settings: Any, chunk: int = 10**9) -> Run:
    settings.SIMCORE_JOB_CHUNK = chunk
    run = _experiment(owner, SCENARIO).runs.get()
    assert execute_run(run.pk) == Status.FINISHED
    return Run.objects.select_related("result", "experiment").get(pk=run.pk)


def _folder(run: Run) -> list[str]:
    return list(storage.objects_under(storage.run_folder(run.experiment_id, run.pk)))


@pytest.mark.django_db
def test_deleting_an_experiment_deletes_its_objects_and_their_folders(
    owner, settings, django_capture_on_commit_callbacks
):
    run = _stored_run(owner, settings)
    key = RunRecordsObject.objects.get(run=run).key
    assert storage.storage().exists(key) and _folder(run) == [key]
    # A killed attempt's object, which no row names, in the same folder.
    stray = storage.write_records(run.experiment_id, run.pk, 1, [({"submit_s": np.zeros(0)}, None)], sampled=False)
    assert sorted(_folder(run)) == sorted([key, stray.key])
    with django_capture_on_commit_callbacks(execute=True):
        Experiment.objects.filter(pk=run.experiment_id).delete()
    assert not storage.storage().exists(key) and not storage.storage().exists(stray.key)
    assert not Path(storage.storage().path(storage.experiment_folder(run.experiment_id))).exists()


@pytest.mark.django_db
def test_a_store_whose_transaction_fails_leaves_no_row_and_deletes_its_object(owner, settings, engine, monkeypatch):
    run = claim_run(_experiment(owner, SCENARIO).runs.get().pk, "w@host")
    assert run is not None

    def broken(*args: Any) -> None:
        raise RuntimeError("database went away")

    monkeypatch.setattr(aggregates, "runs_finished", broken)
    # Compared with what the folder held before: the test process's storage folder outlives a test, and a
    # worker of the session may have stored a run with these ids in another test database's life.
    before = set(_folder(run))
    written: list[str] = []
    real_write = jobs.write_jobs

    def spy(*args: Any, **kwargs: Any) -> Any:
        kept, stored = real_write(*args, **kwargs)
        written.append(stored.key)
        return kept, stored

    monkeypatch.setattr(execution, "write_jobs", spy)
    with pytest.raises(RuntimeError, match="database went away"):
        store_outcome(run, engine)
    assert not RunRecordsObject.objects.filter(run=run).exists() and not RunResult.objects.filter(run=run).exists()
    [key] = written  # the object was written, then deleted
    assert Run.objects.get(pk=run.pk).status == Status.RUNNING
    assert not storage.storage().exists(key) and set(_folder(run)) == before


@pytest.mark.django_db
def test_a_write_that_fails_midway_leaves_no_object_and_no_temporary_file(owner, settings):
    run = _experiment(owner, SCENARIO).runs.get()
    tmp = Path(django_settings.FILE_UPLOAD_TEMP_DIR or tempfile.gettempdir())
    before = set(tmp.glob("*.parquet"))

    def pieces() -> Iterator[tuple[dict[str, np.ndarray], None]]:
        yield _synthetic(0, 1000), None
        raise MemoryError("out of memory while simulating")

    with pytest.raises(MemoryError):
        storage.write_records(run.experiment_id, run.pk, 1, pieces(), sampled=False)
    assert _folder(run) == [] and set(tmp.glob("*.parquet")) == before


# ---------------------------------------------------------------------------- downloads a row group at a time


def _synthetic(lo: int, hi: int) -> dict[str, np.ndarray]:
    """Rows lo..hi of a made-up run's stored columns (every job started on some machine)."""
    i = np.arange(lo, hi, dtype=np.float64)
    return {
        "submit_s": i * 0.25,
        "class": (np.arange(lo, hi) % 3).astype(np.int32),
        "machine": (np.arange(lo, hi) % 97).astype(np.int32),
        "config": (np.arange(lo, hi) % 5).astype(np.int32),
        "start_s": i * 0.25 + 1.5,
        "finish_s": i * 0.25 + 10.0,
    }


@pytest.mark.django_db
def test_a_large_download_reads_one_row_group_at_a_time(owner, owner_client, settings):
    """A run of N = 300,000 records in 30 row groups of 10,000: streaming its CSV holds a few row groups' worth of
    columns and text (0.72 MB of arrays each), not N rows' (9 columns x 8 bytes x N = 21.6 MB as arrays)."""
    n, group = 300_000, 10_000
    run = _stored_run(owner, settings)
    stored = storage.write_records(
        run.experiment_id,
        run.pk,
        run.attempt,
        ((_synthetic(lo, min(n, lo + group)), None) for lo in range(0, n, group)),
        sampled=False,
    )
    RunRecordsObject.objects.filter(run=run).update(
        key=stored.key, rows=stored.rows, row_groups=stored.row_groups, size=stored.size, sha256=stored.sha256
    )
    Run.objects.filter(pk=run.pk).update(records={"policy": "auto", "kept": "all", "jobs_kept": n, "of": n})
    assert stored.row_groups == n // group and stored.sha256 == storage.checksum(stored.key)
    whole = 9 * 8 * n

    # The measure sees a whole run held at once: reading every row group into one table.
    tracemalloc.start()
    try:
        assert len(run_jobs(run)["job"]) == n
        _, peak_whole = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak_whole > whole

    resp = owner_client.get(reverse("run-download", args=[run.experiment_id, run.pk, "jobs.csv"]))
    assert resp.status_code == 200 and resp.streaming
    pool = pa.default_memory_pool()
    arrow_max, size, rows, pieces = 0, 0, 0, 0
    buf = io.BytesIO()
    tracemalloc.start()
    try:
        for piece in resp.streaming_content:
            pieces += 1
            size += len(piece)
            if pieces > 1:
                rows += piece.count(b"\n")
            if pieces in (2, 16, 31):  # the first, middle and last row groups' text, to check the values
                buf.write(piece)
            arrow_max = max(arrow_max, pool.bytes_allocated())
            del piece
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rows == n and pieces == 1 + n // group
    # Python and numpy memory (traced) and Arrow's (its pool) stay at a few row groups' worth (5 of the 30).
    one = 9 * 8 * group
    assert peak < 5 * one and arrow_max < 5 * one, (peak, arrow_max, one)
    got = pacsv.read_csv(
        io.BytesIO(buf.getvalue()), read_options=pacsv.ReadOptions(column_names=list(archive.JOB_COLUMNS))
    )
    want = archive.concat_jobs(
        archive.derived_jobs(_synthetic(lo, lo + group), None, lo) for lo in (0, 14 * group, 29 * group)
    )
    _assert_same(_table_columns(got), _download_columns(want))
    assert sum(len(c["job"]) for c in run_job_chunks(run)) == n


# ---------------------------------------------------------------------------- S3


@pytest.fixture
def s3_records(settings, monkeypatch) -> Iterator[Any]:
    """The records storage on moto's S3 server (this process, a free port), bucket ``simcore-test``, prefix
    ``records``; the boto3 bucket to look into it."""
    if os.environ.get("CI") == "true":  # make install puts both there: missing is a broken install
        import boto3
        from moto.moto_server import threaded_moto_server as moto_server
    else:
        boto3 = pytest.importorskip("boto3")
        moto_server = pytest.importorskip("moto.moto_server.threaded_moto_server")
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    try:
        host, port = server.get_host_and_port()
        env = {
            "AWS_S3_ENDPOINT_URL": f"http://{host}:{port}",
            "AWS_ACCESS_KEY_ID": "test",
            "AWS_SECRET_ACCESS_KEY": "test",
            "AWS_S3_REGION_NAME": "us-east-1",
        }
        for k, v in env.items():
            monkeypatch.setenv(k, v)
        s3 = boto3.resource(
            "s3",
            endpoint_url=env["AWS_S3_ENDPOINT_URL"],
            aws_access_key_id="test",
            aws_secret_access_key="test",
            region_name="us-east-1",
        )
        bucket = s3.create_bucket(Bucket="simcore-test")
        settings.STORAGES = {**settings.STORAGES, "records": records_storage("s3://simcore-test/records")}
        yield bucket
    finally:
        server.stop()


@pytest.mark.django_db
def test_records_go_to_an_s3_store_and_come_back_the_same(
    owner, owner_client, settings, engine, s3_records, django_capture_on_commit_callbacks
):
    assert type(storage.storage()).__name__ == "S3Storage"
    run = _stored_run(owner, settings, chunk=300)
    obj = RunRecordsObject.objects.get(run=run)
    want = engine.jobs_columns()
    n = len(want["job"])
    assert obj.key.startswith(f"experiments/{run.experiment_id}/runs/{run.pk}/attempt-1-")
    # In the bucket under the prefix, whole: its bytes are the ones the row describes.
    [s3obj] = list(s3_records.objects.filter(Prefix="records/"))
    assert s3obj.key == f"records/{obj.key}" and s3obj.size == obj.size
    body = s3obj.get()["Body"].read()
    assert hashlib.sha256(body).hexdigest() == obj.sha256 and body[:4] == b"PAR1"
    assert (obj.rows, obj.row_groups) == (n, -(-n // 300))
    # Read back a row group at a time, in every reader: the engine's records.
    assert [len(c["job"]) for c in run_job_chunks(run)] == [min(300, n - i) for i in range(0, n, 300)]
    csv = b"".join(
        owner_client.get(reverse("run-download", args=[run.experiment_id, run.pk, "jobs.csv"])).streaming_content
    )
    _assert_same(_table_columns(pacsv.read_csv(io.BytesIO(csv))), _download_columns(want))
    # Deleting the experiment empties its part of the bucket.
    with django_capture_on_commit_callbacks(execute=True):
        Experiment.objects.filter(pk=run.experiment_id).delete()
    assert list(s3_records.objects.filter(Prefix="records/")) == []
    assert os.environ["AWS_S3_ENDPOINT_URL"].startswith("http://127.0.0.1:")
