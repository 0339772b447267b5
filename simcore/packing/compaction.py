"""Cluster compaction, Algorithm 3 (section III-D, Figure 3).

For each trial: a random permutation of the machines, then the shortest
prefix on which the workload runs with at most ``tau`` of its tasks pending.
Repeated over ``trials`` permutations (11 by default); the reported size is
the 90th percentile, with the full range.

Speed without changing the answer: tasks are packed by first fit in a
chosen ordering over the permuted machines. First fit restricted to the
first ``m`` machines of the permutation leaves those machines in exactly the
state the full-cluster pack leaves them in (a task that does not fit in
the prefix changes nothing there, whether it goes pending or to a later
machine). So one pack of the whole permutation gives, for every prefix
``m``, the tasks pending on it: those placed at position ``>= m`` or
pending anyway. The binary search of Algorithm 3 (steps 6-17, error bound
``mu = 1``) then reads its probes off that one pack instead of repacking;
the answer is the one a full repack per probe gives.

Deviations, with reasons:

* The scheduler is first fit (the paper reschedules with its production
  scheduler, which we do not have; first fit is what its section IV uses).
* Step 10 (discarding tasks tied to removed machines) does nothing: our
  snapshots have no machine-bound tasks and no placement constraints.
* A permutation on which even every machine leaves more than ``tau``
  pending (first fit depends on the machine order, and expansion is checked
  on the original order) reports ``len(p) + 1``, the binary search's
  initial ``max``, as Algorithm 3 would.
* Cluster expansion (steps 1-4) clones the whole machine list until the
  workload fits within ``tau``; sizes are still reported against the
  original machine count, so they can exceed 100%.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.core.errors import ParameterError
from simcore.packing.placement import FirstFit, order_tasks
from simcore.packing.snapshot import IntArray, Snapshot

#: The paper's typical pending threshold.
DEFAULT_TAU = 0.006
#: Figure 3's x axis: 0 to 1% of the tasks pending.
FIGURE3_TAUS: tuple[float, ...] = (0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008, 0.009, 0.01)
#: Expansion gives up after this many doublings (the workload cannot fit even on 2**k copies).
MAX_DOUBLINGS = 10


def check_tau(tau: float) -> None:
    if not (0 <= tau < 1):
        raise ParameterError(f"tau (fraction of tasks allowed to pend) must be in [0, 1), got {tau}")


@dataclass(frozen=True)
class CompactionResult:
    """Compacted sizes (machines) per trial for each ``tau``; ``copies`` is the expansion factor."""

    n_machines: int
    n_tasks: int
    copies: int
    taus: tuple[float, ...]
    sizes: dict[float, list[int]] = field(default_factory=dict)

    def summary(self, tau: float) -> dict[str, Any]:
        s = np.array(self.sizes[tau], dtype=np.float64)
        p90 = float(np.percentile(s, 90))
        return {
            "tau": tau,
            "p90_machines": p90,
            "min_machines": int(s.min()),
            "max_machines": int(s.max()),
            "p90_fraction": p90 / self.n_machines,
            "min_fraction": float(s.min()) / self.n_machines,
            "max_fraction": float(s.max()) / self.n_machines,
            "trials": [int(x) for x in s],
        }


def _positions(snap: Snapshot, capacity: np.ndarray, order: IntArray, perm: IntArray) -> IntArray:
    """Permutation position each task lands at under first fit over ``perm``; N (=len) if pending."""
    rows = FirstFit(capacity[perm].copy()).place(snap.request[order])
    return np.where(rows >= 0, rows, len(perm))


def _shortest_prefix(pos_sorted: IntArray, n: int, tau: float) -> int:
    """Binary search (Algorithm 3, mu = 1) for the shortest prefix with pending fraction <= tau.

    ``pos_sorted``: ascending permutation positions of the tasks (``n`` = pending on all).
    Pending on prefix ``m`` = tasks at position >= m.
    """
    total = len(pos_sorted)
    lo, hi = 0, n + 1  # pending(lo) > tau*total is assumed for lo=0 unless tasks allow it; hi always fits
    if (total - np.searchsorted(pos_sorted, 0, side="left")) / total <= tau:
        return 0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        pending = total - int(np.searchsorted(pos_sorted, mid, side="left"))
        if pending / total > tau:
            lo = mid
        else:
            hi = mid
    return hi


def compact(
    snap: Snapshot,
    taus: Sequence[float] = (DEFAULT_TAU,),
    *,
    trials: int = 11,
    ordering: str = "arrival",
    rng: np.random.Generator,
    progress: Callable[[int], None] | None = None,
) -> CompactionResult:
    """Algorithm 3 for each ``tau`` (0 <= tau < 1) with ``trials`` random permutations.

    Every ``tau`` uses the same permutations (one pack per trial serves all),
    which is also why the compacted size never grows with ``tau``.
    ``progress(k)`` is called after the k-th trial (1-based).
    """
    taus = tuple(float(t) for t in taus)
    if not taus:
        raise ParameterError("give at least one tau")
    for t in taus:
        check_tau(t)
    if trials < 1:
        raise ParameterError(f"trials must be at least 1, got {trials}")
    order = order_tasks(snap, ordering)
    capacity = snap.capacity
    n0 = snap.n_machines
    copies = 1
    ident = np.arange(len(capacity), dtype=np.int64)
    # Steps 1-4: expand by clones of the whole cluster until the strictest tau is met.
    while True:
        pos = _positions(snap, capacity, order, ident)
        if np.count_nonzero(pos >= len(capacity)) / snap.n_tasks <= min(taus):
            break
        if copies >= 2**MAX_DOUBLINGS:
            raise ParameterError(
                f"the workload does not fit within tau={min(taus)} even on {copies} copies of the cluster "
                "(some task is larger than every machine?)"
            )
        capacity = np.concatenate((capacity, capacity))
        copies *= 2
    n = len(capacity)
    sizes: dict[float, list[int]] = {t: [] for t in taus}
    for k in range(1, trials + 1):
        perm = rng.permutation(n).astype(np.int64)
        pos_sorted = np.sort(_positions(snap, capacity, order, perm))
        for t in taus:
            sizes[t].append(_shortest_prefix(pos_sorted, n, t))
        if progress is not None:
            progress(k)
    return CompactionResult(n_machines=n0, n_tasks=snap.n_tasks, copies=copies, taus=taus, sizes=sizes)


def compaction_sweep(
    snap: Snapshot,
    taus: Sequence[float] = FIGURE3_TAUS,
    *,
    trials: int = 11,
    ordering: str = "arrival",
    rng: np.random.Generator,
) -> list[dict[str, Any]]:
    """Figure 3: the compacted size (p90 and range over trials) for each ``tau``."""
    res = compact(snap, taus, trials=trials, ordering=ordering, rng=rng)
    return [res.summary(t) for t in res.taus]
