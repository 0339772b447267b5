"""Where a plan's bisection starts: two lower bounds on the machines a workload needs.

* **Compaction** (:mod:`simcore.packing.compaction`, Algorithm 3 of Verma et
  al.) of a *snapshot of the workload*: the jobs that would be running at one
  moment if every job started on arrival (:func:`simcore.packing.sources.from_trace`),
  at the moment of the most such jobs. Any cluster on which no job waits must hold them
  all at once: a bound with no queueing (first-fit packing, so a heuristic one).
* **lambda***: the smallest resized cluster whose allocation LP's capacity
  bound (:mod:`simcore.capacity`) is at least the workload's arrival rate.
  Below it the queue grows without bound whatever the scheduler.

The search starts from both: lambda* from below, compaction's size from
above (with queueing allowed a target is usually met below it; with none
allowed, at or above it). Neither is trusted: the search widens its bracket
past either when the probes say so.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore import api
from simcore.core.model import Cluster, Workload
from simcore.packing.compaction import compact
from simcore.packing.sources import from_trace
from simcore.planning.bisect import bisect_smallest
from simcore.planning.shape import resize

#: Snapshot times tried for the compaction bound (evenly spaced over the arrival window).
SNAPSHOT_TIMES = 32
#: Compaction trials (random machine orders; the bound takes the smallest).
COMPACTION_TRIALS = 3


def snapshot_time(workload: Workload) -> float:
    """The time in the arrival window at which the most jobs would run if each started on arrival."""
    if workload.horizon_s <= 0:
        return 0.0
    times = np.linspace(0.0, workload.horizon_s, SNAPSHOT_TIMES)
    end = workload.submit + workload.work
    # Jobs running at t: submitted by t and not yet ended (submit sorted; ends are not).
    started = np.searchsorted(workload.submit, times, side="right")
    ends_sorted = np.sort(end)
    ended = np.searchsorted(ends_sorted, times, side="right")
    return float(times[int(np.argmax(started - ended))])


def compaction_bound(cluster: Cluster, workload: Workload, seed: int) -> dict[str, Any] | None:
    """Compaction (tau = 0) of the workload's no-queueing snapshot on ``cluster``'s machines, or None if empty."""
    t = snapshot_time(workload)
    snap = from_trace(workload, cluster, t)
    if snap.n_tasks == 0:
        return None
    res = compact(snap, (0.0,), trials=COMPACTION_TRIALS, rng=np.random.default_rng(seed))
    s = res.summary(0.0)
    return {
        "snapshot_s": t,
        "tasks": snap.n_tasks,
        "machines": int(s["min_machines"]),
        "p90_machines": float(s["p90_machines"]),
        "trials": s["trials"],
    }


def lambda_bound(cluster: Cluster, workload: Workload, mode: str, floor: int, ceiling: int) -> dict[str, Any] | None:
    """The smallest resized cluster whose lambda* reaches the workload's arrival rate, or None.

    None when the workload has no arrival rate (a batch at time 0) or the LP has no answer for it.
    """
    rate = float(workload.params.get("arrival_rate", 0.0)) or (
        workload.n_jobs / workload.horizon_s if workload.horizon_s > 0 else 0.0
    )
    if rate <= 0 or api.lambda_star(workload, cluster) is None:
        return None

    def enough(m: int) -> bool:
        lam = api.lambda_star(workload, resize(cluster, m, mode))
        return lam is not None and lam >= rate

    s = bisect_smallest(enough, floor, ceiling, low=floor, high=cluster.n_machines)
    return {"arrival_rate": rate, "machines": s.answer}
