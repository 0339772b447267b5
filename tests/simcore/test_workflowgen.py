"""The design-space paper's environment (dse-2020) and the random workflow workloads.

Presets ``workflows`` and ``workflows-short-long`` (the issue's crafted acceptance case).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.api import resolve_workload
from simcore.core.engine import Simulation, simulate
from simcore.core.errors import ParameterError
from simcore.core.jobmetrics import dag_summary, run_job_metrics
from simcore.core.model import Workload
from simcore.core.seeding import scheduler_rng
from simcore.core.taskgraph import TaskGraph
from simcore.presets import CLUSTERS
from simcore.schedulers.base import Scheduler
from simcore.workloads.workflowgen import WorkflowParams, core_capacity, draw_jobs, generate, mean_size, size_pmf

DSE = CLUSTERS.get("dse-2020")


# -- the cluster --------------------------------------------------------------------------------------------------


def test_dse_2020_is_half_i7_half_i5_with_their_cores_and_clock_rates() -> None:
    c = DSE.build(machines=64)
    assert c.counts.tolist() == [32, 32] and c.capacity[:, 0].tolist() == [4.0, 2.0]
    assert c.speed is not None and c.speed.tolist() == [4.1, 3.5] and c.resources == ("cores",)
    assert c.total_capacity().tolist() == [192.0]


def test_an_odd_machine_count_gives_the_extra_machine_to_the_i7s() -> None:
    assert DSE.build(machines=5).counts.tolist() == [3, 2]


def test_core_capacity_weighs_the_slower_cores_by_their_speed() -> None:
    # 32 x 4 cores at full speed + 32 x 2 cores at 3.5 / 4.1.
    assert core_capacity(DSE.build(machines=64)) == pytest.approx(128 + 64 * 3.5 / 4.1)


class _FirstFit(Scheduler):
    """Starts each task on the first machine that fits, in machine order (test helper)."""

    def on_arrival(self, job: int) -> None:
        self.sim.start(job, self.sim.view.first_fit(job))

    def on_completion(self, job: int, machine: int) -> None:
        pass


def test_a_task_on_a_3_5_ghz_machine_runs_4_1_over_3_5_times_longer() -> None:
    c = DSE.build(machines=2)
    wl = Workload("w", ("cores",), [0.0, 0.0], [[4.0], [1.0]], [10.0, 10.0], [-1, -1], 0.0)
    res = simulate(c, wl, _FirstFit(), np.random.default_rng(0), drain=True)
    # The 4-core task fills the i7; the 1-core task goes to the i5.
    assert res.machine.tolist() == [0, 1]
    assert res.finish.tolist() == [10.0, pytest.approx(10.0 * 4.1 / 3.5)]


# -- job shapes ---------------------------------------------------------------------------------------------------


def _one(shape: str, n: int, seed: int = 0, edge_prob: float = 0.2) -> TaskGraph:
    p = WorkflowParams(shape=shape, min_tasks=n, max_tasks=n, edge_prob=edge_prob)
    return draw_jobs(p, 1, np.random.default_rng(seed))[0]


def test_a_chain_links_each_task_to_the_next() -> None:
    g = _one("chain", 4)
    assert [g.parents_of(t).tolist() for t in range(4)] == [[], [0], [1], [2]]


def test_a_fork_join_forks_from_the_first_and_joins_in_the_last() -> None:
    g = _one("fork-join", 5)
    assert [g.parents_of(t).tolist() for t in range(5)] == [[], [0], [0], [0], [1, 2, 3]]


def test_a_bag_has_no_edges() -> None:
    assert _one("bag", 6).n_edges == 0


def test_a_fully_connected_layered_dag_links_every_task_to_its_whole_previous_layer() -> None:
    g = _one("layered", 9, edge_prob=1.0)  # 3 layers
    layer_of = np.zeros(9, dtype=int)
    for t in range(9):
        ps = g.parents_of(t)
        layer_of[t] = 0 if len(ps) == 0 else layer_of[ps[0]] + 1
    assert sorted(set(layer_of.tolist())) == [0, 1, 2]
    for t in range(9):
        assert g.parents_of(t).tolist() == np.flatnonzero(layer_of == layer_of[t] - 1).tolist()


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(["mixed", "chain", "fork-join", "layered", "bag"]),
    lo=st.integers(1, 30),
    span=st.integers(0, 40),
    size_dist=st.sampled_from(["log-uniform", "uniform"]),
    edge_prob=st.floats(0, 1),
    seed=st.integers(0, 2**32 - 1),
)
def test_every_job_is_a_dag_within_its_size_bounds(
    shape: str, lo: int, span: int, size_dist: str, edge_prob: float, seed: int
) -> None:
    p = WorkflowParams(shape=shape, min_tasks=lo, max_tasks=lo + span, size_dist=size_dist, edge_prob=edge_prob)
    g, dur, cores = draw_jobs(p, 20, np.random.default_rng(seed))
    # TaskGraph refuses a parent numbered after its child (so no cycle) or in another job.
    assert g.n_jobs == 20 and (g.job_size >= lo).all() and (g.job_size <= lo + span).all()
    assert (np.diff(g.job_of) >= 0).all()  # jobs in order, tasks of a job together
    assert (dur >= 0).all() and (cores == 1).all()
    roots = set(np.flatnonzero(g.n_parents == 0).tolist())
    firsts = set(np.concatenate(([0], np.cumsum(g.job_size)[:-1])).tolist())
    if shape == "bag":
        assert g.n_edges == 0
    elif shape in ("chain", "fork-join"):
        assert roots == firsts  # connected from the job's first task
    else:
        assert firsts <= roots  # a layered job's roots are its first layer


def test_log_uniform_sizes_have_the_mean_the_load_assumes() -> None:
    p = WorkflowParams(min_tasks=2, max_tasks=64)
    k, pr = size_pmf(p)
    assert pr.sum() == pytest.approx(1.0) and (np.diff(pr) < 0).all()  # small jobs are the more likely
    g, _, _ = draw_jobs(p, 20_000, np.random.default_rng(1))
    assert g.job_size.mean() == pytest.approx(mean_size(p), rel=0.02)


def test_lognormal_durations_have_the_asked_mean_and_cv() -> None:
    p = WorkflowParams(shape="bag", min_tasks=100, max_tasks=100, duration_dist="lognormal", duration_cv=2.0)
    _, dur, _ = draw_jobs(p, 500, np.random.default_rng(2))
    assert dur.mean() == pytest.approx(60.0, rel=0.05) and dur.std() / dur.mean() == pytest.approx(2.0, rel=0.15)


# -- the workload presets -----------------------------------------------------------------------------------------


def test_the_same_seed_gives_the_same_workload_and_another_seed_another() -> None:
    c = DSE.build(machines=16)
    a, b = (resolve_workload("workflows", c, 7, load=0.8) for _ in range(2))
    other = resolve_workload("workflows", c, 8, load=0.8)
    for name in ("submit", "work", "request"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))
    assert a.graph is not None and b.graph is not None
    np.testing.assert_array_equal(a.graph.parents, b.graph.parents)
    assert a.n_jobs != other.n_jobs or not np.array_equal(a.work, other.work)


@settings(max_examples=12, deadline=None)
@given(
    load=st.floats(0.2, 1.5),
    seed=st.integers(0, 2**32 - 1),
    cores=st.integers(1, 4),
    shape=st.sampled_from(["mixed", "bag", "chain"]),
)
def test_the_offered_work_is_load_times_the_speed_weighted_core_capacity(
    load: float, seed: int, cores: int, shape: str
) -> None:
    c = DSE.build(machines=4)
    p = WorkflowParams(shape=shape, min_tasks=1, max_tasks=8, max_task_cores=cores, mean_duration_s=30.0)
    hours = 40.0
    wl = generate(c, np.random.default_rng(seed), load=load, hours=hours, params=p)
    offered = float((wl.work * wl.request[:, 0]).sum()) / (hours * 3600.0 * core_capacity(c))
    # About 5,000 jobs: the realised load is within a few percent of the target.
    assert offered == pytest.approx(load, rel=0.1)


def test_the_generator_refuses_a_cluster_without_cores() -> None:
    google = CLUSTERS.get("google-balanced").build(machines_per_config=1)
    with pytest.raises(ParameterError, match="requests 'cores'; cluster 'google-balanced' has resources"):
        resolve_workload("workflows", google, 0)


def test_bad_size_bounds_are_refused() -> None:
    with pytest.raises(ParameterError, match="1 <= min_tasks <= max_tasks, got min_tasks=9, max_tasks=3"):
        resolve_workload("workflows", DSE.build(), 0, params={"min_tasks": 9, "max_tasks": 3})


class _ListScheduler(Scheduler):
    """One global queue in ``key`` order; the head starts on the first machine that fits (test helper)."""

    def __init__(self, key: Callable[[Any, int], Any]) -> None:
        super().__init__()
        self.key = key

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.queue: list[tuple[Any, int]] = []
        self.work = sim.workload.work

    def on_arrival(self, job: int) -> None:
        heapq.heappush(self.queue, (self.key(self, job), job))
        self._dispatch()

    def on_completion(self, job: int, machine: int) -> None:
        self._dispatch()

    def _dispatch(self) -> None:
        while self.queue:
            m = self.sim.view.first_fit(self.queue[0][1])
            if m < 0:
                return
            self.sim.start(heapq.heappop(self.queue)[1], m)


ORDERS: dict[str, Callable[[Any, int], Any]] = {
    "first-come": lambda s, j: (s.sim.now, j),
    "shortest": lambda s, j: (float(s.work[j]), j),
    "longest": lambda s, j: (-float(s.work[j]), j),
}


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        (0, {"first-come": 977.9, "shortest": 235.9, "longest": 2807.2}),
        (1, {"first-come": 945.3, "shortest": 228.5, "longest": 2746.9}),
    ],
)
def test_shortest_task_first_clearly_wins_on_trt_in_the_crafted_workload(seed: int, expected: dict[str, float]) -> None:
    c = DSE.build(machines=64)
    wl = resolve_workload("workflows-short-long", c, seed)
    assert wl.graph is not None and 9_000 < wl.n_jobs < 11_000 and (wl.submit == 0).all()
    trt = {}
    for name, key in ORDERS.items():
        res = simulate(c, wl, _ListScheduler(key), scheduler_rng(seed), drain=True)
        trt[name] = dag_summary(run_job_metrics(res, wl, c))["mean_trt_s"]
    assert trt == {k: pytest.approx(v, abs=0.05) for k, v in expected.items()}
    assert trt["shortest"] * 4 < trt["first-come"] < trt["longest"]
    assert math.isfinite(trt["shortest"])
