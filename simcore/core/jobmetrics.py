"""Metrics of jobs made of tasks: the design-space exploration paper's TRT, JMS, NJSL and JWT (section 2.3).

Computed from a finished run's per-task records and the workload's
:class:`~simcore.core.taskgraph.TaskGraph`. Without a graph every unit is a job of
one task, and the metrics reduce to the familiar ones: TRT is the completion
time, JWT the response time (wait), JMS the completion time and NJSL the
completion time over the run time.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.core.engine import SimResult
from simcore.core.model import Cluster, FloatArray, Workload, shortest_durations
from simcore.core.taskgraph import TaskGraph

__all__ = ["METRICS", "dag_summary", "job_metrics", "run_job_metrics"]

#: The four objectives, with the summary key that holds their mean (all are minimised).
METRICS: dict[str, str] = {"trt": "mean_trt_s", "jms": "mean_jms_s", "njsl": "mean_njsl", "jwt": "mean_jwt_s"}


def job_metrics(
    graph: TaskGraph, submit: FloatArray, start: FloatArray, finish: FloatArray, shortest: FloatArray
) -> dict[str, FloatArray]:
    """The paper's four metrics (section 2.3), per task or per job; NaN where not yet defined.

    - ``trt`` (per task): task response time, from its submission to its completion.
    - ``jms`` (per job): job makespan, from the first task submission of the job to its last completion
      (NaN while a task of the job is unfinished).
    - ``njsl`` (per job): normalised job-schedule length, makespan over the critical path, where the critical
      path uses ``shortest`` (each task's shortest possible processing time, e.g. on the fastest machine).
    - ``jwt`` (per job): job waiting time, from the first task submission to the first start of one of its tasks
      (NaN while none started).
    """
    J = graph.n_jobs
    job = graph.job_of
    first_submit = np.full(J, np.inf)
    np.minimum.at(first_submit, job, submit)
    trt = finish - submit
    done = np.ones(J, dtype=bool)
    np.logical_and.at(done, job, ~np.isnan(finish))
    last = np.full(J, -np.inf)
    np.maximum.at(last, job, np.where(np.isnan(finish), -np.inf, finish))
    jms = np.where(done, last - first_submit, np.nan)
    first_start = np.full(J, np.inf)
    np.minimum.at(first_start, job, np.where(np.isnan(start), np.inf, start))
    jwt = np.where(np.isfinite(first_start), first_start - first_submit, np.nan)
    cp = graph.critical_path(shortest)
    with np.errstate(divide="ignore", invalid="ignore"):
        njsl = np.where(cp > 0, jms / cp, np.where(jms > 0, np.inf, 1.0))
    njsl = np.where(done, njsl, np.nan)
    return {"trt": trt, "jms": jms, "njsl": njsl, "jwt": jwt, "critical_path": cp, "first_submit": first_submit}


def _mean(x: FloatArray) -> float | None:
    x = x[~np.isnan(x)]
    return float(x.mean()) if len(x) else None


def _p(x: FloatArray, q: float) -> float | None:
    x = x[~np.isnan(x)]
    return float(np.percentile(x, q)) if len(x) else None


def dag_summary(metrics: dict[str, FloatArray]) -> dict[str, Any]:
    """Summary numbers of :func:`job_metrics` (the keys the CLI prints and the search optimises)."""
    jms = metrics["jms"]
    out: dict[str, Any] = {
        "task_jobs": len(jms),
        "task_jobs_finished": int((~np.isnan(jms)).sum()),
        "mean_trt_s": _mean(metrics["trt"]),
        "p95_trt_s": _p(metrics["trt"], 95),
        "mean_jms_s": _mean(jms),
        "p95_jms_s": _p(jms, 95),
        "mean_njsl": _mean(metrics["njsl"]),
        "mean_jwt_s": _mean(metrics["jwt"]),
        "p95_jwt_s": _p(metrics["jwt"], 95),
    }
    return out


def run_job_metrics(res: SimResult, workload: Workload, cluster: Cluster) -> dict[str, FloatArray]:
    """:func:`job_metrics` of a finished run (tasks that never arrived count as unfinished)."""
    graph = workload.graph if workload.graph is not None else TaskGraph.single_tasks(workload.n_jobs)
    shortest = shortest_durations(workload.runtime_model(cluster), workload.n_jobs, cluster.n_configs)
    return job_metrics(graph, res.submit, res.start, res.finish, shortest)
