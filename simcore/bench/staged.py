"""The staged scheduler's benchmark scenario: the paper's section 4.1.3 cluster and a 10,000-task workload.

Issue 13 asks one generation of 32 individuals on 100 machines and 10,000
tasks in under 10 s with 2 workers: one simulation in well under 0.6 s of one
core. ``simcore bench --scenarios staged`` measures it for :data:`POLICIES`
(each in its own child process, like every bench run).

- Cluster (section 4.1.3): half the machines with 4 cores at 4.1 GHz, half
  with 2 cores at 3.5 GHz; speed scales durations.
- Workload, ``kind="bag"``: jobs of independent tasks (sizes geometric, mean
  :data:`MEAN_JOB_TASKS`), as Google 2011's jobs; ``kind="dag"``: layered
  random DAGs (2 to 5 layers of 1 to 8 tasks, each task after 1 to 3 tasks of
  the layer before). Tasks request 1 core (80%) or 2; durations are
  exponential with mean :data:`MEAN_WORK_S` s on the fastest machine; jobs
  arrive as a Poisson stream at ``load`` times the cluster's speed-weighted
  core capacity.

Built here, not from the presets, so the measurement does not move when the
presets change.
"""

from __future__ import annotations

import numpy as np

from simcore.core.model import Cluster, Workload
from simcore.core.taskgraph import TaskGraph

__all__ = ["MEAN_JOB_TASKS", "MEAN_WORK_S", "POLICIES", "bench_cluster", "bench_workload"]

#: Mean tasks per job of the bag-of-tasks workload.
MEAN_JOB_TASKS = 20.0
#: Mean task duration on the fastest machine (s).
MEAN_WORK_S = 30.0
#: Policies measured by ``simcore bench --scenarios staged``: the default, and ones that exercise each
#: kind of stage (limits, dynamic keys, matching by free cores and speed, random choices, batch cycles).
POLICIES: tuple[str, ...] = (
    "J1=Interactive J2=Always J3=Submission-Time(asc) T1=Always T2=Submission-Time(asc) R5=First-Fit",
    "J1=Interactive J2=Limit-Active(100) J3=Job-Size(asc) T1=Always T2=Task-Duration(asc) R5=Best-Fit",
    "J1=Interactive J2=Always J3=Job-Duration(desc) T1=Limit-Job(10) T2=Active-Per-Job(asc) R5=Worst-Fit",
    "J1=Batch(10) J2=Limit-Load(2) J3=Random T1=Job-Balance(1.5) T2=Task-Duration-History(desc) R5=Expensive",
    "J1=Random J2=Random(0.5) J3=Submission-Time(asc) T1=Random(0.5) T2=Random R5=Random",
)


def bench_cluster(machines: int = 100) -> Cluster:
    """Section 4.1.3: half 4 cores at 4.1 GHz, half 2 cores at 3.5 GHz (one resource, ``cpu``)."""
    fast = machines // 2
    return Cluster(
        "dse-4.1.3",
        ("cpu",),
        ("i7-4c-4.1GHz", "i5-2c-3.5GHz"),
        np.array([fast, machines - fast]),
        np.array([[4.0], [2.0]]),
        speed=np.array([4.1, 3.5]),
    )


def bench_workload(
    cluster: Cluster, tasks: int = 10_000, load: float = 0.9, kind: str = "bag", seed: int = 0
) -> Workload:
    """``tasks`` tasks in jobs of ``kind`` ("bag" or "dag") arriving at ``load`` of the cluster's capacity."""
    rng = np.random.default_rng(seed)
    job_of: list[int] = []
    parents: list[list[int]] = []
    j = 0
    while len(job_of) < tasks:
        base = len(job_of)
        if kind == "bag":
            size = int(rng.geometric(1.0 / MEAN_JOB_TASKS))
            job_of.extend([j] * size)
            parents.extend([] for _ in range(size))
        elif kind == "dag":
            prev: list[int] = []
            for _ in range(int(rng.integers(2, 6))):
                layer = list(range(base, base + int(rng.integers(1, 9))))
                for _t in layer:
                    k = min(len(prev), int(rng.integers(1, 4)))
                    parents.append(sorted(rng.choice(prev, size=k, replace=False).tolist()) if prev else [])
                    job_of.append(j)
                base += len(layer)
                prev = layer
        else:
            raise ValueError(f"kind must be 'bag' or 'dag', got {kind!r}")
        j += 1
    job_of = job_of[:tasks]
    parents = parents[:tasks]
    n_jobs = job_of[-1] + 1
    graph = TaskGraph.from_parent_lists(job_of, parents)
    cores = np.where(rng.random(tasks) < 0.8, 1.0, 2.0)
    work = rng.exponential(MEAN_WORK_S, tasks)
    assert cluster.speed is not None
    rel = cluster.speed / cluster.speed.max()
    capacity = float((cluster.counts * cluster.capacity[:, 0] * rel).sum())  # core-seconds of work per second
    rate = load * capacity / (float(cores.mean() * work.mean()) * tasks / n_jobs)  # jobs per second
    job_submit = np.cumsum(rng.exponential(1.0 / rate, n_jobs))
    submit = job_submit[np.asarray(job_of)]
    return Workload(
        f"dse-{kind}-{tasks}",
        ("cpu",),
        submit,
        cores[:, None],
        work,
        np.zeros(tasks, dtype=np.int64),
        horizon_s=float(submit[-1]),
        graph=graph,
        params={"kind": kind, "load": load, "arrival_rate": rate},
    )
