"""The Standard Workload Format (SWF) of the Parallel Workloads Archive as a simcore workload.

One SWF line is one job with 18 whitespace-separated numeric fields (-1 =
unknown); ``;`` lines are header comments (``; MaxProcs: 128``). We use:

* field 2, **submit time** (s) -> arrival;
* field 4, **run time** (s) -> duration (machine-independent); -1 -> the
  job is dropped (counted), other negative values are bad input;
* field 5 **allocated** or field 8 **requested processors** (``procs``,
  default allocated: what the job actually ran on; the other field is the
  fallback when the chosen one is -1) -> the ``cpu`` request;
* field 10 **requested** or field 7 **used memory** (KB per processor,
  ``memory``, default requested, the other as fallback) times the
  processors -> the ``mem`` request; jobs with neither get 0 and are
  counted in the report.

Normalisation against a cluster the user chooses: ``machine_procs``
processors are the ``cpu`` capacity of the cluster's largest machine
(default: the header's ``MaxProcs``, else ``MaxNodes``, else the largest
job) and ``machine_mem_kb`` KB its ``mem`` capacity (default: the largest
job's memory, so it just fits). Without a cluster, the result is the
parallel computer as *one* machine of capacity 1.0 in ``cpu`` and ``mem``:
SWF jobs are gang-scheduled over many processors, and the simcore model
places a job on one machine, so space-sharing one big machine is the
faithful mapping (a job of ``p`` processors requests ``p / MaxProcs``).
Resources of a chosen cluster other than ``cpu`` and ``mem`` get request 0.

Window ``[start_s, end_s)`` on submit times (``start_s`` by default the
first submission, so absolute Unix times import as a window from the first
job), shifted to start at 0; the
horizon is ``end_s - start_s``, or the last kept submission without
``end_s``. SWF jobs carry their whole run time, so nothing is cut.
Submit times must not decrease (the format sorts jobs by submit time).
"""

from __future__ import annotations

import io
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import max_trace_seconds
from simcore.core.model import Cluster, Workload
from simcore.traces._stream import (
    Block,
    Growing,
    ImportProgress,
    OnError,
    ProgressFn,
    RowErrors,
    Source,
    describe,
    iter_blocks,
    reject_rows,
    source_list,
    source_name,
)
from simcore.traces.report import ImportReport, ImportResult, fits_any

SWF_FIELDS = 18
FIELD_NAMES = (
    "job number",
    "submit time",
    "wait time",
    "run time",
    "allocated processors",
    "average CPU time",
    "used memory",
    "requested processors",
    "requested time",
    "requested memory",
    "status",
    "user ID",
    "group ID",
    "executable number",
    "queue number",
    "partition number",
    "preceding job number",
    "think time",
)
SUBMIT, RUN, ALLOC_PROCS, USED_MEM, REQ_PROCS, REQ_MEM = 1, 3, 4, 6, 7, 9

Procs = Literal["allocated", "requested"]
Memory = Literal["requested", "used"]

R_NO_SUBMIT = "no submit time (-1)"
R_NO_RUN = "no run time (-1)"
R_NO_PROCS = "no processor count (-1 in both processor fields)"
R_BEFORE = "submitted before the window's start"
R_AFTER = "submitted at or after the window's end"
R_TOO_BIG = "request larger than every machine of the cluster"

_HEADER = re.compile(rb"^\s*;\s*([A-Za-z][\w ]*?)\s*:\s*(.*?)\s*$")
# The Archive's cleaned logs note each filter as "(24025 jobs removed)", on a continuation line of a Note.
_REMOVED = re.compile(rb"\((\d+) jobs? removed\)")


@dataclass
class SwfHeader:
    """The ``; Key: value`` comments at the top of an SWF file (all kept in ``fields``)."""

    fields: dict[str, str] = field(default_factory=dict)
    #: The most fields a data line had beyond the standard 18 (ignored; e.g. Alea's 21-field logs).
    extra_fields: int = 0
    #: Jobs a cleaned log says its filters removed (``(24025 jobs removed)`` in the header's notes).
    removed: int = 0
    #: Data lines seen in every file (each record, good or bad): compared with MaxRecords / MaxJobs.
    records: int = 0

    def number(self, key: str) -> float | None:
        v = self.fields.get(key)
        if v is None:
            return None
        try:
            x = float(v.split()[0])
        except (ValueError, IndexError):
            return None
        return x if np.isfinite(x) and x > 0 else None

    @property
    def max_procs(self) -> float | None:
        return self.number("MaxProcs")

    @property
    def max_nodes(self) -> float | None:
        return self.number("MaxNodes")

    @property
    def computer(self) -> str | None:
        return self.fields.get("Computer")


def _parse_block(
    block: Block, errors: RowErrors, header: SwfHeader, in_header: list[bool]
) -> tuple[NDArray[np.float64], NDArray[np.int64]]:
    """Rows of a block as an (n, 18) float array and their line numbers; header comments go to ``header``."""
    lines = block.data.split(b"\n")[:-1]
    data_idx: list[int] = []
    for i, ln in enumerate(lines):
        s = ln.lstrip()
        if not s:
            continue
        if s.startswith(b";"):
            if in_header[0]:
                m = _HEADER.match(ln)
                if m:
                    header.fields.setdefault(m.group(1).decode(errors="replace"), m.group(2).decode(errors="replace"))
                header.removed += sum(int(r) for r in _REMOVED.findall(ln))
            continue
        in_header[0] = False
        data_idx.append(i)
    header.records += len(data_idx)
    line_nos = np.array(data_idx, dtype=np.int64) + block.first_line
    if not data_idx:
        return np.zeros((0, SWF_FIELDS)), line_nos
    rows = [lines[i] for i in data_idx]
    try:
        arr = np.loadtxt(io.BytesIO(b"\n".join(rows)), ndmin=2, dtype=np.float64, comments=None)
        if arr.shape[0] == len(rows) and arr.shape[1] >= SWF_FIELDS:
            header.extra_fields = max(header.extra_fields, arr.shape[1] - SWF_FIELDS)
            return np.ascontiguousarray(arr[:, :SWF_FIELDS]), line_nos
    except ValueError:
        pass
    # The exact path: find and report every bad line.
    good: list[list[float]] = []
    good_lines: list[int] = []
    for ln, raw in zip(line_nos.tolist(), rows, strict=True):
        parts = raw.split()
        if len(parts) < SWF_FIELDS:
            errors.bad(
                "wrong column count",
                f"expected {SWF_FIELDS} whitespace-separated fields, found {len(parts)}",
                file=block.file,
                line=ln,
            )
            continue
        header.extra_fields = max(header.extra_fields, len(parts) - SWF_FIELDS)
        parts = parts[:SWF_FIELDS]
        vals: list[float] = []
        for j, p in enumerate(parts):
            try:
                vals.append(float(p))
            except ValueError:
                errors.bad(
                    "non-numeric field",
                    f"expected a number, found {p.decode(errors='replace')[:40]!r}",
                    file=block.file,
                    line=ln,
                    column=FIELD_NAMES[j],
                )
                break
        else:
            good.append(vals)
            good_lines.append(ln)
    return np.array(good, dtype=np.float64).reshape(-1, SWF_FIELDS), np.array(good_lines, dtype=np.int64)


def read_swf(
    sources: Sequence[Source] | Source,
    *,
    cluster: Cluster | None = None,
    procs: Procs = "allocated",
    memory: Memory = "requested",
    machine_procs: float | None = None,
    machine_mem_kb: float | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    on_error: OnError = "raise",
    progress: ProgressFn | None = None,
    name: str | None = None,
) -> ImportResult:
    """Read SWF file(s) (in submit-time order) into a workload; see the module docstring for the mapping."""
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    _check_options(procs, memory, machine_procs, machine_mem_kb, start_s, end_s)
    srcs = source_list(sources, "at least one SWF file is needed")
    report = ImportReport("swf")
    errors = RowErrors(on_error)
    header = SwfHeader()
    names = [source_name(s, f"swf[{i}]") for i, s in enumerate(srcs)]
    report.files["swf"] = names
    jobs = _read_jobs(srcs, names, _Fields(procs, memory), header, errors, report, progress)
    report.absorb(errors)
    start_s = _cut_window(jobs, start_s, end_s, report)

    procs_cap, procs_from = _capacity(
        machine_procs, header.max_procs, "MaxProcs", header.max_nodes, "MaxNodes", jobs.procs, "the largest job"
    )
    no_mem = np.isnan(jobs.mem)
    mem_cap, mem_from = _capacity(machine_mem_kb, None, "", None, "", jobs.mem[~no_mem], "the largest job's memory")
    stem = name or _stem(names[0])
    if cluster is None:
        cluster = _one_machine(header.computer or stem, procs_cap)
    request = _requests(cluster, jobs.procs, jobs.mem, procs_cap, mem_cap)
    fits = fits_any(request, cluster)
    report.drop(R_TOO_BIG, int(np.count_nonzero(~fits)))
    sub, run, request = jobs.submit[fits], jobs.run[fits], request[fits]
    report.keep_note("no memory information: mem request 0", int(np.count_nonzero(no_mem[fits])))
    if len(sub) == 0:
        raise InputError(
            f"no jobs left; rows read {report.rows_read['swf']}, skipped {report.rows_skipped}, "
            f"dropped {report.dropped}",
            file=names[0],
        )
    horizon = (end_s - start_s) if end_s is not None else float(sub.max())
    order = np.argsort(sub, kind="stable")
    wl = Workload(
        name=stem,
        resources=tuple(cluster.resources),
        submit=sub[order],
        request=request[order],
        work=run[order],
        job_class=np.full(len(sub), -1, dtype=np.int64),
        horizon_s=float(horizon),
        params={
            "source": "swf",
            "window_start_s": float(start_s),
            "machine_procs": procs_cap,
            "machine_mem_kb": mem_cap,
            "procs_field": procs,
            "memory_field": memory,
        },
    )
    report.extra["swf_header"] = {
        k: header.fields[k]
        for k in ("Computer", "MaxProcs", "MaxNodes", "MaxJobs", "UnixStartTime")
        if k in header.fields
    }
    cpu_note = (
        f"cpu request = processors ({procs}, else the other field) / {procs_cap:g} ({procs_from}) x the largest "
        f"machine's cpu ({_largest(cluster)[cluster.resources.index('cpu')]:g}) of cluster {cluster.name!r}"
    )
    report.notes.extend(_notes(cpu_note, mem_cap, mem_from, start_s, horizon, header))
    _check_record_count(header, names, report)
    report.wall_s = time.perf_counter() - wall0
    report.cpu_s = time.process_time() - cpu0
    return ImportResult(wl, cluster, report)


def _check_options(
    procs: str,
    memory: str,
    machine_procs: float | None,
    machine_mem_kb: float | None,
    start_s: float | None,
    end_s: float | None,
) -> None:
    """Refuse bad reading options before any file is opened."""
    if procs not in ("allocated", "requested"):
        raise ParameterError(f"procs must be 'allocated' or 'requested', got {procs!r}")
    if memory not in ("requested", "used"):
        raise ParameterError(f"memory must be 'requested' or 'used', got {memory!r}")
    for label, v in (("machine_procs", machine_procs), ("machine_mem_kb", machine_mem_kb)):
        if v is not None and not (np.isfinite(v) and v > 0):
            raise ParameterError(f"{label} must be a positive number, got {v}")
    if start_s is not None and not (np.isfinite(start_s) and start_s >= 0):
        raise ParameterError(f"start must be a non-negative number of seconds, got {start_s}")
    if end_s is not None and not (np.isfinite(end_s) and end_s > (start_s or 0.0)):
        raise ParameterError(f"end must be a number of seconds after start ({start_s or 0.0}), got {end_s}")


@dataclass(frozen=True)
class _Fields:
    """The processor and memory fields to read, each with the other as its fallback when it is -1."""

    procs: Procs
    memory: Memory

    @property
    def procs_columns(self) -> tuple[int, int]:
        return (ALLOC_PROCS, REQ_PROCS) if self.procs == "allocated" else (REQ_PROCS, ALLOC_PROCS)

    @property
    def memory_columns(self) -> tuple[int, int]:
        return (REQ_MEM, USED_MEM) if self.memory == "requested" else (USED_MEM, REQ_MEM)


@dataclass
class _Jobs:
    """The jobs read so far, as columns: submit and run time (s), processors, memory (KB; NaN unknown)."""

    submit: NDArray[np.float64]
    run: NDArray[np.float64]
    procs: NDArray[np.float64]
    mem: NDArray[np.float64]

    def keep(self, mask: NDArray[np.bool_]) -> None:
        self.submit, self.run = self.submit[mask], self.run[mask]
        self.procs, self.mem = self.procs[mask], self.mem[mask]


@dataclass
class _SubmitOrder:
    """What the row checks carry from block to block: the first submit time, and the latest kept."""

    origin: float | None = None
    last_submit: float = -np.inf


def _read_jobs(
    srcs: Sequence[Source],
    names: list[str],
    fields: _Fields,
    header: SwfHeader,
    errors: RowErrors,
    report: ImportReport,
    progress: ProgressFn | None,
) -> _Jobs:
    """Every file's jobs, block by block: bad rows refused or skipped, jobs without a time or size dropped."""
    out = Growing(("submit", "run", "procs", "mem"))
    rows = 0
    state = _SubmitOrder()
    for fi, (src, fname) in enumerate(zip(srcs, names, strict=True)):
        in_header = [True]
        for block in iter_blocks(src, fname, errors):
            a, lines = _parse_block(block, errors, header, in_header)
            rows += len(a)
            if len(a):
                a = a[_good_rows(a, lines, errors, fname, state)]
                out.append(**_job_columns(a, fields, report))
            if progress is not None:
                progress(ImportProgress("swf", fname, fi, len(srcs), block.bytes_done, block.bytes_total, rows))
    report.rows_read["swf"] = rows
    return _Jobs(
        out.column("submit", np.float64),
        out.column("run", np.float64),
        out.column("procs", np.float64),
        out.column("mem", np.float64),
    )


def _good_rows(
    a: NDArray[np.float64], lines: NDArray[np.int64], errors: RowErrors, fname: str, state: _SubmitOrder
) -> NDArray[np.bool_]:
    """The rows of a block that pass every check; each bad row is reported with its line and field."""
    sub, run = a[:, SUBMIT], a[:, RUN]
    keep = reject_rows(
        np.asarray(~np.isfinite(a).all(axis=1)),
        lines,
        errors,
        file=fname,
        reason="non-finite field",
        column=None,
        detail=describe("non-finite value in {}", a),
    )
    keep &= reject_rows(
        keep & (sub < 0) & (sub != -1),
        lines,
        errors,
        file=fname,
        reason="negative submit time",
        column=FIELD_NAMES[SUBMIT],
        detail=describe("submit time {:g} is negative (only -1, unknown, is allowed)", sub),
    )
    keep &= reject_rows(
        keep & (run < 0) & (run != -1),
        lines,
        errors,
        file=fname,
        reason="negative run time",
        column=FIELD_NAMES[RUN],
        detail=describe("run time {:g} is negative (only -1, unknown, is allowed)", run),
    )
    keep &= _times_in_range(sub, run, keep, lines, errors, fname, state)
    known = keep & (sub >= 0)
    prev = np.maximum.accumulate(np.concatenate(([state.last_submit], np.where(known, sub, -np.inf))))[:-1]
    keep &= reject_rows(
        known & (sub < prev),
        lines,
        errors,
        file=fname,
        reason="submit time goes backwards",
        column=FIELD_NAMES[SUBMIT],
        detail=describe(
            "submit time {:g} is earlier than {:g} on an earlier line (SWF files are sorted by submit time)",
            sub,
            prev,
        ),
    )
    if (keep & (sub >= 0)).any():
        state.last_submit = max(state.last_submit, float(sub[keep & (sub >= 0)].max()))
    return keep


def _times_in_range(
    sub: NDArray[np.float64],
    run: NDArray[np.float64],
    keep: NDArray[np.bool_],
    lines: NDArray[np.int64],
    errors: RowErrors,
    fname: str,
    state: _SubmitOrder,
) -> NDArray[np.bool_]:
    """Rows whose submit time (after the first) and run time are within SIMCORE_MAX_TRACE_SECONDS."""
    bound = float(max_trace_seconds())
    if state.origin is None and (keep & (sub >= 0)).any():
        # Submit times are bounded relative to the first one: logs in absolute Unix
        # time (1.3e9 s) are fine, a span of more than the bound is not.
        state.origin = float(sub[keep & (sub >= 0)][0])
    rel = sub - (state.origin or 0.0)
    return reject_rows(
        keep & ((rel > bound) | (run > bound)),
        lines,
        errors,
        file=fname,
        reason="time out of range",
        column=FIELD_NAMES[SUBMIT] if bool(((rel > bound) & keep).any()) else FIELD_NAMES[RUN],
        detail=describe(
            "submit time {:g} (that far after the first) or run time {:g} exceeds SIMCORE_MAX_TRACE_SECONDS",
            sub,
            run,
        ),
    )


def _job_columns(a: NDArray[np.float64], fields: _Fields, report: ImportReport) -> dict[str, NDArray[np.float64]]:
    """Good rows as job columns; rows without a submit time, run time or processor count are dropped (counted)."""
    report.drop(R_NO_SUBMIT, int(np.count_nonzero(a[:, SUBMIT] == -1)))
    a = a[a[:, SUBMIT] >= 0]
    report.drop(R_NO_RUN, int(np.count_nonzero(a[:, RUN] == -1)))
    a = a[a[:, RUN] >= 0]
    p_main, p_other = fields.procs_columns
    p = np.where(a[:, p_main] > 0, a[:, p_main], a[:, p_other])
    report.drop(R_NO_PROCS, int(np.count_nonzero(p <= 0)))
    a, p = a[p > 0], p[p > 0]
    m_main, m_other = fields.memory_columns
    mem_per = np.where(a[:, m_main] > 0, a[:, m_main], a[:, m_other])
    # Memory is KB per processor; a job with neither field gets NaN (request 0, counted later).
    mem = np.where(mem_per > 0, mem_per * p, np.nan)
    return {"submit": a[:, SUBMIT], "run": a[:, RUN], "procs": p, "mem": mem}


def _cut_window(jobs: _Jobs, start_s: float | None, end_s: float | None, report: ImportReport) -> float:
    """Keep the jobs submitted in ``[start_s, end_s)``, shifted to start at 0; returns the window's start."""
    if start_s is None:
        # The window opens at the first submission: a log in absolute Unix time (UnixStartTime
        # offsets not applied) must not become a 1.4e9 s empty stretch before the first job (issue 17).
        start_s = float(jobs.submit.min()) if len(jobs.submit) else 0.0
    if end_s is not None and end_s <= start_s:
        raise ParameterError(f"end ({end_s:g} s) must be after the first submission ({start_s:g} s)")
    inside = jobs.submit >= start_s
    report.drop(R_BEFORE, int(np.count_nonzero(~inside)))
    if end_s is not None:
        report.drop(R_AFTER, int(np.count_nonzero(inside & (jobs.submit >= end_s))))
        inside &= jobs.submit < end_s
    jobs.keep(inside)
    jobs.submit = jobs.submit - start_s
    return start_s


def _one_machine(computer: str, procs_cap: float) -> Cluster:
    """The parallel computer as one space-shared machine of capacity 1.0 (see the module docstring)."""
    return Cluster(
        name=f"swf-{_slug(computer)}",
        resources=("cpu", "mem"),
        config_names=("whole-machine",),
        counts=np.array([1]),
        capacity=np.array([[1.0, 1.0]]),
        description=f"{computer}: {procs_cap:g} processors as one space-shared machine (capacity 1.0)",
    )


def _largest(cluster: Cluster) -> NDArray[np.float64]:
    """Each resource's capacity on the cluster's largest machine (of the configurations it has)."""
    return np.asarray(cluster.capacity[cluster.counts > 0].max(axis=0), dtype=np.float64)


def _requests(
    cluster: Cluster, procs: NDArray[np.float64], mem: NDArray[np.float64], procs_cap: float, mem_cap: float
) -> NDArray[np.float64]:
    """Processors and memory as fractions of the largest machine; other resources request 0."""
    if "cpu" not in cluster.resources:
        raise ParameterError(
            f"cluster {cluster.name!r} has no 'cpu' resource to map SWF processors to "
            f"(its resources: {', '.join(cluster.resources)})"
        )
    biggest = _largest(cluster)
    request = np.zeros((len(procs), len(cluster.resources)))
    ci = cluster.resources.index("cpu")
    request[:, ci] = procs / procs_cap * biggest[ci]
    if "mem" in cluster.resources:
        mi = cluster.resources.index("mem")
        request[:, mi] = np.where(np.isnan(mem), 0.0, mem / mem_cap * biggest[mi]) if mem_cap else 0.0
    return request


def _notes(
    cpu_note: str, mem_cap: float, mem_from: str, start_s: float, horizon: float, header: SwfHeader
) -> list[str]:
    """The report's account of the mapping: requests, memory, the window and ignored fields."""
    notes = [
        cpu_note,
        ("mem request = KB per processor x processors / " + f"{mem_cap:g} KB ({mem_from})")
        if mem_cap
        else "no job has memory information: mem requests are 0",
        f"window starts at submit time {start_s:g} s, shifted to 0; horizon {horizon:g} s",
    ]
    if header.extra_fields:
        notes.append(
            f"lines have up to {SWF_FIELDS + header.extra_fields} fields: the {header.extra_fields} beyond the "
            f"standard {SWF_FIELDS} are ignored (e.g. Alea's 21-field logs)"
        )
    return notes


def _check_record_count(header: SwfHeader, names: list[str], report: ImportReport) -> None:
    """Warn when the records read are not what the header's MaxRecords (else MaxJobs) announces (issue 26).

    A log cut short (a partial download, a file split in parts) imports
    without error otherwise. Cleaned logs announce the jobs their filters
    removed (``(24025 jobs removed)``): those are subtracted first.
    """
    key = "MaxRecords" if header.number("MaxRecords") is not None else "MaxJobs"
    claimed = header.number(key)
    if claimed is None:
        return
    expected = int(claimed) - header.removed
    cleaned = f" minus {header.removed:,} removed by the log's cleaning" if header.removed else ""
    where = names[0] if len(names) == 1 else f"{names[0]} (header) and {len(names) - 1} more file(s)"
    said = f"the header of {where} gives {key} {int(claimed):,}{cleaned}: {expected:,} records"
    if header.records == expected:
        report.notes.append(f"{said}, all read")
    elif header.records < expected:
        report.warnings.append(
            f"the log looks truncated: {said}, but {header.records:,} were read "
            f"({expected - header.records:,} missing, {header.records / expected:.1%} read). The jobs missing "
            "are not simulated; check the download (or give every part of a split log)"
        )
    else:
        report.warnings.append(
            f"{said}, but {header.records:,} were read: the header does not describe this file "
            "(parts of different logs given together?)"
        )


def _capacity(
    given: float | None,
    h1: float | None,
    h1_name: str,
    h2: float | None,
    h2_name: str,
    values: NDArray[np.float64],
    fallback: str,
) -> tuple[float, str]:
    if given is not None:
        return float(given), "given"
    if h1 is not None:
        return h1, f"header {h1_name}"
    if h2 is not None:
        return h2, f"header {h2_name}"
    if len(values) and float(values.max()) > 0:
        return float(values.max()), fallback
    return 0.0, "unknown"


def _stem(label: str) -> str:
    n = label.rsplit("/", 1)[-1]
    for ext in (".gz", ".swf"):
        if n.endswith(ext):
            n = n[: -len(ext)]
    return n or "swf"


def _slug(s: str) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", s).strip("-").lower() or "machine"


__all__ = ["FIELD_NAMES", "SwfHeader", "read_swf"]
