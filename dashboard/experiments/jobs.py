"""A run's per-job records in the database: stored in chunks as the run finishes, read back one chunk at a time.

The records of a paper-scale run (LoTES Figure 11: 37 M jobs, 1.3 GB packed)
fit no single database value (1 GB in PostgreSQL) and no worker's spare
memory twice over, so they are :class:`~dashboard.models.RunJobsChunk` rows
of ``SIMCORE_JOB_CHUNK`` consecutive jobs. Every reader (downloads, archives,
packing snapshots) goes through :func:`job_blobs` / :func:`run_job_chunks`,
which fetch one chunk per query: memory is bounded by one chunk whatever the
run's size. Runs stored before chunks keep their one :class:`~dashboard.models.RunJobs`
blob and read as a single chunk.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from django.conf import settings

from dashboard.experiments.models import Run, RunJobs, RunJobsChunk
from simcore import archive, records
from simcore.api import RunOutcome
from simcore.core.errors import ParameterError


def store_jobs(run: Run, outcome: RunOutcome, policy: str = records.DEFAULT) -> int:
    """Write the per-job records ``policy`` keeps of ``outcome`` (simcore.records) as the run's chunks, and
    what was kept in ``run.records``; the number of chunks (0 when none are kept).

    Call it inside the transaction that finishes the run (dashboard.experiments.execution.store_outcome):
    a worker killed half-way leaves nothing, and the unique (run, index) pair refuses a second set.
    One chunk is packed at a time from the engine's arrays. A sample's chunks hold consecutive kept jobs
    (``first`` counts kept records) and store their job numbers.
    """
    size = settings.SIMCORE_JOB_CHUNK
    keep, kept = outcome.kept_records(policy)
    Run.objects.filter(pk=run.pk).update(records=kept)
    run.records = kept
    if kept["kept"] == "none":
        return 0
    total = int(kept["jobs_kept"])
    index = -1
    for index, blob in enumerate(archive.job_chunks(outcome, size, keep)):
        first = index * size
        RunJobsChunk.objects.create(run=run, index=index, first=first, n_jobs=min(size, total - first), data=blob)
    return index + 1


def records_text(run: Run) -> str:
    """The page's words for what ``run`` kept: ``all 61,454 kept``, ``a sample of 1,000 of 61,454 (seed 3)``."""
    rec = run.records
    if rec is None:
        n = n_jobs(run)
        return "not stored" if n is None else f"all {n:,} kept"
    return records.records_text(rec)


def _source(run: Run) -> int:
    """Whose records ``run`` has: a cell served from the result cache reads its source run's."""
    return run.cached_from_id or run.pk


def has_jobs(run: Run) -> bool:
    rid = _source(run)
    return RunJobsChunk.objects.filter(run_id=rid).exists() or RunJobs.objects.filter(run_id=rid).exists()


def n_jobs(run: Run) -> int | None:
    """How many per-job records the run has stored; None if it has none."""
    rid = _source(run)
    chunks = list(RunJobsChunk.objects.filter(run_id=rid).values_list("n_jobs", flat=True))
    if chunks:
        return sum(chunks)
    return RunJobs.objects.filter(run_id=rid).values_list("n_jobs", flat=True).first()


def _bytes(data: bytes | memoryview) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)


def job_blobs(run: Run) -> Iterator[bytes]:
    """The run's records as pack_jobs blobs in job order, one database query (and one chunk in memory) each."""
    rid = _source(run)
    ids = list(RunJobsChunk.objects.filter(run_id=rid).order_by("index").values_list("pk", flat=True))
    for pk in ids:
        yield _bytes(RunJobsChunk.objects.filter(pk=pk).values_list("data", flat=True).get())
    if not ids:
        legacy = RunJobs.objects.filter(run_id=rid).values_list("data", flat=True).first()
        if legacy is not None:
            yield _bytes(legacy)


def run_job_chunks(run: Run) -> Iterator[dict[str, np.ndarray]]:
    """The per-job columns (simcore.archive.JOB_COLUMNS) of a finished run, one chunk at a time.

    Raises ParameterError at once (not on the first chunk) when the run has no per-job records.
    """
    if not has_jobs(run):
        if (run.records or {}).get("kept") == "none":
            raise ParameterError(f"run {run.pk} kept no per-job records (its experiment's per-job records: none)")
        raise ParameterError(f"run {run.pk} has no per-job results")
    return archive.iter_jobs(job_blobs(run))


def run_jobs(run: Run) -> dict[str, np.ndarray]:
    """Every per-job column of a run at once: small runs and tests only; readers stream :func:`run_job_chunks`."""
    return archive.concat_jobs(run_job_chunks(run))


def records_kept(done: list[Run]) -> list[tuple[str, int]]:
    """What the finished runs kept, for the experiment page: (words, runs) pairs, the same words counted once.

    Up to four different wordings are shown as they are; beyond that (a sweep's cells of different sizes)
    they are grouped by kind: ``all kept``, ``a seeded sample``, ``not kept``.
    """
    texts: dict[str, int] = {}
    for r in done:
        t = records_text(r)
        texts[t] = texts.get(t, 0) + 1
    if len(texts) <= 4:
        return list(texts.items())
    words = {"all": "all kept", "sample": "a seeded sample", "none": "not kept"}
    kinds: dict[str, int] = {}
    for r in done:
        k = words.get((r.records or {}).get("kept", "all"), "all kept")
        kinds[k] = kinds.get(k, 0) + 1
    return list(kinds.items())
