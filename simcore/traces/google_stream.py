"""Google 2011 straight to a trace file, in bounded memory whatever the input's size (a month: 144M rows).

:func:`simcore.traces.google2011.read_google2011` returns the workload in
memory: about 200 bytes a job at its peak, 5-10 GB for a month. This
module writes the same trace file (byte for byte) without ever holding all
jobs:

1. the task events are read and paired as usual, but the runs go to a
   :class:`~simcore.traces.spill.Spill` (numpy chunks on disk);
2. each chunk of runs becomes jobs of the window
   (:func:`~simcore.traces.google2011.window_runs`), sorted by arrival
   within the chunk, spilled again, while the summary's statistics and a
   histogram of arrivals are accumulated;
3. the histogram cuts time into buckets of at most ``bucket_rows`` jobs;
   bucket by bucket, the rows of every chunk in it (found by binary search
   in the sorted chunks, memory-mapped) are merged with a stable sort and
   written. Ties keep the order of the in-memory reader (chunk order, then
   row order), so the file is identical.

Memory: the task state of tasks open at one time (about 150,000 in the
trace), one block of input, one chunk (``Spill.limit_bytes``) and one
bucket. Disk: about 90 bytes a job, twice, in a temporary directory.
"""

from __future__ import annotations

import gzip
import io
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Literal

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError
from simcore.core.model import Cluster
from simcore.traces._stream import OnError, ProgressFn, Source
from simcore.traces.google2011 import (
    RUN_COLUMNS,
    TASK_BITS,
    TRACE_OFFSET_US,
    Runs,
    Unfinished,
    notes,
    read_runs,
    window_runs,
)
from simcore.traces.report import ImportReport
from simcore.traces.spill import LIMIT_BYTES, Spill
from simcore.traces.tracefile import DURATION, GZIP_LEVEL, SUBMIT, WRITE_ROWS
from simcore.traces.tracetasks import JOB

#: Most jobs merged and written at once (about 150 bytes each while sorting and formatting).
BUCKET_ROWS = 500_000
#: Histogram bins over the window, to cut it into buckets.
HIST_BINS = 1 << 16


@dataclass
class _Stats:
    """The workload summary's numbers, accumulated chunk by chunk."""

    resources: tuple[str, ...]
    jobs: int = 0
    at_zero: int = 0
    first: float = np.inf
    last: float = -np.inf
    req_min: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    req_max: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    req_sum: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    req_work: NDArray[np.float64] = field(default_factory=lambda: np.zeros(0))
    dur_min: float = np.inf
    dur_max: float = -np.inf
    dur_sum: float = 0.0

    def add(self, arrival: NDArray[np.float64], duration: NDArray[np.float64], request: NDArray[np.float64]) -> None:
        if len(arrival) == 0:
            return
        if self.jobs == 0:
            r = request.shape[1]
            self.req_min, self.req_max = np.full(r, np.inf), np.full(r, -np.inf)
            self.req_sum, self.req_work = np.zeros(r), np.zeros(r)
        self.jobs += len(arrival)
        self.at_zero += int(np.count_nonzero(arrival == 0.0))
        self.first, self.last = min(self.first, float(arrival.min())), max(self.last, float(arrival.max()))
        self.req_min = np.minimum(self.req_min, request.min(axis=0))
        self.req_max = np.maximum(self.req_max, request.max(axis=0))
        self.req_sum += request.sum(axis=0)
        self.req_work += duration @ request
        self.dur_min, self.dur_max = min(self.dur_min, float(duration.min())), max(self.dur_max, float(duration.max()))
        self.dur_sum += float(duration.sum())

    def workload_summary(self, name: str, horizon: float) -> dict[str, Any]:
        """The keys of :func:`simcore.traces.report.workload_summary`."""

        def rng(lo: float, total: float, hi: float) -> dict[str, float | None]:
            return {"min": lo, "mean": total / self.jobs, "max": hi}

        return {
            "name": name,
            "jobs": self.jobs,
            "horizon_s": float(horizon),
            "first_submit_s": self.first,
            "last_submit_s": self.last,
            "jobs_at_time_0": self.at_zero,
            "requests": {
                r: rng(float(self.req_min[i]), float(self.req_sum[i]), float(self.req_max[i]))
                for i, r in enumerate(self.resources)
            },
            "duration_s": rng(self.dur_min, self.dur_sum, self.dur_max),
        }


@dataclass
class StreamedImport:
    """What :func:`import_google2011_to` wrote: the report, the cluster, the workload summary and the offered work."""

    report: ImportReport
    cluster: Cluster
    workload: dict[str, Any]
    #: sum of request x duration per resource (the utilisation estimate's numerator).
    request_work: dict[str, float]
    horizon_s: float


def _open_text(path: Path) -> IO[str]:
    if path.name.endswith(".gz"):
        return gzip.open(path, "wt", compresslevel=GZIP_LEVEL, encoding="utf-8", newline="")
    return open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed by the caller


def import_google2011_to(
    dest: str | os.PathLike[str],
    task_events: Sequence[Source],
    *,
    job_events: Sequence[Source] = (),
    machine_events: Source | None = None,
    cluster: Cluster | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    unfinished: Unfinished = "cut",
    running_at_start: Literal["keep", "drop"] = "keep",
    on_error: OnError = "raise",
    progress: ProgressFn | None = None,
    name: str = "google-2011-trace",
    min_priority: int | None = None,
    spill_bytes: int = LIMIT_BYTES,
    bucket_rows: int = BUCKET_ROWS,
    temp_dir: str | None = None,
) -> StreamedImport:
    """Write the trace :func:`~simcore.traces.google2011.read_google2011` would give to ``dest`` (``.gz``: gzip).

    The options are read_google2011's; ``spill_bytes`` and ``bucket_rows``
    bound the memory (see the module docstring), ``temp_dir`` holds the
    spilled chunks (default: the system's temporary directory).
    """
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    with Spill(RUN_COLUMNS, limit_bytes=spill_bytes, directory=temp_dir) as runs_out:
        runs = read_runs(
            task_events,
            job_events=job_events,
            machine_events=machine_events,
            cluster=cluster,
            start_s=start_s,
            end_s=end_s,
            unfinished=unfinished,
            running_at_start=running_at_start,
            on_error=on_error,
            progress=progress,
            min_priority=min_priority,
            out=runs_out,
        )
        report, cl, start, window_end = runs.report, runs.cluster, runs.start_s, runs.window_end
        horizon = window_end - start
        res = cl.resources
        job_cols = ("arrival", "duration", *(f"req.{r}" for r in res), "job")
        stats = _Stats(tuple(res))
        kept = _Kept(np.zeros(HIST_BINS, dtype=np.int64), max(horizon, 1e-9))
        with Spill(job_cols, limit_bytes=1, directory=temp_dir) as jobs_out:
            _window_jobs(runs_out, jobs_out, runs, stats, kept)
            if stats.jobs == 0:
                raise InputError(
                    f"no jobs left in the window [{start:g}, {window_end:g}) s; rows read "
                    f"{report.rows_read}, skipped {report.rows_skipped}, dropped {report.dropped}",
                    file=report.files["task_events"][0],
                )
            _write(Path(dest), jobs_out, job_cols, res, name, horizon, kept.hist, kept.hi_edge, bucket_rows)
    if runs.job_ids is not None:
        report.extra["job_events"] = {
            "jobs_submitted": int(len(runs.job_ids)),
            "jobs_with_tasks_kept": int(len(kept.jobs_seen)),
            "tasks_whose_job_has_no_SUBMIT_in_job_events": kept.unknown_job,
        }
    notes(report, task_events, (start, window_end), running_at_start, unfinished, cl, min_priority)
    report.notes.append(
        "streamed: runs and jobs spilled to numpy chunks on disk and merged by arrival time (bounded memory)"
    )
    report.wall_s = time.perf_counter() - wall0
    report.cpu_s = time.process_time() - cpu0
    summary = stats.workload_summary(name, horizon)
    summary["task_jobs"] = int(len(kept.jobs_seen))
    summary["params"] = {
        "source": "google-clusterdata-2011",
        "window_start_s": float(start),
        "window_end_s": float(window_end),
        "trace_offset_s": TRACE_OFFSET_US / 1e6,
    }
    return StreamedImport(report, cl, summary, {r: float(stats.req_work[i]) for i, r in enumerate(res)}, float(horizon))


@dataclass
class _Kept:
    """What the pass over the runs learns besides the jobs: arrivals' histogram, job IDs kept, unknown jobs."""

    hist: NDArray[np.int64]
    #: The histogram's upper edge (s): the horizon, arrivals beyond it counted in the last bin.
    hi_edge: float
    #: Distinct job IDs kept (a month: about 670,000).
    jobs_seen: NDArray[np.int64] = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    #: Tasks whose job has no SUBMIT in the job-event files.
    unknown_job: int = 0


def _window_jobs(runs_out: Spill, jobs_out: Spill, runs: Runs, stats: _Stats, kept: _Kept) -> None:
    """Each chunk of runs cut to the window, sorted by arrival and spilled as jobs; statistics as they pass."""
    res = runs.cluster.resources
    for chunk in runs_out.chunks():
        arrival, duration, request, key = window_runs(chunk, runs.start_s, runs.cluster, runs.report)
        order = np.argsort(arrival, kind="stable")
        arrival, duration, request, job = (
            arrival[order],
            duration[order],
            request[order],
            key[order] >> TASK_BITS,
        )
        stats.add(arrival, duration, request)
        kept.hist += np.histogram(np.minimum(arrival, kept.hi_edge), bins=HIST_BINS, range=(0.0, kept.hi_edge))[0]
        kept.jobs_seen = np.union1d(kept.jobs_seen, job)
        if runs.job_ids is not None:
            kept.unknown_job += int(np.count_nonzero(~np.isin(job, runs.job_ids)))
        jobs_out.append(
            arrival=arrival,
            duration=duration,
            job=job,
            **{f"req.{r}": request[:, i] for i, r in enumerate(res)},
        )
        # One chunk in memory at a time: let this one go before the next is read.
        del chunk, arrival, duration, request, key, job, order


def _buckets(hist: NDArray[np.int64], hi_edge: float, bucket_rows: int) -> list[float]:
    """Upper edges (s) of consecutive arrival buckets of at most about ``bucket_rows`` jobs; the last is inf."""
    edges: list[float] = []
    width = hi_edge / len(hist)
    acc = 0
    for i, n in enumerate(hist.tolist()):
        if acc and acc + n > bucket_rows:
            edges.append(i * width)
            acc = 0
        acc += n
    edges.append(np.inf)
    return edges


def _write(
    dest: Path,
    jobs: Spill,
    cols: tuple[str, ...],
    resources: Sequence[str],
    name: str,
    horizon: float,
    hist: NDArray[np.int64],
    hi_edge: float,
    bucket_rows: int,
) -> None:
    """Merge the sorted job chunks bucket by bucket into the trace file (the format of write_trace)."""
    jobs.flush()
    head = ["# simcore trace v1", f"# name: {name}", f"# horizon_s: {float(horizon)!r}"]
    head.append(",".join([SUBMIT, DURATION, *resources, JOB]))
    lo = -np.inf
    try:
        f = _open_text(dest)
    except OSError as e:
        raise InputError(f"cannot write: {e.strerror or e}", file=str(dest)) from None
    with f:
        f.write("\n".join(head) + "\n")
        for hi in _buckets(hist, hi_edge, bucket_rows):
            parts: dict[str, list[NDArray[Any]]] = {c: [] for c in cols}
            for i in range(jobs.n_chunks):
                ch = jobs.chunk(i, mmap=True)
                a = ch["arrival"]
                s0 = int(np.searchsorted(a, lo, side="left"))
                s1 = int(np.searchsorted(a, hi, side="left")) if np.isfinite(hi) else len(a)
                if s1 > s0:
                    for c in cols:
                        parts[c].append(np.array(ch[c][s0:s1]))
                del ch, a  # unmaps the chunk: its pages leave the resident set
            lo = hi
            if not parts["arrival"]:
                continue
            merged = {c: np.concatenate(v) for c, v in parts.items()}
            del parts
            order = np.argsort(merged["arrival"], kind="stable")
            text_cols = [merged[c][order] for c in cols]
            _rows(f, text_cols)
            del merged, text_cols, order


def _rows(f: IO[str], cols: list[NDArray[Any]]) -> None:
    n = len(cols[0])
    buf = io.StringIO()
    for lo in range(0, n, WRITE_ROWS):
        hi = min(n, lo + WRITE_ROWS)
        text = [list(map(repr, c[lo:hi].tolist())) for c in cols[:-1]]
        text.append(list(map(str, cols[-1][lo:hi].tolist())))
        buf.write("".join(",".join(row) + "\n" for row in zip(*text, strict=True)))
        f.write(buf.getvalue())
        buf.seek(0)
        buf.truncate()


__all__ = ["BUCKET_ROWS", "StreamedImport", "import_google2011_to"]
