"""Experiments as data: experiment archives and the compact per-job record format.

An experiment archive (a zip written by :func:`write_archive`) holds a
scenario (:mod:`simcore.scenario`), the files it names and each run's
results; ``simcore rerun`` reads one with :func:`read_archive` and runs the
same scenario again, checking the numbers with :func:`same_numbers`.

Archive layout::

    scenario.json                      {"format": "simcore-experiment", "format_version": 1,
                                        "code_version": ..., "name": ..., "scenario": {...}}
    files/<name>                       uploaded cluster / trace files the scenario names
    runs/<scheduler>/seed-<seed>/summary.json   (summary, status, error, records kept (simcore.records);
                                                 a sweep's cell adds its point,
                                                 and its folder is seed-<seed>@<point index>)
    runs/<scheduler>/seed-<seed>/series.json    (series, per_class, offline)
    runs/<scheduler>/seed-<seed>/jobs.npz       per-job records, see pack_jobs (a run of at most one chunk)
    runs/<scheduler>/seed-<seed>/jobs/<k>.npz   a larger run's records in chunks k = 000000, 000001, ...
                                                 of consecutive jobs (see job_chunks), never one huge file

This module must not import Django: it is part of the simulation library.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from simcore import api
from simcore.core.errors import InputError, ParameterError
from simcore.version import code_version

FORMAT = "simcore-experiment"
FORMAT_VERSION = 1

#: Column names of the per-job records, in download order (as RunOutcome.jobs_columns()).
JOB_COLUMNS = ("job", "submit_s", "class", "machine", "config", "start_s", "finish_s", "response_s", "completion_s")

#: Summary keys that depend on the machine, not on the scenario; ignored when checking a re-run.
VOLATILE_KEYS = frozenset({"wall_s", "jobs_per_s", "version", "compile_s"})

# ---------------------------------------------------------------------------- per-job records

#: Stored columns and their on-disk types (npz chunks here, the platform's Parquet objects too); job, response
#: and completion are derived on reading (the same float operations as RunOutcome.jobs_columns: bit-identical).
STORED_COLUMNS = {
    "submit_s": np.float64,
    "class": np.int32,
    "machine": np.int32,
    "config": np.int32,
    "start_s": np.float64,
    "finish_s": np.float64,
}


def pack_jobs(columns: Mapping[str, np.ndarray], job: np.ndarray | None = None) -> bytes:
    """Per-job columns as one compact binary blob (uncompressed npz, 36 bytes a job).

    ``job``: the job numbers of records that are not consecutive (a sample), stored with them (8 bytes more a job).

    Uncompressed on purpose: a million jobs pack in tens of milliseconds; deflate
    would take seconds and gain little on float times.
    """
    buf = io.BytesIO()
    arrays: dict[str, Any] = {k: np.ascontiguousarray(columns[k], dtype=t) for k, t in STORED_COLUMNS.items()}
    if job is not None:
        # A sample of a run's jobs (simcore.records) is not consecutive: its job numbers are stored.
        arrays["job"] = np.ascontiguousarray(job, dtype=np.int64)
    np.savez(buf, **arrays)
    return buf.getvalue()


def unpack_jobs(blob: bytes | memoryview, first: int = 0) -> dict[str, np.ndarray]:
    """The columns of :data:`JOB_COLUMNS` from a :func:`pack_jobs` blob.

    ``first``: the index of the blob's first job in its run (a chunk's offset), so ``job`` is the run's numbering.
    """
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        raw = {k: z[k] for k in STORED_COLUMNS}
        job = z["job"] if "job" in z.files else None
    return derived_jobs(raw, job, first)


#: Jobs per stored chunk by default: 36 MB packed, far below any database's limit on one value (1 GB),
#: small against a worker's memory, and few rows (37 for the 37 M jobs of LoTES Figure 11 at paper scale).
JOB_CHUNK = 1_000_000


def job_column_chunks(
    outcome: api.RunOutcome, size: int = JOB_CHUNK, keep: np.ndarray | None = None
) -> Iterator[tuple[dict[str, np.ndarray], np.ndarray | None]]:
    """A run's stored per-job columns (submit_s, class, machine, config, start_s, finish_s) in pieces of
    ``size`` consecutive kept jobs, each with its job numbers when ``keep`` selects a sample (else None).

    Taken one piece at a time from the engine's own arrays (slices, no copy of
    every column), so a writer needs one piece's memory on top of the result.
    A run without jobs gives one empty piece (it has records: none).
    ``keep``: the sorted indices of the jobs kept (simcore.records.keep_records; None: all).
    """
    if size < 1:
        raise ParameterError(f"job chunk size must be at least 1, got {size}")
    r = outcome.result
    n = int(r.extra.get("arrived", r.n_jobs))
    total = n if keep is None else len(keep)
    for lo in range(0, max(total, 1), size):
        hi = min(total, lo + size)
        at: slice | np.ndarray = slice(lo, hi) if keep is None else keep[lo:hi]
        machine = r.machine[at]
        cols = {
            "submit_s": r.submit[at],
            "class": r.job_class[at],
            "machine": machine,
            "config": np.where(machine >= 0, r.config_of_machine[np.maximum(machine, 0)], -1),
            "start_s": r.start[at],
            "finish_s": r.finish[at],
        }
        yield cols, None if keep is None else keep[lo:hi]


def job_chunks(outcome: api.RunOutcome, size: int = JOB_CHUNK, keep: np.ndarray | None = None) -> Iterator[bytes]:
    """A run's per-job records as :func:`pack_jobs` blobs of ``size`` consecutive jobs (the last may be shorter).

    Packed one chunk at a time (:func:`job_column_chunks`). ``keep``: the sorted
    indices of the jobs kept (None: all), in chunks of ``size`` kept jobs that store their job numbers.
    """
    for cols, job in job_column_chunks(outcome, size, keep):
        yield pack_jobs(cols, job)


def derived_jobs(raw: Mapping[str, np.ndarray], job: np.ndarray | None, first: int = 0) -> dict[str, np.ndarray]:
    """The columns of :data:`JOB_COLUMNS` from the stored ones (``STORED_COLUMNS``) and the job numbers (None:
    consecutive from ``first``): the same float operations as RunOutcome.jobs_columns, so bit-identical."""
    n = len(raw["submit_s"])
    submit, start, finish = raw["submit_s"], raw["start_s"], raw["finish_s"]
    return {
        "job": np.arange(first, first + n, dtype=np.int64) if job is None else job,
        "submit_s": submit,
        "class": raw["class"].astype(np.int64),
        "machine": raw["machine"].astype(np.int64),
        "config": raw["config"].astype(np.int64),
        "start_s": start,
        "finish_s": finish,
        "response_s": start - submit,
        "completion_s": finish - submit,
    }


def iter_jobs(blobs: Iterable[bytes | memoryview]) -> Iterator[dict[str, np.ndarray]]:
    """The columns of consecutive chunks, one chunk at a time, ``job`` numbered across them."""
    first = 0
    for blob in blobs:
        cols = unpack_jobs(blob, first)
        first += len(cols["submit_s"])
        yield cols
        del cols  # not held (by this suspended generator) while the next chunk is unpacked


def concat_jobs(chunks: Iterable[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """All chunks' columns as one table (the whole run in memory: small runs and tests only)."""
    parts = list(chunks)
    if not parts:
        return {k: np.array([]) for k in JOB_COLUMNS}
    return {k: np.concatenate([p[k] for p in parts]) for k in JOB_COLUMNS}


# ---------------------------------------------------------------------------- archives


@dataclass
class ArchivedRun:
    scheduler: str
    seed: int
    #: A sweep cell's point ({} outside sweeps); its index in the scenario's points names the folder.
    point: dict[str, Any] = field(default_factory=dict)
    point_index: int | None = None
    status: str = "finished"
    error: str = ""
    summary: dict[str, Any] | None = None
    series: dict[str, Any] | None = None
    per_class: list[dict[str, Any]] | None = None
    offline: dict[str, Any] | None = None
    #: Per-job records: one pack_jobs blob, or the run's consecutive chunks (an iterable, read once by the writer).
    jobs: bytes | Iterable[bytes] | None = None
    #: Which per-job records it kept (simcore.records.describe); None: not said (archives from before: all).
    records: dict[str, Any] | None = None

    @property
    def folder(self) -> str:
        at = "" if self.point_index is None else f"@{self.point_index}"
        return f"runs/{self.scheduler}/seed-{self.seed}{at}"


@dataclass
class ExperimentArchive:
    scenario: dict[str, Any]
    name: str = ""
    code_version: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    runs: list[ArchivedRun] = field(default_factory=list)


def write_archive(
    target: str | Path | IO[bytes],
    scenario: Mapping[str, Any],
    files: Mapping[str, bytes],
    runs: Iterable[ArchivedRun],
    *,
    name: str = "",
    version: str | None = None,
) -> None:
    """Write an experiment archive (zip) to a path or a binary file object."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "code_version": version or code_version(),
        "name": name,
        "scenario": dict(scenario),
    }
    from simcore.sweep.scenario import point_key, points

    index = {point_key(p): i for i, p in enumerate(points(scenario))} if scenario.get("axes") else {}
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("scenario.json", json.dumps(meta, indent=2))
        for fname, content in files.items():
            z.writestr(f"files/{fname}", content, compress_type=zipfile.ZIP_STORED)
        for r in runs:
            if r.point:
                r.point_index = index.get(point_key(r.point), r.point_index)
            record: dict[str, Any] = {"status": r.status, "error": r.error, "summary": r.summary}
            if r.point:
                record["point"] = r.point
            if r.records is not None:
                record["records"] = r.records
            z.writestr(f"{r.folder}/summary.json", json.dumps(record, indent=2))
            if r.series is not None:
                z.writestr(
                    f"{r.folder}/series.json",
                    json.dumps({"series": r.series, "per_class": r.per_class, "offline": r.offline}),
                )
            if r.jobs is not None:
                _write_jobs(z, r.folder, r.jobs)


def _write_jobs(z: zipfile.ZipFile, folder: str, jobs: bytes | Iterable[bytes]) -> None:
    """One run's records: ``jobs.npz`` when they are one chunk (the layout older readers know), else
    ``jobs/<k>.npz`` per chunk, written as they come (two chunks in memory at most)."""
    chunks = iter([jobs] if isinstance(jobs, (bytes, bytearray, memoryview)) else jobs)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if second is None:
        z.writestr(f"{folder}/jobs.npz", first, compress_type=zipfile.ZIP_STORED)
        return
    z.writestr(f"{folder}/jobs/{0:06d}.npz", first, compress_type=zipfile.ZIP_STORED)
    del first
    z.writestr(f"{folder}/jobs/{1:06d}.npz", second, compress_type=zipfile.ZIP_STORED)
    del second
    for k, blob in enumerate(chunks, start=2):
        z.writestr(f"{folder}/jobs/{k:06d}.npz", blob, compress_type=zipfile.ZIP_STORED)


def read_archive(source: str | Path | IO[bytes], *, jobs: bool = True) -> ExperimentArchive:
    """Read an archive written by :func:`write_archive`; InputError names what is wrong.

    A run's per-job records come as one blob (``jobs.npz``) or as the list of
    its chunks (``jobs/<k>.npz``, in order); ``jobs=False`` skips them (a
    re-run compares summaries only, and a paper-scale run's records are GBs).
    """
    label = str(source) if isinstance(source, (str, Path)) else "archive"
    try:
        z = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError(f"not a simcore experiment archive ({e})", file=label) from None
    with z:
        names = set(z.namelist())
        if "scenario.json" not in names:
            raise InputError("not a simcore experiment archive (no scenario.json)", file=label)
        try:
            meta = json.loads(z.read("scenario.json"))
        except ValueError as e:
            raise InputError(f"scenario.json is not valid JSON ({e})", file=label) from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"scenario.json is not a {FORMAT} file", file=label)
        if meta.get("format_version") != FORMAT_VERSION:
            raise InputError(
                f"archive format version {meta.get('format_version')!r} is not supported "
                f"(this simcore reads version {FORMAT_VERSION})",
                file=label,
            )
        arch = ExperimentArchive(
            scenario=meta.get("scenario") or {},
            name=meta.get("name") or "",
            code_version=meta.get("code_version") or "",
        )
        for n in sorted(names):
            if n.startswith("files/") and not n.endswith("/"):
                arch.files[n[len("files/") :]] = z.read(n)
        folders = sorted({n.rsplit("/", 1)[0] for n in names if n.startswith("runs/") and n.count("/") == 3})
        for folder in folders:
            _, sched, seed_part = folder.split("/")
            seed_text, _, at = seed_part.removeprefix("seed-").partition("@")
            try:
                seed = int(seed_text)
                point_index = int(at) if at else None
            except ValueError:
                raise InputError(f"bad run folder {folder!r}", file=label) from None
            run = ArchivedRun(scheduler=sched, seed=seed, point_index=point_index)
            if f"{folder}/summary.json" in names:
                s = json.loads(z.read(f"{folder}/summary.json"))
                run.status, run.error, run.summary = s.get("status", ""), s.get("error", ""), s.get("summary")
                run.point = dict(s.get("point") or {})
                run.records = s.get("records")
            if f"{folder}/series.json" in names:
                s = json.loads(z.read(f"{folder}/series.json"))
                run.series, run.per_class, run.offline = s.get("series"), s.get("per_class"), s.get("offline")
            if jobs:
                run.jobs = _read_jobs(z, names, folder)
            arch.runs.append(run)
    return arch


def _read_jobs(z: zipfile.ZipFile, names: set[str], folder: str) -> bytes | list[bytes] | None:
    """A run's records as :func:`_write_jobs` wrote them: one blob, its chunks in order, or None."""
    if f"{folder}/jobs.npz" in names:
        return z.read(f"{folder}/jobs.npz")
    parts = sorted(n for n in names if n.startswith(f"{folder}/jobs/") and n.endswith(".npz"))
    return [z.read(n) for n in parts] or None


def same_numbers(a: Mapping[str, Any], b: Mapping[str, Any], rel: float = 1e-9) -> bool:
    """Whether two summaries agree on every key except the machine-dependent ones."""
    keys = (set(a) | set(b)) - VOLATILE_KEYS
    for k in keys:
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            if not same_numbers(x, y, rel):
                return False
        elif isinstance(x, float) and isinstance(y, (int, float)) and not isinstance(y, bool):
            if not (x == y or math.isclose(x, y, rel_tol=rel) or (math.isnan(x) and math.isnan(y))):
                return False
        elif x != y:
            return False
    return True
