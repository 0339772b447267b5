"""The design-space exploration paper's environment and workflow workloads (Mastenbroek, Andreadis, Iosup).

Cluster ``dse-2020`` (section 4.1.3): "half of these machines contain each an
Intel i7 processor, with 4 cores, at a clock rate of 4.1GHz and the other
half contain each an Intel i5 processor, with 2 cores, at a clock rate of
3.5GHz". ``machines`` sets the total (the paper varies it: 64, 256, 512, 24k);
with an odd total the extra machine is an i7. The one resource is ``cores``:
the paper's environment names processors only, and its workloads (and
WfCommons instances, :mod:`simcore.traces.wfcommons`) request cores; memory
is not modelled (a WfCommons ``memoryInBytes`` is the resident set measured,
not a request). Speeds are the clock rates: a task's duration is its time on
a 4.1 GHz core and 4.1 / 3.5 = 1.17 times longer on a 3.5 GHz one
(:class:`simcore.core.model.SpeedRuntime`). Deviation: clock rate stands for
speed; the paper does not say how OpenDC scales work between the two
processors.

Workloads (:mod:`simcore.workloads.workflowgen`): ``workflows``, random chains,
fork-joins and layered DAGs with size and duration distributions as
parameters, arriving at the rate that offers ``load`` of the cluster's core
capacity; ``workflows-short-long``, the issue's crafted case where
shortest-task-first ordering clearly wins on task response time.
"""

from __future__ import annotations

import numpy as np

from simcore.core.model import Cluster, Workload
from simcore.presets import cluster_preset, workload_preset
from simcore.schedulers.base import Param
from simcore.workloads.workflowgen import ARRIVALS, DURATION_DISTS, SHAPES, SIZE_DISTS, WorkflowParams, generate

#: Section 4.1.3: (name, cores, clock rate in GHz) of the two machine types.
DSE_MACHINES: tuple[tuple[str, float, float], ...] = (("i7-4c-4.1GHz", 4.0, 4.1), ("i5-2c-3.5GHz", 2.0, 3.5))


@cluster_preset(
    "dse-2020",
    "Design-space paper, section 4.1.3: half i7 machines (4 cores, 4.1 GHz), half i5 (2 cores, 3.5 GHz)",
    (Param("machines", int, 64, "machines in all, half of each type (the paper: 64, 256, 512, 24k)", min=1),),
)
def dse_2020(machines: int = 64) -> Cluster:
    i7 = (machines + 1) // 2
    return Cluster(
        name="dse-2020",
        resources=("cores",),
        config_names=tuple(n for n, _, _ in DSE_MACHINES),
        counts=np.array([i7, machines - i7], dtype=np.int64),
        capacity=np.array([[c] for _, c, _ in DSE_MACHINES]),
        attributes=tuple({"cpu": "Intel " + n.split("-")[0], "clock_ghz": g} for n, _, g in DSE_MACHINES),
        description=f"Design-space paper section 4.1.3: {i7} x i7 (4 cores, 4.1 GHz), {machines - i7} x i5 "
        "(2 cores, 3.5 GHz)",
        speed=np.array([g for _, _, g in DSE_MACHINES]),
    )


_D = WorkflowParams()
WORKFLOW_PARAMS: tuple[Param, ...] = (
    Param(
        "shape", str, _D.shape, "job shape: chain, fork-join, layered, bag, or mixed (the first three)", choices=SHAPES
    ),
    Param("min_tasks", int, _D.min_tasks, "fewest tasks in a job", min=1, max=100_000),
    Param("max_tasks", int, _D.max_tasks, "most tasks in a job", min=1, max=100_000),
    Param(
        "size_dist",
        str,
        _D.size_dist,
        "distribution of tasks per job: log-uniform (many small jobs) or uniform",
        choices=SIZE_DISTS,
    ),
    Param(
        "duration_dist",
        str,
        _D.duration_dist,
        "distribution of task durations: exponential, lognormal, uniform or fixed",
        choices=DURATION_DISTS,
    ),
    Param(
        "mean_duration_s", float, _D.mean_duration_s, "mean duration of a task (s, on the fastest machine)", min=1e-6
    ),
    Param("duration_cv", float, _D.duration_cv, "coefficient of variation of lognormal and uniform durations", min=0.0),
    Param("long_fraction", float, _D.long_fraction, "probability that a task is long", min=0.0, max=1.0),
    Param("long_duration_s", float, _D.long_duration_s, "mean duration of a long task (s)", min=1e-6),
    Param("max_task_cores", int, _D.max_task_cores, "a task asks for 1..this many cores, uniformly", min=1, max=1024),
    Param(
        "edge_prob",
        float,
        _D.edge_prob,
        "layered DAGs: chance of each extra edge from the previous layer",
        min=0.0,
        max=1.0,
    ),
    Param(
        "arrival",
        str,
        _D.arrival,
        "job arrivals: poisson over the window, or burst (the same jobs all at time 0)",
        choices=ARRIVALS,
    ),
)


@workload_preset(
    "workflows",
    "Random workflows (chains, fork-joins, layered DAGs) at a rate offering `load` of the cores; seeded",
    WORKFLOW_PARAMS,
    default_cluster="dse-2020",
    default_hours=1.0,
)
def workflows(cluster: Cluster, rng: np.random.Generator, *, load: float, hours: float, **params: object) -> Workload:
    """A Poisson stream of random workflows (:func:`simcore.workloads.workflowgen.generate`); one hour by default."""
    return generate(cluster, rng, load=load, hours=hours, params=WorkflowParams(**params))  # type: ignore[arg-type]


#: The crafted case: a burst of bags of 1-40 tasks, 95% short (exponential, mean 10 s), 5% long (mean 1000 s).
SHORT_LONG = WorkflowParams(
    shape="bag",
    min_tasks=1,
    max_tasks=40,
    size_dist="uniform",
    duration_dist="exponential",
    mean_duration_s=10.0,
    long_fraction=0.05,
    long_duration_s=1000.0,
    arrival="burst",
)


@workload_preset(
    "workflows-short-long",
    "Crafted: a burst of bags of many short tasks (10 s) and a few long ones (1000 s); shortest-task-first wins on TRT",
    default_cluster="dse-2020",
    default_hours=1.0,
)
def workflows_short_long(cluster: Cluster, rng: np.random.Generator, *, load: float, hours: float) -> Workload:
    """The issue's acceptance workload, where ordering tasks shortest first clearly wins on task response time.

    Jobs are bags of 1-40 tasks (uniform); a task is long (exponential, mean
    1000 s) with probability 0.05, else short (exponential, mean 10 s), so
    the long 5% carry 84% of the work. All jobs arrive at time 0 (a burst,
    like the CHRONOS trace's, section 4.1.2) holding ``load x hours`` of the
    cluster's work: about 10,000 tasks on 64 machines at the default load
    0.9 and one hour. With every task waiting from time 0, the mean task
    response time is the mean completion time, which shortest-processing-time
    order minimises on parallel machines (P||sum C_j); first-come order lets
    long tasks delay the short 95%. Measured with a global list scheduler on
    ``dse-2020`` (64 machines, load 0.9, one hour, drained, seeds 0 and 1):
    mean TRT 978 / 945 s first-come, 236 / 229 s shortest first, 2807 / 2747 s
    longest first (tests/simcore/test_workflowgen.py). Run it with ``--drain`` so every task counts. The same
    jobs as ``--workload workflows --shape bag --min-tasks 1 --max-tasks 40
    --size-dist uniform --mean-duration-s 10 --long-fraction 0.05
    --long-duration-s 1000 --arrival burst``.
    """
    return generate(cluster, rng, load=load, hours=hours, params=SHORT_LONG, name="workflows-short-long")
