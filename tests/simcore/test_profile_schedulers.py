"""Hand-computed schedules of FCFS, Affinity and Greedy-1/2/3 on tiny one-job-per-machine clusters.

Every schedule is checked on both engines (the ``engine`` fixture): the specification and its kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcore.core.engine import SimResult, simulate
from simcore.core.errors import ParameterError
from simcore.core.model import Workload
from simcore.profiles.build import profile_cluster, table_for_cluster
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import profile_from_dict
from simcore.schedulers import create
from simcore.schedulers.base import Scheduler
from tests.simcore.conftest import expect_engine


def world(
    times: dict[tuple[str, str], tuple[float, float]],
    counts: dict[str, int],
    jobs: list[tuple[float, str]],
    databases: dict[str, str] | None = None,
) -> tuple[object, Workload]:
    """A cluster and workload from ``times[(job type, machine type)] = (cold, warm)`` seconds."""
    jtypes = list(dict.fromkeys(j for j, _ in times))
    mtypes = list(dict.fromkeys(m for _, m in times))
    dbs = databases or {}
    table = profile_from_dict(
        {
            "machine_types": [{"name": m} for m in mtypes],
            "job_types": [{"name": j, "proportion": 1.0, **({"database": dbs[j]} if j in dbs else {})} for j in jtypes],
            "runtimes": [
                {"job_type": j, "machine_type": m, "cpu_s": c, "io_s": 0.0, "warm_s": w}
                for (j, m), (c, w) in times.items()
            ],
        }
    )
    cluster = profile_cluster(table, counts, "tiny")
    kinds = np.array([jtypes.index(k) for _, k in jobs], dtype=np.int64)
    n = len(jobs)
    wl = Workload(
        name="tiny",
        resources=("slot",),
        submit=np.array([t for t, _ in jobs]),
        request=np.ones((n, 1)),
        work=np.ones(n),
        job_class=kinds,
        horizon_s=1000.0,
        runtime=ProfileRuntime(table_for_cluster(table, cluster), kinds),
    )
    return cluster, wl


def run(engine: str, cluster: object, wl: Workload, sched: str | Scheduler, **opts: object) -> SimResult:
    s = create(sched, **opts) if isinstance(sched, str) else sched
    return expect_engine(simulate(cluster, wl, s, 0, drain=True, engine=engine), engine)  # type: ignore[arg-type]


def test_fcfs_gives_the_head_of_the_queue_the_machine_free_longest(engine: str) -> None:
    # Given three identical machines; jobs at 0 and 1 run 5 s; a third arrives at 10.
    cluster, wl = world({("x", "A"): (5.0, 5.0)}, {"A": 3}, [(0.0, "x"), (1.0, "x"), (10.0, "x")])
    res = run(engine, cluster, wl, "fcfs")
    # Then machine 2 (never used) is the one free longest at t=10; lowest-index would take machine 0.
    assert res.machine.tolist() == [0, 1, 2]
    assert run(engine, cluster, wl, "fcfs", pick="lowest-index").machine.tolist() == [0, 1, 0]


def test_fcfs_makes_later_jobs_wait_behind_the_head(engine: str) -> None:
    cluster, wl = world(
        {("x", "A"): (10.0, 10.0), ("x", "B"): (20.0, 20.0)}, {"A": 1, "B": 1}, [(0.0, "x"), (0.0, "x"), (1.0, "x")]
    )
    res = run(engine, cluster, wl, "fcfs")
    assert res.start.tolist() == [0.0, 0.0, 10.0]
    assert res.finish.tolist() == [10.0, 20.0, 20.0]


AFF_TIMES = {("n", "W"): (10.0, 6.0), ("p", "W"): (8.0, 8.0)}
AFF_JOBS = [(0.0, "p"), (0.5, "n"), (3.0, "p"), (20.0, "p"), (20.1, "n"), (30.0, "n"), (31.0, "p"), (33.0, "p")]


def test_affinity_waits_until_the_wait_covers_the_penalty_and_prefers_cache_hits(engine: str) -> None:
    cluster, wl = world(AFF_TIMES, {"W": 2}, AFF_JOBS)
    res = run(engine, cluster, wl, "affinity")
    # Job 1 (n) at 0.5: idle machine 1 never ran anything: penalty 0.5*(10-6) + 0 = 2 s > 0, so it
    # waits; at the next event (job 2's arrival, t=3) its wait 2.5 >= 2 and it takes machine 1, cold.
    # Job 2 (p) waits; at 8 machine 0 (last p) frees: a cache hit.
    # Job 3 (p) at 20 takes machine 0 (last p, a hit) although machine 1 has been idle longer.
    # Job 4 (n) at 20.1 hits machine 1 (last n): warm, 6 s. Jobs 5, 6 hit likewise.
    # Job 7 (p) at 33: at 36 machine 1 (last n) frees, penalty 0 + (10-6) = 4 > wait 3, so it
    # waits for machine 0 (last p) at 39.
    assert res.start.tolist() == [0.0, 3.0, 8.0, 20.0, 20.1, 30.0, 31.0, 39.0]
    assert res.machine.tolist() == [0, 1, 0, 0, 1, 1, 0, 0]
    assert np.allclose(res.finish, [8.0, 13.0, 16.0, 28.0, 26.1, 36.0, 39.0, 47.0])
    # FCFS starts job 1 at once, cold, and job 4 (n) cold on machine 0.
    fc = run(engine, cluster, wl, "fcfs")
    assert fc.start[1] == 0.5 and fc.machine[4] == 0 and fc.finish[4] - fc.start[4] == 10.0


def test_affinity_starts_a_waiting_job_when_no_event_can_come(engine: str) -> None:
    # One machine. p at 0 runs 0-8; n at 1 waits (penalty 2 s) and at 8 (wait 7) runs cold until 18.
    # p arrives at 17.5: at 18 the penalty (4 s, n's warm cache) exceeds its wait (0.5 s), but no
    # further event can come, so it starts at 18 rather than never.
    cluster, wl = world(AFF_TIMES, {"W": 1}, [(0.0, "p"), (1.0, "n"), (17.5, "p")])
    res = run(engine, cluster, wl, "affinity")
    assert res.start.tolist() == [0.0, 8.0, 18.0]


DB_TIMES = {("a", "W"): (5.0, 5.0), ("b", "W"): (5.0, 5.0), ("c", "W"): (5.0, 5.0)}
DBS = {"a": "D", "b": "D", "c": "E"}


def test_affinity_hits_are_machines_that_last_searched_the_same_database(engine: str) -> None:
    # c at 0 takes machine 0, a at 1 machine 1 (no cache anywhere, zero penalties). At 10 both are
    # idle: machine 0 (last c, database E) since 5, machine 1 (last a, database D) since 6.
    cluster, wl = world(DB_TIMES, {"W": 2}, [(0.0, "c"), (1.0, "a"), (10.0, "b")], DBS)
    # b searches D like a: machine 1 hits its cache (the paper's "database affinity").
    assert run(engine, cluster, wl, "affinity").machine.tolist() == [0, 1, 1]
    # Counting only the same job type as a hit, b has none and takes the machine idle longest.
    assert run(engine, cluster, wl, "affinity", hit="job-type").machine.tolist() == [0, 1, 0]


def test_affinity_serves_the_oldest_job_of_a_database_first(engine: str) -> None:
    # One machine: a runs 0-5; b (1) and a (2) wait. At 5 the machine (last a, database D) is a hit for
    # both; the older job, b, takes it. Job-type hits give it to the a job instead.
    cluster, wl = world(DB_TIMES, {"W": 1}, [(0.0, "a"), (1.0, "b"), (2.0, "a")], DBS)
    assert run(engine, cluster, wl, "affinity").start.tolist() == [0.0, 5.0, 10.0]
    assert run(engine, cluster, wl, "affinity", hit="job-type").start.tolist() == [0.0, 10.0, 5.0]


GREEDY_TIMES = {
    ("x", "A"): (10.0, 10.0),
    ("x", "B"): (30.0, 30.0),
    ("y", "A"): (10.0, 10.0),
    ("y", "B"): (12.0, 12.0),
    ("w", "A"): (20.0, 20.0),
    ("w", "B"): (20.0, 20.0),
}
GREEDY_JOBS = [(0.0, "w"), (1.0, "w"), (2.0, "y"), (3.0, "x")]


def test_greedy1_gives_a_contested_machine_to_the_job_with_most_benefit_over_its_second_best(engine: str) -> None:
    cluster, wl = world(GREEDY_TIMES, {"A": 1, "B": 1}, GREEDY_JOBS)
    res = run(engine, cluster, wl, "greedy1")
    # At 20 machine A frees; y (older) and x both want it. y's benefit over B is 12-10 = 2 s,
    # x's is 30-10 = 20 s, so x gets A; y takes B at 21.
    assert res.start.tolist() == [0.0, 1.0, 21.0, 20.0]
    assert res.machine.tolist() == [0, 1, 1, 0]
    # FCFS gives A to y (older) and B to x: x then runs 30 s.
    fc = run(engine, cluster, wl, "fcfs")
    assert fc.machine.tolist() == [0, 1, 0, 1]
    assert (res.finish - res.submit).mean() < (fc.finish - fc.submit).mean()


def test_greedy1_on_one_machine_type_is_fcfs(engine: str) -> None:
    cluster, wl = world(
        {("x", "A"): (5.0, 5.0), ("y", "A"): (7.0, 3.0)},
        {"A": 2},
        [(0.0, "x"), (0.5, "y"), (1.0, "y"), (2.0, "x"), (9.0, "y")],
    )
    g = run(engine, cluster, wl, "greedy1")
    f = run(engine, cluster, wl, "fcfs")
    assert g.start.tolist() == f.start.tolist()
    assert g.machine.tolist() == f.machine.tolist()


WARM_TIMES = {("n", "A"): (10.0, 6.0), ("n", "B"): (8.0, 8.0)}
WARM_JOBS = [(0.0, "n"), (1.0, "n"), (20.0, "n")]


def test_greedy2_counts_the_warm_cache_and_greedy1_does_not(engine: str) -> None:
    cluster, wl = world(WARM_TIMES, {"A": 1, "B": 1}, WARM_JOBS)
    g1 = run(engine, cluster, wl, "greedy1")
    g2 = run(engine, cluster, wl, "greedy2")
    # Job 0 takes B (8 < 10), job 1 the remaining A (cold, 10 s). At 20 both machines last ran n:
    # Greedy-1 sees A 10 vs B 8 and takes B; Greedy-2 sees A warm 6 vs B 8 and takes A.
    assert g1.machine.tolist() == [1, 0, 1]
    assert g2.machine.tolist() == [1, 0, 0]
    assert g1.finish[2] == 28.0 and g2.finish[2] == 26.0


def test_greedy3_explores_unknown_entries_first_and_learns_from_completions(engine: str) -> None:
    jobs = [(0.0, "n"), (1.0, "n"), (20.0, "n"), (30.0, "n"), (40.0, "n")]
    cluster, wl = world(WARM_TIMES, {"A": 1, "B": 1}, jobs)
    sched = create("greedy3")
    res = run(engine, cluster, wl, sched)
    # 0: every entry unknown (cost 0): tie, A has been idle longest -> A, 10 s cold.
    # 1: only B idle -> B (8 s). Learned: (n, A, none) = 10, (n, B, none) = 8.
    # 2 at 20: (n, A, last n) and (n, B, last n) both unknown: B idle longer -> B, 8 s.
    # 3 at 30: A after n unknown (0) beats B after n (8) -> A, warm: 6 s. 4 at 40: A (6) < B (8).
    assert res.machine.tolist() == [0, 1, 1, 0, 0]
    assert np.allclose(res.finish - res.start, [10.0, 8.0, 8.0, 6.0, 6.0])
    learned = sched.learned  # type: ignore[attr-defined]
    assert learned[0][0][0] == 10.0 and learned[0][1][0] == 8.0
    assert learned[0][1][1] == 8.0 and learned[0][0][1] == 6.0
    assert sched.known_entries() == 4  # type: ignore[attr-defined]
    # With pessimistic unknown entries job 3 would stay on the known B instead of exploring A.
    pess = run(engine, cluster, wl, "greedy3", initial_cost_s=1e6)
    assert pess.machine.tolist()[3] == 1


def test_profile_schedulers_refuse_a_workload_without_a_profile(engine: str) -> None:
    cluster, wl = world(WARM_TIMES, {"A": 1, "B": 1}, WARM_JOBS)
    wl.runtime = None
    for name in ("affinity", "greedy1", "greedy2", "greedy3"):
        with pytest.raises(ParameterError, match="needs a workload with a run-time profile"):
            run(engine, cluster, wl, name)
    assert run(engine, cluster, wl, "fcfs").completed_mask.all()
