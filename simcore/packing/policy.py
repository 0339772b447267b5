"""Packing by a registered scheduler's own arrival rule: placement, inflation and compaction that repack with it.

Figure 4 of the paper compares scheduling policies under each technique, and
each technique *reschedules with the policy being evaluated*. For the four
orderings that is first fit (:mod:`~simcore.packing.placement`, with the fast
paths of :mod:`~simcore.packing.inflation` and
:mod:`~simcore.packing.compaction`). For a registered scheduler this module
does it literally: every "schedule all tasks on machines" of Algorithms 1
and 3 is one simulation in which every task is submitted at time 0 and
never ends, so the scheduler places what it can by its own rule (Tetris's
best score, Greedy's first fit, LoTES's bins...) and the rest stays queued
(pending).

Choices and deviations, with reasons:

* *Machines as a cluster.* The engine numbers machines configuration by
  configuration. A set of machine rows becomes a cluster whose
  configurations are the distinct capacity rows, in order of first
  appearance, each keeping its machines in the given order; placements are
  mapped back to the rows. For an unpermuted preset cluster that is the
  original numbering; for a permuted prefix (compaction) the scheduler sees
  the prefix's machines grouped by configuration, not in permutation order.
  Which machines are enabled, the thing compaction varies, is unchanged.
* *Tasks that fit no enabled machine* are pending without being simulated
  (the engine refuses a workload with a job no machine can hold).
* *Randomness.* Each trial gives the scheduler its own seed, drawn from the
  injected generator, so schedulers with random tie-breaks show a range.
* *Compaction* probes each prefix with a full reschedule (the paper's step 11);
  the one-pack shortcut of :func:`~simcore.packing.compaction.compact` holds
  for first fit only. A scheduler's pending count need not fall as machines
  are added, so, as in the paper, the binary search's end point is the answer
  and sizes need not be monotone in tau. Probes are cached within a trial.
* Cost: one simulation of every task per probe, about ``trials x log2(N)``
  per tau for compaction and ``trials x factors`` for inflation. Fine for
  thousands of tasks; a 100,000-task snapshot takes minutes per scheduler.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from simcore.core.engine import simulate
from simcore.core.errors import ParameterError
from simcore.core.fit import fits_in
from simcore.core.model import Cluster, Workload
from simcore.packing.compaction import MAX_DOUBLINGS, CompactionResult, check_tau
from simcore.packing.inflation import FIGURE2_FACTORS, Inflater, InflationStep, check_inflation, inflation_step
from simcore.packing.snapshot import FloatArray, IntArray, Snapshot

#: Task durations: nothing may finish during a placement's 1 s horizon. Long enough for that, short
#: enough that LoTES's LP (rates 1/duration) stays well scaled: 1e15 s makes HiGHS refuse the model.
FOREVER_S = 1e6


def check_scheduler(name: str) -> None:
    """A registered scheduler that can place a bare snapshot (no run-time profile needed)."""
    from simcore.schedulers import SCHEDULERS

    cls = SCHEDULERS.get(name)  # unknown: UnknownNameError listing the registered ones
    if cls.requires:
        raise ParameterError(
            f"scheduler {name!r} needs {', '.join(sorted(cls.requires))}, which a snapshot does not provide; "
            f"choose one of {', '.join(placing_schedulers())}"
        )


def check_scheduler_params(given: Any) -> dict[str, dict[str, Any]]:
    """An analysis' ``scheduler_params`` (scheduler name -> parameters) checked as an experiment's are.

    The rule of :func:`simcore.scenario.validate_scenario`: each scheduler is a
    registered one that can place a snapshot, and its parameters go through
    :func:`~simcore.presets.coerce_params`, which refuses an unknown key by
    name and lists the valid ones. Returns the given keys with their values
    converted (``"3"`` -> 3), so that what is stored is what runs.
    """
    from simcore.presets import coerce_params
    from simcore.schedulers import SCHEDULERS

    if not isinstance(given, Mapping):
        raise ParameterError(f"scheduler_params must be an object of scheduler name -> parameters, got {given!r}")
    out: dict[str, dict[str, Any]] = {}
    for name, params in given.items():
        check_scheduler(str(name))
        if not isinstance(params, Mapping):
            raise ParameterError(f"scheduler_params[{name!r}] must be an object of parameter -> value, got {params!r}")
        coerced = coerce_params(f"scheduler {name!r}", SCHEDULERS.get(str(name)).params, dict(params))
        out[str(name)] = {k: coerced[k] for k in params}
    return out


def placing_schedulers() -> list[str]:
    """Registered schedulers that can place a snapshot (those needing nothing beyond requests)."""
    from simcore.schedulers import SCHEDULERS

    return [n for n in SCHEDULERS.names() if not SCHEDULERS.get(n).requires]


def cluster_of(resources: tuple[str, ...], capacity: FloatArray) -> tuple[Cluster, IntArray]:
    """``capacity`` rows as a cluster, and for each engine machine the row it stands for."""
    uniq, first, inverse = np.unique(capacity, axis=0, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    rank = np.empty(len(uniq), dtype=np.int64)
    rank[by_first] = np.arange(len(uniq))
    cfg = rank[np.asarray(inverse).reshape(-1)]
    cluster = Cluster(
        name="snapshot machines",
        resources=resources,
        config_names=tuple(f"c{j}" for j in range(len(uniq))),
        counts=np.bincount(cfg, minlength=len(uniq)),
        capacity=uniq[by_first],
    )
    return cluster, np.argsort(cfg, kind="stable").astype(np.int64)


def place_by_scheduler(
    resources: tuple[str, ...],
    capacity: FloatArray,
    request: FloatArray,
    scheduler: str,
    seed: int,
    params: Mapping[str, Any] | None = None,
) -> IntArray:
    """The row of ``capacity`` each task (in arrival order) goes to under ``scheduler``, or -1 (pending)."""
    from simcore.presets import coerce_params
    from simcore.schedulers import SCHEDULERS, create

    out = np.full(len(request), -1, dtype=np.int64)
    if len(capacity) == 0 or len(request) == 0:
        return out
    cluster, row_of = cluster_of(resources, capacity)
    fits = np.zeros(len(request), dtype=bool)
    for cap in cluster.capacity:
        fits |= fits_in(request, cap)
    idx = np.flatnonzero(fits)
    if len(idx) == 0:
        return out
    n = len(idx)
    wl = Workload(
        name="snapshot",
        resources=resources,
        submit=np.zeros(n),
        request=request[idx],
        work=np.full(n, FOREVER_S),
        job_class=np.full(n, -1, dtype=np.int64),
        horizon_s=1.0,
    )
    cls = SCHEDULERS.get(scheduler)
    opts = coerce_params(
        f"scheduler {scheduler!r}",
        cls.params,
        {k: v for k, v in (params or {}).items() if k in {p.name for p in cls.params}},
    )
    res = simulate(cluster, wl, create(scheduler, **opts), seed)
    machine = res.machine[:n]
    started = (res.start[:n] <= 0.0) & (machine >= 0)
    out[idx[started]] = row_of[machine[started]]
    return out


Placer = Callable[[FloatArray, FloatArray, int], IntArray]


def scheduler_placer(resources: tuple[str, ...], scheduler: str, params: Mapping[str, Any] | None = None) -> Placer:
    """``(capacity rows, requests, seed) -> rows``: :func:`place_by_scheduler` with the scheduler fixed."""
    check_scheduler(scheduler)

    def place(capacity: FloatArray, request: FloatArray, seed: int) -> IntArray:
        return place_by_scheduler(resources, capacity, request, scheduler, seed, params)

    return place


def _seed(rng: np.random.Generator) -> int:
    return int(rng.integers(0, 2**31 - 1))


def placed_by(snap: Snapshot, placer: Placer, seed: int, label: str) -> Snapshot:
    """``snap`` repacked from scratch by ``placer`` (tasks in snapshot order)."""
    rows = placer(snap.capacity, snap.request, seed)
    return snap.with_placement(rows, {"packed_by": label, "seed": seed})


def inflate_by(
    snap: Snapshot,
    placer: Placer,
    factors: Sequence[float] = FIGURE2_FACTORS,
    *,
    mode: str = "horizontal",
    conforming_only: bool = False,
    clip: bool = True,
    size_threshold: float = 0.6,
    fit_threshold: float = 0.6,
    rng: np.random.Generator,
    progress: Callable[[int], None] | None = None,
) -> list[InflationStep]:
    """Algorithm 1 rescheduling with ``placer``: the same inflated workloads as
    :func:`~simcore.packing.inflation.inflate`, clones arriving after the originals."""
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
    seed = _seed(rng)
    steps = []
    for k, f in enumerate(factors, 1):
        req = inf.vertical(f) if mode == "vertical" else np.concatenate((snap.request, snap.request[inf.clones(f)]))
        steps.append(inflation_step(snap, f, req, placer(snap.capacity, req, seed)))
        if progress is not None:
            progress(k)
    return steps


def compact_by(
    snap: Snapshot,
    placer: Placer,
    taus: Sequence[float],
    *,
    trials: int = 11,
    rng: np.random.Generator,
    progress: Callable[[int], None] | None = None,
) -> CompactionResult:
    """Algorithm 3 rescheduling every probe with ``placer`` (binary search per tau, mu = 1)."""
    taus = tuple(float(t) for t in taus)
    if not taus:
        raise ParameterError("give at least one tau")
    for t in taus:
        check_tau(t)
    if trials < 1:
        raise ParameterError(f"trials must be at least 1, got {trials}")
    total = snap.n_tasks
    capacity, copies = snap.capacity, 1
    seed = _seed(rng)
    # Steps 1-4: expand by clones of the whole cluster until the strictest tau is met.
    while np.count_nonzero(placer(capacity, snap.request, seed) < 0) / total > min(taus):
        if copies >= 2**MAX_DOUBLINGS:
            raise ParameterError(f"the workload does not fit within tau={min(taus)} even on {copies} copies")
        capacity = np.concatenate((capacity, capacity))
        copies *= 2
    n = len(capacity)
    sizes: dict[float, list[int]] = {t: [] for t in taus}
    for k in range(1, trials + 1):
        perm = rng.permutation(n)
        for t, size in zip(taus, _trial_sizes(snap, placer, capacity[perm], _seed(rng), taus), strict=True):
            sizes[t].append(size)
        if progress is not None:
            progress(k)
    return CompactionResult(n_machines=snap.n_machines, n_tasks=total, copies=copies, taus=taus, sizes=sizes)


def _trial_sizes(snap: Snapshot, placer: Placer, machines: FloatArray, seed: int, taus: tuple[float, ...]) -> list[int]:
    """One trial of Algorithm 3 on ``machines`` (already permuted): the shortest prefix per tau."""
    total = snap.n_tasks
    seen: dict[int, int] = {0: total}

    def pending(m: int) -> int:
        if m not in seen:
            seen[m] = int(np.count_nonzero(placer(machines[:m], snap.request, seed) < 0))
        return seen[m]

    sizes = []
    for t in taus:
        lo, hi = 0, len(machines) + 1
        if pending(0) / total <= t:
            hi = 0
        while hi - lo > 1:
            mid = (lo + hi) // 2
            if pending(mid) / total > t:
                lo = mid
            else:
                hi = mid
        sizes.append(hi)
    return sizes
