"""Per-job records in chunks (paper-scale runs): stored whole or not at all, read back one chunk at a time.

Every reader (CSV and Parquet downloads, experiment archives, packing
snapshots) must give exactly the engine's records whatever the chunk size,
including at the boundaries (n = chunk - 1, chunk, chunk + 1); a worker
killed while writing the chunks leaves none, and its retry stores one set.
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

from dashboard.experiments import charts
from dashboard.experiments.execution import claim_run, execute_run, store_outcome
from dashboard.experiments.jobs import job_blobs, n_jobs, run_job_chunks, run_jobs
from dashboard.experiments.results import chart_runs, runs_with_results
from dashboard.experiments.work import recover_lost_runs
from dashboard.models import Run, RunJobs, RunJobsChunk, RunResult, Status
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

    rows = list(RunJobsChunk.objects.filter(run=run).order_by("index").values_list("index", "first", "n_jobs"))
    assert rows == ([(0, 0, chunk), (1, chunk, 1)] if delta == -1 else [(0, 0, n)])
    assert n_jobs(run) == n == run.jobs_total and not RunJobs.objects.filter(run=run).exists()
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
    assert RunJobsChunk.objects.filter(run=run).count() == -(-n // 333)
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
    assert RunJobsChunk.objects.filter(run=one).count() == 1 < RunJobsChunk.objects.filter(run=many).count()

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
    RunJobsChunk.objects.filter(run=run).delete()
    RunJobs.objects.create(run=run, n_jobs=run.jobs_total, data=blob)
    want = engine.jobs_columns()
    assert n_jobs(run) == len(want["job"])
    _assert_same(run_jobs(run), want)
    body = b"".join(
        owner_client.get(reverse("run-download", args=[run.experiment_id, run.pk, "jobs.csv"])).streaming_content
    )
    _assert_same(_table_columns(pacsv.read_csv(io.BytesIO(body))), _download_columns(want))


@pytest.mark.django_db
def test_a_run_has_one_chunk_per_index(owner, settings):
    run = _stored_run(owner, 10**9, settings)
    with pytest.raises(IntegrityError), transaction.atomic():
        RunJobsChunk.objects.create(run=run, index=0, first=0, n_jobs=0, data=b"")


# A worker process that claims the run, simulates it, and is SIGKILLed by its own hand in the middle of writing
# the chunks (after two of them went to the database inside the storing transaction).
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
    real = archive.job_chunks

    def dying(o, size, keep=None):
        for i, blob in enumerate(real(o, size, keep)):
            if i == 2:
                os.kill(os.getpid(), signal.SIGKILL)
            yield blob

    archive.job_chunks = dying
    execution.store_outcome(run, outcome)
    """
)


@pytest.mark.django_db(transaction=True)
def test_a_worker_killed_while_storing_chunks_leaves_none_and_its_retry_stores_one_set(owner, settings, engine):
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
        [sys.executable, "-c", _DYING_WORKER, str(run.pk)], cwd=ROOT, env=env, capture_output=True, timeout=300
    )
    assert proc.returncode == -9, proc.stderr.decode()[-2000:]
    # Killed inside the transaction: no chunk, no result, the run still held by the dead attempt.
    row = Run.objects.get(pk=run.pk)
    assert (row.status, row.attempt, row.worker) == (Status.RUNNING, 1, "doomed@host")
    assert not RunJobsChunk.objects.filter(run=row).exists() and not RunResult.objects.filter(run=row).exists()

    # Declared lost, queued again, run by another worker: exactly one set of chunks, the engine's records.
    assert recover_lost_runs(now=timezone.now() + timedelta(seconds=61)).retried == [run.pk]
    settings.SIMCORE_JOB_CHUNK = 500
    assert execute_run(run.pk, "b@host") == Status.FINISHED
    want = engine.jobs_columns()
    n = len(want["job"])
    idx = list(RunJobsChunk.objects.filter(run=run).order_by("index").values_list("index", flat=True))
    assert idx == list(range(-(-n // 500)))
    _assert_same(run_jobs(run), want)
    row.refresh_from_db()
    assert row.attempt == 2 and [a["worker"] for a in row.lost_attempts] == ["doomed@host"]
    # The dead attempt, were it to come back, can store nothing more.
    assert not store_outcome(_as_held(row, attempt=1), engine)
    assert RunJobsChunk.objects.filter(run=run).count() == len(idx)


def _as_held(row: Run, attempt: int) -> Run:
    """The run as a worker holding ``attempt`` sees it (running): what a late or repeated store gets."""
    held = Run.objects.select_related("experiment").get(pk=row.pk)
    held.attempt = attempt
    held.status = Status.RUNNING
    return held


@pytest.mark.django_db
def test_a_claim_then_store_writes_the_chunks_in_the_finishing_transaction(owner, settings, engine):
    settings.SIMCORE_JOB_CHUNK = 1000
    run = claim_run(_experiment(owner, SCENARIO).runs.get().pk, "w@host")
    assert run is not None and store_outcome(run, engine)
    # A second store of the same attempt (a repeated task message) is refused: still one set.
    assert not store_outcome(_as_held(run, run.attempt), engine)
    n = len(engine.jobs_columns()["job"])
    assert RunJobsChunk.objects.filter(run=run).count() == -(-n // 1000)
