"""``simcore bench --scenarios wfcommons``: how fast WfCommons instances are read, and workflows simulated.

Reading: a generated layered workflow of ``tasks`` tasks (one job,
:func:`simcore.workloads.workflowgen.draw_jobs`) is written as a WfFormat 1.5 instance
(:func:`simcore.traces.wfcommons.instance_dict`) to a temporary file and read
back with :func:`simcore.traces.wfcommons.read_instance`; the read is timed
(wall and CPU seconds, tasks per CPU second, file megabytes). Simulating: the
``workflows`` preset on ``dse-2020`` under ``greedy``, drained, timed without
its generation.
"""

from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any

import numpy as np

from simcore.traces.wfcommons import instance_dict, read_instance
from simcore.workloads.workflowgen import WorkflowParams, draw_jobs

__all__ = ["wfcommons_benchmark"]


def _read(tasks: int, seed: int) -> dict[str, Any]:
    p = WorkflowParams(shape="layered", min_tasks=tasks, max_tasks=tasks, edge_prob=2.0 / max(1.0, tasks**0.5))
    graph, dur, cores = draw_jobs(p, 1, np.random.default_rng(seed))
    doc = instance_dict(graph, dur, cores, name=f"bench-{tasks}")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "instance.json")
        with open(path, "w") as f:
            json.dump(doc, f)
        size = os.path.getsize(path)
        t0, c0 = time.perf_counter(), time.process_time()
        inst = read_instance(path)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert inst.n_tasks == tasks and inst.graph.n_edges == graph.n_edges
    return {
        "tasks": tasks,
        "edges": int(graph.n_edges),
        "file_mb": round(size / 2**20, 2),
        "read_wall_s": round(wall, 3),
        "read_cpu_s": round(cpu, 3),
        "tasks_per_cpu_s": round(tasks / cpu) if cpu > 0 else None,
        "critical_path_s": round(inst.critical_path_s, 3),
    }


def _simulate(machines: int, hours: float, seed: int) -> dict[str, Any]:
    from simcore.api import resolve_cluster, resolve_workload
    from simcore.core.engine import simulate
    from simcore.core.jobmetrics import dag_summary, run_job_metrics
    from simcore.core.seeding import scheduler_rng
    from simcore.schedulers import create

    cluster = resolve_cluster("dse-2020", {"machines": machines})
    wl = resolve_workload("workflows", cluster, seed, load=0.9, hours=hours)
    t0, c0 = time.perf_counter(), time.process_time()
    res = simulate(cluster, wl, create("greedy"), scheduler_rng(seed), drain=True)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    assert wl.graph is not None
    s = dag_summary(run_job_metrics(res, wl, cluster))
    return {
        "machines": machines,
        "tasks": wl.n_jobs,
        "jobs": wl.graph.n_jobs,
        "edges": wl.graph.n_edges,
        "sim_wall_s": round(wall, 3),
        "sim_cpu_s": round(cpu, 3),
        "tasks_per_cpu_s": round(wl.n_jobs / cpu) if cpu > 0 else None,
        "mean_trt_s": s["mean_trt_s"],
        "mean_njsl": s["mean_njsl"],
    }


def wfcommons_benchmark(tasks: int = 100_000, seed: int = 0) -> dict[str, Any]:
    """Read speed of a generated ``tasks``-task instance and simulation speed of workflows on dse-2020."""
    return {"read": _read(tasks, seed), "simulate": _simulate(256, 1.0, seed)}
