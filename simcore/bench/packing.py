"""Compaction benchmarks (issue 11's speed target: 10,000 machines, 100,000 tasks, 11 trials in < 60 s).

``packing``: quantised requests. Machines: ``google-balanced`` (the 10
Table 1 configurations, 1,000 each). Tasks: 100,000 single-task jobs whose
requests are drawn from 400 distinct (cpu, memory) shapes, between 0.2% and
6% of the largest machine; the Google 2011 trace's requests are quantised the
same way (a few hundred distinct vectors per window). Requests total about
54% of the cpu and 71% of the memory.

``packing-continuous``: every task its own request. The state at t = 170 s
of a Tetris run of ``google-like`` at load 0.9 on ``google-2011`` (12,583
machines; 0.1 h window, seed 0): about 114,000 running tasks, no two alike,
on a nearly full cluster. First fit's per-shape pointers cannot help here;
the resource-major scan of :class:`~simcore.packing.placement.FirstFit` is
what keeps it fast. The simulation that makes the snapshot is not timed.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from simcore.packing.compaction import FIGURE3_TAUS, compact
from simcore.packing.snapshot import Snapshot

N_SHAPES = 400
#: The continuous scenario: a Tetris run's state at this time (s) of a 0.1 h window.
CONTINUOUS_T_S = 170.0


def benchmark_snapshot(machines_per_config: int = 1000, tasks: int = 100_000, seed: int = 0) -> Snapshot:
    from simcore.presets import CLUSTERS

    cluster = CLUSTERS.get("google-balanced").build(machines_per_config=machines_per_config)
    rng = np.random.default_rng(seed)
    shapes = rng.uniform(0.002, 0.06, (N_SHAPES, len(cluster.resources))).round(4)
    req = shapes[rng.integers(0, N_SHAPES, tasks)]
    return Snapshot(tuple(cluster.resources), cluster.machine_capacity, req, np.full(tasks, -1), np.arange(tasks))


def continuous_snapshot(seed: int = 0) -> Snapshot:
    """The ``packing-continuous`` snapshot (a Tetris run of google-like at 0.9 on google-2011, at 170 s)."""
    from simcore import api
    from simcore.packing.sources import from_result

    out = api.run(api.RunSpec("google-2011", "google-like", "tetris", seed=seed, load=0.9, hours=0.1))
    return from_result(out.result, out.workload, out.cluster, CONTINUOUS_T_S)


def _timed(scenario: str, snap: Snapshot, trials: int, seed: int) -> dict[str, Any]:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    res = compact(snap, FIGURE3_TAUS, trials=trials, rng=np.random.default_rng(seed))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "scenario": scenario,
        "machines": snap.n_machines,
        "tasks": snap.n_tasks,
        "distinct_requests": int(len(np.unique(snap.request, axis=0))),
        "trials": trials,
        "taus": len(FIGURE3_TAUS),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "p90_fraction_at_0.6%": res.summary(0.006)["p90_fraction"],
        "target_s": 60.0,
    }


def compaction_benchmark(
    machines_per_config: int = 1000, tasks: int = 100_000, trials: int = 11, seed: int = 0
) -> dict[str, Any]:
    """Time :func:`~simcore.packing.compaction.compact` over Figure 3's taus; CPU seconds on one core."""
    return _timed("packing-compaction", benchmark_snapshot(machines_per_config, tasks, seed), trials, seed)


def continuous_benchmark(trials: int = 11, seed: int = 0) -> dict[str, Any]:
    """The same with continuous requests (:func:`continuous_snapshot`)."""
    return _timed("packing-compaction-continuous", continuous_snapshot(seed), trials, seed)
