"""A run's per-job records: written as the run finishes, read back a piece at a time, in either layout.

New runs keep them as one compressed Parquet object in the "records" storage
(dashboard.experiments.storage; the database keeps a RunRecordsObject row).
Runs stored before that keep theirs in the database, and read as they were:
:class:`~dashboard.models.RunJobsChunk` rows of ``SIMCORE_JOB_CHUNK`` jobs
(migration 0012), or, before chunks, one :class:`~dashboard.models.RunJobs` blob.
Every reader (downloads, archives, packing snapshots) goes through
:func:`run_job_chunks` / :func:`job_blobs`, which hold one row group or chunk
at a time: memory is bounded by one piece whatever the run's size or layout.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
from django.conf import settings

from dashboard.experiments import storage
from dashboard.experiments.models import Run, RunJobs, RunJobsChunk, RunRecordsObject
from simcore import archive, records
from simcore.api import RunOutcome
from simcore.core.errors import ParameterError


def write_jobs(
    run: Run, outcome: RunOutcome, policy: str = records.DEFAULT
) -> tuple[dict[str, Any], storage.Stored | None]:
    """Write the per-job records ``policy`` keeps of ``outcome`` (simcore.records) as the run's object, before
    the transaction that finishes the run; what was kept, and the object (None when none are kept).

    Row groups of ``SIMCORE_JOB_CHUNK`` kept jobs are taken one at a time from
    the engine's arrays; a sample's store their job numbers. Objects of the
    run's earlier attempts that no row names (their worker was killed before
    finishing) are deleted first. Name it in that transaction with
    :func:`save_jobs`, or :func:`storage.discard` it.
    """
    keep, kept = outcome.kept_records(policy)
    if kept["kept"] == "none":
        return kept, None
    named = RunRecordsObject.objects.filter(run_id=run.pk).values_list("key", flat=True)
    storage.delete_leftovers(run.experiment_id, run.pk, run.attempt, keep=named)
    pieces = archive.job_column_chunks(outcome, settings.SIMCORE_JOB_CHUNK, keep)
    return kept, storage.write_records(run.experiment_id, run.pk, run.attempt, pieces, sampled=keep is not None)


def save_jobs(run: Run, kept: dict[str, Any], stored: storage.Stored | None) -> None:
    """Record what ``run`` kept and the object :func:`write_jobs` wrote, inside the finishing transaction
    (a run has one such row: a second refuses)."""
    Run.objects.filter(pk=run.pk).update(records=kept)
    run.records = kept
    if stored is not None:
        RunRecordsObject.objects.create(
            run=run,
            key=stored.key,
            rows=stored.rows,
            row_groups=stored.row_groups,
            size=stored.size,
            sha256=stored.sha256,
            layout=storage.LAYOUT,
        )


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


def _object(run: Run) -> RunRecordsObject | None:
    return RunRecordsObject.objects.filter(run_id=_source(run)).first()


def has_jobs(run: Run) -> bool:
    rid = _source(run)
    return (
        RunRecordsObject.objects.filter(run_id=rid).exists()
        or RunJobsChunk.objects.filter(run_id=rid).exists()
        or RunJobs.objects.filter(run_id=rid).exists()
    )


def n_jobs(run: Run) -> int | None:
    """How many per-job records the run has stored; None if it has none."""
    rid = _source(run)
    rows = RunRecordsObject.objects.filter(run_id=rid).values_list("rows", flat=True).first()
    if rows is not None:
        return rows
    chunks = list(RunJobsChunk.objects.filter(run_id=rid).values_list("n_jobs", flat=True))
    if chunks:
        return sum(chunks)
    return RunJobs.objects.filter(run_id=rid).values_list("n_jobs", flat=True).first()


def _bytes(data: bytes | memoryview) -> bytes:
    return data if isinstance(data, bytes) else bytes(data)


def _database_blobs(rid: int) -> Iterator[bytes]:
    """A run's records stored in the database (before objects) as pack_jobs blobs, one query (and one chunk
    in memory) each."""
    ids = list(RunJobsChunk.objects.filter(run_id=rid).order_by("index").values_list("pk", flat=True))
    for pk in ids:
        yield _bytes(RunJobsChunk.objects.filter(pk=pk).values_list("data", flat=True).get())
    if not ids:
        legacy = RunJobs.objects.filter(run_id=rid).values_list("data", flat=True).first()
        if legacy is not None:
            yield _bytes(legacy)


def job_blobs(run: Run) -> Iterator[bytes]:
    """The run's records as pack_jobs blobs in job order (an experiment archive's chunk files), one row group
    or database chunk in memory at a time."""
    obj = _object(run)
    if obj is None:
        yield from _database_blobs(_source(run))
        return
    sampled = (run.records or {}).get("kept") == "sample"  # its job numbers are not consecutive: keep them
    for cols in storage.read_records(obj.key, f"run {run.pk}"):
        blob = archive.pack_jobs(cols, cols["job"] if sampled else None)
        del cols  # not held while the next row group is read
        yield blob


def run_job_chunks(run: Run) -> Iterator[dict[str, np.ndarray]]:
    """The per-job columns (simcore.archive.JOB_COLUMNS) of a finished run, one row group (or stored chunk,
    for runs stored before objects) at a time.

    Raises ParameterError at once (not on the first chunk) when the run has no per-job records.
    """
    obj = _object(run)
    if obj is not None:
        return storage.read_records(obj.key, f"run {run.pk}")
    if not has_jobs(run):
        if (run.records or {}).get("kept") == "none":
            raise ParameterError(f"run {run.pk} kept no per-job records (its experiment's per-job records: none)")
        raise ParameterError(f"run {run.pk} has no per-job results")
    return archive.iter_jobs(_database_blobs(_source(run)))


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
