"""Snapshots from a run at time t, from a Google 2011 trace at time t, or from a placement policy.

* :func:`from_result`: a :class:`~simcore.core.engine.SimResult` (fresh or stored)
  at time ``t``: jobs running at ``t`` on their machines, jobs submitted by
  ``t`` and not yet started pending. The engine runs one task per job, so
  every job is one task (``job`` = job index). :func:`from_records` does the
  same from stored per-job columns (a finished run on the platform).
* :func:`from_trace`: a converted trace (the project's CSV, what an import
  stores) at ``t``: the tasks running then, taking each to start when it was
  submitted (the format keeps no start times), all pending.
* :func:`from_google2011`: the task instances of a Google 2011 trace running
  at ``t`` (simulated seconds, trace time minus the 600 s offset), read by
  :func:`simcore.traces.google2011.read_google2011` with the window
  ``[t, t + 1 s)``: tasks scheduled before ``t + 1 s`` and still running at
  its end. The trace does not record placements on our machines, so every
  task starts pending: pack the snapshot with an ordering
  (:func:`~simcore.packing.placement.pack`) or a scheduler
  (:func:`from_policy`). The reader makes one job per task instance, so
  ``job`` is per task here too; placement constraints are not read.
* :func:`from_policy`: a workload packed at once by a registered scheduler's
  own arrival rule: every job submitted at time 0 with an effectively
  infinite duration, simulated through the public engine, the snapshot
  taken just after time 0 (started = placed, queued = pending).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from simcore.core.engine import SimResult
from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, Workload
from simcore.packing.snapshot import FloatArray, IntArray, Snapshot

#: Durations long enough that nothing finishes during a policy snapshot's 1 s horizon, and short enough
#: that LoTES's allocation LP (rates 1 / duration) stays well scaled (see simcore.packing.policy).
FOREVER_S = 1e6


def from_records(
    submit: FloatArray,
    start: FloatArray,
    finish: FloatArray,
    machine: IntArray,
    request: FloatArray,
    cluster: Cluster,
    t: float,
    *,
    source: str = "run",
) -> Snapshot:
    """The state at ``t`` of a run given by its per-job records (NaN start/finish: never started/finished).

    Jobs running at ``t`` (started by ``t``, not finished by ``t``) are on
    their ``machine``; jobs submitted by ``t`` and not started are pending.
    ``request[z]`` is job ``z``'s request. These are the columns a stored run
    keeps (:func:`simcore.archive.unpack_jobs`), so a run's snapshot needs no
    re-simulation when its workload can be rebuilt.
    """
    idx, placement, running, queued = _live(submit, start, finish, machine, t)
    return Snapshot(
        resources=tuple(cluster.resources),
        capacity=cluster.machine_capacity,
        request=request[idx],
        placement=placement,
        job=idx.astype(np.int64),
        meta={"source": source, "t_s": float(t), "running": running, "queued": queued},
    )


def _live(
    submit: FloatArray, start: FloatArray, finish: FloatArray, machine: IntArray, t: float
) -> tuple[IntArray, IntArray, int, int]:
    """Indices of the jobs running or queued at ``t``, their machine (-1: queued), how many run, how many queue."""
    running = (start <= t) & ~(finish <= t)
    queued = (submit <= t) & ~(start <= t)
    idx = np.flatnonzero(running | queued)
    return idx, np.where(running[idx], machine[idx], -1), int(running.sum()), int(queued.sum())


def from_record_chunks(
    chunks: Iterable[Mapping[str, np.ndarray]],
    request: FloatArray,
    cluster: Cluster,
    t: float,
    *,
    source: str = "run",
) -> Snapshot:
    """:func:`from_records` over a run's stored chunks of consecutive jobs, read one at a time.

    Each chunk has the columns of :func:`simcore.archive.unpack_jobs` with ``job``
    numbered across the run; ``request`` is every job's request. Only the jobs
    live at ``t`` are kept from each chunk, so a 37 M-job run needs memory for
    one chunk and the snapshot, not for the whole run. Equal to
    :func:`from_records` on the concatenated columns.
    """
    requests, placements, jobs = [], [], []
    running = queued = 0
    for c in chunks:
        n = len(c["job"])
        lo = int(c["job"][0]) if n else 0
        idx, placement, r_, q_ = _live(
            c["submit_s"], c["start_s"], c["finish_s"], np.asarray(c["machine"], dtype=np.int64), t
        )
        requests.append(request[lo + idx])
        placements.append(placement)
        jobs.append(idx.astype(np.int64) + lo)
        running += r_
        queued += q_
    r = len(cluster.resources)
    return Snapshot(
        resources=tuple(cluster.resources),
        capacity=cluster.machine_capacity,
        request=np.concatenate(requests) if requests else np.zeros((0, r)),
        placement=np.concatenate(placements) if placements else np.zeros(0, dtype=np.int64),
        job=np.concatenate(jobs) if jobs else np.zeros(0, dtype=np.int64),
        meta={"source": source, "t_s": float(t), "running": running, "queued": queued},
    )


def from_result(result: SimResult, workload: Workload, cluster: Cluster, t: float) -> Snapshot:
    """The run's state at time ``t`` seconds (0 <= t <= the run's end)."""
    if not (np.isfinite(t) and 0 <= t <= max(result.end_s, result.horizon_s)):
        raise ParameterError(f"snapshot time must be in [0, {max(result.end_s, result.horizon_s):g}] s, got {t}")
    n = int(result.extra.get("arrived", result.n_jobs))
    return from_records(
        result.submit[:n], result.start[:n], result.finish[:n], result.machine[:n], workload.request[:n], cluster, t
    )


def from_trace(
    workload: Workload,
    cluster: Cluster,
    t: float,
    *,
    priority: IntArray | None = None,
    min_priority: int | None = None,
) -> Snapshot:
    """The tasks of a converted trace (the project's CSV, as an import writes it) running at ``t``, all pending.

    Approximation: a converted trace keeps each task's submission time and
    run time but not when it started, so a task is taken to run on
    ``[submit, submit + duration)``, i.e. to start as soon as it was
    submitted. For a Google 2011 import (arrival = SUBMIT, duration = the
    time it actually ran) this moves the task's run earlier by its queueing
    delay in the real cluster; tasks running at the window's start arrive at
    0 and are exact. Machines are not recorded either: every task starts
    pending, to be packed by an ordering or a scheduler. For the raw Google
    files with their own SCHEDULE times use :func:`from_google2011`.

    ``min_priority``: keep only the tasks of at least this priority (9: the
    production work the paper's snapshots held), given each job's
    ``priority`` (the trace's priority column,
    :func:`simcore.traces.tracefile.read_trace_with_priority`).
    """
    if not (np.isfinite(t) and 0 <= t <= workload.horizon_s):
        raise ParameterError(f"snapshot time must be in [0, {workload.horizon_s:g}] s (the trace's window), got {t}")
    on = (workload.submit <= t) & (workload.submit + workload.work > t)
    meta: dict[str, Any] = {}
    if min_priority is not None:
        if priority is None:
            raise ParameterError(
                f"min_priority: trace {workload.name!r} records no task priorities (a Google 2011 import keeps "
                "them since this version: import the trace again to filter by priority)"
            )
        running = int(np.count_nonzero(on))
        on &= priority >= min_priority
        meta = {"min_priority": int(min_priority), "below_min_priority": running - int(np.count_nonzero(on))}
    idx = np.flatnonzero(on)
    return Snapshot(
        resources=tuple(cluster.resources),
        capacity=cluster.machine_capacity,
        request=workload.request[idx],
        placement=np.full(len(idx), -1, dtype=np.int64),
        job=idx.astype(np.int64),
        meta={"source": "trace", "t_s": float(t), "running": len(idx), "approximation": "start = submit", **meta},
    )


def from_google2011(
    task_events: list[str],
    cluster: Cluster,
    t: float,
    *,
    job_events: list[str] | None = None,
    min_priority: int | None = None,
) -> Snapshot:
    """Tasks of a Google 2011 trace running at ``t`` seconds, all pending, on ``cluster``.

    ``min_priority``: keep only tasks of at least this priority; 9 keeps the
    production work (priorities 9-11) the paper's snapshots held.
    """
    from simcore.traces.google2011 import read_google2011

    res = read_google2011(
        task_events,
        job_events=job_events or (),
        cluster=cluster,
        start_s=t,
        end_s=t + 1.0,
        min_priority=min_priority,
    )
    wl = res.workload
    running = wl.work > 0  # zero-length tasks ended exactly at t
    req = wl.request[running]
    return Snapshot(
        resources=tuple(cluster.resources),
        capacity=cluster.machine_capacity,
        request=req,
        placement=np.full(len(req), -1, dtype=np.int64),
        job=np.arange(len(req), dtype=np.int64),
        meta={
            "source": "google2011",
            "t_s": float(t),
            "min_priority": min_priority,
            "dropped": dict(res.report.dropped),
        },
    )


def from_policy(
    cluster: Cluster,
    workload: Workload,
    scheduler: str,
    *,
    seed: int = 0,
    scheduler_params: dict[str, Any] | None = None,
) -> Snapshot:
    """``workload`` placed at once by ``scheduler``'s arrival rule (every job at time 0, never ending)."""
    from simcore.api import run_objects

    at_once = replace(
        workload,
        submit=np.zeros(workload.n_jobs),
        work=np.full(workload.n_jobs, FOREVER_S),
        horizon_s=1.0,
    )
    out = run_objects(cluster, at_once, scheduler, seed, scheduler_params=scheduler_params)
    snap = from_result(out.result, at_once, cluster, 0.0)
    return Snapshot(
        snap.resources,
        snap.capacity,
        snap.request,
        snap.placement,
        snap.job,
        {**snap.meta, "source": "policy", "scheduler": scheduler},
    )
