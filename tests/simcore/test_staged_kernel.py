"""The staged scheduler's kernel makes the decisions of its Python specification.

Each scenario runs twice, ``engine="python"`` (:mod:`simcore.dse.staged.cycle`) and
``engine="compiled"`` (:mod:`simcore.schedulers.staged.kernel`), and the two runs must
agree exactly: the start time, machine and finish time of every task, the sampled
queue, running and utilisation series (to the bit), the end time, and the
specification's own counters (cycles run, tasks dropped as unrunnable). Scenarios:
every atom of Tables 1-3 on its own, random compositions of every stage on random
clusters and workloads (task graphs, several resources, rates of 0, speeds, exact
fits), requests within the fit tolerance of the free capacity, chunked runs, and the
benchmark's explore scenario (a search's first generation on 100 machines and 10,000 tasks).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.core.engine import SimResult, Simulation
from simcore.core.errors import Cancelled
from simcore.core.fit import EPS
from simcore.core.model import Cluster, Workload
from simcore.core.seeding import scheduler_rng
from simcore.core.taskgraph import TaskGraph
from simcore.dse.staged.policy import ATOMS, STAGES, Atom, Policy, format_policy, parse_policy, random_atom
from simcore.schedulers import create
from tests.simcore.test_engine import scenarios
from tests.simcore.test_taskgraph import dag_scenarios


def both(cluster: Cluster, wl: Workload, policy: str, seed: int = 0, **kw: Any) -> SimResult:
    """Run the specification and the kernel; assert they agree; return the compiled run."""
    runs, scheds = {}, {}
    for engine in ("python", "compiled"):
        sched = create("staged", policy=policy)
        sim = Simulation(cluster, wl, sched, scheduler_rng(seed), engine=engine, **kw)
        runs[engine] = sim.run()
        scheds[engine] = sched
        assert runs[engine].extra["engine"] == engine, runs[engine].extra
    a, b = runs["python"], runs["compiled"]
    assert np.array_equal(a.machine, b.machine), policy
    assert np.array_equal(a.start, b.start, equal_nan=True), policy
    assert np.array_equal(a.finish, b.finish, equal_nan=True), policy
    assert np.array_equal(a.sample_queue, b.sample_queue), policy
    assert np.array_equal(a.sample_running, b.sample_running), policy
    assert np.array_equal(a.sample_util, b.sample_util), policy
    assert a.end_s == b.end_s, policy
    spec, kern = scheds["python"].run, scheds["compiled"].run  # type: ignore[attr-defined]
    assert (spec.cycles, spec.unrunnable) == (kern.cycles, kern.unrunnable), policy
    return b


def bench_scenario(machines: int, tasks: int, load: float, kind: str, seed: int = 0) -> tuple[Cluster, Workload]:
    from simcore.bench.staged import bench_cluster, bench_workload

    cluster = bench_cluster(machines)
    return cluster, bench_workload(cluster, tasks=tasks, load=load, kind=kind, seed=seed)


# -- every atom, alone -----------------------------------------------------------------------------------------


def _atom_cases() -> list[tuple[str, str]]:
    """(stage, atom text) for every atom of Tables 1-3, both directions of the orderings."""
    cases = []
    for spec in ATOMS:
        args = ",".join(str(p.default) for p in spec.params)
        dirs = ["asc", "desc"] if spec.ordering else [None]
        for d in dirs:
            inside = ",".join(x for x in (args, d) if x)
            cases.append((spec.stage, f"{spec.name}({inside})" if inside else spec.name))
    return cases


@pytest.mark.parametrize(("stage", "atom"), _atom_cases())
@pytest.mark.parametrize("kind", ["bag", "dag"])
def test_every_atom_alone_gives_the_specifications_schedule(stage: str, atom: str, kind: str) -> None:
    # An overloaded cluster (load 1.3) so that queues form, limits bite and machines differ in free cores.
    cluster, wl = bench_scenario(8, 600, 1.3, kind, seed=3)
    policy = f"{stage}={atom}"
    if stage != "T1":
        policy += " T1=Limit-Job(3)"  # incoming tasks wait, so the J3 order shows
    both(cluster, wl, policy, seed=5, drain=True)


# -- random compositions over random scenarios ---------------------------------------------------------------


@st.composite
def policies(draw: Any) -> str:
    """A policy with one to three atoms in every composable stage (unpruned: the cycle must cope)."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    parts: dict[str, tuple[Atom, ...]] = {}
    for s in STAGES:
        k = 1 if s == "J1" else draw(st.integers(1, 3))
        parts[s] = tuple(random_atom(s, rng) for _ in range(k))
    if draw(st.booleans()):  # small quanta and limits: many cycles, limits that bite
        parts["J1"] = (parse_policy("J1=Batch(2)").J1[0],)
    return format_policy(Policy(**parts))


@st.composite
def with_speeds(draw: Any, base: Any) -> tuple[Cluster, Workload]:
    """A scenario whose cluster may have speeds (Expensive and Cheap then differ; durations scale)."""
    cluster, wl = draw(base)
    if draw(st.booleans()):
        speed = np.array([draw(st.sampled_from([1.0, 2.0, 3.5])) for _ in range(cluster.n_configs)])
        cluster = dataclasses.replace(cluster, speed=speed)
    return cluster, wl


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(scen=with_speeds(dag_scenarios()), policy=policies(), seed=st.integers(0, 50))
def test_random_policies_on_task_graphs(scen: tuple[Cluster, Workload], policy: str, seed: int) -> None:
    both(*scen, policy, seed=seed, drain=True)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(scen=with_speeds(scenarios()), policy=policies(), seed=st.integers(0, 50), drain=st.booleans())
def test_random_policies_on_one_task_jobs_with_rates_of_zero(
    scen: tuple[Cluster, Workload], policy: str, seed: int, drain: bool
) -> None:
    # No task graph: every task a job. Rates of 0 make machines where a task cannot run; not draining
    # ends the run at the horizon with work left.
    both(*scen, policy, seed=seed, drain=drain, samples=17)


# -- hand-made cases ------------------------------------------------------------------------------------------


def one_machine_tasks(requests: list[float], cores: float = 1.0) -> tuple[Cluster, Workload]:
    n = len(requests)
    cluster = Cluster("m", ("cpu",), ("m0", "m1"), np.array([1, 1]), np.array([[cores], [cores]]))
    wl = Workload(
        "w",
        ("cpu",),
        np.zeros(n),
        np.array(requests)[:, None],
        np.ones(n),
        np.zeros(n, dtype=np.int64),
        horizon_s=10.0,
        graph=TaskGraph.from_parent_lists([0] * n, [[] for _ in range(n)]),
    )
    return cluster, wl


@pytest.mark.parametrize("r5", ["First-Fit", "Best-Fit", "Worst-Fit", "Random"])
def test_requests_within_the_fit_tolerance_fit_in_both(r5: str) -> None:
    # Two one-core machines; a task of 0.5 + EPS/2 leaves 0.5 - EPS/2 free, where a task of 0.5 fits
    # only by the tolerance. Both engines put the first two tasks on one machine (First-Fit: 0, 0).
    cluster, wl = one_machine_tasks([0.5 + EPS / 2, 0.5, 1.0, 0.5 + 2 * EPS])
    res = both(cluster, wl, f"R5={r5}", drain=True)
    if r5 == "First-Fit":
        assert res.machine.tolist() == [0, 0, 1, 0]
        assert res.start.tolist() == [0.0, 0.0, 0.0, 1.0]


def test_a_task_that_can_run_nowhere_is_dropped_by_the_kernel_too() -> None:
    from simcore.core.model import RateRuntime

    cluster = Cluster("m", ("cpu",), ("big", "small"), np.array([1, 1]), np.array([[2.0], [1.0]]))
    wl = Workload(
        "t", ("cpu",), np.zeros(2), np.array([[2.0], [1.0]]), np.ones(2), np.zeros(2, dtype=np.int64), horizon_s=9.0
    )
    wl.runtime = RateRuntime(wl.work, np.array([0, 1]), np.array([[0.0, 1.0], [1.0, 1.0]]))
    # Task 0 fits only the big machine, where its rate is 0; task 1 goes to the one with fewest free cores.
    res = both(cluster, wl, "R5=Best-Fit", drain=True)
    assert np.isnan(res.start[0]) and res.start[1] == 0.0 and res.machine[1] == 1


def test_a_graph_workload_runs_compiled_and_a_run_in_many_chunks_is_the_same(monkeypatch: Any) -> None:
    from simcore.schedulers.staged import driver

    cluster, wl = bench_scenario(6, 500, 1.1, "dag", seed=2)
    policy = "J1=Random J2=Random(0.5) J3=Random T1=Random(0.3) T2=Random R5=Random"
    whole = both(cluster, wl, policy, seed=3, drain=True)
    monkeypatch.setattr(driver, "CHUNK_EVENTS", 7)  # the kernel returns every 7 events and resumes
    chunked = both(cluster, wl, policy, seed=3, drain=True)
    assert np.array_equal(whole.start, chunked.start) and np.array_equal(whole.machine, chunked.machine)


def test_progress_is_reported_and_a_cancel_stops_the_compiled_run(monkeypatch: Any) -> None:
    from simcore.schedulers.staged import driver

    monkeypatch.setattr(driver, "CHUNK_EVENTS", 50)
    cluster, wl = bench_scenario(6, 2000, 0.9, "bag")
    seen: list[int] = []

    def progress(p: Any) -> None:
        seen.append(p.arrived)
        if len(seen) == 3:
            raise Cancelled("enough")

    sim = Simulation(
        cluster, wl, create("staged"), scheduler_rng(0), drain=True, progress=progress, progress_every_s=0.0
    )
    with pytest.raises(Cancelled):
        sim.run()
    assert sim.engine_used == "compiled"
    assert len(seen) == 3 and seen == sorted(seen) and 0 < seen[-1] < wl.n_jobs


# -- the benchmark's explore scenario ------------------------------------------------------------------------


def test_the_explore_benchmarks_generation_evaluates_the_same_on_both_engines() -> None:
    # simcore.bench.explore: generation 0 of a search (32 random schedulers), 100 machines, 10,000 tasks.
    from simcore.bench.explore import bench_pair
    from simcore.dse.explore.fitness import evaluate
    from simcore.dse.explore.search import SearchSettings, first_population

    cluster, wl = bench_pair(100, 10_000, 0)
    generation = first_population(SearchSettings(population=32, seed=0))
    for policy in generation:
        both(cluster, wl, policy, seed=0, drain=True, samples=2)
    # and the search's numbers: the evaluation of one individual is the same on both engines
    drop = {"wall_s", "cpu_s"}
    a = evaluate(cluster, wl, generation[0], 0, engine="python").to_dict()
    b = evaluate(cluster, wl, generation[0], 0).to_dict()
    assert {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


def test_a_search_evaluator_gives_the_same_evaluations_on_either_engine() -> None:
    import functools

    from simcore.bench.explore import bench_pair
    from simcore.dse.explore.pool import LocalEvaluator

    builder = functools.partial(bench_pair, 6, 300, 1)
    policies = ["J2=Limit-Active(3) T2=Task-Duration(desc) R5=Best-Fit", "J1=Random T1=Random(0.5) R5=Random"]
    got = {}
    for engine in ("python", "compiled"):
        evaluations = LocalEvaluator(None, 4, 1, builder=builder, engine=engine)(policies)
        got[engine] = {
            p: {k: v for k, v in e.to_dict().items() if k not in ("wall_s", "cpu_s")} for p, e in evaluations.items()
        }
    assert got["python"] == got["compiled"]
    assert all(e["unfinished"] == 0 and e["trt"] > 0 for e in got["python"].values())
