"""Per-job records in row groups of one storage object (paper-scale runs): stored whole or not at all, read
back one row group at a time; runs stored before, in database chunks, read the same.

Every reader (CSV and Parquet downloads, experiment archives, packing
snapshots) must give exactly the engine's records whatever the row group
size, including at the boundaries (n = chunk - 1, chunk, chunk + 1); a worker
killed while writing the object, or after writing it and before its row,
leaves no row, and its retry stores one object and deletes the other.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse
from django.utils import timezone

from dashboard.experiments import charts, storage
from dashboard.experiments.execution import claim_run, execute_run, store_outcome
from dashboard.experiments.jobs import job_blobs, n_jobs, run_job_chunks, run_jobs
from dashboard.experiments.results import chart_runs, runs_with_results
from dashboard.experiments.work import recover_lost_runs
from dashboard.models import Run, RunJobs, RunJobsChunk, RunRecordsObject, RunResult, Status
from dashboard.packing.models import PackingSource
from dashboard.packing.services import SourceChoice, create_analysis, snapshot_of
from simcore import archive
from simcore.api import NULL_IF_NEGATIVE, RunOutcome
from simcore.packing.sources import from_result
from simcore.scenario import run_scenario, validate_scenario
from tests.dashboard.conftest import _test_database_url, small_scenario
from tests.dashboard.test_worker_loss import _experiment

ROOT = Path(__file__).resolve().parents[2]
SCENARIO = small_scenario(schedulers=["greedy"])


@pytest.fixture(scope="module")
def engine() -> RunOutcome:
    """What the engine gives for the run the tests store (greedy, seed 0 of the small scenario)."""
    return run_scenario(validate_scenario(SCENARIO), "greedy", 0)


def _download_columns(cols: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """The engine's columns as a download holds them: NaN, and -1 machine / config of unstarted jobs, are null."""
    out = {}
    for k in archive.JOB_COLUMNS:
        v = cols[k].astype(np.float64)
        out[k] = np.where(v < 0, np.nan, v) if k in NULL_IF_NEGATIVE else v
    return out


def _table_columns(t: pa.Table) -> dict[str, np.ndarray]:
    return {k: t.column(k).cast(pa.float64()).to_numpy(zero_copy_only=False) for k in archive.JOB_COLUMNS}


def _assert_same(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    for k in archive.JOB_COLUMNS:
        np.testing.assert_array_equal(got[k], want[k], err_msg=k)


def _stored_run(owner: Any, chunk: int, settings: Any, scenario: dict[str, Any] = SCENARIO) -> Run:
    settings.SIMCORE_JOB_CHUNK = chunk
    exp = _experiment(owner, scenario)
    run = exp.runs.get()
    assert execute_run(run.pk) == Status.FINISHED
    return Run.objects.select_related("result", "experiment").get(pk=run.pk)


@pytest.mark.django_db
@pytest.mark.parametrize("delta", [1, 0, -1], ids=["n=chunk-1", "n=chunk", "n=chunk+1"])
def test_chunk_boundaries_store_every_job_once_and_downloads_equal_the_engines_records(
    owner, owner_client, settings, engine, delta
):
    want = engine.jobs_columns()
    n = len(want["job"])
    chunk = n + delta
    run = _stored_run(owner, chunk, settings)

    obj = RunRecordsObject.objects.get(run=run)
    assert (obj.rows, obj.row_groups, obj.layout) == (n, 2 if delta == -1 else 1, storage.LAYOUT)
    assert [len(c["job"]) for c in run_job_chunks(run)] == ([chunk, 1] if delta == -1 else [n])
    assert obj.size == storage.storage().size(obj.key) and obj.sha256 == storage.checksum(obj.key)
    assert n_jobs(run) == n == run.jobs_total
    assert not RunJobs.objects.filter(run=run).exists() and not RunJobsChunk.objects.filter(run=run).exists()
    _assert_same(run_jobs(run), want)

    exp = run.experiment
    csv_body = b"".join(owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "jobs.csv"])).streaming_content)
    _assert_same(_table_columns(pacsv.read_csv(io.BytesIO(csv_body))), _download_columns(want))
    pq_body = b"".join(
        owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "jobs.parquet"])).streaming_content
    )
    _assert_same(_table_columns(pq.read_table(io.BytesIO(pq_body))), _download_columns(want))

    zbody = b"".join(owner_client.get(reverse("experiment-download", args=[exp.pk, "archive.zip"])).streaming_content)
    back = archive.read_archive(io.BytesIO(zbody))
    jobs = back.runs[0].jobs
    assert isinstance(jobs, list if delta == -1 else bytes)
    _assert_same(archive.concat_jobs(archive.iter_jobs(jobs if isinstance(jobs, list) else [jobs])), want)


@pytest.mark.django_db
def test_many_small_chunks_read_back_in_order_everywhere(owner, owner_client, settings, engine):
    want = engine.jobs_columns()
    n = len(want["job"])
    run = _stored_run(owner, 333, settings)
    assert RunRecordsObject.objects.get(run=run).row_groups == -(-n // 333)
    parts = list(run_job_chunks(run))
    assert [int(p["job"][0]) for p in parts] == list(range(0, n, 333))
    _assert_same(archive.concat_jobs(parts), want)
    # The CSV pieces cross chunk boundaries and stay in job order; so does the experiment's file with its run column.
    settings_rows = 100
    from dashboard.experiments import downloads

    downloads.CSV_CHUNK_ROWS, old = settings_rows, downloads.CSV_CHUNK_ROWS
    try:
        body = b"".join(
            owner_client.get(reverse("experiment-download", args=[run.experiment_id, "jobs.csv"])).streaming_content
        )
    finally:
        downloads.CSV_CHUNK_ROWS = old
    t = pacsv.read_csv(io.BytesIO(body))
    assert set(t.column("run").to_pylist()) == {run.pk} and t.num_rows == n
    _assert_same(_table_columns(t), _download_columns(want))
    zbody = b"".join(
        owner_client.get(reverse("experiment-download", args=[run.experiment_id, "archive.zip"])).streaming_content
    )
    names = [x for x in zipfile.ZipFile(io.BytesIO(zbody)).namelist() if "/jobs" in x]
    assert names == [f"runs/greedy/seed-0/jobs/{k:06d}.npz" for k in range(-(-n // 333))]


@pytest.mark.django_db
def test_a_packing_snapshot_from_chunks_equals_the_one_from_the_engine(owner, settings, engine):
    run = _stored_run(owner, 257, settings)
    t = 1800.0
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=t, spec={"orderings": ["arrival"]})
    got = snapshot_of(a)
    want = from_result(engine.result, engine.workload, engine.cluster, t)
    assert got.meta == want.meta and len(got.job) > 0
    np.testing.assert_array_equal(got.job, want.job)
    np.testing.assert_array_equal(got.placement, want.placement)
    np.testing.assert_array_equal(got.request, want.request)


@pytest.mark.django_db
def test_cdf_charts_and_the_stored_cdf_are_the_same_with_one_chunk_or_many(owner, settings, engine):
    one = _stored_run(owner, 10**9, settings)
    many = _stored_run(owner, 100, settings)
    assert RunRecordsObject.objects.get(run=one).row_groups == 1 < RunRecordsObject.objects.get(run=many).row_groups

    def figures(run: Run) -> dict[str, Any]:
        figs = charts.all_charts(chart_runs(runs_with_results(run.experiment)))
        return {k: json.loads(json.dumps(v, default=str)) for k, v in figs.items()}

    assert figures(one) == figures(many)
    # The chart's CDF is the per-job records' own: quantiles of the waits of the started jobs, read chunk by chunk.
    waits = np.concatenate([np.maximum(c["response_s"][~np.isnan(c["start_s"])], 0.0) for c in run_job_chunks(many)])
    cdf = many.result.series["cdf"]
    np.testing.assert_allclose(np.quantile(np.sort(waits), cdf["p"]), cdf["response_s"], rtol=0, atol=0)


@pytest.mark.django_db
def test_a_run_stored_before_chunks_reads_as_one_chunk(owner, owner_client, settings, engine):
    run = _stored_run(owner, 10**9, settings)
    blob = b"".join(job_blobs(run))
    # As the platform stored it before chunks: one RunJobs blob.
    RunRecordsObject.objects.filter(run=run).delete()
    RunJobs.objects.create(run=run, n_jobs=run.jobs_total, data=blob)
    want = engine.jobs_columns()
    assert n_jobs(run) == len(want["job"])
    _assert_same(run_jobs(run), want)
    body = b"".join(
        owner_client.get(reverse("run-download", args=[run.experiment_id, run.pk, "jobs.csv"])).streaming_content
    )
    _assert_same(_table_columns(pacsv.read_csv(io.BytesIO(body))), _download_columns(want))


@pytest.mark.django_db
def test_a_run_has_one_records_object(owner, settings):
    run = _stored_run(owner, 10**9, settings)
    with pytest.raises(IntegrityError), transaction.atomic():
        RunRecordsObject.objects.create(run=run, key="other", rows=0, row_groups=0, size=0, sha256="", layout=1)


def _run_objects(run: Run) -> list[str]:
    """The objects under the run's folder in the records storage."""
    return sorted(k.rsplit("/", 1)[-1] for k in storage.objects_under(storage.run_folder(run.experiment_id, run.pk)))


@pytest.mark.django_db
def test_a_run_stored_in_database_chunks_reads_the_same_everywhere(owner, owner_client, settings, engine):
    """A run of before this layout (issue 29): its records in RunJobsChunk rows, written here as the worker of
    then wrote them. Its downloads, archive and packing snapshot equal those of the same run stored as an object."""
    new = _stored_run(owner, 257, settings)
    old = _stored_run(owner, 10**9, settings)
    RunRecordsObject.objects.filter(run=old).delete()
    n = len(engine.jobs_columns()["job"])
    for index, blob in enumerate(archive.job_chunks(engine, 300)):
        RunJobsChunk.objects.create(
            run=old, index=index, first=index * 300, n_jobs=min(300, n - index * 300), data=blob
        )
    assert not RunRecordsObject.objects.filter(run=old).exists() and n_jobs(old) == n_jobs(new) == n

    def body(run: Run, name: str) -> bytes:
        resp = owner_client.get(reverse("run-download", args=[run.experiment_id, run.pk, name]))
        assert resp.status_code == 200
        return b"".join(resp.streaming_content)

    assert body(old, "jobs.csv") == body(new, "jobs.csv")
    assert pq.read_table(io.BytesIO(body(old, "jobs.parquet"))).equals(
        pq.read_table(io.BytesIO(body(new, "jobs.parquet")))
    )
    _assert_same(archive.concat_jobs(archive.iter_jobs(job_blobs(old))), engine.jobs_columns())
    _assert_same(archive.concat_jobs(archive.iter_jobs(job_blobs(new))), engine.jobs_columns())
    t = 1800.0
    snaps = [
        snapshot_of(
            create_analysis(owner, SourceChoice(PackingSource.RUN, run=r), time_s=t, spec={"orderings": ["arrival"]})
        )
        for r in (old, new)
    ]
    assert snaps[0].meta == snaps[1].meta and len(snaps[0].job) > 0
    for k in ("job", "placement", "request"):
        np.testing.assert_array_equal(getattr(snaps[0], k), getattr(snaps[1], k))


# A worker process that claims the run, simulates it, and is SIGKILLed by its own hand: ``object`` in the middle of
# writing the records object (after two row groups went to its temporary file), ``row`` after the object is in the
# storage and before the transaction that names it commits.
_DYING_WORKER = textwrap.dedent(
    """
    import os, signal, sys
    import django
    django.setup()
    from dashboard.experiments import execution
    from dashboard.experiments.services import scenario_for
    from simcore import archive
    from simcore.scenario import run_scenario

    run = execution.claim_run(int(sys.argv[1]), "doomed@host")
    outcome = run_scenario(scenario_for(run), run.scheduler, run.seed)
    real = archive.job_column_chunks

    def dying(o, size, keep=None):
        for i, piece in enumerate(real(o, size, keep)):
            if i == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            yield piece

    def dying_row(*args):
        os.kill(os.getpid(), signal.SIGKILL)

    if sys.argv[2] == "object":
        archive.job_column_chunks = dying
    else:
        execution.save_jobs = dying_row
    execution.store_outcome(run, outcome)
    """
)


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("when", ["object", "row"])
def test_a_worker_killed_while_storing_records_leaves_no_row_and_its_retry_stores_one_object(
    owner, settings, engine, when
):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 3
    exp = _experiment(owner, SCENARIO)
    run = exp.runs.get()
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
        "SIMCORE_JOB_CHUNK": "500",
    }
    proc = subprocess.run(
        [sys.executable, "-c", _DYING_WORKER, str(run.pk), when], cwd=ROOT, env=env, capture_output=True, timeout=300
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    # Killed before the transaction committed: no row, no result, the run still held by the dead attempt.
    row = Run.objects.get(pk=run.pk)
    assert (row.status, row.attempt, row.worker) == (Status.RUNNING, 1, "doomed@host")
    assert not RunRecordsObject.objects.filter(run=row).exists() and not RunResult.objects.filter(run=row).exists()
    # Killed after the object reached the storage: it is there, named by no row.
    left = _run_objects(row)
    assert len(left) == (1 if when == "row" else 0) and all(x.startswith("attempt-1-") for x in left)

    # Declared lost, queued again, run by another worker: exactly one object, the engine's records; the dead
    # attempt's object is deleted.
    assert recover_lost_runs(now=timezone.now() + timedelta(seconds=61)).retried == [run.pk]
    settings.SIMCORE_JOB_CHUNK = 500
    assert execute_run(run.pk, "b@host") == Status.FINISHED
    want = engine.jobs_columns()
    n = len(want["job"])
    obj = RunRecordsObject.objects.get(run=run)
    assert obj.row_groups == -(-n // 500) and obj.key.rsplit("/", 1)[-1].startswith("attempt-2-")
    assert _run_objects(row) == [obj.key.rsplit("/", 1)[-1]]
    _assert_same(run_jobs(run), want)
    row.refresh_from_db()
    assert row.attempt == 2 and [a["worker"] for a in row.lost_attempts] == ["doomed@host"]
    # The dead attempt, were it to come back, can store nothing more, and leaves no object behind.
    assert not store_outcome(_as_held(row, attempt=1), engine)
    assert RunRecordsObject.objects.filter(run=run).count() == 1 and _run_objects(row) == [obj.key.rsplit("/", 1)[-1]]


def _as_held(row: Run, attempt: int) -> Run:
    """The run as a worker holding ``attempt`` sees it (running): what a late or repeated store gets."""
    held = Run.objects.select_related("experiment").get(pk=row.pk)
    held.attempt = attempt
    held.status = Status.RUNNING
    return held


@pytest.mark.django_db
def test_a_claim_then_store_names_one_object_in_the_finishing_transaction(owner, settings, engine):
    settings.SIMCORE_JOB_CHUNK = 1000
    run = claim_run(_experiment(owner, SCENARIO).runs.get().pk, "w@host")
    assert run is not None and store_outcome(run, engine)
    # A second store of the same attempt (a repeated task message) is refused: still one set.
    assert not store_outcome(_as_held(run, run.attempt), engine)
    n = len(engine.jobs_columns()["job"])
    obj = RunRecordsObject.objects.get(run=run)
    # The refused store deleted the object it had written: the run's folder holds the named one only.
    assert obj.row_groups == -(-n // 1000) and _run_objects(run) == [obj.key.rsplit("/", 1)[-1]]
