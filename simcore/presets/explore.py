"""A workload where one scheduler is clearly best: the genetic search's sanity check (issue 13's acceptance).

``bags-short-long``: jobs are bags of ``tasks_per_job`` independent tasks
arriving as a Poisson stream; each task is short (exponential, mean
``short_s``) or, with probability ``long_fraction``, long (exponential, mean
``long_s``). Long tasks hold most of the capacity, so under FIFO short tasks
queue behind them; ordering the ready tasks shortest first (the staged
scheduler's ``T2=Task-Duration(asc)``) minimises the mean task response time
(the shortest-processing-time rule), and a search optimising TRT should find it.
Every job has the same number of tasks (Job-Size cannot tell them apart) and
mixes short and long tasks (neither can the job-level orderings).

Requests: every task asks for half of the smallest machine in every resource,
so two tasks fit on the smallest machine and the cluster's task slots are
known. The arrival rate is ``load`` times the slots over the mean task
duration (a slot-level utilisation; faster machines of a cluster with speeds
only add headroom). ``tasks`` > 0 generates exactly that many tasks instead
of an arrival window of ``hours`` (the benchmark's 10,000 tasks).
"""

from __future__ import annotations

import math

import numpy as np

from simcore.errors import ParameterError
from simcore.model import Cluster, Workload
from simcore.presets import workload_preset
from simcore.schedulers.base import Param
from simcore.taskgraph import TaskGraph

HOUR_S = 3600.0


def task_slots(cluster: Cluster, request: np.ndarray) -> int:
    """How many tasks of ``request`` the whole cluster runs at once."""
    cap = cluster.capacity
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(request > 0, np.floor(cap / np.where(request > 0, request, 1.0) + 1e-9), np.inf)
    slots = per.min(axis=1)
    return int((np.where(np.isfinite(slots), slots, 0) * cluster.counts).sum())


@workload_preset(
    "bags-short-long",
    "Bags of many short tasks and a few long ones: shortest task first is best for TRT (the search's sanity check)",
    (
        Param("tasks_per_job", int, 10, "tasks in every job (a bag of independent tasks)", min=1, max=10_000),
        Param("long_fraction", float, 0.05, "probability that a task is long", min=0.0, max=1.0),
        Param("short_s", float, 10.0, "mean duration of a short task (s, exponential)", min=0.001),
        Param("long_s", float, 1000.0, "mean duration of a long task (s, exponential)", min=0.001),
        Param("tasks", int, 0, "generate exactly this many tasks (0: an arrival window of --hours)", min=0),
    ),
    default_hours=1.0,
)
def bags_short_long(
    cluster: Cluster,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    tasks_per_job: int = 10,
    long_fraction: float = 0.05,
    short_s: float = 10.0,
    long_s: float = 1000.0,
    tasks: int = 0,
) -> Workload:
    request = cluster.capacity[cluster.counts > 0].min(axis=0) / 2.0
    slots = task_slots(cluster, request)
    if slots <= 0:
        raise ParameterError(f"cluster {cluster.name!r} has no room for a task of half its smallest machine")
    mean_s = (1.0 - long_fraction) * short_s + long_fraction * long_s
    job_rate = load * slots / mean_s / tasks_per_job  # jobs per second
    if tasks > 0:
        n_jobs = math.ceil(tasks / tasks_per_job)
        submit = np.cumsum(rng.exponential(1.0 / job_rate, size=n_jobs))
        submit -= submit[0]  # the first job arrives at 0, as with an arrival window
    else:
        horizon = hours * HOUR_S
        expected = job_rate * horizon
        n_jobs = int(rng.poisson(expected))
        submit = np.sort(rng.uniform(0.0, horizon, size=n_jobs))
    n = n_jobs * tasks_per_job
    long = rng.random(n) < long_fraction
    work = rng.exponential(1.0, size=n) * np.where(long, long_s, short_s)
    if tasks > 0:
        n = tasks
        work = work[:n]
        long = long[:n]
    job_of = np.arange(n, dtype=np.int64) // tasks_per_job
    task_submit = submit[job_of]
    horizon_s = float(task_submit[-1]) if tasks > 0 and n else hours * HOUR_S
    return Workload(
        name="bags-short-long",
        resources=tuple(cluster.resources),
        submit=task_submit,
        request=np.tile(request, (n, 1)),
        work=work,
        job_class=long.astype(np.int64),
        horizon_s=horizon_s,
        params={
            "tasks_per_job": tasks_per_job,
            "long_fraction": long_fraction,
            "short_s": short_s,
            "long_s": long_s,
            "arrival_rate": job_rate * tasks_per_job,
            "task_slots": slots,
            "load": load,
        },
        graph=TaskGraph.bag_of_tasks(job_of),
    )
