"""Random workflow workloads: streams of jobs made of tasks (chains, fork-joins, layered DAGs, bags).

The design-space paper's workloads are workflows (section 2.1: "each job
consists of a set of one or several tasks, with precedence constraints");
this module draws such jobs under a seed, every random number from the
injected :class:`numpy.random.Generator`, never global state. The presets
``workflows`` and ``workflows-short-long`` (:mod:`simcore.presets.dse`)
call :func:`generate`.

A job is drawn in four steps:

1. **Shape** (``shape``): ``chain`` (each task the parent of the next),
   ``fork-join`` (one task, then ``n - 2`` tasks in parallel, then one that
   waits for them all; 1 or 2 tasks make a chain), ``layered`` (a random
   layered DAG, below), ``bag`` (independent tasks), or ``mixed`` (each job
   one of chain, fork-join and layered, equally likely).
2. **Size** ``n`` (tasks per job) in ``[min_tasks, max_tasks]``: ``uniform``
   (every size equally likely) or ``log-uniform`` (``floor(exp(U(log a,
   log(b + 1))))``: P(n) proportional to log((n + 1) / n), many small jobs
   and a few big ones, as in real traces).
3. **Durations** of its tasks (seconds on the fastest machine): a task is
   *long* with probability ``long_fraction``; its duration is drawn from
   ``duration_dist`` with mean ``long_duration_s`` if long, else
   ``mean_duration_s``: ``exponential``, ``lognormal`` (coefficient of
   variation ``duration_cv``), ``uniform`` (on mean x [1 - a, 1 + a] with
   ``a = min(1, duration_cv * sqrt 3)``, the same CV where possible) or
   ``fixed``.
4. **Cores** of each task: uniform on ``1..max_task_cores``.

Layered DAG of ``n`` tasks: ``L = round(sqrt n)`` layers, sizes a uniformly
random composition of ``n`` into ``L`` positive parts, tasks numbered layer
by layer; every task of layer ``l >= 1`` has one parent drawn uniformly from
layer ``l - 1`` (so no layer floats free) and, independently with probability
``edge_prob``, every other task of layer ``l - 1`` as a parent too.

**Load.** Jobs arrive as a Poisson process on ``[0, hours)`` at the rate
that makes the *offered work* a fraction ``load`` of the cluster's
processing capacity (``arrival="burst"``: the same jobs all arrive at time 0,
a backlog of ``load x hours`` of the cluster's work, like the CHRONOS trace's
"large job-burst at start", section 4.1.2)::

    rate = load * capacity / E[work per job]
    capacity = sum over machines of cores * speed / fastest speed   (core-seconds of work per second)
    E[work per job] = E[n] * E[duration] * E[cores]                  (exact, from the parameters)

A task's work is its duration times its cores; a slower machine does
``speed / fastest`` of a second of work per second (:class:`simcore.core.model.SpeedRuntime`),
hence the speed weights. ``load = 1`` offers exactly what the cluster can
process if it were never idle; precedence constraints and fragmentation
make the sustainable load lower, so a run near 1 may not keep up. This is
the one-resource reading of the allocation-LP ``lambda*`` the other presets
use (that LP knows nothing of precedence either).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, FloatArray, IntArray, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.workloads.generators import poisson_arrivals

__all__ = [
    "DURATION_DISTS",
    "SHAPES",
    "SIZE_DISTS",
    "WorkflowParams",
    "core_capacity",
    "draw_jobs",
    "generate",
    "mean_size",
]

SHAPES = ("mixed", "chain", "fork-join", "layered", "bag")
ARRIVALS = ("poisson", "burst")
SIZE_DISTS = ("log-uniform", "uniform")
DURATION_DISTS = ("exponential", "lognormal", "uniform", "fixed")
#: The shapes ``mixed`` draws from, equally likely.
MIXED = ("chain", "fork-join", "layered")
#: The resource a task's cores are requested in.
CORES = "cores"


@dataclass(frozen=True)
class WorkflowParams:
    """The generator's parameters (see the module docstring)."""

    shape: str = "mixed"
    min_tasks: int = 2
    max_tasks: int = 64
    size_dist: str = "log-uniform"
    duration_dist: str = "exponential"
    mean_duration_s: float = 60.0
    duration_cv: float = 1.0
    long_fraction: float = 0.0
    long_duration_s: float = 3600.0
    max_task_cores: int = 1
    edge_prob: float = 0.2
    arrival: str = "poisson"

    def check(self) -> None:
        for name, value, valid in (
            ("shape", self.shape, SHAPES),
            ("arrival", self.arrival, ARRIVALS),
            ("size_dist", self.size_dist, SIZE_DISTS),
            ("duration_dist", self.duration_dist, DURATION_DISTS),
        ):
            if value not in valid:
                raise ParameterError(f"{name} must be one of {', '.join(valid)}, got {value!r}")
        if not 1 <= self.min_tasks <= self.max_tasks:
            raise ParameterError(
                f"job sizes need 1 <= min_tasks <= max_tasks, got min_tasks={self.min_tasks}, "
                f"max_tasks={self.max_tasks}"
            )
        for name, v in (("mean_duration_s", self.mean_duration_s), ("long_duration_s", self.long_duration_s)):
            if not (math.isfinite(v) and v > 0):
                raise ParameterError(f"{name} must be a positive number of seconds, got {v}")
        if not (math.isfinite(self.duration_cv) and self.duration_cv >= 0):
            raise ParameterError(f"duration_cv must be a non-negative number, got {self.duration_cv}")
        if not 0 <= self.long_fraction <= 1:
            raise ParameterError(f"long_fraction must be in [0, 1], got {self.long_fraction}")
        if not 0 <= self.edge_prob <= 1:
            raise ParameterError(f"edge_prob must be in [0, 1], got {self.edge_prob}")
        if self.max_task_cores < 1:
            raise ParameterError(f"max_task_cores must be at least 1, got {self.max_task_cores}")


# -- expectations --------------------------------------------------------------------------------------------------


def size_pmf(p: WorkflowParams) -> tuple[IntArray, FloatArray]:
    """The sizes ``min_tasks..max_tasks`` and their probabilities."""
    k = np.arange(p.min_tasks, p.max_tasks + 1, dtype=np.int64)
    if p.size_dist == "uniform":
        return k, np.full(len(k), 1.0 / len(k))
    w = np.log((k + 1.0) / k)
    return k, w / w.sum()


def mean_size(p: WorkflowParams) -> float:
    """E[tasks per job], exactly."""
    k, pr = size_pmf(p)
    return float((k * pr).sum())


def mean_duration(p: WorkflowParams) -> float:
    """E[task duration] (s): every distribution is parameterised by its mean."""
    return (1.0 - p.long_fraction) * p.mean_duration_s + p.long_fraction * p.long_duration_s


def task_cores_max(p: WorkflowParams, cluster: Cluster) -> int:
    """The most cores a task asks for: ``max_task_cores``, at most the largest machine's (whole) cores."""
    j = cluster.resources.index(CORES)
    largest = int(math.floor(float(cluster.capacity[cluster.counts > 0, j].max()) + 1e-9))
    if largest < 1:
        raise ParameterError(f"cluster {cluster.name!r} has no machine with a whole core")
    return max(1, min(p.max_task_cores, largest))


def core_capacity(cluster: Cluster) -> float:
    """Core-seconds of work the cluster processes per second: cores x speed / fastest speed, summed."""
    j = cluster.resources.index(CORES)
    cores = cluster.capacity[:, j] * cluster.counts
    if cluster.speed is None:
        return float(cores.sum())
    return float((cores * cluster.speed / cluster.speed.max()).sum())


# -- drawing -------------------------------------------------------------------------------------------------------


def _sizes(p: WorkflowParams, n_jobs: int, rng: np.random.Generator) -> IntArray:
    if p.size_dist == "uniform":
        return rng.integers(p.min_tasks, p.max_tasks + 1, size=n_jobs).astype(np.int64)
    u = rng.uniform(math.log(p.min_tasks), math.log(p.max_tasks + 1), size=n_jobs)
    # floor(exp(u)) can round up to max+1 only at the open end; clip for safety.
    return np.clip(np.floor(np.exp(u)), p.min_tasks, p.max_tasks).astype(np.int64)


def _durations(p: WorkflowParams, n: int, rng: np.random.Generator) -> FloatArray:
    long = rng.random(n) < p.long_fraction if p.long_fraction > 0 else np.zeros(n, dtype=bool)
    mean = np.where(long, p.long_duration_s, p.mean_duration_s)
    if p.duration_dist == "exponential":
        return rng.exponential(1.0, size=n) * mean
    if p.duration_dist == "lognormal":
        s2 = math.log1p(p.duration_cv**2)
        return mean * np.exp(rng.normal(-s2 / 2.0, math.sqrt(s2), size=n))
    if p.duration_dist == "uniform":
        a = min(1.0, p.duration_cv * math.sqrt(3.0))
        return mean * (1.0 + a * rng.uniform(-1.0, 1.0, size=n))
    return mean.astype(np.float64)


def _shape_edges(shape: str, n: int, edge_prob: float, rng: np.random.Generator) -> tuple[IntArray, IntArray]:
    """One job's edges as (parent counts per task, parents flat), local task numbers, parents first."""
    if shape == "bag" or n == 1:
        return np.zeros(n, dtype=np.int64), np.zeros(0, dtype=np.int64)
    if shape == "chain" or (shape == "fork-join" and n <= 2):
        counts = np.ones(n, dtype=np.int64)
        counts[0] = 0
        return counts, np.arange(n - 1, dtype=np.int64)
    if shape == "fork-join":
        counts = np.ones(n, dtype=np.int64)
        counts[0] = 0
        counts[-1] = n - 2
        return counts, np.concatenate((np.zeros(n - 2, dtype=np.int64), np.arange(1, n - 1, dtype=np.int64)))
    # Layered: a random composition of n into L positive parts, one forced parent plus Bernoulli extras.
    L = max(1, round(math.sqrt(n)))
    cuts = np.sort(rng.choice(np.arange(1, n), size=L - 1, replace=False)) if L > 1 else np.zeros(0, dtype=np.int64)
    bounds = np.concatenate(([0], cuts, [n])).astype(np.int64)
    counts = np.zeros(n, dtype=np.int64)
    flat: list[IntArray] = []
    for layer in range(1, L):
        plo, phi, lo, hi = bounds[layer - 1], bounds[layer], bounds[layer], bounds[layer + 1]
        width = hi - lo
        forced = rng.integers(plo, phi, size=width)
        extra = rng.random((width, phi - plo)) < edge_prob
        extra[np.arange(width), forced - plo] = True
        rows, cols = np.nonzero(extra)  # row-major: each task's parents together, in order
        counts[lo:hi] = np.bincount(rows, minlength=width)
        flat.append((cols + plo).astype(np.int64))
    return counts, (np.concatenate(flat) if flat else np.zeros(0, dtype=np.int64))


def draw_jobs(
    p: WorkflowParams, n_jobs: int, rng: np.random.Generator, max_cores: int = 1
) -> tuple[TaskGraph, FloatArray, FloatArray]:
    """``n_jobs`` jobs: their task graph (jobs in order, tasks parents first), durations (s) and cores per task."""
    p.check()
    sizes = _sizes(p, n_jobs, rng)
    shapes = (
        rng.integers(0, len(MIXED), size=n_jobs) if p.shape == "mixed" else np.zeros(n_jobs, dtype=np.int64)
    ).tolist()
    names = MIXED if p.shape == "mixed" else (p.shape,)
    base = np.zeros(n_jobs + 1, dtype=np.int64)
    np.cumsum(sizes, out=base[1:])
    counts_all: list[IntArray] = []
    flat_all: list[IntArray] = []
    for j, (n, s) in enumerate(zip(sizes.tolist(), shapes, strict=True)):
        counts, flat = _shape_edges(names[s], n, p.edge_prob, rng)
        counts_all.append(counts)
        flat_all.append(flat + base[j])
    n = int(base[-1])
    ptr = np.zeros(n + 1, dtype=np.int64)
    if n:
        np.cumsum(np.concatenate(counts_all), out=ptr[1:])
    flat = np.concatenate(flat_all) if flat_all else np.zeros(0, dtype=np.int64)
    graph = TaskGraph(np.repeat(np.arange(n_jobs, dtype=np.int64), sizes), ptr, flat)
    durations = _durations(p, n, rng)
    cores = rng.integers(1, max_cores + 1, size=n).astype(np.float64) if max_cores > 1 else np.ones(n)
    return graph, durations, cores


def generate(
    cluster: Cluster,
    rng: np.random.Generator,
    *,
    load: float,
    hours: float,
    params: WorkflowParams,
    name: str = "workflows",
) -> Workload:
    """A Poisson stream of random workflows on ``[0, hours)`` offering ``load`` of ``cluster``'s capacity."""
    params.check()
    if CORES not in cluster.resources:
        raise ParameterError(
            f"workload {name!r} requests {CORES!r}; cluster {cluster.name!r} has resources "
            f"{list(cluster.resources)} (use a cluster with a cores resource, e.g. dse-2020)"
        )
    if not (math.isfinite(load) and load > 0):
        raise ParameterError(f"load must be a positive number, got {load}")
    if not (math.isfinite(hours) and hours > 0):
        raise ParameterError(f"hours must be a positive number, got {hours}")
    max_cores = task_cores_max(params, cluster)
    mean_work = mean_size(params) * mean_duration(params) * (1 + max_cores) / 2.0
    capacity = core_capacity(cluster)
    rate = load * capacity / mean_work
    horizon = hours * 3600.0
    job_submit = poisson_arrivals(rate, horizon, rng)
    if params.arrival == "burst":
        job_submit = np.zeros(len(job_submit))
    graph, durations, cores = draw_jobs(params, len(job_submit), rng, max_cores)
    submit = job_submit[graph.job_of]
    request = np.zeros((graph.n_tasks, len(cluster.resources)))
    request[:, cluster.resources.index(CORES)] = cores
    return Workload(
        name=name,
        resources=cluster.resources,
        submit=submit,
        request=request,
        work=durations,
        job_class=np.full(graph.n_tasks, -1, dtype=np.int64),
        horizon_s=horizon,
        graph=graph,
        params={
            "load": float(load),
            "hours": float(hours),
            # Units the engine sees are tasks: the summary's arrival_rate is tasks per second.
            "arrival_rate": float(rate * mean_size(params)),
            "job_arrival_rate": float(rate),
            "task_jobs": int(graph.n_jobs),
            "tasks": int(graph.n_tasks),
            "edges": int(graph.n_edges),
            "core_capacity": capacity,
            "mean_work_per_job_core_s": mean_work,
            "max_task_cores": max_cores,
            **{k: getattr(params, k) for k in params.__dataclass_fields__},
        },
    )
