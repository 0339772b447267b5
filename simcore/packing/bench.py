"""The compaction benchmark: 10,000 machines, 100,000 tasks, 11 trials (issue 11's speed target: < 60 s).

Machines: ``google-balanced`` (the 10 Table 1 configurations, 1,000 each).
Tasks: 100,000 single-task jobs whose requests are drawn from 400 distinct
(cpu, memory) shapes, between 0.2% and 6% of the largest machine; the
Google 2011 trace's requests are quantised the same way (a few hundred
distinct vectors per window), and first fit's cost grows with the number
of distinct shapes, not tasks (see :class:`~simcore.packing.placement.FirstFit`).
Requests total about 54% of the cpu and 71% of the memory.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from simcore.packing.compaction import FIGURE3_TAUS, compact
from simcore.packing.snapshot import Snapshot

N_SHAPES = 400


def benchmark_snapshot(machines_per_config: int = 1000, tasks: int = 100_000, seed: int = 0) -> Snapshot:
    from simcore.presets import CLUSTERS

    cluster = CLUSTERS.get("google-balanced").build(machines_per_config=machines_per_config)
    rng = np.random.default_rng(seed)
    shapes = rng.uniform(0.002, 0.06, (N_SHAPES, len(cluster.resources))).round(4)
    req = shapes[rng.integers(0, N_SHAPES, tasks)]
    return Snapshot(tuple(cluster.resources), cluster.machine_capacity, req, np.full(tasks, -1), np.arange(tasks))


def compaction_benchmark(
    machines_per_config: int = 1000, tasks: int = 100_000, trials: int = 11, seed: int = 0
) -> dict[str, Any]:
    """Time :func:`~simcore.packing.compaction.compact` over Figure 3's taus; CPU seconds on one core."""
    snap = benchmark_snapshot(machines_per_config, tasks, seed)
    wall0, cpu0 = time.perf_counter(), time.process_time()
    res = compact(snap, FIGURE3_TAUS, trials=trials, rng=np.random.default_rng(seed))
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "scenario": "packing-compaction",
        "machines": snap.n_machines,
        "tasks": snap.n_tasks,
        "trials": trials,
        "taus": len(FIGURE3_TAUS),
        "cpu_s": round(cpu, 2),
        "wall_s": round(wall, 2),
        "p90_fraction_at_0.6%": res.summary(0.006)["p90_fraction"],
        "target_s": 60.0,
    }
