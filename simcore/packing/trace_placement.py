"""A Google 2011 snapshot placed *as the trace placed it*: every running task on the machine its SCHEDULE names.

:func:`simcore.packing.sources.from_google2011` starts every task pending, to
be repacked (first fit in an ordering, or a scheduler). The trace knows
better: each ``SCHEDULE`` row carries the machine ID the task ran on (schema
column 4), so :func:`google2011_as_is` keeps that placement (issue 26).

Which tasks: those running at ``t`` in the sense of ``from_google2011`` (the
reader's window ``[t, t + 1 s)``): scheduled before ``t + 1 s``, and not
ended by then, or ended inside it after ``t`` and after their SCHEDULE. Their
request is the SCHEDULE row's, else the last one SUBMIT or UPDATE_PENDING
gave, else the end row's (the reader's rule); tasks without one are left
out (counted). Tasks running since before the input's first row without an
event are invisible, as in the reader: read from part 00000.

Which machines and capacities:

* with ``machine_events``: the machines alive at ``t`` (ADD, UPDATE and
  REMOVE rows up to ``t``) with their (CPUs, Memory), idle ones included;
* without: only the machines the running tasks name (idle machines are
  invisible), given the cluster's configurations (the ``google-2011``
  preset: LoTES Table 1) in its proportions, the largest configurations to
  the machines the trace loaded most (by cpu + mem placed). An assumption,
  said in ``meta``: the trace's machines get the preset's capacity mix, and
  a machine is as big as its load suggests among them.

Google overcommits machines (and a machine may be larger than assumed), so
the tasks the trace put on a machine may not all fit its capacity here: in
task order, those that fit stay, the others are left pending and counted
(``meta["over_capacity"]``), as are tasks on a machine the machine events
do not know (``meta["unknown_machine"]``). Task order is submission order,
the paper's *arrival* ordering, so a first-fit repack of the same snapshot
(:func:`repacked`) differs from it in placement only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster
from simcore.packing.snapshot import EPS, FloatArray, IntArray, Snapshot
from simcore.traces._stream import Column, RowErrors, Source, iter_blocks, parse_csv_block, source_name

#: task_events columns this reader needs (schema.csv): the reader's, plus the machine ID of SCHEDULE rows.
_TASK_COLUMNS = (
    Column(0, "time", "int"),
    Column(2, "job ID", "int"),
    Column(3, "task index", "int"),
    # Machine IDs reach 4.2e9 and are empty on most rows: read as float (exact below 2^53), NaN when empty.
    Column(4, "machine ID", "float", optional=True),
    Column(5, "event type", "int"),
    Column(8, "priority", "int"),
    Column(9, "CPU request", "float", optional=True),
    Column(10, "memory request", "float", optional=True),
)
_SUBMIT, _SCHEDULE, _UPDATE_PENDING = 0, 1, 7
_ENDS = (2, 3, 4, 5, 6)  # EVICT, FAIL, FINISH, KILL, LOST
_NEVER_US = (1 << 63) - 1


@dataclass
class _State:
    """Tasks pending (key -> submit, cpu, mem) and running (key -> submit, schedule, machine, cpu, mem)."""

    t: float
    pending: dict[int, tuple[float, float, float]] = field(default_factory=dict)
    running: dict[int, tuple[float, float, int, float, float]] = field(default_factory=dict)
    #: Runs that ended inside the window after t: (submit, machine, cpu, mem).
    ended: list[tuple[float, int, float, float]] = field(default_factory=list)
    no_request: int = 0

    def row(self, ts: float, key: int, ev: int, machine: float, cpu: float, mem: float) -> None:
        if ev == _SUBMIT:
            self.pending[key] = (ts, cpu, mem)
        elif ev == _SCHEDULE:
            sub, pc, pm = self.pending.pop(key, (ts, cpu, mem))
            if machine == machine:  # a SCHEDULE row without a machine cannot be placed as-is
                self.running[key] = (sub, ts, int(machine), cpu if cpu == cpu else pc, mem if mem == mem else pm)
        elif ev in _ENDS:
            self.pending.pop(key, None)
            run = self.running.pop(key, None)
            if run is not None and ts > max(run[1], self.t):
                sub, _, m, c, me = run
                self.ended.append((sub, m, c if c == c else cpu, me if me == me else mem))
        elif ev == _UPDATE_PENDING and key in self.pending:
            sub, pc, pm = self.pending[key]
            self.pending[key] = (sub, cpu if cpu == cpu else pc, mem if mem == mem else pm)

    def tasks(self) -> list[tuple[float, int, float, float]]:
        """(submit, machine, cpu, mem) of every task running in the window, in submission order."""
        out = self.ended + [(s, m, c, me) for s, _, m, c, me in self.running.values()]
        known = [x for x in out if x[2] == x[2] and x[3] == x[3]]
        self.no_request = len(out) - len(known)
        return sorted(known, key=lambda x: x[0])


def _scan(task_events: Sequence[Source], t: float, min_priority: int | None) -> _State:
    """Every task_events row before ``t + 1 s`` through :class:`_State` (files in time order)."""
    state = _State(t)
    cutoff_us = int(round((t + 1.0) * 1e6)) + 600_000_000
    errors = RowErrors("raise")
    for i, src in enumerate(task_events):
        name = source_name(src, f"task_events[{i}]")
        for block in iter_blocks(src, name, errors):
            cols, _ = parse_csv_block(block, 13, _TASK_COLUMNS, errors)
            tus = cols["time"]
            keep = (tus < cutoff_us) & (tus != _NEVER_US)
            if min_priority is not None:
                keep &= cols["priority"] >= min_priority
            ts = np.maximum(tus - 600_000_000, 0) / 1e6
            keys = (cols["job ID"] << 24) | cols["task index"]
            for k in np.flatnonzero(keep).tolist():
                state.row(
                    float(ts[k]),
                    int(keys[k]),
                    int(cols["event type"][k]),
                    float(cols["machine ID"][k]),
                    float(cols["CPU request"][k]),
                    float(cols["memory request"][k]),
                )
            if len(tus) and tus[-1] >= cutoff_us:
                return state
    return state


def machines_at(machine_events: Source, t: float) -> dict[int, tuple[float, float]]:
    """Machine ID -> (CPUs, Memory) of the machines alive at ``t`` s (ADD/UPDATE/REMOVE rows up to ``t``)."""
    from simcore.traces.google2011 import MACHINE_COLUMNS, MACHINE_EVENT_FIELDS

    name = source_name(machine_events, "machine_events")
    errors = RowErrors("raise")
    alive: dict[int, tuple[float, float]] = {}
    limit_us = int(round(t * 1e6)) + 600_000_000
    for block in iter_blocks(machine_events, name, errors):
        cols, _ = parse_csv_block(block, MACHINE_EVENT_FIELDS, MACHINE_COLUMNS, errors)
        for tu, mid, ev, c, m in zip(
            cols["time"].tolist(),
            cols["machine ID"].tolist(),
            cols["event type"].tolist(),
            cols["CPUs"].tolist(),
            cols["Memory"].tolist(),
            strict=True,
        ):
            if tu > limit_us:
                return alive
            if ev == 1:
                alive.pop(mid, None)
            elif c == c and m == m:
                alive[mid] = (c, m)
    return alive


def ranked_capacities(cluster: Cluster, load: FloatArray) -> FloatArray:
    """The cluster's configurations in its proportions over ``len(load)`` machines, the largest to the most loaded.

    Counts are scaled to the machine count by largest remainder; "largest"
    and "most loaded" both rank by cpu + mem (ties: configuration order,
    machine order), so the capacity mix is the cluster's and a heavily
    loaded machine is rarely given a small configuration.
    """
    if tuple(cluster.resources) != ("cpu", "mem"):
        raise ParameterError(
            f"as-is placement needs a cluster of cpu and mem; {cluster.name!r} has {cluster.resources}"
        )
    n = len(load)
    share = cluster.counts / cluster.counts.sum() * n
    counts = np.floor(share).astype(np.int64)
    counts[np.argsort(-(share - counts), kind="stable")[: n - int(counts.sum())]] += 1
    caps = np.repeat(np.asarray(cluster.capacity, dtype=np.float64), counts, axis=0)
    caps = caps[np.argsort(-caps.sum(axis=1), kind="stable")]
    out = np.empty_like(caps)
    out[np.argsort(-load.sum(axis=1), kind="stable")] = caps
    return out


def _place(machine: IntArray, request: FloatArray, ids: list[int], capacity: FloatArray) -> tuple[IntArray, int, int]:
    """Each task on its machine's row while it fits (task order); (placement, over capacity, unknown machine)."""
    row = {mid: i for i, mid in enumerate(ids)}
    free = capacity.copy()
    placement = np.full(len(machine), -1, dtype=np.int64)
    over = unknown = 0
    for j, mid in enumerate(machine.tolist()):
        i = row.get(mid)
        if i is None:
            unknown += 1
        elif (request[j] <= free[i] + EPS).all():
            placement[j] = i
            free[i] -= request[j]
        else:
            over += 1
    return placement, over, unknown


def google2011_as_is(
    task_events: Sequence[Source],
    cluster: Cluster,
    t: float,
    *,
    machine_events: Source | None = None,
    min_priority: int | None = None,
) -> Snapshot:
    """Tasks of a Google 2011 trace running at ``t`` s on the machines the trace put them on (module docstring)."""
    if not (np.isfinite(t) and t >= 0):
        raise ParameterError(f"snapshot time must be a non-negative number of seconds, got {t}")
    if not task_events:
        raise ParameterError("at least one task_events file is needed")
    state = _scan(task_events, t, min_priority)
    tasks = state.tasks()
    if not tasks:
        raise InputError(f"no task with a machine and a request is running at {t:g} s", file=str(task_events[0]))
    machine = np.array([x[1] for x in tasks], dtype=np.int64)
    request = np.array([[x[2], x[3]] for x in tasks], dtype=np.float64)
    if machine_events is not None:
        known = machines_at(machine_events, t)
        ids = sorted(known)
        capacity = np.array([known[i] for i in ids], dtype=np.float64).reshape(-1, 2)
        capacities = "machine_events: the machines alive at t with their (CPUs, Memory)"
    else:
        ids = sorted(set(machine.tolist()))
        load = np.zeros((len(ids), 2))
        np.add.at(load, np.searchsorted(ids, machine), request)
        capacity = ranked_capacities(cluster, load)
        capacities = (
            f"assumed: the {len(ids)} machines the running tasks name, given {cluster.name!r}'s configurations "
            "in its proportions, the largest to the most loaded; idle machines unseen"
        )
    placement, over, unknown = _place(machine, request, ids, capacity)
    meta: dict[str, Any] = {
        "source": "google2011",
        "placement": "as-is (SCHEDULE machine IDs)",
        "t_s": float(t),
        "min_priority": min_priority,
        "capacities": capacities,
        "over_capacity": over,
        "unknown_machine": unknown,
        "no_request": state.no_request,
    }
    return Snapshot(("cpu", "mem"), capacity, request, placement, np.arange(len(tasks), dtype=np.int64), meta)


def repacked(snap: Snapshot, ordering: str = "arrival") -> Snapshot:
    """The same tasks and machines with the trace's placement thrown away: first fit in ``ordering`` instead."""
    from simcore.packing.placement import pack

    return pack(snap, ordering)


__all__ = ["google2011_as_is", "machines_at", "ranked_capacities", "repacked"]
