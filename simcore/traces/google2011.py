"""Google cluster-data 2011 (the ``clusterdata-2011-2`` trace) as a simcore workload.

Task events become jobs the way the LoTES paper does (section 5.3): every
*task instance* is one job, with

* **arrival** = its SUBMIT time;
* **duration** = the time it actually ran, SCHEDULE to the next
  FINISH, FAIL, KILL, EVICT or LOST of the same task;
* **requests** = its CPU and memory requests, already normalised by Google to
  the largest machine (the same units as the LoTES Table 1 cluster). The
  request on the SCHEDULE row is used; when that row leaves it empty, the
  last one given by SUBMIT or UPDATE_PENDING (if none, the end row's).
  UPDATE_RUNNING rows are
  ignored: the engine gives a job fixed requests for its whole run.

A task submitted again after it ended (a resubmission after a failure,
eviction, ...) is a new, unrelated job, as in the paper.

Jobs made of tasks (the design-space paper, :mod:`simcore.core.taskgraph`): the
task instances keep the job ID they were read with, as a bag of tasks per
job (``Workload.graph``, IDs in ``graph.job_ids``; the trace written gets a
``job`` column), so every task of a job stays together and the job metrics
(TRT, JMS, NJSL, JWT) can be computed. A job's tasks may arrive at different
times; its metrics start at its first. Schedulers that see jobs as
independent units (LoTES, Greedy...) are unaffected. Failures of
machines and placement constraints are ignored, as in the paper.

Time stamps (microseconds, schema.csv field 1) and their special values:

* ``0`` means "before the trace window": the events of tasks already
  submitted or running when the trace starts. They map to simulated time 0,
  so tasks running at the start form the *initial batch* arriving at 0.
* The trace window starts 600 s after time 0 (Google's documented offset):
  any other time ``t`` maps to ``(t - 600e6) / 1e6`` seconds, clipped at 0.
* ``2**63 - 1`` means "after the trace window": such rows are ignored (and
  counted); a task whose end is only known at that time is unfinished.

Parts from mid-trace (issue 17): by default the window starts at the
first event read, not at 0 (part 00007 alone begins at 35,080 s), and
tasks that were already running when the input begins, seen only by their
end event, are kept as the window's initial batch: they arrive at its
start and run until their end (``running_at_start="keep"``; "drop" counts
them as ``R_END_ORPHAN``). Tasks seen first by their SCHEDULE were pending:
they arrive at the start too, and so do tasks first seen by an
UPDATE_RUNNING row (running since before the input, with the updated
requests). Tasks running through the whole input without any event stay
invisible: a part cannot know them.

A window ``[start_s, end_s)`` in simulated seconds (the time just defined)
cuts the trace like the trace cuts time: jobs submitted before ``start_s``
and still pending or running at ``start_s`` arrive at ``start_s`` (they are
that window's initial batch), with the part of their run inside the window
as duration; jobs that ended by ``start_s`` are dropped; rows at or after
``end_s`` are not read (the files are in time order, so reading stops).
Times are then shifted so the window starts at 0; ``horizon_s`` is the
window's length. Without ``end_s`` the window ends at the last event read.

Tasks still running at the window's end are *cut* there (duration = time
run inside the window; the default, so long-running services keep loading
the cluster) or *dropped* (``unfinished="drop"``). Tasks still pending at
the end never ran, so their duration is unknown: always dropped. Every
dropped task instance is counted by reason in the report.

Deviation from the paper: none in the rules above; the paper does not say
what it did with tasks unfinished at the end of the month, hence the option.

Machines (``machine_events``): the *initial* set, i.e. the events at time 0
(ADD, then UPDATE or REMOVE at time 0), grouped by (CPUs, Memory) into
configurations ordered by machine count, largest first (LoTES Table 1's
order), constant afterwards as in the paper. Without machine events the
``google-2011`` cluster preset (Table 1) is used.

Speed: the inner loop touches one dict entry per row and nothing else. On
the sample part (450,146 rows, measured in CPU time on one core): about
500,000 rows/s with pyarrow parsing the CSV, 230,000-260,000 rows/s with
the standard library alone; a month (144 million rows) is about 5 CPU
minutes. The report gives the rate of every import (``rows_per_cpu_s``).
Memory: the open-task dict (tasks pending or running at the current time)
plus the jobs produced, whatever the number of input rows.
"""

from __future__ import annotations

import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import max_request, max_trace_seconds
from simcore.core.model import Cluster, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.traces._stream import (
    Column,
    Growing,
    ImportProgress,
    OnError,
    ProgressFn,
    RowErrors,
    Source,
    describe,
    iter_blocks,
    parse_csv_block,
    reject_rows,
    source_name,
)
from simcore.traces.report import ImportReport, ImportResult, fits_any
from simcore.traces.spill import Spill
from simcore.workloads.taskorder import number_jobs

#: Google's time stamps count microseconds from 600 s before the trace window.
TRACE_OFFSET_US = 600_000_000
#: The special time stamp "after the end of the trace window".
MAXINT = 2**63 - 1

SUBMIT, SCHEDULE, EVICT, FAIL, FINISH, KILL, LOST, UPDATE_PENDING, UPDATE_RUNNING = range(9)
EVENT_NAMES = ("SUBMIT", "SCHEDULE", "EVICT", "FAIL", "FINISH", "KILL", "LOST", "UPDATE_PENDING", "UPDATE_RUNNING")

TASK_EVENT_FIELDS = 13
TASK_COLUMNS = (
    Column(0, "time", "int"),
    Column(2, "job ID", "int"),
    Column(3, "task index", "int"),
    Column(5, "event type", "int"),
    Column(9, "CPU request", "float", optional=True),
    Column(10, "memory request", "float", optional=True),
)
#: Read when tasks are filtered by priority (``min_priority``) or their priorities are kept (an import).
PRIORITY_COLUMN = Column(8, "priority", "int")
#: The lowest "production" priority: Reiss et al. (SoCC 2012, reference [25] of the packing paper) group the
#: trace's priorities 0-11 into gratis (0-1), other (2-8) and production (9-11).
PRODUCTION_PRIORITY = 9
JOB_EVENT_FIELDS = 8
JOB_COLUMNS = (Column(0, "time", "int"), Column(2, "job ID", "int"), Column(3, "event type", "int"))
MACHINE_EVENT_FIELDS = 6
MACHINE_COLUMNS = (
    Column(0, "time", "int"),
    Column(1, "machine ID", "int"),
    Column(2, "event type", "int"),
    Column(4, "CPUs", "float", optional=True),
    Column(5, "Memory", "float", optional=True),
)
MACHINE_ADD, MACHINE_REMOVE, MACHINE_UPDATE = 0, 1, 2

#: The columns of a run (one task instance's SUBMIT, SCHEDULE and end) as the reader emits it.
RUN_COLUMNS = ("sub", "sch", "end", "cpu", "mem", "key")
#: A task is keyed by ``job_id << TASK_BITS | task_index`` (one int, no tuples in the hot loop).
TASK_BITS = 24
_MAX_JOB_ID = 1 << (63 - TASK_BITS)

Unfinished = Literal["cut", "drop"]

# Reasons a task instance does not become a job (keys of ImportReport.dropped).
R_END_PENDING = "ended before it was scheduled (killed/failed while pending)"
R_END_ORPHAN = "end event without a SUBMIT in the input (task began before the first file)"
R_SCHED_ORPHAN = "SCHEDULE without a pending SUBMIT (row ignored)"
R_SCHED_RUNNING = "SCHEDULE while already running (row ignored)"
R_RESUBMIT_OPEN = "submitted again before its previous instance ended (previous instance dropped)"
R_PENDING_AT_END = "still pending at the window's end (never ran)"
R_RUNNING_AT_END = "still running at the window's end (unfinished='drop')"
R_BEFORE_START = "ended before the window's start"
R_NO_REQUEST = "no CPU or memory request on any of its events"
R_TOO_BIG = "request larger than every machine of the cluster"
K_ORPHAN_END = (
    "running when the input begins (end event without a SUBMIT): arrive at the window's start with the "
    "remaining duration (--running-at-start keep)"
)
K_ORPHAN_UPDATE = (
    "running when the input begins (UPDATE_RUNNING without a SUBMIT): arrive at the window's start, run to "
    "their end event or the window's end"
)
K_ORPHAN_SCHED = "pending when the input begins (SCHEDULE without a SUBMIT): arrive at the window's start"
_EVENT_LIST = ", ".join(f"{k}={n}" for k, n in enumerate(EVENT_NAMES))
_ANOMALIES = (R_END_PENDING, R_END_ORPHAN, R_SCHED_ORPHAN, R_SCHED_RUNNING, R_RESUBMIT_OPEN)


def to_seconds(t_us: NDArray[np.int64]) -> NDArray[np.float64]:
    """Google time stamps (us) to simulated seconds: 0 stays 0, others lose the 600 s offset (clipped at 0)."""
    return np.maximum(t_us - TRACE_OFFSET_US, 0) / 1e6


def _pair_events(
    state: dict[int, tuple[float, float, float, float]],
    ts: list[float],
    keys: list[int],
    evs: list[int],
    cpus: list[float],
    mems: list[float],
    anomalies: list[int],
    origin: float = -1.0,
) -> tuple[list[float], list[float], list[float], list[float], list[float], list[int]]:
    """The per-task state machine; returns the finished runs (submit, schedule, end, cpu, mem, key).

    ``state[key] = (submit_s, schedule_s or -1 while pending, cpu, mem)``.
    ``origin`` >= 0: tasks that were already there before the input's first
    event (``origin``, s) are kept: an end without a SUBMIT is a task running
    since ``origin``, a SCHEDULE without one a task pending since then (both
    still counted in ``anomalies``). ``origin`` < 0: such rows are dropped.
    This is the hot loop: locals only, one dict operation per row.
    """
    o_sub: list[float] = []
    o_sch: list[float] = []
    o_end: list[float] = []
    o_cpu: list[float] = []
    o_mem: list[float] = []
    o_key: list[int] = []
    get = state.get
    pop = state.pop
    for t, k, e, c, m in zip(ts, keys, evs, cpus, mems, strict=True):
        if e == 1:  # SCHEDULE
            s = get(k)
            if s is None:
                anomalies[2] += 1
                if origin >= 0.0:
                    state[k] = (origin, t, c, m)
                continue
            if s[1] >= 0.0:
                anomalies[3] += 1
                continue
            state[k] = (s[0], t, c if c == c else s[2], m if m == m else s[3])
        elif e == 0:  # SUBMIT
            if k in state:
                anomalies[4] += 1
            state[k] = (t, -1.0, c, m)
        elif e <= 6:  # EVICT, FAIL, FINISH, KILL, LOST
            s = pop(k, None)
            if s is None:
                anomalies[1] += 1
                if origin >= 0.0:
                    o_sub.append(origin)
                    o_sch.append(origin)
                    o_end.append(t)
                    o_cpu.append(c)
                    o_mem.append(m)
                    o_key.append(k)
            elif s[1] < 0.0:
                anomalies[0] += 1
            else:
                o_sub.append(s[0])
                o_sch.append(s[1])
                o_end.append(t)
                # A request no earlier row gave (a task pending before the input) is the end row's.
                o_cpu.append(s[2] if s[2] == s[2] else c)
                o_mem.append(s[3] if s[3] == s[3] else m)
                o_key.append(k)
        elif e == 7:  # UPDATE_PENDING: new requests for a task not yet running
            s = get(k)
            if s is not None and s[1] < 0.0:
                state[k] = (s[0], -1.0, c if c == c else s[2], m if m == m else s[3])
        elif origin >= 0.0 and k not in state:
            # UPDATE_RUNNING of a task never seen: running since before the input (a long-running
            # service); it joins the initial batch with these requests. For known tasks: ignored
            # (fixed requests per run).
            anomalies[5] += 1
            state[k] = (origin, origin, c, m)
    return o_sub, o_sch, o_end, o_cpu, o_mem, o_key


class _TaskEventReader:
    """Streams task-event files through :func:`_pair_events`, one block at a time."""

    def priority_of(self, key: NDArray[np.int64]) -> NDArray[np.int64]:
        """The priority of each task ``key`` of a run read (``keep_priority``); -1 where none was recorded."""
        keys = np.concatenate([*self.priority_keys, self.open_keys])
        values = np.concatenate([*self.priority_values, self.open_priority])
        if len(keys) == 0:
            return np.full(len(key), -1, dtype=np.int64)
        known, first = np.unique(keys, return_index=True)
        at = np.clip(np.searchsorted(known, key), 0, len(known) - 1)
        return np.where(known[at] == key, values[first][at], -1)

    def __init__(
        self,
        errors: RowErrors,
        report: ImportReport,
        end_s: float | None,
        progress: ProgressFn | None,
        min_priority: int | None = None,
        keep_running: bool = True,
        out: Growing | Spill | None = None,
        keep_priority: bool = False,
    ) -> None:
        self.errors = errors
        self.keep_running = keep_running
        #: Time (s) of the first event read: tasks seen only by their end were running since then.
        self.first_s: float | None = None
        self.min_priority = min_priority
        self.keep_priority = keep_priority
        read_priority = min_priority is not None or keep_priority
        self.columns = (*TASK_COLUMNS, PRIORITY_COLUMN) if read_priority else TASK_COLUMNS
        #: ``keep_priority``: per block, the keys of the runs it ended and their priorities; and the priorities
        #: of the tasks still open (sorted keys). Memory follows the runs kept and the open tasks, as ``state``.
        self.priority_keys: list[NDArray[np.int64]] = []
        self.priority_values: list[NDArray[np.int64]] = []
        self.open_keys = np.zeros(0, dtype=np.int64)
        self.open_priority = np.zeros(0, dtype=np.int64)
        self.report = report
        self.end_s = end_s
        self.progress = progress
        self.state: dict[int, tuple[float, float, float, float]] = {}
        self.out: Growing | Spill = out if out is not None else Growing(RUN_COLUMNS)
        # The anomalies, then UPDATE_RUNNING rows of tasks never seen (kept with running_at_start="keep").
        self.anomalies = [0] * (len(_ANOMALIES) + 1)
        self.last_us = 0  # time stamps must not go backwards, across files too
        self.last_s = 0.0
        self.rows = 0
        self.ignored: dict[str, int] = {}
        self.stopped = False
        self.new_file = False

    def _ignore(self, reason: str, n: int) -> None:
        if n:
            self.ignored[reason] = self.ignored.get(reason, 0) + int(n)

    def read(self, sources: Sequence[Source]) -> None:
        names = [source_name(s, f"task_events[{i}]") for i, s in enumerate(sources)]
        self.report.files["task_events"] = names
        for fi, (src, name) in enumerate(zip(sources, names, strict=True)):
            self.new_file = fi > 0
            for block in iter_blocks(src, name, self.errors):
                if not self.stopped and block.data:
                    self._block(parse_csv_block(block, TASK_EVENT_FIELDS, self.columns, self.errors), name)
                    self.new_file = False
                if self.progress is not None:
                    self.progress(
                        ImportProgress(
                            "task_events", name, fi, len(sources), block.bytes_done, block.bytes_total, self.rows
                        )
                    )
                if self.stopped:
                    break
            if self.stopped:
                self._ignore("files not read after --end", len(sources) - fi - 1)
                break

    def _block(self, parsed: tuple[dict[str, NDArray[Any]], NDArray[np.int64]], name: str) -> None:
        cols, lines = parsed
        self.rows += len(lines)
        keep = _valid_rows(cols, lines, self.errors, name)
        t, job, idx, ev = cols["time"], cols["job ID"], cols["task index"], cols["event type"]
        cpu, mem = cols["CPU request"], cols["memory request"]
        if self.min_priority is not None:
            # A task's events all carry its priority: dropping rows below it drops whole tasks.
            low = keep & (cols["priority"] < self.min_priority)
            self._ignore(f"rows of tasks below priority {self.min_priority}", int(np.count_nonzero(low)))
            keep &= ~low
        # Rows "after the trace window" carry no usable time: ignored, never checked for order.
        after = t == MAXINT
        self._ignore("rows at time 2^63-1 (after the trace window)", int(np.count_nonzero(after & keep)))
        keep &= ~after
        keep &= self._in_time_order(t, keep, lines, name)
        if not keep.all():
            t, job, idx, ev, cpu, mem = t[keep], job[keep], idx[keep], ev[keep], cpu[keep], mem[keep]
        if len(t) == 0:
            return
        prio = cols["priority"][keep].astype(np.int64) if self.keep_priority else None
        self.last_us = max(self.last_us, int(t.max()))
        self._pair(to_seconds(t), job, idx, ev, cpu, mem, prio)

    def _in_time_order(
        self, t: NDArray[np.int64], keep: NDArray[np.bool_], lines: NDArray[np.int64], name: str
    ) -> NDArray[np.bool_]:
        """Rows whose time stamp does not go backwards (within a file and from one file to the next)."""
        tk = np.where(keep, t, -1)
        prev = np.maximum.accumulate(np.concatenate(([self.last_us], tk)))[:-1]
        new_file, last_before = self.new_file, self.last_us

        def backwards(i: int) -> str:
            if new_file and prev[i] == last_before:
                return f"time stamp {t[i]} is earlier than {prev[i]} in a previous file (give the parts in order)"
            return f"time stamp {t[i]} is earlier than {prev[i]} on an earlier row"

        return reject_rows(
            keep & (t < prev),
            lines,
            self.errors,
            file=name,
            reason="time stamp goes backwards",
            column="time",
            detail=backwards,
        )

    def _pair(
        self,
        s: NDArray[np.float64],
        job: NDArray[np.int64],
        idx: NDArray[np.int64],
        ev: NDArray[np.int64],
        cpu: NDArray[np.float64],
        mem: NDArray[np.float64],
        prio: NDArray[np.int64] | None = None,
    ) -> None:
        """Pair a block's good events (times in seconds) into runs; stop at ``end_s``."""
        if self.end_s is not None:
            stop = int(np.searchsorted(s, self.end_s, side="left"))
            if stop < len(s):
                self._ignore("rows at or after --end (not read further)", len(s) - stop)
                self.stopped = True
                s, job, idx, ev, cpu, mem = s[:stop], job[:stop], idx[:stop], ev[:stop], cpu[:stop], mem[:stop]
                prio = prio[:stop] if prio is not None else None
        if len(s) == 0:
            return
        self.last_s = max(self.last_s, float(s[-1]))
        if self.first_s is None:
            self.first_s = float(s[0])
        self._ignore("UPDATE_RUNNING rows (requests fixed per run)", int(np.count_nonzero(ev == UPDATE_RUNNING)))
        key = (job << TASK_BITS) | idx
        origin = self.first_s if self.keep_running else -1.0
        o = _pair_events(
            self.state, s.tolist(), key.tolist(), ev.tolist(), cpu.tolist(), mem.tolist(), self.anomalies, origin
        )
        ended = np.array(o[5], dtype=np.int64)
        self.out.append(
            sub=np.array(o[0]),
            sch=np.array(o[1]),
            end=np.array(o[2]),
            cpu=np.array(o[3]),
            mem=np.array(o[4]),
            key=ended,
        )
        if prio is not None:
            self._keep_priorities(key, prio, ended)

    def _keep_priorities(self, key: NDArray[np.int64], prio: NDArray[np.int64], ended: NDArray[np.int64]) -> None:
        """Record the priority of the runs this block ended; keep those of the tasks still open.

        A task's rows all carry its priority; the first row read gives it (an
        open task's earlier rows come first). Vectorised per block: the hot
        loop (:func:`_pair_events`) is left as it is.
        """
        keys = np.concatenate((self.open_keys, key))
        values = np.concatenate((self.open_priority, prio))
        known, first = np.unique(keys, return_index=True)
        known_p = values[first]
        self.priority_keys.append(ended)
        self.priority_values.append(known_p[np.searchsorted(known, ended)])
        still = np.fromiter(self.state.keys(), dtype=np.int64, count=len(self.state))
        open_ = np.isin(known, still)
        self.open_keys, self.open_priority = known[open_], known_p[open_]


def _valid_rows(cols: dict[str, NDArray[Any]], lines: NDArray[np.int64], e: RowErrors, name: str) -> NDArray[np.bool_]:
    """The task-event rows whose fields are in range; each bad row is reported with its line and column."""
    t, job, idx, ev = cols["time"], cols["job ID"], cols["task index"], cols["event type"]
    keep = reject_rows(
        t < 0,
        lines,
        e,
        file=name,
        reason="negative time stamp",
        column="time",
        detail=describe("time stamp {} is negative", t),
    )
    too_late = (t > max_trace_seconds() * 1_000_000) & (t != MAXINT)  # µs; MAXINT: after the window
    keep &= reject_rows(
        too_late,
        lines,
        e,
        file=name,
        reason="time stamp out of range",
        column="time",
        detail=describe("time stamp {} µs is later than the bound (setting SIMCORE_MAX_TRACE_SECONDS)", t),
    )
    keep &= reject_rows(
        (ev < 0) | (ev > 8),
        lines,
        e,
        file=name,
        reason="unknown event type",
        column="event type",
        detail=describe(f"event type {{}} is not one of 0..8 ({_EVENT_LIST})", ev),
    )
    keep &= reject_rows(
        (job < 0) | (job >= _MAX_JOB_ID),
        lines,
        e,
        file=name,
        reason="job ID out of range",
        column="job ID",
        detail=describe(f"job ID {{}} is outside 0..{_MAX_JOB_ID - 1}", job),
    )
    keep &= reject_rows(
        (idx < 0) | (idx >= 1 << TASK_BITS),
        lines,
        e,
        file=name,
        reason="task index out of range",
        column="task index",
        detail=describe(f"task index {{}} is outside 0..{(1 << TASK_BITS) - 1}", idx),
    )
    for col in ("CPU request", "memory request"):
        arr = cols[col]
        bad = ~np.isnan(arr) & ~((arr >= 0) & np.isfinite(arr) & (arr <= max_request()))
        keep &= reject_rows(
            bad,
            lines,
            e,
            file=name,
            reason="bad resource request",
            column=col,
            detail=describe("request {} is not a finite non-negative number within SIMCORE_MAX_REQUEST", arr),
        )
    return keep


def read_job_ids(
    sources: Sequence[Source], errors: RowErrors, report: ImportReport, progress: ProgressFn | None = None
) -> NDArray[np.int64]:
    """The sorted IDs of jobs submitted in job-event files (used to cross-check task events)."""
    names = [source_name(s, f"job_events[{i}]") for i, s in enumerate(sources)]
    report.files["job_events"] = names
    ids: list[NDArray[np.int64]] = []
    rows = 0
    for fi, (src, name) in enumerate(zip(sources, names, strict=True)):
        for block in iter_blocks(src, name, errors):
            cols, lines = parse_csv_block(block, JOB_EVENT_FIELDS, JOB_COLUMNS, errors)
            rows += len(lines)
            ev = cols["event type"]
            keep = reject_rows(
                (ev < 0) | (ev > 8),
                lines,
                errors,
                file=name,
                reason="unknown event type",
                column="event type",
                detail=describe("event type {} is not one of 0..8", ev),
            )
            keep &= reject_rows(
                cols["time"] < 0,
                lines,
                errors,
                file=name,
                reason="negative time stamp",
                column="time",
                detail=describe("time stamp {} is negative", cols["time"]),
            )
            ids.append(np.unique(cols["job ID"][keep & (ev == SUBMIT)]))
            if progress is not None:
                progress(
                    ImportProgress("job_events", name, fi, len(sources), block.bytes_done, block.bytes_total, rows)
                )
    report.rows_read["job_events"] = rows
    return np.unique(np.concatenate(ids)) if ids else np.zeros(0, dtype=np.int64)


def read_machine_events(
    source: Source, *, on_error: OnError = "raise", name: str | None = None, report: ImportReport | None = None
) -> Cluster:
    """The initial machines of a machine-events file, grouped by capacity into configurations.

    Only events at time 0 (before the trace window) count: ADD sets a
    machine's (CPUs, Memory), UPDATE changes them, REMOVE deletes the
    machine. Machines whose capacity is missing are left out and counted.
    Configurations are ordered by machine count, largest first, then by
    CPUs and Memory (LoTES Table 1's order), and named ``M1``, ``M2``...
    """
    errors = RowErrors(on_error)
    rep = report if report is not None else ImportReport("google2011")
    fname = name or source_name(source, "machine_events")
    rep.files["machine_events"] = [fname]
    machines: dict[int, tuple[float, float]] = {}
    rows = 0
    later = 0
    last_t = 0
    for block in iter_blocks(source, fname, errors):
        cols, lines = parse_csv_block(block, MACHINE_EVENT_FIELDS, MACHINE_COLUMNS, errors)
        rows += len(lines)
        t = cols["time"]
        keep = _valid_machine_rows(cols, lines, errors, fname, last_t)
        last_t = max(last_t, int(t[keep].max())) if keep.any() else last_t
        initial = keep & (t == 0)
        later += int(np.count_nonzero(keep & (t != 0)))
        _apply_events(machines, cols, initial)
        if last_t > 0:
            break  # time-ordered file: no more time-0 rows; the rest is not read
    rep.rows_read["machine_events"] = rows
    rep.absorb(errors)
    caps = np.array(list(machines.values()), dtype=np.float64).reshape(-1, 2)
    missing = np.isnan(caps).any(axis=1)
    rep.extra["machines"] = {
        "initial": len(caps),
        "missing_capacity_left_out": int(missing.sum()),
        "events_after_time_0_ignored": later,
        "read_until_first_event_after_time_0": True,
    }
    caps = caps[~missing]
    if len(caps) == 0:
        raise InputError("no machine with a known capacity is present at time 0", file=fname)
    return _grouped(caps, fname)


def _valid_machine_rows(
    cols: dict[str, NDArray[Any]], lines: NDArray[np.int64], errors: RowErrors, fname: str, last_t: int
) -> NDArray[np.bool_]:
    """The machine-event rows with a known event type, good capacities and time stamps in order."""
    t, ev = cols["time"], cols["event type"]
    keep = reject_rows(
        (ev < 0) | (ev > 2),
        lines,
        errors,
        file=fname,
        reason="unknown event type",
        column="event type",
        detail=describe("machine event type {} is not 0, 1 or 2", ev),
    )
    for col in ("CPUs", "Memory"):
        arr = cols[col]
        bad = ~np.isnan(arr) & ~((arr >= 0) & np.isfinite(arr))
        keep &= reject_rows(
            bad,
            lines,
            errors,
            file=fname,
            reason="bad capacity",
            column=col,
            detail=describe("capacity {} is not a finite non-negative number", arr),
        )
    prev = np.maximum.accumulate(np.concatenate(([last_t], np.where(keep, t, -1))))[:-1]
    keep &= reject_rows(
        keep & (t < prev),
        lines,
        errors,
        file=fname,
        reason="time stamp goes backwards",
        column="time",
        detail=describe("time stamp {} is earlier than {} on an earlier row", t, prev),
    )
    return keep


def _apply_events(
    machines: dict[int, tuple[float, float]], cols: dict[str, NDArray[Any]], rows: NDArray[np.bool_]
) -> None:
    """Apply the chosen rows' events to ``machines``: ADD sets, UPDATE changes, REMOVE deletes."""
    for mid, e, c, m in zip(
        cols["machine ID"][rows].tolist(),
        cols["event type"][rows].tolist(),
        cols["CPUs"][rows].tolist(),
        cols["Memory"][rows].tolist(),
        strict=True,
    ):
        if e == MACHINE_REMOVE:
            machines.pop(mid, None)
        elif e == MACHINE_ADD or mid in machines:
            machines[mid] = (c, m)


def _grouped(caps: NDArray[np.float64], fname: str) -> Cluster:
    """Machines grouped by (CPUs, Memory): largest group first, then by CPUs and Memory (LoTES Table 1)."""
    uniq, counts = np.unique(caps, axis=0, return_counts=True)
    order = np.lexsort((uniq[:, 1], uniq[:, 0], -counts))
    uniq, counts = uniq[order], counts[order]
    return Cluster(
        name="google-2011-machines",
        resources=("cpu", "mem"),
        config_names=tuple(f"M{i + 1}" for i in range(len(uniq))),
        counts=counts,
        capacity=uniq,
        description=f"initial machines of {fname}, grouped by (CPUs, Memory), normalised to the largest machine",
    )


def _request_matrix(
    resources: Sequence[str], cpu: NDArray[np.float64], mem: NDArray[np.float64]
) -> NDArray[np.float64]:
    cols = {"cpu": cpu, "mem": mem}
    unknown = [r for r in resources if r not in cols]
    if unknown:
        raise ParameterError(f"Google 2011 tasks request only 'cpu' and 'mem'; the cluster also has {unknown}")
    return np.column_stack([cols[r] for r in resources]) if len(cpu) else np.zeros((0, len(resources)))


_PART = re.compile(r"part-(\d+)-of-(\d+)")


def part_gap(names: Sequence[str]) -> str | None:
    """A warning when the task_events file names skip part numbers (``part-00013`` then ``part-00015``)."""
    parts = sorted({int(m.group(1)) for n in names if (m := _PART.search(Path(n).name))})
    missing = [p for p in range(parts[0], parts[-1] + 1) if p not in set(parts)] if parts else []
    if not missing:
        return None
    shown = ", ".join(f"{p:05d}" for p in missing[:10]) + (" ..." if len(missing) > 10 else "")
    return (
        f"task_events parts {shown} are missing between part {parts[0]:05d} and {parts[-1]:05d}: "
        "the tasks they hold are absent, and tasks spanning the gap look unfinished"
    )


def mid_trace(report: ImportReport, first_s: float) -> None:
    """An input that begins after time 0 (without part 00000): a warning, and the estimate marked a lower bound.

    Part 00000 carries the time-0 events of every task already running when
    the trace starts; without it, a task that runs through the input without
    an event is invisible (issue 26: parts 00001-00005 alone estimate cpu at
    0.245, with part 00000 at 1.13), so the load read is a lower bound.
    """
    report.estimate_bound = (
        f"the input begins mid-trace (first event at {first_s:g} s), and tasks running through it without "
        "an event are not in it"
    )
    report.warnings.append(
        f"the input begins mid-trace (first event at {first_s:g} s, not at 0: part 00000 is not read): tasks "
        "running through the window without any event are missing, so the load is understated and the "
        "utilisation estimate is a lower bound; to include them, read from part 00000 and set the window's start"
    )


def close_open_tasks(r: _TaskEventReader, unfinished: Unfinished, window_end: float, report: ImportReport) -> None:
    """Tasks open at the window's end: running ones are cut there (or dropped), pending ones never ran.

    The cut runs are appended to the reader's output after every finished run (their place in the
    order of equal arrivals).
    """
    if not r.state:
        return
    st = np.array(list(r.state.values()), dtype=np.float64).reshape(-1, 4)
    running = st[:, 1] >= 0.0
    report.drop(R_PENDING_AT_END, int(np.count_nonzero(~running)))
    if unfinished == "cut":
        kst = np.fromiter(r.state.keys(), dtype=np.int64, count=len(r.state))[running]
        st = st[running]
        report.keep_note("running at the window's end: duration cut there", len(st))
        r.out.append(sub=st[:, 0], sch=st[:, 1], end=np.full(len(st), window_end), cpu=st[:, 2], mem=st[:, 3], key=kst)
    else:
        report.drop(R_RUNNING_AT_END, int(np.count_nonzero(running)))
    r.state.clear()


def window_runs(
    cols: dict[str, NDArray[Any]], start_s: float, cluster: Cluster, report: ImportReport
) -> tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]:
    """Runs (columns :data:`RUN_COLUMNS`) to jobs of the window: (arrival, duration, request, key), in run order.

    Counts every run dropped or changed in ``report``; works on any slice of
    the runs (the streaming import applies it chunk by chunk: counts add up).
    """
    sub, sch, end, cpu, mem, key = (cols[k] for k in RUN_COLUMNS)
    ok = end > start_s
    report.drop(R_BEFORE_START, int(np.count_nonzero(~ok)))
    no_req = ok & (np.isnan(cpu) | np.isnan(mem))
    report.drop(R_NO_REQUEST, int(np.count_nonzero(no_req)))
    ok &= ~no_req
    sub, sch, end, cpu, mem, key = sub[ok], sch[ok], end[ok], cpu[ok], mem[ok], key[ok]
    report.keep_note(
        "submitted before the window's start: arrive at its start",
        int(np.count_nonzero(sub < start_s)) if start_s > 0 else 0,
    )
    report.keep_note(
        "arrive at time 0: submitted before the trace window (initial batch)",
        int(np.count_nonzero(sub <= 0.0)) if start_s == 0 else 0,
    )
    arrival = np.maximum(sub, start_s) - start_s
    duration = end - np.maximum(sch, start_s)
    if np.any(duration < 0):  # pragma: no cover - impossible once time stamps are ordered
        raise InputError("negative duration after pairing events; this is a bug", file=report.files["task_events"][0])
    request = _request_matrix(cluster.resources, cpu, mem)
    fits = fits_any(request, cluster)
    report.drop(R_TOO_BIG, int(np.count_nonzero(~fits)))
    if not fits.all():
        arrival, duration, request, key = arrival[fits], duration[fits], request[fits], key[fits]
    return arrival, duration, request, key


def notes(
    report: ImportReport,
    task_events: Sequence[Source],
    window: tuple[float, float],
    running_at_start: str,
    unfinished: str,
    cluster: Cluster,
    min_priority: int | None,
) -> None:
    """The report's notes on how the trace was read."""
    gap = part_gap([source_name(s, f"task_events[{i}]") for i, s in enumerate(task_events)])
    if gap:
        report.warnings.append(gap)
    report.notes.extend(
        [
            "one job per task instance: arrival = SUBMIT, duration = SCHEDULE to EVICT/FAIL/FINISH/KILL/LOST "
            "(LoTES section 5.3); resubmissions are new jobs",
            "tasks grouped by job ID into bags of tasks (the job column of the trace written)",
            "time 0 = before the trace window -> arrival 0 (initial batch); other times minus the 600 s offset; "
            "time 2^63-1 rows ignored",
            f"window [{window[0]:g}, {window[1]:g}) s shifted to start at 0; tasks running at its start: "
            f"{running_at_start}; at its end: {unfinished}",
            f"requests checked against cluster {cluster.name!r}",
        ]
    )
    if min_priority is not None:
        report.notes.append(f"only tasks of priority >= {min_priority} (9-11: production)")


@dataclass
class Runs:
    """Task events read and paired: the reader (its ``out`` holds the runs), the window and the report."""

    reader: _TaskEventReader
    report: ImportReport
    cluster: Cluster
    job_ids: NDArray[np.int64] | None
    start_s: float
    window_end: float


def read_runs(
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
    min_priority: int | None = None,
    out: Growing | Spill,
    keep_priority: bool = False,
) -> Runs:
    """Read and pair the task events into runs appended to ``out`` (tasks open at the end included)."""
    if unfinished not in ("cut", "drop"):
        raise ParameterError(f"unfinished must be 'cut' or 'drop', got {unfinished!r}")
    if running_at_start not in ("keep", "drop"):
        raise ParameterError(f"running_at_start must be 'keep' or 'drop', got {running_at_start!r}")
    if start_s is not None and not (np.isfinite(start_s) and start_s >= 0):
        raise ParameterError(f"start must be a non-negative number of seconds, got {start_s}")
    if end_s is not None and not (np.isfinite(end_s) and end_s > (start_s or 0.0)):
        raise ParameterError(f"end must be a number of seconds after start ({start_s or 0.0}), got {end_s}")
    if not task_events:
        raise ParameterError("at least one task_events file is needed")
    report = ImportReport("google2011")
    errors = RowErrors(on_error)
    if cluster is None:
        if machine_events is not None:
            cluster = read_machine_events(machine_events, on_error=on_error, report=report)
        else:
            from simcore.presets import CLUSTERS

            cluster = CLUSTERS.get("google-2011").build()
    job_ids = read_job_ids(job_events, errors, report, progress) if job_events else None

    if min_priority is not None and (isinstance(min_priority, bool) or not isinstance(min_priority, int)):
        raise ParameterError(f"min_priority must be an integer, got {min_priority!r}")
    r = _TaskEventReader(
        errors,
        report,
        end_s,
        progress,
        min_priority,
        keep_running=running_at_start == "keep",
        out=out,
        keep_priority=keep_priority,
    )
    r.read(task_events)
    report.rows_read["task_events"] = r.rows
    report.absorb(errors)
    for reason, n in zip(_ANOMALIES, r.anomalies[: len(_ANOMALIES)], strict=True):
        if running_at_start == "keep" and reason in (R_END_ORPHAN, R_SCHED_ORPHAN):
            continue
        report.drop(reason, n)
    if running_at_start == "keep":
        report.keep_note(K_ORPHAN_END, r.anomalies[1])
        report.keep_note(K_ORPHAN_SCHED, r.anomalies[2])
        report.keep_note(K_ORPHAN_UPDATE, r.anomalies[5])
    report.extra["rows_ignored"] = r.ignored
    if start_s is None:
        # The window opens at the first event read: part 00007 alone starts at 35,080 s (issue 17).
        start_s = r.first_s if r.first_s is not None else 0.0
    if r.first_s:
        mid_trace(report, r.first_s)
    if end_s is not None and end_s <= start_s:
        raise ParameterError(f"end ({end_s:g} s) must be after the first event read ({start_s:g} s)")

    window_end = end_s if end_s is not None else max(r.last_s, start_s)
    close_open_tasks(r, unfinished, window_end, report)
    return Runs(r, report, cluster, job_ids, start_s, window_end)


def _bags_of_tasks(
    name: str,
    cluster: Cluster,
    arrival: NDArray[np.float64],
    duration: NDArray[np.float64],
    request: NDArray[np.float64],
    key: NDArray[np.int64],
    horizon_s: float,
    params: dict[str, Any],
) -> Workload:
    """Task instances sorted by arrival; every task of a job stays together, a bag of tasks per Google job ID."""
    order = np.argsort(arrival, kind="stable")
    # Jobs are numbered by first arrival.
    job_of, job_ids = number_jobs(key[order] >> TASK_BITS)
    return Workload(
        name=name,
        resources=tuple(cluster.resources),
        submit=arrival[order],
        request=request[order],
        work=duration[order],
        job_class=np.full(len(order), -1, dtype=np.int64),
        horizon_s=horizon_s,
        params={**params, "task_jobs": len(job_ids)},
        graph=TaskGraph.bag_of_tasks(job_of, job_ids=job_ids),
    )


def read_google2011(
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
) -> ImportResult:
    """Read Google 2011 task events (in time order, part 0 first) into a workload of task instances.

    ``start_s``/``end_s``: the window in simulated seconds (trace time minus
    the 600 s offset); see the module docstring for how jobs crossing it
    are treated; ``start_s`` None starts it at the first event read (a part
    from mid-trace is not simulated as hours of idle cluster first).
    ``running_at_start``: tasks already running (or pending) when the input
    begins, seen only by their end (or SCHEDULE), are kept as the window's
    initial batch with their remaining durations, or dropped. ``cluster``: the machines to check requests against and to
    return; default: derived from ``machine_events`` if given, otherwise
    the ``google-2011`` preset. ``min_priority``: keep only tasks of at
    least this priority (schema column 9; :data:`PRODUCTION_PRIORITY` keeps
    production work, as the packing paper did); their other rows are ignored
    and counted. Returns the workload (``submit`` sorted, ``job_class`` -1),
    the cluster and a report of every drop and skip.
    """
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
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
        out=Growing(RUN_COLUMNS),
        keep_priority=True,
    )
    r, report, cluster, job_ids = runs.reader, runs.report, runs.cluster, runs.job_ids
    start_s, window_end = runs.start_s, runs.window_end
    out = r.out
    assert isinstance(out, Growing)
    arrival, duration, request, key = window_runs(
        {k: out.column(k, np.int64 if k == "key" else np.float64) for k in RUN_COLUMNS}, start_s, cluster, report
    )
    if len(arrival) == 0:
        raise InputError(
            f"no jobs left in the window [{start_s:g}, {window_end:g}) s; rows read "
            f"{report.rows_read}, skipped {report.rows_skipped}, dropped {report.dropped}",
            file=report.files["task_events"][0],
        )
    if job_ids is not None:
        known = np.isin(key >> TASK_BITS, job_ids)
        report.extra["job_events"] = {
            "jobs_submitted": int(len(job_ids)),
            "jobs_with_tasks_kept": int(len(np.unique(key >> TASK_BITS))),
            "tasks_whose_job_has_no_SUBMIT_in_job_events": int(np.count_nonzero(~known)),
        }
    params = {
        "source": "google-clusterdata-2011",
        "window_start_s": float(start_s),
        "window_end_s": float(window_end),
        "trace_offset_s": TRACE_OFFSET_US / 1e6,
        "unfinished": unfinished,
        "running_at_start": running_at_start,
    }
    wl = _bags_of_tasks(name, cluster, arrival, duration, request, key, float(window_end - start_s), params)
    # Each task's priority, in the workload's order (_bags_of_tasks' stable sort by arrival): kept beside the
    # workload (ImportResult.priority), written as the trace's priority column, filtered on by a packing snapshot.
    priority = r.priority_of(key[np.argsort(arrival, kind="stable")])
    notes(report, task_events, (start_s, window_end), running_at_start, unfinished, cluster, min_priority)
    report.wall_s = time.perf_counter() - wall0
    report.cpu_s = time.process_time() - cpu0
    return ImportResult(wl, cluster, report, priority=priority)
