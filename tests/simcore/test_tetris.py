"""Tetris (LoTES section 5.1): hand-computed scores on arrival and on completion."""

from __future__ import annotations

import numpy as np
import pytest

from simcore.engine import SimResult, simulate
from simcore.model import Cluster, RateRuntime, Workload
from simcore.schedulers import create
from simcore.schedulers.tetris import Tetris

RES = ("cpu", "mem")


def run(cluster: Cluster, wl: Workload, **options: float) -> SimResult:
    return simulate(cluster, wl, create("tetris", **options), 0, drain=True)


def test_arrival_goes_to_the_best_packing_score_not_the_first_fit() -> None:
    # m0 (1.0, 0.5), m1 (0.5, 1.0); the largest capacities are (1, 1), so nothing is rescaled.
    # Job r = (0.1, 0.4): omega(m0) = 0.1*1.0 + 0.4*0.5 = 0.30, omega(m1) = 0.1*0.5 + 0.4*1.0 = 0.45.
    # p does not depend on the machine, so gamma is equal on both: m1 wins (first fit would take m0).
    cluster = Cluster("c", RES, ("wide", "tall"), np.array([1, 1]), np.array([[1.0, 0.5], [0.5, 1.0]]))
    wl = Workload("w", RES, [0.0], [[0.1, 0.4]], [5.0], [0], horizon_s=10.0)
    assert run(cluster, wl).machine.tolist() == [1]


def test_equal_scores_go_to_the_lowest_machine_index() -> None:
    # Three idle (1, 1) machines. Job 0 (0.5, 0.5) ties everywhere -> m0. Job 1 (0.2, 0.2):
    # omega(m0) = 0.2*0.5*2 = 0.2 < omega(m1) = omega(m2) = 0.4 -> the tie m1/m2 goes to m1.
    cluster = Cluster("c", RES, ("a",), np.array([3]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, [0.0, 1.0], [[0.5, 0.5], [0.2, 0.2]], [50.0, 50.0], [0, 0], horizon_s=10.0)
    assert run(cluster, wl).machine.tolist() == [0, 1]


def test_the_work_score_prefers_the_faster_machine() -> None:
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
    wl = Workload("w", RES, [0.0], [[0.2, 0.2]], work, cls, horizon_s=10.0,
                  runtime=RateRuntime(work, cls, rates))
    res = run(cluster, wl)
    assert res.machine.tolist() == [1]
    assert res.finish.tolist() == [0.25]
    assert run(cluster, wl, work_weight=0.0).machine.tolist() == [0]


def test_completion_starts_the_best_scoring_queued_job_not_the_oldest() -> None:
    # One (1, 1) machine, machine-independent p, p_bar = mean work = (10 + 8 + 2 + 1) / 4 = 5.25.
    # t=0 job0 (0.9, 0.9) runs to 10; jobs 1-3 arrive at 1, 2, 3 and queue.
    # t=10 free C = (1, 1); score = omega - gamma = (r0 + r1) * (1 - p / 5.25):
    #   job1 (0.5, 0.2), p 8: 0.7 * (1 - 8/5.25) = -0.367
    #   job2 (0.3, 0.6), p 2: 0.9 * (1 - 2/5.25) = +0.557
    #   job3 (0.6, 0.6), p 1: 1.2 * (1 - 1/5.25) = +0.971  -> job3 starts, free (0.4, 0.4):
    #   neither job1 (cpu 0.5) nor job2 (mem 0.6) fits; stop.
    # t=11 job3 ends, C = (1, 1): job2 (0.557) beats job1 -> starts; free (0.7, 0.4): job1 fits -> starts.
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, [0.0, 1.0, 2.0, 3.0], [[0.9, 0.9], [0.5, 0.2], [0.3, 0.6], [0.6, 0.6]],
                  [10.0, 8.0, 2.0, 1.0], [0, 0, 0, 0], horizon_s=20.0)
    res = run(cluster, wl)
    assert res.start.tolist() == [0.0, 11.0, 11.0, 10.0]


def test_resources_are_normalised_to_the_largest_machine() -> None:
    # Capacities in cores and GiB: m0 (8, 64), m1 (16, 30); job (4 cores, 1 GiB).
    # Raw dot products: m0 4*8 + 1*64 = 96 > m1 4*16 + 1*30 = 94 -> m0 (the GiB dominate).
    # Normalised by the largest capacities (16, 64):
    #   m0 (4/16)(8/16) + (1/64)(64/64) = 0.1406 < m1 (4/16)(16/16) + (1/64)(30/64) = 0.2573 -> m1.
    cluster = Cluster("c", RES, ("m0", "m1"), np.array([1, 1]), np.array([[8.0, 64.0], [16.0, 30.0]]))
    wl = Workload("w", RES, [0.0], [[4.0, 1.0]], [5.0], [0], horizon_s=10.0)
    assert run(cluster, wl).machine.tolist() == [1]


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
    wl = Workload("w", RES, [0.0, 1.0, 20.0], [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]], [1.0, 1.0, 1.0], cls,
                  horizon_s=30.0, runtime=WarmCache(cls))
    res = run(cluster, wl)
    assert res.machine.tolist() == [0, 1, 1]
    assert res.finish.tolist() == [10.0, 11.0, 21.0]


def test_the_queue_survives_growth_and_compaction() -> None:
    # 3,000 jobs of (0.6, 0.6) on one machine: one at a time, all queued behind each other
    # (more than the initial 1,024 queue slots). Equal requests: the shortest job wins each time.
    n = 3000
    rng = np.random.default_rng(1)
    work = rng.uniform(1.0, 2.0, n)
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", RES, np.zeros(n), np.full((n, 2), 0.6), work, np.zeros(n, dtype=np.int64),
                  horizon_s=1.0)
    res = run(cluster, wl)
    order = np.argsort(res.start, kind="stable")
    # Job 0 arrives first and starts at once; the rest run shortest first.
    assert order[0] == 0
    assert (np.diff(work[order[1:]]) >= 0).all()
    assert res.finish.max() == pytest.approx(work.sum())


def test_work_weight_is_a_registered_parameter() -> None:
    assert [p.name for p in Tetris.params] == ["work_weight"]


def test_a_zero_rate_configuration_is_never_chosen() -> None:
    # mu = 0 means the class cannot run on that configuration (LoTES section 5.3). m0 (1, 1) would have the
    # better packing score, but the job's class has rate 0 there: it runs on m1 (0.5, 0.5).
    cluster = Cluster("c", RES, ("big", "small"), np.array([1, 1]), np.array([[1.0, 1.0], [0.5, 0.5]]))
    rates = np.array([[0.0, 1.0]])
    work = np.array([2.0, 2.0])
    cls = np.array([0, 0])
    wl = Workload("w", RES, [0.0, 1.0], [[0.4, 0.4], [0.4, 0.4]], work, cls, horizon_s=10.0,
                  runtime=RateRuntime(work, cls, rates))
    for weight in (1.0, 0.0):
        res = run(cluster, wl, work_weight=weight)
        # job1 fits only on m0 while job0 runs; it waits for m1 instead.
        assert res.machine.tolist() == [1, 1]
        assert res.start.tolist() == [0.0, 2.0]
