"""Greedy (LoTES section 5.1): hand-computed runs and the policy's properties on random runs.

Every run is made on both engines (the ``engine`` fixture): the specification and its kernel.
"""

from __future__ import annotations

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.core.engine import SimResult, simulate
from simcore.core.model import Cluster, Workload
from simcore.core.seeding import scheduler_rng
from simcore.schedulers import create
from simcore.schedulers.greedy import DRAW_BATCH
from tests.simcore.conftest import expect_engine

RES = ("cpu", "mem")


def run(
    cluster: Cluster, submit: list[float], request: list[list[float]], work: list[float], engine: str, seed: int = 0
) -> SimResult:
    n = len(submit)
    wl = Workload("w", RES, submit, request, work, [0] * n, horizon_s=100.0)
    return expect_engine(simulate(cluster, wl, create("greedy"), seed, drain=True, engine=engine), engine)


def first_draw(seed: int) -> float:
    """The first uniform Greedy draws for a tie under ``seed`` (it draws in batches, from the scheduler's stream)."""
    return float(scheduler_rng(seed).random(DRAW_BATCH)[0])


def test_first_fit_follows_machine_order(engine: str) -> None:
    # Machines 0 (0.5, 0.5) and 1, 2 (1, 1). Jobs arrive 1 s apart and run long.
    cluster = Cluster("c", RES, ("small", "big"), np.array([1, 2]), np.array([[0.5, 0.5], [1.0, 1.0]]))
    res = run(cluster, [0, 1, 2, 3], [[0.4, 0.4], [0.6, 0.1], [0.05, 0.05], [0.3, 0.95]], [100] * 4, engine)
    # job 0 -> m0 (first machine); job 1 does not fit m0 (cpu 0.6 > 0.5) -> m1;
    # job 2 fits m0's leftover (0.1, 0.1) -> m0; job 3 needs mem 0.95: m1 has 0.9 left -> m2.
    assert res.machine.tolist() == [0, 1, 0, 2]
    assert res.start.tolist() == [0, 1, 2, 3]


def two_machine_scenario(seed: int, engine: str) -> SimResult:
    """Two (1, 1) machines; the hand-computed run below."""
    cluster = Cluster("c", RES, ("a",), np.array([2]), np.array([[1.0, 1.0]]))
    submit = [0.0, 1.0, 2.0, 3.0, 4.0, 4.5]
    request = [[0.6, 0.1], [0.6, 0.1], [0.5, 0.5], [0.3, 0.3], [0.2, 0.2], [0.5, 0.1]]
    work = [10.0, 10.0, 5.0, 4.0, 1.0, 1.0]
    return run(cluster, submit, request, work, engine, seed)


def test_random_tie_and_fcfs_per_machine_hand_computed(engine: str) -> None:
    # t=0  job0 (0.6, 0.1) -> m0, m0 free (0.4, 0.9)          runs to 10
    # t=1  job1 (0.6, 0.1) -> m1 (m0 has cpu 0.4), m1 free (0.4, 0.9)   runs to 11
    # t=2  job2 (0.5, 0.5) fits nowhere. Both queues are empty: a tie. Greedy draws
    #      u and takes floor(2u)-th of the tied machines [m0, m1].
    # t=3  job3 (0.3, 0.3) fits m0 -> starts at once, m0 free (0.1, 0.6), runs to 7
    #      (an arrival may start on a machine whose queued head does not fit).
    # t=4  job4 (0.2, 0.2): m0 has cpu 0.1 -> m1, free (0.2, 0.7), runs to 5
    # t=4.5 job5 (0.5, 0.1) fits nowhere -> the machine with the empty queue.
    # If job2 went to m0 (u < 0.5): job5 queues on m1.
    #   t=5 job4 ends, m1 free (0.4, 0.9): head job5 needs cpu 0.5, waits.
    #   t=7 job3 ends, m0 free (0.4, 0.9): head job2 needs 0.5, waits.
    #   t=10 job0 ends, m0 empty: job2 starts (wait 8). Job5 would fit on m0 now, but
    #        it is in m1's queue and never moves.
    #   t=11 job1 ends, m1 empty: job5 starts (wait 6.5).
    # If job2 went to m1 (u >= 0.5): job5 queues on m0.
    #   t=10 job0 ends: m0 (1, 1) minus nothing running -> job5 starts (wait 5.5).
    #   t=11 job1 ends: m1 empty -> job2 starts (wait 9).
    seeds_low = [s for s in range(40) if first_draw(s) < 0.5][:2]
    seeds_high = [s for s in range(40) if first_draw(s) >= 0.5][:2]
    for s in seeds_low:
        res = two_machine_scenario(s, engine)
        assert (res.start - res.submit).tolist() == [0, 0, 8, 0, 0, 6.5]
        assert res.machine.tolist() == [0, 1, 0, 0, 1, 1]
    for s in seeds_high:
        res = two_machine_scenario(s, engine)
        assert (res.start - res.submit).tolist() == [0, 0, 9, 0, 0, 5.5]
        assert res.machine.tolist() == [0, 1, 1, 0, 1, 0]


def test_ties_are_broken_uniformly(engine: str) -> None:
    machines_of_job2 = [int(two_machine_scenario(s, engine).machine[2]) for s in range(100)]
    share = np.mean(machines_of_job2)
    # Binomial(100, 1/2) / 100: 0.5 +- 0.15 is three standard deviations (the seeds are fixed).
    assert 0.35 < share < 0.65


def test_a_head_that_does_not_fit_blocks_the_jobs_behind_it(engine: str) -> None:
    # One (1, 1) machine.
    # t=0 job0 (0.7, 0.7) runs to 10. t=1 job1 (0.2, 0.2) fits the rest, runs to 6.
    # t=2 job2 (0.5, 0.5) queues. t=3 job3 (0.25, 0.25) does not fit (0.1 left), queues behind job2.
    # t=6 job1 ends: free (0.3, 0.3). Head job2 does not fit; job3 would, but FCFS keeps it waiting.
    # t=10 job0 ends: job2 starts, then job3 fits too and starts.
    cluster = Cluster("c", RES, ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    res = run(cluster, [0, 1, 2, 3], [[0.7, 0.7], [0.2, 0.2], [0.5, 0.5], [0.25, 0.25]], [10, 5, 1, 1], engine)
    assert res.start.tolist() == [0, 1, 10, 10]


def test_a_job_queues_only_where_it_could_ever_run(engine: str) -> None:
    # m0 (0.5, 0.5), m1 (1, 1). job0 (0.9, 0.9) -> m1 until 10. job1 (0.8, 0.8) fits nowhere;
    # both queues are empty but only m1 can ever hold it. job2 (0.4, 0.4) -> m0 at once.
    cluster = Cluster("c", RES, ("small", "big"), np.array([1, 1]), np.array([[0.5, 0.5], [1.0, 1.0]]))
    for seed in range(20):
        res = run(cluster, [0, 1, 2], [[0.9, 0.9], [0.8, 0.8], [0.4, 0.4]], [10, 1, 1], engine, seed)
        assert res.machine.tolist() == [1, 1, 0]
        assert res.start.tolist() == [0, 10, 2]


def test_the_shortest_queue_gets_the_job(engine: str) -> None:
    # Two (1, 1) machines both full until t=10 (m0) and t=20 (m1). Jobs 2..4 (0.6 each) fit nowhere.
    # job2: tie (0, 0) -> random; job3: the other machine (queues 1 vs 0); job4: tie (1, 1) -> random.
    cluster = Cluster("c", RES, ("a",), np.array([2]), np.array([[1.0, 1.0]]))
    for seed in range(10):
        res = run(
            cluster,
            [0, 0, 1, 2, 3],
            [[1, 1], [1, 1], [0.6, 0.6], [0.6, 0.6], [0.6, 0.6]],
            [10, 20, 1, 1, 1],
            engine,
            seed,
        )
        m = res.machine.tolist()
        assert m[:2] == [0, 1]
        assert {m[2], m[3]} == {0, 1}
        # Each machine serves its own queue in order: a machine with two queued jobs runs
        # them one after the other (0.6 + 0.6 > 1).
        for mach, free_at in ((0, 10.0), (1, 20.0)):
            own = [z for z in (2, 3, 4) if m[z] == mach]
            assert res.start[own[0]] == free_at
            if len(own) == 2:
                assert res.start[own[1]] == free_at + 1


# -- properties on random runs ------------------------------------------------------------------------


@st.composite
def loaded_runs(draw: st.DrawFn) -> tuple[Workload, int, Cluster]:
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    M = draw(st.integers(1, 3))
    caps = rng.choice([0.5, 1.0], (M, 2))
    counts = rng.integers(1, 4, M)
    cluster = Cluster("c", RES, tuple(f"c{j}" for j in range(M)), counts, caps)
    n = draw(st.integers(5, 80))
    submit = np.cumsum(rng.exponential(0.3, n))  # heavy load: queues form
    home = rng.integers(0, M, n)
    request = caps[home] * rng.uniform(0.1, 1.0, (n, 2))
    work = rng.exponential(3.0, n)
    wl = Workload("w", RES, submit, request, work, np.zeros(n, dtype=np.int64), horizon_s=float(submit[-1]))
    return wl, seed, cluster


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(loaded_runs())
def test_greedy_properties(engine: str, run_: tuple[Workload, int, Cluster]) -> None:
    wl, seed, cluster = run_
    res = expect_engine(simulate(cluster, wl, create("greedy"), seed, drain=True, engine=engine), engine)
    start, finish, machine, submit = res.start, res.finish, res.machine, wl.submit
    # Work conserving per machine: with drain every job runs.
    assert not np.isnan(finish).any()
    waited = np.flatnonzero(start > submit)
    for z in waited:
        m = machine[z]
        # A queued job starts only when a job finishes on its own machine.
        others = np.flatnonzero((machine == m) & (np.arange(wl.n_jobs) != z))
        assert np.isclose(finish[others], start[z], rtol=0, atol=1e-9).any()
    # FCFS per machine: jobs that waited on the same machine start in arrival order.
    for m in np.unique(machine[waited]):
        own = waited[machine[waited] == m]
        assert (np.diff(start[own]) >= 0).all()
    # A job that fit somewhere at arrival started at once on the lowest-numbered machine it fit.
    cap = cluster.machine_capacity
    for z in range(wl.n_jobs):
        t = submit[z]
        running = (start <= t) & (finish > t) & (np.arange(wl.n_jobs) < z) | ((start == t) & (np.arange(wl.n_jobs) < z))
        used = np.zeros_like(cap)
        np.add.at(used, machine[running], wl.request[running])
        fits = ((cap - used) + 1e-9 >= wl.request[z]).all(axis=1)
        if fits.any():
            assert start[z] == t
            assert machine[z] == int(np.argmax(fits))
        else:
            assert start[z] > t


def test_chunked_first_fit_agrees_with_the_single_pass() -> None:
    # Clusters larger than one chunk are scanned chunk by chunk; the answer must not change.
    from simcore.core.view import EngineView

    rng = np.random.default_rng(3)
    cluster = Cluster("c", RES, ("a", "b"), np.array([20, 17]), np.array([[1.0, 0.5], [0.5, 1.0]]))
    n = 200
    request = np.ascontiguousarray(rng.uniform(0.0, 0.5, (n, 2)))
    free_by_resource = np.ascontiguousarray(rng.uniform(0.0, 0.5, (2, cluster.n_machines)))
    running = np.zeros(cluster.n_machines, dtype=np.int64)
    last = np.full(cluster.n_machines, -1, dtype=np.int64)
    whole = EngineView(cluster, free_by_resource, request, running, last)
    chunked = EngineView(cluster, free_by_resource, request, running, last, chunk=8)
    free = free_by_resource.T
    answers = [whole.first_fit(z) for z in range(n)]
    assert answers == [chunked.first_fit(z) for z in range(n)]
    expected = [int(np.argmax(f)) if (f := (free >= request[z] - 1e-9).all(axis=1)).any() else -1 for z in range(n)]
    assert answers == expected
    assert -1 in answers and len(set(answers)) > 5
