"""Jobs made of tasks: the graph's rules, the engine's releases and wake-ups, and the four job metrics.

The hand-computed cases use a diamond a -> {b, c} -> d; the properties draw
random DAGs and check that no task starts before its parents finished, and that
a workload whose graph makes every unit a job of its own runs bit for bit as the
same workload without a graph, for every scheduler.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.clusterfile import cluster_from_dict
from simcore.core.engine import SimResult, Simulation, simulate
from simcore.core.errors import InputError, SchedulingError
from simcore.core.jobmetrics import job_metrics, run_job_metrics
from simcore.core.model import Cluster, SpeedRuntime, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.schedulers import SCHEDULERS, create
from simcore.schedulers.base import Scheduler
from tests.simcore.test_engine import scenarios

# -- the graph ---------------------------------------------------------------------------------------------

DIAMOND = TaskGraph.from_parent_lists([0, 0, 0, 0], [[], [0], [0], [1, 2]])


def test_it_lists_children_in_task_order() -> None:
    assert DIAMOND.children_of(0).tolist() == [1, 2]
    assert DIAMOND.children_of(1).tolist() == [3]
    assert DIAMOND.children_of(3).tolist() == []
    assert DIAMOND.n_parents.tolist() == [0, 1, 1, 2]


def test_it_refuses_a_parent_numbered_after_its_child() -> None:
    with pytest.raises(InputError, match="task 0: parent 1 must be an earlier task"):
        TaskGraph.from_parent_lists([0, 0], [[1], []])


def test_it_refuses_a_parent_of_another_job() -> None:
    with pytest.raises(InputError, match=r"task 1 \(job 1\): parent 0 belongs to another job \(0\)"):
        TaskGraph.from_parent_lists([0, 1], [[], [0]])


def test_it_refuses_an_unused_job_number() -> None:
    with pytest.raises(InputError, match="job 1 has no task"):
        TaskGraph.bag_of_tasks([0, 2])


def test_it_refuses_a_parent_submitted_after_its_child() -> None:
    g = TaskGraph.from_parent_lists([0, 0], [[], [0]])
    with pytest.raises(InputError, match="task 1 has parent 0 submitted after it"):
        g.check_submit(np.array([2.0, 1.0]))


def test_critical_path_of_the_diamond_is_its_longest_chain() -> None:
    # a=2, b=3, c=5, d=1: a -> c -> d is 8.
    assert DIAMOND.critical_path(np.array([2.0, 3.0, 5.0, 1.0])).tolist() == [8.0]


def test_critical_path_of_a_bag_is_its_longest_task() -> None:
    g = TaskGraph.bag_of_tasks([0, 0, 1])
    assert g.critical_path(np.array([4.0, 7.0, 1.0])).tolist() == [7.0, 1.0]


def test_prefix_renumbers_jobs_and_keeps_parents() -> None:
    g = TaskGraph.from_parent_lists([1, 1, 0, 0], [[], [0], [], [2]])
    p = g.prefix(3)
    assert p.job_of.tolist() == [1, 1, 0]
    assert p.parents.tolist() == [0]


# -- the engine -----------------------------------------------------------------------------------------------


def one_machine(cpu: float = 2.0) -> Cluster:
    return Cluster("one", ("cpu",), ("m",), np.array([1]), np.array([[cpu]]))


def diamond_workload(durations: list[float], submit: float = 0.0) -> Workload:
    n = len(durations)
    return Workload(
        "diamond",
        ("cpu",),
        np.full(n, submit),
        np.ones((n, 1)),
        np.array(durations),
        np.zeros(n, dtype=np.int64),
        horizon_s=100.0,
        graph=DIAMOND,
    )


def test_greedy_runs_the_diamond_as_computed_by_hand() -> None:
    # Two cpus. a runs 0-2; b and c are released at 2 and run 2-5 and 2-7; d waits for c, runs 7-8.
    res = simulate(one_machine(), diamond_workload([2.0, 3.0, 5.0, 1.0]), create("greedy"), seed=0, drain=True)
    assert res.start.tolist() == [0.0, 2.0, 2.0, 7.0]
    assert res.finish.tolist() == [2.0, 5.0, 7.0, 8.0]


def test_the_diamond_metrics_are_the_papers_definitions() -> None:
    wl = diamond_workload([2.0, 3.0, 5.0, 1.0], submit=1.0)
    res = simulate(one_machine(), wl, create("greedy"), seed=0, drain=True)
    m = run_job_metrics(res, wl, one_machine())
    assert m["trt"].tolist() == [2.0, 5.0, 7.0, 8.0]  # submission (1) to each completion (3, 6, 8, 9)
    assert m["jms"].tolist() == [8.0]
    assert m["critical_path"].tolist() == [8.0]
    assert m["njsl"].tolist() == [1.0]
    assert m["jwt"].tolist() == [0.0]


def test_a_one_cpu_machine_serialises_the_diamond() -> None:
    # One cpu: a 0-2, b 2-5, c 5-10, d 10-11. Makespan 11 against a critical path of 8.
    wl = diamond_workload([2.0, 3.0, 5.0, 1.0])
    res = simulate(one_machine(1.0), wl, create("greedy"), seed=0, drain=True)
    assert res.start.tolist() == [0.0, 2.0, 5.0, 10.0]
    m = run_job_metrics(res, wl, one_machine(1.0))
    assert m["jms"].tolist() == [11.0]
    assert m["njsl"].tolist() == [11.0 / 8.0]


def test_job_metrics_are_nan_for_unfinished_jobs() -> None:
    g = TaskGraph.bag_of_tasks([0, 0, 1])
    nan = math.nan
    m = job_metrics(
        g,
        submit=np.array([0.0, 1.0, 2.0]),
        start=np.array([3.0, nan, nan]),
        finish=np.array([4.0, nan, nan]),
        shortest=np.ones(3),
    )
    assert np.isnan(m["jms"]).tolist() == [True, True]
    assert m["jwt"][0] == 3.0 and np.isnan(m["jwt"][1])
    assert m["first_submit"].tolist() == [0.0, 2.0]


class StartAtOnce(Scheduler):
    """Starts every released task on machine 0 at once and records the order of calls."""

    name = "start-at-once-test"

    def setup(self, sim: Any, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.calls: list[tuple[str, int, float]] = []

    def on_arrival(self, job: int) -> None:
        self.calls.append(("arrival", job, self.sim.now))
        self.sim.start(job, 0)

    def on_completion(self, job: int, machine: int) -> None:
        self.calls.append(("completion", job, self.sim.now))


def test_children_are_released_after_the_parents_completion_in_task_order() -> None:
    sched = StartAtOnce()
    simulate(one_machine(4.0), diamond_workload([2.0, 3.0, 3.0, 1.0]), sched, seed=0, drain=True)
    assert sched.calls == [
        ("arrival", 0, 0.0),
        ("completion", 0, 2.0),
        ("arrival", 1, 2.0),
        ("arrival", 2, 2.0),
        ("completion", 1, 5.0),
        ("completion", 2, 5.0),
        ("arrival", 3, 5.0),
        ("completion", 3, 6.0),
    ]


def test_a_zero_length_parent_releases_a_sibling_that_arrives_at_the_same_instant() -> None:
    # a (0 s) finishes at 0 before d... d's parents b, c are still to arrive; every task runs exactly once.
    sched = StartAtOnce()
    res = simulate(one_machine(4.0), diamond_workload([0.0, 1.0, 1.0, 1.0]), sched, seed=0, drain=True)
    assert res.start.tolist() == [0.0, 0.0, 0.0, 1.0]
    assert [c for c in sched.calls if c[0] == "arrival"] == [
        ("arrival", 0, 0.0),
        ("arrival", 1, 0.0),
        ("arrival", 2, 0.0),
        ("arrival", 3, 1.0),
    ]


def test_starting_a_task_before_its_parents_finished_is_refused_and_changes_nothing() -> None:
    class Eager(Scheduler):
        name = "eager-test"

        def on_arrival(self, job: int) -> None:
            if job == 0:
                self.sim.start(0, 0)

        def on_completion(self, job: int, machine: int) -> None:
            # Every task has arrived; d (3) still waits for b and c.
            with pytest.raises(SchedulingError, match="task 3 started at t=1.0 before its parents finished"):
                self.sim.start(3, 0)
            assert self.sim.free[0, 0] == 4.0 and self.sim.started == 1

    wl = diamond_workload([1.0, 1.0, 1.0, 1.0])
    sim = Simulation(one_machine(4.0), wl, Eager(), np.random.default_rng(0))
    sim.run()
    assert sim.held == 1 and sim.queued == 2  # b, c released at 1 and never started; d still waits


def test_the_queue_series_counts_released_tasks_only() -> None:
    # Nothing is started: at t=0 only a is released, the other three wait for it.
    class Idle(Scheduler):
        name = "idle-test"

        def on_arrival(self, job: int) -> None:
            pass

        def on_completion(self, job: int, machine: int) -> None:
            pass

    sim = Simulation(one_machine(), diamond_workload([1.0] * 4), Idle(), np.random.default_rng(0), samples=3)
    res = sim.run()
    assert res.sample_queue.tolist() == [0, 1, 1]
    assert sim.held == 3 and sim.queued == 1


# -- wake-ups ---------------------------------------------------------------------------------------------


class Waker(Scheduler):
    """Queues arrivals and starts them at wake-ups it asks for; logs every call."""

    name = "waker-test"

    def __init__(self, delay: float = 0.0, **options: Any) -> None:
        super().__init__(**options)
        self.delay = delay

    def setup(self, sim: Any, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.queue: list[int] = []
        self.log: list[tuple[str, float]] = []

    def on_arrival(self, job: int) -> None:
        self.log.append((f"arrival {job}", self.sim.now))
        self.queue.append(job)
        self.sim.wake_at(self.sim.now + self.delay)

    def on_completion(self, job: int, machine: int) -> None:
        self.log.append((f"completion {job}", self.sim.now))

    def on_wake(self) -> None:
        self.log.append(("wake", self.sim.now))
        for j in self.queue:
            self.sim.start(j, 0)
        self.queue.clear()


def plain_workload(submit: list[float], work: list[float], horizon: float = 10.0) -> Workload:
    n = len(submit)
    return Workload(
        "plain", ("cpu",), np.array(submit), np.ones((n, 1)), np.array(work), np.zeros(n, dtype=np.int64), horizon
    )


def test_wakeups_at_an_instant_come_after_its_completions_and_arrivals_and_once() -> None:
    sched = Waker()
    # Job 0 runs 0-1; jobs 1 and 2 arrive at 1, when job 0 completes.
    simulate(one_machine(4.0), plain_workload([0.0, 1.0, 1.0], [1.0, 1.0, 1.0]), sched, seed=0, drain=True)
    assert sched.log == [
        ("arrival 0", 0.0),
        ("wake", 0.0),
        ("completion 0", 1.0),
        ("arrival 1", 1.0),
        ("arrival 2", 1.0),
        ("wake", 1.0),
        ("completion 1", 2.0),
        ("completion 2", 2.0),
    ]


def test_a_delayed_wakeup_starts_queued_jobs_late() -> None:
    res = simulate(one_machine(4.0), plain_workload([0.0, 0.5], [1.0, 1.0]), Waker(delay=2.0), seed=0, drain=True)
    # The wake-up at 2 starts both (job 1 queued at 0.5); the one at 2.5 finds nothing to do.
    assert res.start.tolist() == [2.0, 2.0]


def test_a_wakeup_past_the_horizon_happens_only_when_draining() -> None:
    wl = plain_workload([0.0], [1.0], horizon=1.0)
    assert np.isnan(simulate(one_machine(), wl, Waker(delay=5.0), seed=0).start[0])
    assert simulate(one_machine(), wl, Waker(delay=5.0), seed=0, drain=True).start.tolist() == [5.0]


def test_a_wakeup_in_the_past_is_refused() -> None:
    class Past(Waker):
        def on_arrival(self, job: int) -> None:
            with pytest.raises(SchedulingError, match="wake-up asked for t=0.5, before now"):
                self.sim.wake_at(0.5)

    simulate(one_machine(), plain_workload([1.0], [1.0]), Past(), seed=0)


# -- machine speeds ---------------------------------------------------------------------------------------


def test_speed_scales_durations_relative_to_the_fastest_configuration() -> None:
    rt = SpeedRuntime(np.array([4.1]), np.array([4.1, 3.5]))
    assert rt.duration(0, 0, -1) == pytest.approx(4.1)
    assert rt.duration(0, 1, -1) == pytest.approx(4.1 * 4.1 / 3.5)


def test_a_cluster_with_speeds_makes_the_engine_use_them() -> None:
    cluster = Cluster("sp", ("cpu",), ("fast", "slow"), np.array([1, 1]), np.array([[1.0], [1.0]]), speed=[2.0, 1.0])
    res = simulate(cluster, plain_workload([0.0, 0.0], [3.0, 3.0]), create("greedy"), seed=0, drain=True)
    assert res.machine.tolist() == [0, 1]
    assert (res.finish - res.start).tolist() == [3.0, 6.0]


def test_the_cluster_file_reads_and_writes_speeds() -> None:
    doc = {
        "resources": ["cpu"],
        "configurations": [
            {"name": "i7", "count": 1, "capacity": {"cpu": 4}, "speed": 4.1},
            {"name": "i5", "count": 1, "capacity": {"cpu": 2}, "speed": 3.5},
        ],
    }
    c = cluster_from_dict(doc)
    assert c.speed is not None and c.speed.tolist() == [4.1, 3.5]
    assert cluster_from_dict(c.to_dict()).speed.tolist() == [4.1, 3.5]  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("speeds", "message"),
    [
        ([4.1, None], r"configurations\[1\].speed: give a speed for every configuration or for none"),
        ([4.1, 0], r"configurations\[1\].speed: must be a finite positive number, got 0"),
        ([4.1, "fast"], r"configurations\[1\].speed: must be a finite positive number, got 'fast'"),
    ],
)
def test_the_cluster_file_names_a_bad_speed(speeds: list[Any], message: str) -> None:
    configs = []
    for j, sp in enumerate(speeds):
        cfg: dict[str, Any] = {"name": f"c{j}", "count": 1, "capacity": {"cpu": 1}}
        if sp is not None:
            cfg["speed"] = sp
        configs.append(cfg)
    with pytest.raises(InputError, match=message):
        cluster_from_dict({"resources": ["cpu"], "configurations": configs})


# -- properties -----------------------------------------------------------------------------------------------


def same_records(a: SimResult, b: SimResult) -> bool:
    return all(
        np.array_equal(getattr(a, f), getattr(b, f), equal_nan=True)
        for f in ("start", "finish", "machine", "sample_queue", "sample_running", "sample_util")
    )


RUNNABLE = [name for name, cls in SCHEDULERS.items() if not cls.requires]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenarios(), st.sampled_from(RUNNABLE), st.integers(0, 3))
def test_single_task_jobs_run_bit_for_bit_as_jobs(scenario: tuple[Cluster, Workload], name: str, seed: int) -> None:
    cluster, wl = scenario
    graph = TaskGraph.single_tasks(wl.n_jobs)
    as_tasks = Workload(**{**wl.__dict__, "graph": graph})
    a = simulate(cluster, wl, create(name), seed=seed, drain=True)
    b = simulate(cluster, as_tasks, create(name), seed=seed, drain=True)
    assert same_records(a, b)


@st.composite
def dag_scenarios(draw: st.DrawFn) -> tuple[Cluster, Workload]:
    cluster, wl = draw(scenarios())
    n = wl.n_jobs
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    # Jobs are runs of consecutive units that share one submit time; parents are earlier tasks of the job.
    submit = wl.submit.copy()
    job_of = np.zeros(n, dtype=np.int64)
    parents: list[list[int]] = []
    j = -1
    first = 0
    for t in range(n):
        if t == 0 or rng.random() < 0.35:
            j += 1
            first = t
        job_of[t] = j
        submit[t] = submit[first]
        earlier = list(range(first, t))
        k = int(rng.integers(0, min(3, len(earlier)) + 1)) if earlier else 0
        parents.append(sorted(rng.choice(earlier, size=k, replace=False).tolist()) if k else [])
    graph = TaskGraph.from_parent_lists(job_of, parents)
    return cluster, Workload(**{**wl.__dict__, "submit": submit, "graph": graph})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(dag_scenarios(), st.sampled_from(RUNNABLE))
def test_no_task_starts_before_its_parents_finish_and_all_finish(scenario: tuple[Cluster, Workload], name: str) -> None:
    cluster, wl = scenario
    res = simulate(cluster, wl, create(name), seed=1, drain=True)
    g = wl.graph
    assert g is not None
    assert not np.isnan(res.finish).any()
    child = np.repeat(np.arange(g.n_tasks), g.n_parents)
    assert (res.start[child] >= res.finish[g.parents]).all()
    m = run_job_metrics(res, wl, cluster)
    assert (m["jms"] >= m["critical_path"] - 1e-9).all()
    assert (m["njsl"] >= 1.0 - 1e-9).all()
