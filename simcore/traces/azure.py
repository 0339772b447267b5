"""The Azure Packing Trace 2020 (``packing_trace_zone_a_v1.sqlite``) as a simcore workload.

The trace is a SQLite database (AzurePublicDataset, AzureTracesForPacking2020.md)
of two tables:

* ``vm(vmId, tenantId, vmTypeId, priority, starttime, endtime)``: one VM
  request, times in **days** from the trace's start; ``starttime`` < 0 for
  VMs already running when the trace starts, ``endtime`` NULL for VMs still
  running at its end;
* ``vmType(id, vmTypeId, machineId, core, memory, hdd, ssd, nic)``: what a
  VM type takes on each machine type that can host it, as a *fraction of
  that machine* (the request depends on the machine: the heterogeneous
  model of LoTES).

Mapping. Machine types become the cluster's configurations (``cpu`` and
``mem``). The trace does not carry machine capacities, so they are
**inferred**: a VM type has a fixed size, so ``core`` fractions on two
machine types are in the inverse ratio of their cores. The machine type
hosting the most VM types is the reference (capacity 1.0); another's
capacity is the median, over the VM types both can host, of
``fraction on the reference / fraction on it`` (likewise for memory). A VM
type's request is then its fraction of the reference machine (or, if the
reference cannot host it, its fraction on a machine that can, scaled by
that machine's capacity). Machine counts are not in the trace either: the
**assumed** cluster has ``machines_per_type`` machines of each type
(default 100, or a cluster you name). Deviation: Azure only places a VM on
the machine types its ``vmType`` rows list; simcore places it wherever it
fits.

Rows are read in blocks of ``BLOCK_ROWS`` with a cursor (never the whole
table in Python objects). Each VM is one job: arrival ``starttime``,
duration ``endtime - starttime``, windows as :mod:`simcore.traces.window`
(by default from the trace's start, time 0: VMs running then are its
initial batch, kept with their remaining duration). Bad rows name the file,
the table, the row (``rowid``) and the column.
"""

from __future__ import annotations

import gzip
import io
import os
import shutil
import sqlite3
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import max_trace_seconds
from simcore.core.model import Cluster, Workload
from simcore.traces import window
from simcore.traces._stream import (
    Growing,
    ImportProgress,
    OnError,
    ProgressFn,
    RowErrors,
    Source,
    source_name,
)
from simcore.traces.report import ImportReport, ImportResult, fits_any

DAY_S = 86_400.0
BLOCK_ROWS = 200_000
MACHINES_PER_TYPE = 100

R_NO_TYPE = "vmTypeId not in the vmType table"
R_TOO_BIG = "request larger than every machine of the cluster"


def _open_db(src: Source, name: str) -> tuple[sqlite3.Connection, str | None]:
    """A read-only connection; bytes and file objects are copied to a temporary file (SQLite needs a path)."""
    tmp: str | None = None
    if isinstance(src, (str, os.PathLike)):
        p = Path(src)
        if not p.is_file():
            raise InputError("cannot open: no such file", file=name)
        with p.open("rb") as f:
            gz = f.read(2) == b"\x1f\x8b"
        path = str(p)
    if not isinstance(src, (str, os.PathLike)) or gz:
        # SQLite needs a plain file: uploads (and .gz databases) are copied, decompressed, block by block.
        fd, tmp = tempfile.mkstemp(suffix=".sqlite")
        raw: Any = (
            Path(src).open("rb")
            if isinstance(src, (str, os.PathLike))
            else io.BytesIO(bytes(src))
            if isinstance(src, (bytes, bytearray, memoryview))
            else src
        )
        try:
            head = raw.read(2)
            raw.seek(-len(head), io.SEEK_CUR)
            body = gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw
            with os.fdopen(fd, "wb") as f:
                shutil.copyfileobj(body, f, 1 << 20)
        except (OSError, EOFError) as e:
            os.unlink(tmp)
            raise InputError(f"cannot read the database: {e}", file=name) from None
        finally:
            if isinstance(src, (str, os.PathLike)):
                raw.close()
        path = tmp
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        con.execute("SELECT name FROM sqlite_master LIMIT 1").fetchall()
    except sqlite3.DatabaseError as e:
        if tmp:
            os.unlink(tmp)
        raise InputError(f"not a SQLite database ({e}); expected the Azure packing trace .sqlite", file=name) from None
    return con, tmp


def _columns(con: sqlite3.Connection, table: str, need: tuple[str, ...], name: str) -> None:
    have = {r[1] for r in con.execute(f"PRAGMA table_info({table})")}
    if not have:
        raise InputError(f"no table {table!r} (the Azure packing trace has tables vm and vmType)", file=name)
    missing = [c for c in need if c not in have]
    if missing:
        raise InputError(f"table {table!r} lacks column(s) {', '.join(missing)}", file=name)


def _number(v: Any, *, nullable: bool) -> float:
    if v is None:
        if nullable:
            return float("nan")
        raise ValueError("empty")
    if isinstance(v, (bytes, str)):
        v = float(v)  # raises ValueError on text
    x = float(v)
    if not np.isfinite(x):
        raise ValueError(repr(v))
    return x


def _rows(
    con: sqlite3.Connection,
    sql: str,
    cols: tuple[str, ...],
    nullable: tuple[bool, ...],
    table: str,
    name: str,
    errors: RowErrors,
) -> Any:
    """Blocks of (rowid, float columns) from ``sql``; a bad value raises or is skipped by ``errors``."""
    cur = con.execute(sql)
    while True:
        batch = cur.fetchmany(BLOCK_ROWS)
        if not batch:
            return
        try:
            arr = np.array(batch, dtype=np.float64)
            if not np.isfinite(arr[:, 1:][:, ~np.array(nullable)]).all():
                raise ValueError
            yield arr
            continue
        except (ValueError, TypeError):
            pass
        good: list[list[float]] = []
        for row in batch:
            vals = [float(row[0])]
            for c, v, nl in zip(cols, row[1:], nullable, strict=True):
                try:
                    vals.append(_number(v, nullable=nl))
                except (ValueError, TypeError):
                    errors.bad(
                        "bad value",
                        f"table {table}, rowid {row[0]}: expected a number, found {v!r}"[:160],
                        file=name,
                        line=None,
                        column=c,
                    )
                    break
            else:
                good.append(vals)
        yield np.array(good, dtype=np.float64).reshape(-1, len(cols) + 1)


def _vm_types(
    con: sqlite3.Connection, name: str, errors: RowErrors
) -> tuple[NDArray[np.int64], NDArray[np.int64], NDArray[np.float64]]:
    """(vmTypeId, machineId, [core, memory]) of every vmType row."""
    _columns(con, "vmType", ("vmTypeId", "machineId", "core", "memory"), name)
    parts = list(
        _rows(
            con,
            "SELECT rowid, vmTypeId, machineId, core, memory FROM vmType",
            ("vmTypeId", "machineId", "core", "memory"),
            (False, False, False, False),
            "vmType",
            name,
            errors,
        )
    )
    a = np.concatenate(parts) if parts else np.zeros((0, 5))
    bad = (a[:, 3:5] <= 0) | (a[:, 3:5] > 1)
    for i in np.flatnonzero(bad.any(axis=1))[:1]:
        col = "core" if bad[i, 0] else "memory"
        errors.bad(
            "bad fraction",
            f"table vmType, rowid {int(a[i, 0])}: {col} {a[i, 3 if bad[i, 0] else 4]:g} is not a machine "
            "fraction in (0, 1]",
            file=name,
            line=None,
            column=col,
        )
    a = a[~bad.any(axis=1)]
    if len(a) == 0:
        raise InputError("table vmType has no usable rows", file=name)
    return a[:, 1].astype(np.int64), a[:, 2].astype(np.int64), a[:, 3:5]


def infer_machines(
    vm_type: NDArray[np.int64], machine: NDArray[np.int64], frac: NDArray[np.float64]
) -> tuple[NDArray[np.int64], NDArray[np.float64], dict[int, NDArray[np.float64]]]:
    """Machine types (reference first), their capacities relative to the reference, and each VM type's request.

    See the module docstring: capacities from the median ratio of fractions over shared VM types.
    """
    machines, hosted = np.unique(machine, return_counts=True)
    ref = int(machines[np.argmax(hosted)])
    on_ref = {int(t): frac[i] for i, t in enumerate(vm_type) if machine[i] == ref}
    caps: dict[int, NDArray[np.float64]] = {ref: np.ones(2)}
    for m in machines.tolist():
        if m == ref:
            continue
        ratios = [on_ref[int(vm_type[i])] / frac[i] for i in np.flatnonzero(machine == m) if int(vm_type[i]) in on_ref]
        # A machine type sharing no VM type with the reference is taken to be its size.
        caps[m] = np.median(np.array(ratios), axis=0) if ratios else np.ones(2)
    order = [ref] + [m for m in machines.tolist() if m != ref]
    request: dict[int, NDArray[np.float64]] = {}
    for i, t in enumerate(vm_type.tolist()):
        if t in request:
            continue
        request[t] = on_ref[t] if t in on_ref else frac[i] * caps[int(machine[i])]
    return np.array(order, dtype=np.int64), np.array([caps[m] for m in order]), request


def read_azure(
    source: Source,
    *,
    cluster: Cluster | None = None,
    machines_per_type: int = MACHINES_PER_TYPE,
    start_s: float | None = None,
    end_s: float | None = None,
    running_at_start: window.RunningAtStart = "keep",
    unfinished: window.Unfinished = "cut",
    on_error: OnError = "raise",
    progress: ProgressFn | None = None,
    name: str | None = None,
) -> ImportResult:
    """Read the Azure packing trace database into a workload of VM requests; see the module docstring.

    ``start_s``/``end_s``: the window in seconds of trace time (default from
    0, the trace's start, to the last recorded time).
    """
    wall0 = time.perf_counter()
    cpu0 = time.process_time()
    _check_options(running_at_start, unfinished, machines_per_type, start_s)
    fname = source_name(source, "azure")
    report = ImportReport("azure")
    report.files["database"] = [fname]
    errors = RowErrors(on_error)
    types, vms = _read_database(source, fname, errors, report, progress)
    report.absorb(errors)
    st, en, typ = vms
    known = np.isin(typ, np.array(sorted(types.request), dtype=np.int64))
    report.drop(R_NO_TYPE, int(np.count_nonzero(~known)))
    st, en, typ = st[known], en[known], typ[known]
    if len(st) == 0:
        raise InputError(f"no VM requests: rows read {report.rows_read}, dropped {report.dropped}", file=fname)
    win = window.cut(
        st,
        en,
        report,
        start_s=start_s,
        end_s=end_s,
        default_start=max(0.0, float(st.min())),
        running_at_start=running_at_start,
        unfinished=unfinished,
    )
    assumed = cluster is None
    if cluster is None:
        cluster = _assumed_cluster(types, machines_per_type)
    request = _requests(cluster, types.requests_of(typ[win.keep]))
    fits = fits_any(request, cluster)
    report.drop(R_TOO_BIG, int(np.count_nonzero(~fits)))
    arrival, duration, request = win.arrival[fits], win.duration[fits], request[fits]
    if len(arrival) == 0:
        raise InputError(f"no VM requests left in the window; dropped {report.dropped}", file=fname)
    ordr = np.argsort(arrival, kind="stable")
    wl = Workload(
        name=name or _stem(fname),
        resources=tuple(cluster.resources),
        submit=arrival[ordr],
        request=request[ordr],
        work=duration[ordr],
        job_class=np.full(len(ordr), -1, dtype=np.int64),
        horizon_s=win.end_s - win.start_s,
        params={
            "source": "azure-packing-trace-2020",
            "window_start_s": win.start_s,
            "window_end_s": win.end_s,
            "running_at_start": running_at_start,
            "unfinished": unfinished,
        },
    )
    report.extra["machine_types"] = types.summary()
    report.notes.extend(
        _notes(int(types.order[0]), cluster, machines_per_type if assumed else None, win, running_at_start, unfinished)
    )
    report.wall_s = time.perf_counter() - wall0
    report.cpu_s = time.process_time() - cpu0
    return ImportResult(wl, cluster, report)


def _check_options(
    running_at_start: window.RunningAtStart,
    unfinished: window.Unfinished,
    machines_per_type: int,
    start_s: float | None,
) -> None:
    """Refuse bad reading options before the database is opened."""
    window.check_options(running_at_start, unfinished)
    if isinstance(machines_per_type, bool) or not isinstance(machines_per_type, int) or machines_per_type < 1:
        raise ParameterError(f"machines per type must be a positive integer, got {machines_per_type!r}")
    if start_s is not None and not np.isfinite(start_s):
        raise ParameterError(f"start must be a number of seconds, got {start_s}")


@dataclass(frozen=True)
class _Types:
    """The machine types (reference first), their inferred capacities, and each VM type's request."""

    order: NDArray[np.int64]
    caps: NDArray[np.float64]
    request: dict[int, NDArray[np.float64]]

    def summary(self) -> dict[str, dict[str, float]]:
        """Each machine type's inferred capacity, for the report."""
        return {
            f"machine-{m}": {"cpu": float(c[0]), "mem": float(c[1])}
            for m, c in zip(self.order.tolist(), self.caps, strict=True)
        }

    def requests_of(self, typ: NDArray[np.int64]) -> NDArray[np.float64]:
        """Each VM's [core, memory] fraction of the reference machine, from its VM type."""
        types = np.array(sorted(self.request), dtype=np.int64)
        table = np.array([self.request[int(t)] for t in types]).reshape(-1, 2)
        return np.asarray(table[np.searchsorted(types, typ)], dtype=np.float64)


_Vms = tuple[NDArray[np.float64], NDArray[np.float64], NDArray[np.int64]]


def _read_database(
    source: Source, fname: str, errors: RowErrors, report: ImportReport, progress: ProgressFn | None
) -> tuple[_Types, _Vms]:
    """The machine types (from table vmType) and every VM's start, end (s) and VM type (from table vm)."""
    con, tmp = _open_db(source, fname)
    try:
        vm_type, machine, frac = _vm_types(con, fname, errors)
        report.rows_read["vmType"] = len(vm_type)
        types = _Types(*infer_machines(vm_type, machine, frac))
        vms = _read_vms(con, fname, errors, report, progress)
    finally:
        con.close()
        if tmp:
            os.unlink(tmp)
    return types, vms


def _read_vms(
    con: sqlite3.Connection, fname: str, errors: RowErrors, report: ImportReport, progress: ProgressFn | None
) -> _Vms:
    """Table vm's rows in seconds; a row ending before it starts or beyond the time bound is refused or skipped."""
    _columns(con, "vm", ("vmTypeId", "starttime", "endtime"), fname)
    total = int(con.execute("SELECT count(*) FROM vm").fetchone()[0])
    out = Growing(("start", "end", "type"))
    rows = 0
    bound = float(max_trace_seconds())
    for a in _rows(
        con,
        "SELECT rowid, vmTypeId, starttime, endtime FROM vm",
        ("vmTypeId", "starttime", "endtime"),
        (False, False, True),
        "vm",
        fname,
        errors,
    ):
        rows += len(a)
        st, en = a[:, 2] * DAY_S, a[:, 3] * DAY_S
        bad = (np.abs(st) > bound) | (en > bound) | (en < st)
        for i in np.flatnonzero(bad)[:1]:
            errors.bad(
                "bad time",
                f"table vm, rowid {int(a[i, 0])}: starttime {a[i, 2]:g} / endtime {a[i, 3]:g} days "
                "(end before start, or beyond SIMCORE_MAX_TRACE_SECONDS)",
                file=fname,
                line=None,
                column="endtime" if en[i] < st[i] else "starttime",
                count=int(np.count_nonzero(bad)),
            )
        ok = ~bad
        out.append(start=st[ok], end=en[ok], type=a[ok, 1].astype(np.int64))
        if progress is not None:
            progress(ImportProgress("vm", fname, 0, 1, rows, total, rows))
    report.rows_read["vm"] = rows
    return out.column("start", np.float64), out.column("end", np.float64), out.column("type", np.int64)


def _assumed_cluster(types: _Types, machines_per_type: int) -> Cluster:
    """``machines_per_type`` machines of each machine type of the trace, of the inferred capacities."""
    return Cluster(
        name="azure-packing-2020",
        resources=("cpu", "mem"),
        config_names=tuple(f"machine-{m}" for m in types.order.tolist()),
        counts=np.full(len(types.order), machines_per_type),
        capacity=types.caps,
        description=(
            f"assumed: {machines_per_type} machines of each machine type of the trace; capacities inferred "
            f"from VM-type fractions, relative to machine type {int(types.order[0])} (1.0)"
        ),
    )


def _notes(
    reference: int,
    cluster: Cluster,
    assumed_per_type: int | None,
    win: window.Window,
    running_at_start: window.RunningAtStart,
    unfinished: window.Unfinished,
) -> list[str]:
    """The report's account of the mapping: jobs, capacities, the cluster, placement, the window."""
    return [
        "one VM = one job: arrival starttime, duration endtime - starttime (days x 86400)",
        f"machine capacities inferred from VM-type fractions (reference machine type {reference} = 1.0); "
        "a VM's request = its fraction of the reference machine",
        f"cluster {cluster.name!r}"
        + (
            f" assumed: {assumed_per_type} machines per machine type (the trace has no counts)"
            if assumed_per_type is not None
            else ""
        ),
        "Azure restricts a VM type to the machine types its vmType rows list; simcore places it wherever it fits",
        f"window [{win.start_s:g}, {win.end_s:g}) s shifted to 0; running at its start: {running_at_start}; "
        f"running at its end: {unfinished}",
    ]


def _requests(cluster: Cluster, req2: NDArray[np.float64]) -> NDArray[np.float64]:
    unknown = [r for r in cluster.resources if r not in ("cpu", "mem")]
    if unknown or "cpu" not in cluster.resources:
        raise ParameterError(
            f"Azure VMs request 'cpu' and 'mem'; cluster {cluster.name!r} has {list(cluster.resources)}"
        )
    out = np.zeros((len(req2), len(cluster.resources)))
    for k, r in enumerate(("cpu", "mem")):
        if r in cluster.resources:
            out[:, cluster.resources.index(r)] = req2[:, k]
    return out


def _stem(label: str) -> str:
    n = label.rsplit("/", 1)[-1]
    return n.rsplit(".", 1)[0] or "azure"


__all__ = ["infer_machines", "read_azure"]
