"""Tetris (LoTES section 5.1): hand-computed scores on arrival and on completion.

The hand-computed cases run on both engines (the ``engine`` fixture), except those whose
run-time model depends on a machine's last class: it has no compiled form, so they run the
specification only.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.engine import SimResult, simulate
from simcore.core.model import Cluster, RateRuntime, Workload
from simcore.schedulers import create
from simcore.schedulers.tetris import Tetris
from tests.conftest import NoClass0OnConfig0
from tests.simcore.conftest import expect_engine

RES = ("cpu", "mem")


def run(cluster: Cluster, wl: Workload, engine: str, **options: float) -> SimResult:
    """Tetris's run on ``engine`` (checked to be the engine used)."""
    return expect_engine(simulate(cluster, wl, create("tetris", **options), 0, drain=True, engine=engine), engine)


def test_arrival_goes_to_the_best_packing_score_not_the_first_fit(engine: str) -> None:
    # m0 (1.0, 0.5), m1 (0.5, 1.0); the largest capacities are (1, 1), so nothing is rescaled.
    # Job r = (0.1, 0.4): omega(m0) = 0.1*1.0 + 0.4*0.5 = 0.30, omega(m1) = 0.1*0.5 + 0.4*1.0 = 0.45.
    # p does not depend on the machine, so gamma is equal on both: m1 wins (first fit would take m0).
    cluster = Cluster("c", RES, ("wide", "tall"), np.array([1, 1]), np.array([[1.0, 0.5], [0.5, 1.0]]))
    wl = Workload("w", RES, [0.0], [[0.1, 0.4]], [5.0], [0], horizon_s=10.0)
    assert run(cluster, wl, engine).machine.tolist() == [1]


def test_equal_scores_go_to_the_lowest_machine_index(engine: str) -> None:
    # Three idle (1, 1) machines. Job 0 (0.5, 0.5) ties everywhere -> m0. Job 1 (0.2, 0.2):
    # omega(m0) = 0.2*0.5*2 = 0.2 < omega(m1) = omega(m2) = 0.4 -> the tie m1/m2 goes to m1.
    cluster = Cluster("c", RES, ("a",), np.array([3]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, [0.0, 1.0], [[0.5, 0.5], [0.2, 0.2]], [50.0, 50.0], [0, 0], horizon_s=10.0)
    assert run(cluster, wl, engine).machine.tolist() == [0, 1]


def test_the_work_score_prefers_the_faster_machine(engine: str) -> None:
    # m0 (1, 1) slow, m1 (0.5, 0.5) fast for the job's class: rates 1 and 4 per second,
    # work 1, so p = 1 s on m0 and 0.25 s on m1.
    # p_bar (machine-dependent runtime) = mean over the job and both configurations = (1 + 0.25)/2 = 0.625.
    # Job r = (0.2, 0.2): sum r = 0.4, work factor = 0.4 / 0.625 = 0.64.
    #   m0: omega = 0.2 + 0.2 = 0.4, gamma = 0.64 * 1    = 0.64 -> score -0.24
    #   m1: omega = 0.1 + 0.1 = 0.2, gamma = 0.64 * 0.25 = 0.16 -> score +0.04  -> m1
    # With work_weight 0 only omega counts -> m0.
    cluster = Cluster("c", RES, ("slow", "fast"), np.array([1, 1]), np.array([[1.0, 1.0], [0.5, 0.5]]))
    rates = np.array([[1.0, 4.0]])
    work = np.array([1.0])
    cls = np.array([0])
    wl = Workload("w", RES, [0.0], [[0.2, 0.2]], work, cls, horizon_s=10.0, runtime=RateRuntime(work, cls, rates))
    res = run(cluster, wl, engine)
    assert res.machine.tolist() == [1]
    assert res.finish.tolist() == [0.25]
    assert run(cluster, wl, engine, work_weight=0.0).machine.tolist() == [0]


def test_completion_starts_the_best_scoring_queued_job_not_the_oldest(engine: str) -> None:
    # One (1, 1) machine, machine-independent p, p_bar = mean work = (10 + 8 + 2 + 1) / 4 = 5.25.
    # t=0 job0 (0.9, 0.9) runs to 10; jobs 1-3 arrive at 1, 2, 3 and queue.
    # t=10 free C = (1, 1); score = omega - gamma = (r0 + r1) * (1 - p / 5.25):
    #   job1 (0.5, 0.2), p 8: 0.7 * (1 - 8/5.25) = -0.367
    #   job2 (0.3, 0.6), p 2: 0.9 * (1 - 2/5.25) = +0.557
    #   job3 (0.6, 0.6), p 1: 1.2 * (1 - 1/5.25) = +0.971  -> job3 starts, free (0.4, 0.4):
    #   neither job1 (cpu 0.5) nor job2 (mem 0.6) fits; stop.
    # t=11 job3 ends, C = (1, 1): job2 (0.557) beats job1 -> starts; free (0.7, 0.4): job1 fits -> starts.
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload(
        "w",
        RES,
        [0.0, 1.0, 2.0, 3.0],
        [[0.9, 0.9], [0.5, 0.2], [0.3, 0.6], [0.6, 0.6]],
        [10.0, 8.0, 2.0, 1.0],
        [0, 0, 0, 0],
        horizon_s=20.0,
    )
    res = run(cluster, wl, engine)
    assert res.start.tolist() == [0.0, 11.0, 11.0, 10.0]


def test_resources_are_normalised_to_the_largest_machine(engine: str) -> None:
    # Capacities in cores and GiB: m0 (8, 64), m1 (16, 30); job (4 cores, 1 GiB).
    # Raw dot products: m0 4*8 + 1*64 = 96 > m1 4*16 + 1*30 = 94 -> m0 (the GiB dominate).
    # Normalised by the largest capacities (16, 64):
    #   m0 (4/16)(8/16) + (1/64)(64/64) = 0.1406 < m1 (4/16)(16/16) + (1/64)(30/64) = 0.2573 -> m1.
    cluster = Cluster("c", RES, ("m0", "m1"), np.array([1, 1]), np.array([[8.0, 64.0], [16.0, 30.0]]))
    wl = Workload("w", RES, [0.0], [[4.0, 1.0]], [5.0], [0], horizon_s=10.0)
    assert run(cluster, wl, engine).machine.tolist() == [1]


class WarmCache:
    """Processing time 1 s if the machine's last job had the same class, else 10 s."""

    def __init__(self, job_class: np.ndarray) -> None:
        self.cls = job_class.tolist()

    def duration(self, job: int, config: int, last_class: int) -> float:
        return 1.0 if last_class == self.cls[job] else 10.0


def test_a_runtime_that_depends_on_the_last_class_is_scored_per_machine() -> None:
    # Two idle (1, 1) machines. job0 (class 0) -> m0 (tie); job1 (class 1) arrives at 1 -> m1 (more free).
    # Both finish by 11. job2 (class 1, 0.5 + 0.5) at 20: omega is equal, p = 10 on m0 (last class 0)
    # and 1 on m1 (last class 1); p_bar = 10 (cold runs of the sampled jobs) -> gamma 1.0 vs 0.1 -> m1.
    cluster = Cluster("c", RES, ("a",), np.array([2]), np.array([[1.0, 1.0]]))
    cls = np.array([0, 1, 1])
    wl = Workload(
        "w",
        RES,
        [0.0, 1.0, 20.0],
        [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
        [1.0, 1.0, 1.0],
        cls,
        horizon_s=30.0,
        runtime=WarmCache(cls),
    )
    res = run(cluster, wl, "python")
    assert res.machine.tolist() == [0, 1, 1]
    assert res.finish.tolist() == [10.0, 11.0, 21.0]


def test_the_queue_survives_growth_and_compaction(engine: str) -> None:
    # 3,000 jobs of (0.6, 0.6) on one machine: one at a time, all queued behind each other
    # (more than the initial 1,024 queue slots). Equal requests: the shortest job wins each time.
    n = 3000
    rng = np.random.default_rng(1)
    work = rng.uniform(1.0, 2.0, n)
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, np.zeros(n), np.full((n, 2), 0.6), work, np.zeros(n, dtype=np.int64), horizon_s=1.0)
    res = run(cluster, wl, engine)
    order = np.argsort(res.start, kind="stable")
    # Job 0 arrives first and starts at once; the rest run shortest first.
    assert order[0] == 0
    assert (np.diff(work[order[1:]]) >= 0).all()
    assert res.finish.max() == pytest.approx(work.sum())


def test_work_weight_is_a_registered_parameter() -> None:
    assert [p.name for p in Tetris.params] == ["work_weight"]


def test_a_zero_rate_configuration_is_never_chosen(engine: str) -> None:
    # mu = 0 means the class cannot run on that configuration (LoTES section 5.3). m0 (1, 1) would have the
    # better packing score, but the job's class has rate 0 there: it runs on m1 (0.5, 0.5).
    cluster = Cluster("c", RES, ("big", "small"), np.array([1, 1]), np.array([[1.0, 1.0], [0.5, 0.5]]))
    rates = np.array([[0.0, 1.0]])
    work = np.array([2.0, 2.0])
    cls = np.array([0, 0])
    wl = Workload(
        "w", RES, [0.0, 1.0], [[0.4, 0.4], [0.4, 0.4]], work, cls, horizon_s=10.0, runtime=RateRuntime(work, cls, rates)
    )
    for weight in (1.0, 0.0):
        res = run(cluster, wl, engine, work_weight=weight)
        # job1 fits only on m0 while job0 runs; it waits for m1 instead.
        assert res.machine.tolist() == [1, 1]
        assert res.start.tolist() == [0.0, 2.0]


# -- the fast paths (score index, arrival variants): the same decisions as the plain scans ---------


class CountingTetris(Tetris):
    """Tetris that counts completions handled through the score index and arrivals scored on fitting machines."""

    indexed = 0
    fitting_first = 0

    def _complete_indexed(self, machine: int, f: list[float]) -> None:
        self.indexed += 1
        super()._complete_indexed(machine, f)

    def _best_fitting(self, r: list[float], a: list[float], g: list[float] | None) -> int:
        self.fitting_first += 1
        return super()._best_fitting(r, a, g)


#: How an arrival finds its machine: "scan" scores all machines (the original path, always);
#: "fitting" scores only the machines where it fits, once one arrival found its top machine full.
ARRIVALS: dict[str, dict[str, int]] = {
    "scan": {"_misses_to_switch": 10**18},
    "fitting": {
        "_busy_queue": 0,
        "_busy_min_machines": 0,
        "_misses_to_switch": 1,
        "_fitting_run": 10**18,
        "_dense_fit": 0,
    },
}


def run_path(
    cluster: Cluster, wl: Workload, indexed: bool, arrival: str = "scan", per_cell: int = 1, **options: float
) -> tuple[SimResult, CountingTetris]:
    """A drained run that always (``indexed``) or never uses the score index, with one arrival variant."""
    sched = CountingTetris(**options)
    sched._index_threshold = 0 if indexed else 10**18
    sched._index_per_cell = per_cell
    for name, value in ARRIVALS[arrival].items():
        setattr(sched, name, value)
    # The Python engine: these tests count the specification's own paths (the kernel has its own).
    return simulate(cluster, wl, sched, 0, drain=True, engine="python"), sched


def assert_same_decisions(
    cluster: Cluster, wl: Workload, arrival: str, per_cell: int = 1, **options: float
) -> SimResult:
    """The plain scans (on arrival and completion) and the fast paths start every job at the same time and place."""
    old, s_old = run_path(cluster, wl, False, "scan", **options)
    new, s_new = run_path(cluster, wl, True, arrival, per_cell, **options)
    assert s_old.indexed == 0 and s_old.fitting_first == 0
    assert s_new.indexed > 0
    assert (s_new.fitting_first > 0) == (arrival == "fitting")
    np.testing.assert_array_equal(new.start, old.start)  # NaN (never started) compares equal
    np.testing.assert_array_equal(new.machine, old.machine)
    return old


def test_the_index_breaks_a_score_tie_across_buckets_to_the_earliest_arrival() -> None:
    # One (1, 1) machine. job0 (1, 1) runs 0..10 while A (0.6, 0.5) at t=1, B (0.5, 0.6) at t=2,
    # F1 (0.7, 0.7) at t=3 and F2 (0.3, 0.3) at t=4 queue; p_bar = (10 + 1 + 1 + 1000 + 1000) / 5.
    # With one job per bucket the index is a 2 x 2 grid split at the median requests (0.55, 0.55):
    # F2 in bucket 0, B in 1, A in 2, F1 in 3, and each bucket's bound is its job's exact score.
    # At t=10, C = (1, 1): A and B score exactly the same (0.6 + 0.5 = 0.5 + 0.6 = 1.1, same p); the
    # F jobs score below zero (p = 1000). B's bucket is visited first; A's bound equals B's score,
    # and A is the earlier arrival, so it must win: the search may stop only on a bound *below* the
    # best score. Then F2 is the only job that fits beside A (free (0.4, 0.5)) and starts too;
    # B (at 11, when A ends) and F1 (at 12, when B ends) follow. The wrong tie gives B 10, A 11.
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload(
        "w",
        RES,
        [0.0, 1.0, 2.0, 3.0, 4.0],
        [[1.0, 1.0], [0.6, 0.5], [0.5, 0.6], [0.7, 0.7], [0.3, 0.3]],
        [10.0, 1.0, 1.0, 1000.0, 1000.0],
        [0, 0, 0, 0, 0],
        horizon_s=5.0,
    )
    for indexed in (False, True):
        res, _ = run_path(cluster, wl, indexed)
        assert res.start.tolist() == [0.0, 10.0, 11.0, 12.0, 10.0]


def test_a_runtime_that_depends_on_the_last_class_keeps_the_full_scan() -> None:
    # p on the freed machine depends on its last class, so there is no per-configuration work term
    # to bound: completions score the whole queue whatever its length. One (1, 1) machine, 40 jobs
    # of (0.6, 0.6) queued behind each other: each start is warm (1 s) if the class matches.
    n = 40
    cls = np.arange(n) % 2
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, np.zeros(n), np.full((n, 2), 0.6), np.ones(n), cls, horizon_s=1.0, runtime=WarmCache(cls))
    res, sched = run_path(cluster, wl, True)
    assert sched.indexed == 0
    # Job 0 (class 0) runs cold; then the warm class-0 jobs go first (shortest work score), in
    # arrival order, and the class-1 jobs after them, the first of those cold.
    order = np.argsort(res.start, kind="stable")
    assert order.tolist() == list(range(0, n, 2)) + list(range(1, n, 2))
    assert res.finish.max() == 10.0 + (n // 2 - 1) * 1.0 + 10.0 + (n // 2 - 1) * 1.0


def _preset(workload: str, machines_per_config: int, load: float, hours: float) -> tuple[Cluster, Workload]:
    from simcore.api import resolve_cluster, resolve_workload

    cluster = resolve_cluster("google-balanced", {"machines_per_config": machines_per_config})
    return cluster, resolve_workload(workload, cluster, 0, load, hours)


@pytest.mark.parametrize(
    ("workload", "mpc", "load", "hours", "arrival", "per_cell"),
    [
        ("google-like", 3, 2.0, 0.3, "fitting", 8),  # machine-independent p; the default bucket size
        ("google-like", 3, 2.0, 0.3, "scan", 1),
        ("lotes-phi", 2, 2.0, 6.0, "fitting", 1),  # p per configuration (equal rates)
        ("lotes-omega", 2, 3.0, 20.0, "fitting", 2),  # configuration-dependent p
        ("lotes-omega", 2, 3.0, 20.0, "scan", 8),
    ],
)
def test_the_fast_paths_make_the_decisions_of_the_full_scans_on_long_queues(
    workload: str, mpc: int, load: float, hours: float, arrival: str, per_cell: int
) -> None:
    cluster, wl = _preset(workload, mpc, load, hours)
    res = assert_same_decisions(cluster, wl, arrival, per_cell)
    assert res.sample_queue.max() > 500  # a long queue, not a trivial one


def test_the_fast_paths_match_with_three_resources_and_configurations_that_cannot_run_a_class() -> None:
    # Three resources (the grid covers the first two; the third is checked per bucket and job)
    # and rate-0 configurations (infinite p: those jobs must never start there).
    rng = np.random.default_rng(7)
    res3 = ("cpu", "mem", "disk")
    cap = np.array([[1.0, 1.0, 1.0], [0.5, 1.0, 0.25], [1.0, 0.5, 0.75]])
    cluster = Cluster("c3", res3, ("a", "b", "c"), np.array([2, 3, 2]), cap)
    n = 3000
    cls = rng.integers(0, 4, n)
    rates = rng.choice([0.0, 0.5, 1.0, 2.0], size=(4, 3))
    rates[:, 0] = 1.0  # every class can run somewhere
    work = rng.exponential(2.0, n)
    req = np.round(rng.uniform(0.0, 0.25, (n, 3)), 2)  # rounded: many equal requests and scores
    submit = np.sort(rng.uniform(0.0, 30.0, n))  # ~100 jobs/s against a capacity of ~25/s
    wl = Workload("w3", res3, submit, req, work, cls, horizon_s=30.0, runtime=RateRuntime(work, cls, rates))
    res = assert_same_decisions(cluster, wl, "fitting", 2)
    assert res.sample_queue.max() > 500
    started = ~np.isnan(res.start)
    ran_on = cluster.machine_config[res.machine[started]]
    assert (rates[cls[started], ran_on] > 0).all()


@settings(max_examples=150, deadline=None)
@given(data=st.data())
def test_the_fast_paths_match_the_full_scans_on_small_random_instances(data: st.DataObject) -> None:
    n_res = data.draw(st.integers(1, 3), label="resources")
    n_cfg = data.draw(st.integers(1, 3), label="configurations")
    res_names = ("cpu", "mem", "disk")[:n_res]
    cap = np.array(
        data.draw(
            st.lists(
                st.lists(st.sampled_from([0.5, 1.0]), min_size=n_res, max_size=n_res), min_size=n_cfg, max_size=n_cfg
            )
        )
    )
    cap[0] = 1.0  # every request below fits on configuration 0
    counts = np.array(data.draw(st.lists(st.integers(1, 2), min_size=n_cfg, max_size=n_cfg)))
    cluster = Cluster("c", res_names, tuple(f"k{j}" for j in range(n_cfg)), counts, cap)
    n = data.draw(st.integers(1, 60), label="jobs")
    # Coarse values: equal requests, equal work and equal scores are common, so ties are exercised.
    req = np.array(
        data.draw(
            st.lists(
                st.lists(st.sampled_from([0.0, 0.1, 0.2, 0.3, 0.5, 0.7]), min_size=n_res, max_size=n_res),
                min_size=n,
                max_size=n,
            )
        )
    )
    work = np.array(data.draw(st.lists(st.sampled_from([1.0, 2.0, 3.0, 5.0]), min_size=n, max_size=n)))
    submit = np.sort(np.array(data.draw(st.lists(st.integers(0, 8), min_size=n, max_size=n)), dtype=float))
    cls = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)))
    runtime = None
    if data.draw(st.booleans(), label="machine-dependent"):
        rates = np.array(
            data.draw(
                st.lists(
                    st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n_cfg, max_size=n_cfg), min_size=2, max_size=2
                )
            )
        )
        rates[:, 0] = np.maximum(rates[:, 0], 1.0)
        runtime = RateRuntime(work, cls, rates)
    wl = Workload("w", res_names, submit, req, work, cls, horizon_s=10.0, runtime=runtime)
    weight = data.draw(st.sampled_from([0.0, 1.0, 2.0]), label="work_weight")
    per_cell = data.draw(st.integers(1, 3), label="per_cell")
    arrival = data.draw(st.sampled_from(["scan", "fitting"]), label="arrival")
    old, _ = run_path(cluster, wl, False, "scan", work_weight=weight)
    new, _ = run_path(cluster, wl, True, arrival, per_cell, work_weight=weight)
    np.testing.assert_array_equal(new.start, old.start)
    np.testing.assert_array_equal(new.machine, old.machine)


@pytest.mark.parametrize("weight", [1.0, 0.0])
def test_a_last_class_runtime_never_starts_a_job_where_it_cannot_run(weight: float) -> None:
    # m0 (1, 1) is configuration 0, m1 (0.5, 0.5) configuration 1; class 0 cannot run on m0.
    # t=0 A (class 1, 0.5 x 2) -> m0 (better packing), runs to 2. t=0.5 B (class 0, 0.4 x 2) -> m1.
    # t=1 C (class 0, 0.4 x 2) fits only on m0, where it cannot run: it queues (the old
    # last-class path took m0 anyway and the engine refused). At t=2 m0 frees: C still cannot
    # run there (with work_weight 0 the old scan scored it NaN and took it). At t=2.5 B ends and
    # C starts on m1, warm (1 s).
    cluster = Cluster("c", RES, ("big", "small"), np.array([1, 1]), np.array([[1.0, 1.0], [0.5, 0.5]]))
    cls = np.array([1, 0, 0])
    wl = Workload(
        "w",
        RES,
        [0.0, 0.5, 1.0],
        [[0.5, 0.5], [0.4, 0.4], [0.4, 0.4]],
        [1.0, 1.0, 1.0],
        cls,
        horizon_s=10.0,
        runtime=NoClass0OnConfig0(cls),
    )
    res = run(cluster, wl, "python", work_weight=weight)
    assert res.machine.tolist() == [0, 1, 1]
    assert res.start.tolist() == [0.0, 0.5, 2.5]
    assert res.finish.tolist() == [2.0, 2.5, 3.5]


class SmallIndexTetris(Tetris):
    _index_threshold = 128


def test_a_reused_instance_runs_each_scenario_as_a_fresh_instance_would() -> None:
    # setup rebuilds every piece of per-run state (queue, index, arrival counters, p_bar): a long
    # queue on one scenario leaves nothing behind for the next.
    reused = SmallIndexTetris()
    scenarios = [
        _preset("google-like", 3, 2.0, 0.2),
        _preset("lotes-omega", 2, 3.0, 10.0),
        _preset("google-like", 3, 2.0, 0.2),
    ]
    for cluster, wl in scenarios:
        got = simulate(cluster, wl, reused, 0, engine="python")
        want = simulate(cluster, wl, SmallIndexTetris(), 0, engine="python")
        np.testing.assert_array_equal(got.start, want.start)
        np.testing.assert_array_equal(got.machine, want.machine)
        assert got.sample_queue.max() > 2 * SmallIndexTetris._index_threshold  # the score index was in use
