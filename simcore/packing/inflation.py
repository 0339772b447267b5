"""Workload inflation: Algorithm 1 (scale factors, Figure 2) and Algorithm 2 (Monte Carlo).

Algorithm 1 for each scale factor ``f``: horizontal inflation adds clones
of the inflated jobs, vertical inflation multiplies every task's requests
by ``f``; then "schedule all tasks on machines" and report the pending
tasks and the aggregate cpu and memory utilisation.

Choices and deviations, with reasons:

* *Scheduling* is first fit in a chosen ordering (default ``arrival``) over
  the machines in index order, from scratch, with clones arriving after all
  original tasks. The paper runs its production scheduler; ours are online
  simulators without a "schedule this checkpoint" entry, and first fit is
  what the paper itself uses for its orderings (section IV). So at ``f = 1``
  the pending count is that of a first-fit repack, which may differ from the
  snapshot's own placement.
* *Clone counts*: the paper adds ``ceil(n_j (f - 1))`` tasks to job ``j``.
  Our jobs are single tasks (the engine runs one task per job, and the
  Google reader makes one job per task instance), where ``ceil`` would clone
  every job for any ``f > 1`` and make the curve a step. We add
  ``floor(n_j (f - 1))`` clones plus one more with probability equal to the
  fractional part, decided by one uniform number per job drawn once from
  the injected generator, so the expected count is ``n_j (f - 1)``, the
  clone sets grow with ``f``, and for ``n_j (f-1)`` integral it is exact.
* *Vertical clipping* at the largest machine is per resource (the largest
  capacity of each resource). ``clip=False`` lets such tasks go pending.
* *Picky* (section III-C): a task larger than ``size_threshold`` of the
  median machine in some resource, or that fits (empty) on fewer than
  ``fit_threshold`` of the machines; a job is picky when one of its tasks
  is. The paper's second test is about placement *constraints*, which our
  traces do not have: "fits on few machines" is the proxy.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError
from simcore.packing.placement import FirstFit, fits_count, order_tasks
from simcore.packing.snapshot import FloatArray, IntArray, Snapshot
from simcore.packing.utilisation import utilisation_of

#: Figure 2's x axis: scale factors 1.0 to 2.0.
FIGURE2_FACTORS: tuple[float, ...] = tuple(round(1.0 + 0.05 * k, 2) for k in range(21))


@dataclass(frozen=True)
class InflationStep:
    """One point of Figure 2: the outcome of packing the inflated workload."""

    factor: float
    tasks: int
    pending: int
    utilisation: dict[str, float]

    @property
    def pending_fraction(self) -> float:
        return self.pending / self.tasks if self.tasks else 0.0

    def to_dict(self) -> dict[str, object]:
        return {
            "factor": self.factor,
            "tasks": self.tasks,
            "pending": self.pending,
            "pending_fraction": self.pending_fraction,
            "utilisation": self.utilisation,
        }


def picky_jobs(snap: Snapshot, size_threshold: float = 0.6, fit_threshold: float = 0.6) -> NDArray[np.bool_]:
    """Per task: whether its *job* is picky (see the module docstring); both thresholds in (0, 1]."""
    for name, v in (("size_threshold", size_threshold), ("fit_threshold", fit_threshold)):
        if not (0 < v <= 1):
            raise ParameterError(f"{name} must be in (0, 1], got {v}")
    big = (snap.request > size_threshold * snap.median_machine()).any(axis=1)
    few = fits_count(snap.request, snap.capacity) < fit_threshold * snap.n_machines
    task_picky = big | few
    jobs, inv = np.unique(snap.job, return_inverse=True)
    job_picky = np.zeros(len(jobs), dtype=bool)
    np.logical_or.at(job_picky, inv, task_picky)
    return np.asarray(job_picky[inv], dtype=bool)


def check_inflation(snap: Snapshot, mode: str, factors: Sequence[float]) -> None:
    if mode not in ("horizontal", "vertical"):
        raise ParameterError(f"unknown inflation mode {mode!r}; valid modes: horizontal, vertical")
    for f in factors:
        if not (math.isfinite(f) and f >= 1):
            raise ParameterError(f"scale factors must be >= 1, got {f}")


def _pack_all(snap: Snapshot, request: FloatArray, ordering_of: Snapshot, ordering: str) -> IntArray:
    order = order_tasks(ordering_of, ordering)
    rows = FirstFit(snap.capacity.copy()).place(request[order])
    placement = np.full(len(request), -1, dtype=np.int64)
    placement[order] = rows
    return placement


@dataclass(frozen=True)
class Inflater:
    """The inflated workloads of Algorithm 1 for one snapshot, one factor at a time.

    Holds what every factor shares: which tasks may be inflated, and the one
    uniform draw per job that decides fractional clones (drawn once, so the
    clone sets of growing factors are nested). Used by :func:`inflate` (first
    fit) and by :func:`simcore.packing.policy.inflate_by` (a scheduler).
    """

    snap: Snapshot
    mode: str
    inflated: NDArray[np.bool_]
    u: FloatArray
    clip: bool

    @classmethod
    def of(
        cls,
        snap: Snapshot,
        *,
        mode: str,
        conforming_only: bool,
        clip: bool,
        size_threshold: float,
        fit_threshold: float,
        rng: np.random.Generator,
    ) -> Inflater:
        check_inflation(snap, mode, ())
        if conforming_only:
            inflated = ~picky_jobs(snap, size_threshold, fit_threshold)
        else:
            inflated = np.ones(snap.n_tasks, bool)
        n_jobs = len(np.unique(snap.job))
        return cls(snap, mode, inflated, rng.random(n_jobs), clip)

    def vertical(self, f: float) -> FloatArray:
        """Every inflated task's requests times ``f`` (clipped per resource at the largest machine)."""
        req = self.snap.request.copy()
        req[self.inflated] *= f
        if self.clip:
            req = np.minimum(req, self.snap.capacity.max(axis=0))
        return req

    def clones(self, f: float) -> IntArray:
        """Horizontal: the task each clone copies, in task order (see the module docstring for the counts)."""
        snap = self.snap
        jobs, inv, n_tasks = np.unique(snap.job, return_inverse=True, return_counts=True)
        want = n_tasks * (f - 1.0)
        clones = np.floor(want + 1e-12).astype(np.int64)
        clones += (self.u < want - clones).astype(np.int64)
        job_ok = np.zeros(len(jobs), dtype=bool)
        np.logical_or.at(job_ok, inv, self.inflated)
        clones[~job_ok] = 0
        # Clone task i of job j for i < clones[j], cycling through the job's tasks in order.
        rank = np.zeros(snap.n_tasks, dtype=np.int64)
        order = np.argsort(inv, kind="stable")
        first = np.concatenate(([0], np.cumsum(n_tasks)[:-1]))
        rank[order] = np.arange(snap.n_tasks) - np.repeat(first, n_tasks)
        reps = clones[inv] // n_tasks[inv] + (rank < clones[inv] % n_tasks[inv])
        return np.repeat(np.arange(snap.n_tasks), reps).astype(np.int64)


@dataclass(frozen=True)
class PackedOriginals:
    """A snapshot's tasks first-fit in one ordering: what horizontal inflation places before any clone.

    The same for every factor and every trial (clones arrive after all
    original tasks), so it is computed once (:func:`pack_originals`) and every
    factor continues from a copy of ``state``: exactly first fit of the whole
    sequence, without placing the originals again each time.
    """

    ordering: str
    order: IntArray
    rows: IntArray
    state: FirstFit


def pack_originals(snap: Snapshot, ordering: str) -> PackedOriginals:
    """The snapshot's tasks first-fit in ``ordering`` on empty machines (see :class:`PackedOriginals`)."""
    order = order_tasks(snap, ordering)
    state = FirstFit(snap.capacity.copy())
    rows = state.place(snap.request[order])
    return PackedOriginals(ordering, order, rows, state)


def inflation_step(snap: Snapshot, f: float, request: FloatArray, placement: IntArray) -> InflationStep:
    util = utilisation_of(snap.capacity, request, placement)
    return InflationStep(
        factor=float(f),
        tasks=len(placement),
        pending=int(np.count_nonzero(placement < 0)),
        utilisation={r: float(x) for r, x in zip(snap.resources, util, strict=True)},
    )


def inflate(
    snap: Snapshot,
    factors: Sequence[float] = FIGURE2_FACTORS,
    *,
    mode: str = "horizontal",
    conforming_only: bool = False,
    ordering: str = "arrival",
    clip: bool = True,
    size_threshold: float = 0.6,
    fit_threshold: float = 0.6,
    rng: np.random.Generator,
    progress: Callable[[int], None] | None = None,
    originals: PackedOriginals | None = None,
) -> list[InflationStep]:
    """Algorithm 1: one :class:`InflationStep` per scale factor (utilisation as 0..1 fractions).

    ``progress(k)`` is called after the k-th factor (1-based). ``originals``:
    :func:`pack_originals` of ``snap`` in ``ordering``, shared between trials
    (horizontal mode; computed here when not given).
    """
    check_inflation(snap, mode, factors)
    inf = Inflater.of(
        snap,
        mode=mode,
        conforming_only=conforming_only,
        clip=clip,
        size_threshold=size_threshold,
        fit_threshold=fit_threshold,
        rng=rng,
    )
    steps = []
    if mode == "horizontal":
        if originals is None:
            originals = pack_originals(snap, ordering)
        elif originals.ordering != ordering or len(originals.order) != snap.n_tasks:
            raise ParameterError(f"originals were packed in {originals.ordering!r} order, not {ordering!r}")
    for k, f in enumerate(factors, 1):
        if mode == "vertical":
            req = inf.vertical(f)
            work = Snapshot(snap.resources, snap.capacity, req, np.full(snap.n_tasks, -1), snap.job)
            placement = _pack_all(work, req, work, ordering)
        else:
            assert originals is not None
            src = inf.clones(f)
            req = np.concatenate((snap.request, snap.request[src]))
            job = np.concatenate((snap.job, snap.job[src]))
            # Original tasks in the chosen ordering (placed once, in ``originals``), then the clones in the
            # same ordering, placed on a copy of the state the originals left.
            extra = (
                snap.n_tasks
                + order_tasks(
                    Snapshot(
                        snap.resources, snap.capacity, snap.request[src], np.full(len(src), -1), job[snap.n_tasks :]
                    ),
                    ordering,
                )
                if len(src)
                else np.zeros(0, dtype=np.int64)
            )
            extra_rows = originals.state.copy().place(req[extra]) if len(src) else np.zeros(0, dtype=np.int64)
            placement = np.full(len(req), -1, dtype=np.int64)
            placement[originals.order] = originals.rows
            placement[extra] = extra_rows
        steps.append(inflation_step(snap, f, req, placement))
        if progress is not None:
            progress(k)
    return steps


def knee(steps: Sequence[InflationStep], pending_fraction: float = 0.0) -> float:
    """The inflation limit: the largest factor before the pending fraction first exceeds the bound.

    The paper eyeballs the knee of the pending-tasks curve; this automates it
    as "the last factor with at most ``pending_fraction`` pending" (the
    first one counts even when it is already over the bound).
    """
    best = steps[0].factor
    for s in steps:
        if s.pending_fraction > pending_fraction:
            break
        best = s.factor
    return best


def monte_carlo_inflation(
    snap: Snapshot,
    tau: float = 0.01,
    *,
    conforming_only: bool = False,
    trials: int = 11,
    size_threshold: float = 0.6,
    fit_threshold: float = 0.6,
    max_clones: int | None = None,
    rng: np.random.Generator,
) -> list[dict[str, object]]:
    """Algorithm 2, repeated ``trials`` times: clone random jobs until >= ``tau`` of tasks are pending.

    The workload is first packed by first fit in arrival order; each clone
    is then first-fitted onto that state, which is exactly "schedule all
    tasks" for first fit in arrival order with clones arriving last, without
    repacking. ``max_clones`` (default 10 x the jobs) stops a trial that
    cannot reach ``tau`` (e.g. ``tau`` above what any clone can cause).
    Per trial: clones added, tasks, pending, utilisation (0..1) and the scale
    factor reached (tasks / original tasks).
    """
    if not (0 <= tau < 1):
        raise ParameterError(f"tau must be in [0, 1), got {tau}")
    if trials < 1:
        raise ParameterError(f"trials must be at least 1, got {trials}")
    inflated = ~picky_jobs(snap, size_threshold, fit_threshold) if conforming_only else np.ones(snap.n_tasks, bool)
    pool = np.unique(snap.job[inflated])
    if len(pool) == 0:
        raise ParameterError("no job may be inflated (all are picky)")
    task_order = np.argsort(snap.job, kind="stable")
    sorted_jobs = snap.job[task_order]
    limit = max_clones if max_clones is not None else 10 * len(np.unique(snap.job))
    out = []
    for _ in range(trials):
        ff = FirstFit(snap.capacity.copy())
        rows = ff.place(snap.request)
        placed_req = snap.request[rows >= 0].sum(axis=0)
        tasks, pending, clones = snap.n_tasks, int(np.count_nonzero(rows < 0)), 0
        picks = rng.choice(pool, size=limit)
        while pending / tasks < tau and clones < limit:
            j = picks[clones]
            a, b = np.searchsorted(sorted_jobs, [j, j + 1])
            req = snap.request[task_order[a:b]]
            r = ff.place(req)
            placed_req = placed_req + req[r >= 0].sum(axis=0)
            tasks += len(r)
            pending += int(np.count_nonzero(r < 0))
            clones += 1
        util = placed_req / snap.capacity.sum(axis=0)
        out.append(
            {
                "clones": clones,
                "tasks": tasks,
                "pending": pending,
                "factor": tasks / snap.n_tasks,
                "utilisation": {r: float(x) for r, x in zip(snap.resources, util, strict=True)},
            }
        )
    return out
