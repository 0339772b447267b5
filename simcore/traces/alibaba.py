"""Alibaba cluster-trace-v2018 batch workloads (``batch_task``, ``batch_instance``) as a simcore workload.

Both tables are header-less CSV (schema: ``cluster-trace-v2018/schema.md``
of alibaba/clusterdata). A file is recognised by its number of fields:

* ``batch_task`` (9 fields): task_name, instance_num, job_name, task_type,
  status, start_time, end_time, plan_cpu, plan_mem. One task becomes
  ``instance_num`` identical units (its instances, the trace's scheduling
  unit) with the task's plan as request and its run ``end - start`` as
  duration.
* ``batch_instance`` (14 fields): instance_name, task_name, job_name,
  task_type, status, start_time, end_time, machine_id, seq_no,
  total_seq_no, cpu_avg, cpu_max, mem_avg, mem_max. One instance is one
  unit, running ``end - start``; the table carries no plan, so its request
  is the instance's *peak* use (``cpu_max``, ``mem_max``). Instances with
  no peak recorded are dropped and counted.

Units: CPU in hundredths of a core (100 = 1 core), memory normalised to
0-100 of a machine. Arrival is ``start_time`` (s from the trace's start):
the trace records when a task started, not when it was submitted, so the
replay starts every job when Alibaba's Fuxi started it and the schedulers
compete from there. Rows whose end is not after their start (tasks that
never ran to an end: ``status`` other than Terminated, end 0) are dropped
and counted. Units of one job (``job_name``) form a bag of tasks
(``Workload.graph``), so job metrics apply.

The cluster is not in these tables: by default the **assumed** cluster is
``alibaba-2018``, 4,000 identical machines (the trace's "about 4000
machines") of 96 cores and memory 100 (``machine_meta``'s cpu_num and the
normalised mem_size), each of capacity 1.0 in ``cpu`` and ``mem``: a
request is ``plan_cpu / 100 / 96`` and ``plan_mem / 100``. Name another
cluster with ``cluster`` (its largest machine is taken to be 96 cores and
memory 100).

Rows are not in time order in the published files: columns are kept as
numpy chunks and sorted at the end (about 60 bytes a unit).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import max_trace_seconds
from simcore.core.model import Cluster, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.traces import window
from simcore.traces._stream import (
    Block,
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
    source_list,
    source_name,
)
from simcore.traces.report import ImportReport, ImportResult, fits_any
from simcore.workloads.taskorder import number_jobs

MACHINE_CORES = 96.0
MACHINE_MEM = 100.0
MACHINES = 4000

TASK_FIELDS = 9
TASK_COLUMNS = (
    Column(1, "instance_num", "int"),
    Column(2, "job_name", "id"),
    Column(5, "start_time", "float"),
    Column(6, "end_time", "float"),
    Column(7, "plan_cpu", "float", optional=True),
    Column(8, "plan_mem", "float", optional=True),
)
INSTANCE_FIELDS = 14
INSTANCE_COLUMNS = (
    Column(2, "job_name", "id"),
    Column(5, "start_time", "float"),
    Column(6, "end_time", "float"),
    Column(11, "cpu_max", "float", optional=True),
    Column(13, "mem_max", "float", optional=True),
)
#: Instances of one task beyond this are refused as bad input: the trace's largest tasks have a few
#: tens of thousands, and a corrupt count must not expand into billions of units.
MAX_INSTANCES = 1_000_000

R_NO_RUN = "no run (end time not after start time: never terminated)"
R_NO_PLAN = "no plan_cpu or plan_mem"
R_NO_PEAK = "no cpu_max or mem_max recorded"
R_NO_INSTANCES = "instance_num is 0"
R_TOO_BIG = "request larger than every machine of the cluster"


def assumed_cluster() -> Cluster:
    """The cluster the Alibaba tables are read against when none is named (see the module docstring)."""
    return Cluster(
        name="alibaba-2018",
        resources=("cpu", "mem"),
        config_names=("96-core",),
        counts=np.array([MACHINES]),
        capacity=np.array([[1.0, 1.0]]),
        description=(
            "assumed: 4000 identical machines of 96 cores and normalised memory 100 (cluster-trace-v2018 "
            "machine_meta), capacity 1.0 each"
        ),
    )


def _table_of(block: Block) -> str:
    """``batch_task`` or ``batch_instance``, from the field count of the block's first line."""
    first = block.data.split(b"\n", 1)[0]
    n = first.count(b",") + 1
    if n == TASK_FIELDS:
        return "batch_task"
    if n == INSTANCE_FIELDS:
        return "batch_instance"
    raise InputError(
        f"expected {TASK_FIELDS} comma-separated fields (batch_task) or {INSTANCE_FIELDS} (batch_instance), found {n}",
        file=block.file,
        line=block.first_line,
    )


def read_alibaba(
    sources: Sequence[Source] | Source,
    *,
    cluster: Cluster | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    running_at_start: window.RunningAtStart = "keep",
    unfinished: window.Unfinished = "cut",
    on_error: OnError = "raise",
    progress: ProgressFn | None = None,
    name: str | None = None,
) -> ImportResult:
    """Read ``batch_task`` or ``batch_instance`` files (all of one table) into a workload; see the module docstring.

    ``start_s``/``end_s``: the window in trace seconds (default: from the
    first start to the last end); see :mod:`simcore.traces.window`.
    """
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    _check_options(running_at_start, unfinished, start_s, end_s)
    srcs = source_list(sources, "at least one batch_task or batch_instance file is needed")
    report = ImportReport("alibaba")
    errors = RowErrors(on_error)
    names = [source_name(s, f"alibaba[{i}]") for i, s in enumerate(srcs)]
    table, units, n_units = _read_units(srcs, names, errors, report, progress)
    report.absorb(errors)
    if len(units.start) == 0:
        raise InputError(
            f"no jobs: rows read {report.rows_read[table.name]}, skipped {report.rows_skipped}, "
            f"dropped {report.dropped}",
            file=names[0],
        )
    win = window.cut(
        units.start,
        units.end,
        report,
        start_s=start_s,
        end_s=end_s,
        default_start=float(units.start.min()),
        running_at_start=running_at_start,
        unfinished=unfinished,
    )
    cpu, mem, job = units.cpu[win.keep], units.mem[win.keep], units.job[win.keep]
    if cluster is None:
        cluster = assumed_cluster()
    request = _requests(cluster, cpu, mem)
    fits = fits_any(request, cluster)
    report.drop(R_TOO_BIG, int(np.count_nonzero(~fits)))
    arrival, duration, request, job = win.arrival[fits], win.duration[fits], request[fits], job[fits]
    if len(arrival) == 0:
        raise InputError(
            f"no jobs left in the window [{win.start_s:g}, {win.end_s:g}) s; dropped {report.dropped}",
            file=names[0],
        )
    order = np.argsort(arrival, kind="stable")
    job_of, job_ids = number_jobs(job[order])
    wl = Workload(
        name=name or f"alibaba-{table.name}",
        resources=tuple(cluster.resources),
        submit=arrival[order],
        request=request[order],
        work=duration[order],
        job_class=np.full(len(order), -1, dtype=np.int64),
        horizon_s=win.end_s - win.start_s,
        params={
            "source": f"alibaba-cluster-trace-v2018 {table.name}",
            "window_start_s": win.start_s,
            "window_end_s": win.end_s,
            "running_at_start": running_at_start,
            "unfinished": unfinished,
            "task_jobs": len(job_ids),
        },
        graph=TaskGraph.bag_of_tasks(job_of, job_ids=job_ids),
    )
    report.extra["units_from_rows"] = n_units
    report.notes.extend(_notes(table.tasks, cluster, win, running_at_start, unfinished))
    report.wall_s = time.perf_counter() - wall0
    report.cpu_s = time.process_time() - cpu0
    return ImportResult(wl, cluster, report)


def _check_options(
    running_at_start: window.RunningAtStart, unfinished: window.Unfinished, start_s: float | None, end_s: float | None
) -> None:
    """Refuse bad reading options before any file is opened."""
    window.check_options(running_at_start, unfinished)
    if start_s is not None and not (np.isfinite(start_s) and start_s >= 0):
        raise ParameterError(f"start must be a non-negative number of seconds, got {start_s}")
    if end_s is not None and not (np.isfinite(end_s) and end_s > (start_s or 0.0)):
        raise ParameterError(f"end must be a number of seconds after start, got {end_s}")


@dataclass
class _Table:
    """The table the files hold (``batch_task`` or ``batch_instance``), known from the first block with data."""

    name: str = ""

    @property
    def tasks(self) -> bool:
        # Until a block with data names the table, blocks are parsed as batch_task (they hold no rows).
        return self.name != "batch_instance"

    @property
    def layout(self) -> tuple[int, tuple[Column, ...]]:
        """The table's field count and the columns read."""
        return (TASK_FIELDS, TASK_COLUMNS) if self.tasks else (INSTANCE_FIELDS, INSTANCE_COLUMNS)

    @property
    def resource_columns(self) -> tuple[str, str]:
        """The cpu and memory columns: a task's plan, or an instance's peak use."""
        return ("plan_cpu", "plan_mem") if self.tasks else ("cpu_max", "mem_max")

    def check(self, block: Block, fname: str) -> None:
        """Learn the table from the first block; refuse a file of the other table."""
        if block.data and not self.name:
            self.name = _table_of(block)
        elif block.data and block.first_line == 1 and _table_of(block) != self.name:
            raise InputError(f"give {self.name} files only, not a mix of tables", file=fname, line=1)


@dataclass(frozen=True)
class _Units:
    """Every unit read (a task's instances repeated), as columns in file order."""

    start: NDArray[np.float64]
    end: NDArray[np.float64]
    cpu: NDArray[np.float64]
    mem: NDArray[np.float64]
    job: NDArray[np.int64]


def _read_units(
    srcs: Sequence[Source],
    names: list[str],
    errors: RowErrors,
    report: ImportReport,
    progress: ProgressFn | None,
) -> tuple[_Table, _Units, int]:
    """Every file's units, block by block; rows that are bad, never ran or lack a plan are refused or dropped."""
    table = _Table()
    out = Growing(("start", "end", "cpu", "mem", "job"))
    rows = 0
    units = 0
    for fi, (src, fname) in enumerate(zip(srcs, names, strict=True)):
        for block in iter_blocks(src, fname, errors):
            table.check(block, fname)
            ncols, cols = table.layout
            c, lines = parse_csv_block(block, ncols, cols, errors)
            rows += len(lines)
            if len(lines):
                got = _units_of(c, lines, table, errors, fname, report)
                out.append(**got)
                units += len(got["start"])
            if progress is not None:
                progress(ImportProgress(table.name, fname, fi, len(srcs), block.bytes_done, block.bytes_total, rows))
    if not table.name:
        raise InputError("no rows: the files are empty", file=names[0])
    report.files[table.name] = names
    report.rows_read[table.name] = rows
    read = _Units(
        out.column("start", np.float64),
        out.column("end", np.float64),
        out.column("cpu", np.float64),
        out.column("mem", np.float64),
        out.column("job", np.int64),
    )
    return table, read, units


def _units_of(
    c: dict[str, NDArray[Any]],
    lines: NDArray[np.int64],
    table: _Table,
    errors: RowErrors,
    fname: str,
    report: ImportReport,
) -> dict[str, NDArray[Any]]:
    """One block's units: its good rows that ran, with a known request, each repeated instance_num times."""
    st, en = c["start_time"], c["end_time"]
    cpu_col, mem_col = table.resource_columns
    cpu, mem = c[cpu_col], c[mem_col]
    count = c["instance_num"] if table.tasks else np.ones(len(lines), dtype=np.int64)
    keep = _good_rows(c, lines, table, errors, fname)
    ran = keep & (en > st)
    report.drop(R_NO_RUN, int(np.count_nonzero(keep & ~ran)))
    known = ran & ~np.isnan(cpu) & ~np.isnan(mem)
    report.drop(R_NO_PLAN if table.tasks else R_NO_PEAK, int(np.count_nonzero(ran & ~known)))
    some = known & (count > 0)
    report.drop(R_NO_INSTANCES, int(np.count_nonzero(known & ~some)))
    # A task's instances are identical units: repeat its row instance_num times.
    rep = count[some]
    return {
        "start": np.repeat(st[some], rep),
        "end": np.repeat(en[some], rep),
        "cpu": np.repeat(cpu[some], rep),
        "mem": np.repeat(mem[some], rep),
        "job": np.repeat(c["job_name"][some], rep),
    }


def _good_rows(
    c: dict[str, NDArray[Any]], lines: NDArray[np.int64], table: _Table, errors: RowErrors, fname: str
) -> NDArray[np.bool_]:
    """The rows of a block that pass every check; each bad row is reported with its line and column."""
    bound = float(max_trace_seconds())
    st, en = c["start_time"], c["end_time"]
    keep = reject_rows(
        ~np.isfinite(st) | (st < 0) | (st > bound),
        lines,
        errors,
        file=fname,
        reason="bad start_time",
        column="start_time",
        detail=describe("start_time {} is not a time in seconds within SIMCORE_MAX_TRACE_SECONDS", st),
    )
    keep &= reject_rows(
        keep & (~np.isfinite(en) | (en > bound)),
        lines,
        errors,
        file=fname,
        reason="bad end_time",
        column="end_time",
        detail=describe("end_time {} is not a time in seconds within SIMCORE_MAX_TRACE_SECONDS", en),
    )
    for col in table.resource_columns:
        arr = c[col]
        keep &= reject_rows(
            keep & ~np.isnan(arr) & ~((arr >= 0) & np.isfinite(arr)),
            lines,
            errors,
            file=fname,
            reason="bad resource request",
            column=col,
            detail=describe(f"{col} {{}} is not a finite non-negative number", arr),
        )
    if table.tasks:
        count = c["instance_num"]
        keep &= reject_rows(
            keep & ((count < 0) | (count > MAX_INSTANCES)),
            lines,
            errors,
            file=fname,
            reason="bad instance_num",
            column="instance_num",
            detail=describe(f"instance_num {{}} is outside 0..{MAX_INSTANCES}", count),
        )
    return keep


def _notes(
    tasks: bool,
    cluster: Cluster,
    win: window.Window,
    running_at_start: window.RunningAtStart,
    unfinished: window.Unfinished,
) -> list[str]:
    """The report's account of the mapping: units, arrival and duration, requests, the window, jobs."""
    return [
        (
            "one task = instance_num units with the task's plan (plan_cpu/100 cores, plan_mem/100)"
            if tasks
            else "one instance = one unit; request = its peak use (cpu_max/100 cores, mem_max/100): "
            "batch_instance has no plan"
        ),
        "arrival = start_time (the trace has no submit time), duration = end_time - start_time",
        f"cpu request = cores / {MACHINE_CORES:g} (one machine), mem request = normalised memory / "
        f"{MACHINE_MEM:g}, against cluster {cluster.name!r}"
        + (" (assumed: the tables carry no machines)" if cluster.name == "alibaba-2018" else ""),
        f"window [{win.start_s:g}, {win.end_s:g}) s of trace time shifted to 0; running at its start: "
        f"{running_at_start}; running at its end: {unfinished}",
        "units grouped by job_name into bags of tasks (the job column of the trace written)",
    ]


def _requests(cluster: Cluster, cpu: NDArray[np.float64], mem: NDArray[np.float64]) -> NDArray[np.float64]:
    """Cores and normalised memory as fractions of the largest machine of ``cluster``."""
    unknown = [r for r in cluster.resources if r not in ("cpu", "mem")]
    if unknown or "cpu" not in cluster.resources:
        raise ParameterError(
            f"Alibaba tasks request 'cpu' and 'mem'; cluster {cluster.name!r} has {list(cluster.resources)}"
        )
    biggest = cluster.capacity[cluster.counts > 0].max(axis=0)
    req = np.zeros((len(cpu), len(cluster.resources)))
    ci = cluster.resources.index("cpu")
    req[:, ci] = cpu / 100.0 / MACHINE_CORES * biggest[ci]
    if "mem" in cluster.resources:
        mi = cluster.resources.index("mem")
        req[:, mi] = mem / MACHINE_MEM * biggest[mi]
    return req


__all__ = ["assumed_cluster", "read_alibaba"]
