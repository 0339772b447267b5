"""The search's benchmark: one generation of 32 individuals, 100 machines, 10,000 tasks (issue 13: < 10 s, 2 workers).

Cluster and workload are the staged scheduler's benchmark scenario
(:mod:`simcore.bench.staged`: section 4.1.3's machines, a bag-of-tasks
workload at load 0.9), so the figure does not move when presets change. The
individuals are a search's generation 0 (32 random schedulers, all distinct,
none cached): the most expensive generation a search has.

Reported:

- ``cold_s``: from starting the worker processes (each builds the workload)
  to the last fitness of generation 0;
- ``generation_s``: a second generation of 32 other random schedulers (the
  next seed's generation 0) on the now running workers: what each generation
  of a running search costs at most; this is the figure for the target;
- ``generation_cpu_s``: the CPU seconds the workers spent on that
  generation's simulations, and ``ideal_s``, that over the workers: the
  generation's time on otherwise idle cores (the machine running the
  benchmark may be shared; the wall figures then include waiting for a core);
- ``serial_s`` and ``per_simulation_cpu_s``: the same 32 in this process
  alone, and the mean CPU seconds of one simulation;
- ``tasks_per_cpu_s``: tasks the workers simulated per CPU second in that
  generation (each evaluation: the simulation and its metrics).

``engine`` is the simulations' (the staged kernel by default; ``"python"``: its
specification, for a before-and-after comparison).
"""

from __future__ import annotations

import functools
import os
import time
from typing import Any

from simcore.core.model import Cluster, Workload
from simcore.dse.explore.pool import LocalEvaluator
from simcore.dse.explore.search import SearchSettings, first_population

#: The target for one generation with two workers (s): issue 13 asked 10 s; issue 27's kernel, 1 s.
TARGET_S = 1.0


def bench_pair(machines: int, tasks: int, seed: int) -> tuple[Cluster, Workload]:
    """The staged scheduler's benchmark cluster and bag-of-tasks workload."""
    from simcore.bench.staged import bench_cluster, bench_workload

    cluster = bench_cluster(machines)
    return cluster, bench_workload(cluster, tasks=tasks, seed=seed)


def generation_benchmark(
    machines: int = 100,
    tasks: int = 10_000,
    population: int = 32,
    workers: int = 2,
    seed: int = 0,
    engine: str = "compiled",
) -> dict[str, Any]:
    """Time one generation of a search (see the module docstring); returns the figures."""
    builder = functools.partial(bench_pair, machines, tasks, seed)
    first = first_population(SearchSettings(population=population, seed=seed))
    second = first_population(SearchSettings(population=population, seed=seed + 1))
    t0 = time.perf_counter()
    with LocalEvaluator(None, seed, workers, builder=builder, engine=engine) as pool:
        t1 = time.perf_counter()
        pool(first)
        cold = time.perf_counter() - t1
        w0 = time.perf_counter()
        got = pool(second)
        warm = time.perf_counter() - w0
    serial = LocalEvaluator(None, seed, 1, builder=builder, engine=engine)
    c0, s0 = time.process_time(), time.perf_counter()
    serial(second)
    serial_s, cpu = time.perf_counter() - s0, time.process_time() - c0
    return {
        "scenario": "explore-generation",
        "engine": engine,
        "machines": machines,
        "tasks": tasks,
        "population": population,
        "distinct": len(set(second)),
        "workers": workers,
        "cold_s": round(cold + (t1 - t0), 2),
        "generation_s": round(warm, 2),
        "generation_cpu_s": round(sum(e.cpu_s for e in got.values()), 2),
        "slowest_simulation_cpu_s": round(max(e.cpu_s for e in got.values()), 3),
        "ideal_s": round(sum(e.cpu_s for e in got.values()) / workers, 2),
        "serial_s": round(serial_s, 2),
        "per_simulation_cpu_s": round(cpu / max(1, len(set(second))), 3),
        "tasks_per_cpu_s": round(tasks * len(got) / max(sum(e.cpu_s for e in got.values()), 1e-9)),
        "unfinished_runs": sum(1 for e in got.values() if e.unfinished),
        "cpu_count": os.cpu_count(),
        "target_s": TARGET_S,
        "within_target": warm < TARGET_S,
        "load_average": [round(x, 2) for x in os.getloadavg()],
    }
