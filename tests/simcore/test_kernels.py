"""Compiled kernels make the decisions of their Python specifications (issue 16).

Every built-in scheduler with a kernel runs each random scenario twice,
``engine="python"`` (the specification) and ``engine="compiled"``, and the two
runs must agree exactly: the start time, machine and finish time of every job,
the sampled queue, running and utilisation series (to the bit) and the end
time. Scenarios: random clusters (1-3 resources, configurations with no
machines, one-slot clusters), arrival ties, zero-length jobs, overload, every
run-time model (machine-independent, per-configuration speeds, rates with
zeros, warm/cold profiles), plus every workload preset at small scale.
LoTES has its own random scenarios (its workloads carry the class table it
plans with) and a fixed overload case that also compares its state after the run;
so have the profile study's schedulers (Affinity, Greedy-1/2/3: profile tables with
database groups, one-slot and multi-slot machines, unknown job classes).
"""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from simcore.api import resolve_cluster, resolve_workload
from simcore.core.engine import SimResult, Simulation
from simcore.core.errors import Cancelled, ParameterError, SchedulingError
from simcore.core.fit import EPS
from simcore.core.model import ClassTable, Cluster, RateRuntime, Workload
from simcore.core.seeding import scheduler_rng
from simcore.presets import WORKLOADS
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import ProfileTable
from simcore.schedulers import SCHEDULERS, Scheduler, create
from simcore.schedulers.tetris import Tetris
from tests.simcore.conftest import expect_engine

#: Built-in schedulers with a kernel, with the options that select different kernel paths.
KERNELS: list[tuple[str, dict[str, Any]]] = [
    ("greedy", {}),
    ("fcfs", {}),
    ("fcfs", {"pick": "lowest-index"}),
    ("lotes", {}),
    ("lotes", {"rho_weighting": "throughput", "kmeans_classes": 2}),
    ("tetris", {}),
    ("tetris", {"work_weight": 0.0}),
    ("tetris", {"work_weight": 2.5}),
    ("mris", {}),
    ("mris", {"mris_window": 3}),  # a small window: the backlog, its refills and several new candidates at once
    ("affinity", {}),
    ("affinity", {"hit": "job-type"}),
    ("greedy1", {}),
    ("greedy2", {}),
    ("greedy3", {}),
    ("greedy3", {"initial_cost_s": 4.0}),
]
#: The profile study's schedulers: they need a profile run-time model (their own random scenarios below).
PROFILE = [(n, o) for n, o in KERNELS if "profile" in SCHEDULERS.get(n).requires]
#: KERNELS for any workload (LoTES needs class tables: its own test below).
PLAIN = [(n, o) for n, o in KERNELS if n != "lotes" and (n, o) not in PROFILE]


def both(cluster: Cluster, wl: Workload, name: str, opts: dict[str, Any], seed: int = 0, **kw: Any) -> SimResult:
    """Run the specification and the kernel; assert they agree; return the compiled run."""
    # Task graphs have no kernel: both runs would be the Python loop's, proving nothing.
    assert wl.graph is None, "a task graph runs in the Python engine only: nothing to compare"
    runs = {}
    for engine in ("python", "compiled"):
        sim = Simulation(cluster, wl, create(name, **opts), scheduler_rng(seed), engine=engine, **kw)
        runs[engine] = expect_engine(sim.run(), engine)
    a, b = runs["python"], runs["compiled"]
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.finish, b.finish, equal_nan=True)
    assert np.array_equal(a.sample_queue, b.sample_queue)
    assert np.array_equal(a.sample_running, b.sample_running)
    assert np.array_equal(a.sample_util, b.sample_util)
    assert a.end_s == b.end_s
    assert a.extra["arrived"] == b.extra["arrived"]
    return b


@st.composite
def scenarios(draw: Any) -> tuple[Cluster, Workload]:
    R = draw(st.integers(1, 3))
    res = tuple(f"r{i}" for i in range(R))
    one_slot = draw(st.booleans())
    n_cfg = draw(st.integers(1, 4))
    counts = draw(st.lists(st.integers(0, 4), min_size=n_cfg, max_size=n_cfg))
    if sum(counts) == 0:
        counts[0] = 1
    if one_slot:
        cap = np.ones((n_cfg, R))
    else:
        cap = np.array(draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=n_cfg * R, max_size=n_cfg * R)))
        cap = cap.reshape(n_cfg, R)
    speed = None
    model = draw(st.sampled_from(["fixed", "speed", "rate", "profile"]))
    if model == "speed":
        speed = np.array(draw(st.lists(st.sampled_from([1.0, 2.0, 3.5]), min_size=n_cfg, max_size=n_cfg)))
    cluster = Cluster("c", res, tuple(f"k{j}" for j in range(n_cfg)), np.array(counts), cap, speed=speed)
    n = draw(st.integers(1, 60))
    # Integer submit times on a short range: many arrival ties and completions at arrival times.
    submit = np.sort(np.array(draw(st.lists(st.integers(0, 20), min_size=n, max_size=n)), dtype=float))
    present = cap[np.array(counts) > 0]
    req = np.zeros((n, R))
    for z in range(n):
        host = present[draw(st.integers(0, len(present) - 1))]
        if one_slot:
            req[z] = 1.0
        else:
            fr = draw(st.lists(st.sampled_from([0.0, 0.1, 0.25, 0.5, 1.0]), min_size=R, max_size=R))
            req[z] = host * np.array(fr)
    work = np.array(draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0, 7.5]), min_size=n, max_size=n)))
    n_cls = draw(st.integers(1, 3))
    cls = np.array(draw(st.lists(st.integers(0, n_cls - 1), min_size=n, max_size=n)), dtype=np.int64)
    runtime: Any = None
    if model == "rate":
        rates = np.array(
            draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=n_cls * n_cfg, max_size=n_cls * n_cfg))
        )
        runtime = RateRuntime(work, cls, rates.reshape(n_cls, n_cfg))
    elif model == "profile":
        cold = np.array(
            draw(st.lists(st.sampled_from([1.0, 2.0, 5.0]), min_size=n_cls * n_cfg, max_size=n_cls * n_cfg))
        )
        cold = cold.reshape(n_cls, n_cfg)
        runtime = ProfileRuntime(SimpleNamespace(cold_s=cold, warm_s=cold / 2), cls)  # type: ignore[arg-type]
    horizon = float(draw(st.sampled_from([5.0, 20.0, 40.0])))
    wl = Workload("w", res, submit, req, work, cls, horizon_s=horizon, runtime=runtime)
    return cluster, wl


@pytest.mark.parametrize(("name", "opts"), PLAIN)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=scenarios(), drain=st.booleans(), seed=st.integers(0, 3))
def test_kernel_makes_the_specifications_decisions(
    name: str, opts: dict[str, Any], scen: tuple[Cluster, Workload], drain: bool, seed: int
) -> None:
    cluster, wl = scen
    both(cluster, wl, name, opts, seed, drain=drain, samples=50)


@st.composite
def wide_scenarios(draw: Any) -> tuple[Cluster, Workload]:
    """Hundreds of machines, so that the kernels' search trees have several levels.

    200 to 600 machines (the fit tree's blocks of 8 make 25 to 75 leaves, 5 to 7 levels; the max
    tree 8 to 10), in 2 to 6 configurations of 1 to 3 resources; up to 400 jobs whose requests
    are drawn from a few values, some equal to a capacity or above it by EPS/2 (the fit rule's
    edge), arriving in bursts so that the cluster fills and machines far apart in the tree free.
    The arrays come from a seeded numpy Generator: Hypothesis draws the shape and the seed.
    """
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    R = draw(st.integers(1, 3))
    res = tuple(f"r{i}" for i in range(R))
    n_cfg = draw(st.integers(2, 6))
    counts = rng.multinomial(draw(st.integers(200, 600)) - n_cfg, np.full(n_cfg, 1.0 / n_cfg)) + 1
    cap = rng.choice([0.5, 1.0, 2.0], (n_cfg, R))
    cluster = Cluster("wide", res, tuple(f"k{j}" for j in range(n_cfg)), counts, cap)
    n = draw(st.integers(50, 400))
    host = cap[rng.integers(0, n_cfg, n)]
    value = rng.choice([0.05, 0.1, 0.25, 0.5, 1.0, 2.0], (n, R))
    edge = rng.choice([0.0, EPS / 2], (n, R))
    req = np.where(value >= host, host + edge, value)  # at most a capacity (+ EPS/2): fits its host
    submit = np.sort(rng.integers(0, draw(st.sampled_from([5, 30, 120])), n)).astype(float)
    work = rng.choice([0.5, 1.0, 5.0, 20.0], n)
    wl = Workload("w", res, submit, req, work, np.zeros(n, dtype=np.int64), horizon_s=float(submit[-1] + 10))
    return cluster, wl


#: The kernels that search trees: Greedy's fit tree, MRIS's and FCFS's max trees.
TREES = [("greedy", {}), ("mris", {}), ("mris", {"mris_window": 3}), ("fcfs", {}), ("fcfs", {"pick": "lowest-index"})]


@pytest.mark.parametrize(("name", "opts"), TREES)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=wide_scenarios(), drain=st.booleans(), seed=st.integers(0, 3))
def test_kernels_search_trees_of_several_levels_as_the_specification_scans(
    name: str, opts: dict[str, Any], scen: tuple[Cluster, Workload], drain: bool, seed: int
) -> None:
    """Multi-level fit and max trees over hundreds of machines, requests at the fit rule's edge."""
    cluster, wl = scen
    both(cluster, wl, name, opts, seed, drain=drain, samples=50)


@pytest.mark.parametrize(("name", "opts"), [("tetris", {}), ("tetris", {"work_weight": 0.0})])
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=wide_scenarios(), drain=st.booleans(), speeds=st.booleans(), seed=st.integers(0, 3))
def test_tetris_kernel_searches_its_levels_and_directions_as_the_specification_scans(
    name: str, opts: dict[str, Any], scen: tuple[Cluster, Workload], drain: bool, speeds: bool, seed: int
) -> None:
    """Tetris's branch and bound over hundreds of machines: ties and fits at the rule's edge.

    The wide scenarios' clusters (200-600 machines: 25 to 75 blocks of the kernel's tree, its levels
    of room and its directions) hold many identical machines, and their requests are a few values,
    some a capacity plus EPS/2: equal scores on many machines (ties: the lowest index), fits decided
    by EPS, and machines that leave and re-enter the levels as they fill and free, which the kernel's
    levels bring up to date only when a search reads them. With ``speeds`` the configurations run at
    different speeds, so the work term differs per configuration (mode config: subtracted per subtree).
    """
    cluster, wl = scen
    if speeds:
        rng = np.random.default_rng(seed)
        cluster = dataclasses.replace(cluster, speed=rng.choice([1.0, 2.0, 3.5], cluster.n_configs))
    both(cluster, wl, name, opts, seed, drain=drain, samples=50)


@st.composite
def fcfs_scenarios(draw: Any) -> tuple[Cluster, Workload]:
    """Scenarios for FCFS's idle order: several configurations of few machines and many short jobs.

    Few machines and up to 150 jobs of one or two distinct lengths: many completions at the
    same instant (the order's tie rule), many moves to the back on the same machines (the
    order's gaps are closed again and again), overload (strict FCFS: a blocked head),
    configurations of different shapes (idle order interleaves them), and rates of 0 (a
    configuration where a job cannot run).
    """
    R = draw(st.integers(1, 3))
    res = tuple(f"r{i}" for i in range(R))
    n_cfg = draw(st.integers(2, 4))
    counts = np.array(draw(st.lists(st.integers(1, 3), min_size=n_cfg, max_size=n_cfg)))
    cap = np.array(draw(st.lists(st.sampled_from([0.25, 0.5, 1.0, 2.0]), min_size=n_cfg * R, max_size=n_cfg * R)))
    cap = cap.reshape(n_cfg, R)
    cluster = Cluster("c", res, tuple(f"k{j}" for j in range(n_cfg)), counts, cap)
    n = draw(st.integers(20, 150))
    span = draw(st.sampled_from([5, 20, 60]))
    submit = np.sort(np.array(draw(st.lists(st.integers(0, span), min_size=n, max_size=n)), dtype=float))
    req = np.zeros((n, R))
    for z in range(n):
        host = cap[draw(st.integers(0, n_cfg - 1))]
        fr = draw(st.lists(st.sampled_from([0.05, 0.1, 0.25, 0.5, 1.0]), min_size=R, max_size=R))
        req[z] = host * np.array(fr)
    lengths = draw(st.lists(st.sampled_from([1.0, 2.0, 3.0]), min_size=1, max_size=2))
    work = np.array(draw(st.lists(st.sampled_from(lengths), min_size=n, max_size=n)))
    n_cls = draw(st.integers(1, 2))
    cls = np.array(draw(st.lists(st.integers(0, n_cls - 1), min_size=n, max_size=n)), dtype=np.int64)
    runtime: Any = None
    if draw(st.booleans()):
        rates = draw(st.lists(st.sampled_from([0.0, 1.0, 2.0]), min_size=n_cls * n_cfg, max_size=n_cls * n_cfg))
        runtime = RateRuntime(work, cls, np.array(rates).reshape(n_cls, n_cfg))
    wl = Workload("w", res, submit, req, work, cls, horizon_s=float(span + 10), runtime=runtime)
    return cluster, wl


@pytest.mark.parametrize("pick", ["longest-idle", "lowest-index"])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=fcfs_scenarios(), drain=st.booleans())
def test_fcfs_kernel_keeps_the_idle_order(pick: str, scen: tuple[Cluster, Workload], drain: bool) -> None:
    """FCFS on multi-configuration clusters: equal completion times, closed gaps, rates of 0, overload."""
    cluster, wl = scen
    both(cluster, wl, "fcfs", {"pick": pick}, drain=drain, samples=50)


@st.composite
def lotes_scenarios(draw: Any) -> tuple[Cluster, Workload]:
    """A random scenario whose workload carries the class table LoTES plans with.

    Class requests are the component-wise least request of the class's jobs (it fits
    wherever one of them does, so the plan exists; raised to 1% of the smallest
    capacity where it is 0); some class may get a share of 0 although it has
    jobs; rates are the run-time model's
    own (zero rates included) or, drawn, 1 everywhere: a plan that does not know
    where a class cannot run, so the dispatcher's own checks are what keep jobs off
    such machines. Classes without jobs keep a share of 0.
    """
    cluster, wl = draw(scenarios())
    cls = wl.job_class
    n_cls = int(cls.max()) + 1
    present = cluster.capacity[cluster.counts > 0]
    reqs = np.zeros((n_cls, len(wl.resources)))
    for k in range(n_cls):
        mine = wl.request[cls == k]
        # at least 1% of the smallest capacity: the allocation LP needs a positive request
        reqs[k] = np.maximum(mine.min(axis=0), 0.01 * present.min(axis=0)) if len(mine) else present.min(axis=0)
    share = np.bincount(cls, minlength=n_cls) / wl.n_jobs
    zero = draw(st.integers(-1, n_cls - 1))
    if zero >= 0 and share.sum() > share[zero]:
        share[zero] = 0.0  # a class the plan expects none of: its jobs have no wheel (orphans or any machine)
    rates = np.ones((n_cls, cluster.n_configs))
    rt = wl.runtime
    if isinstance(rt, RateRuntime) and draw(st.booleans()):
        table = rt.compiled_form()[3][:n_cls]  # the model's own rates (class, configuration)
        # A class that could run on no machine where it fits has no plan: its row stays 1.
        fits = (cluster.capacity[None, :, :] >= reqs[:, None, :] - 1e-9).all(axis=2) & (cluster.counts > 0)
        rates = np.where(((table > 0) & fits).any(axis=1, keepdims=True), table, 1.0)
    table = ClassTable(tuple(f"k{k}" for k in range(n_cls)), reqs, rates, share)
    return cluster, dataclasses.replace(wl, classes=table)


@pytest.mark.parametrize("opts", [{}, {"rho_weighting": "throughput"}])
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=lotes_scenarios(), drain=st.booleans(), seed=st.integers(0, 3))
def test_lotes_kernel_makes_the_specifications_decisions(
    opts: dict[str, Any], scen: tuple[Cluster, Workload], drain: bool, seed: int
) -> None:
    """LoTES over random clusters and workloads: roulette draws, fallbacks, class and orphan queues."""
    cluster, wl = scen
    both(cluster, wl, "lotes", opts, seed, drain=drain, samples=50)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    scen=lotes_scenarios(),
    own_classes=st.booleans(),
    k_sets=st.sampled_from(["vertex", "interior"]),
    max_bins=st.sampled_from([4, 40, 100_000]),
    window_h=st.sampled_from([0.0, 3 / 3600, 24.0]),
    n_kmeans=st.integers(1, 3),
    seed=st.integers(0, 3),
)
def test_lotes_kernel_under_its_planning_options(
    scen: tuple[Cluster, Workload],
    own_classes: bool,
    k_sets: str,
    max_bins: int,
    window_h: float,
    n_kmeans: int,
    seed: int,
) -> None:
    """LoTES's planning options on both engines: ``k_sets``, ``max_bins``, k-means over ``kmeans_window_hours``.

    The options shape the offline plan the kernel dispatches by: K^j from an optimum of
    largest support (``interior``: more classes per configuration, more bins); a bin
    limit that the enumeration may exceed (then both engines must refuse the run with the
    same message); k-means classes fitted on the jobs of the first 0 s, 3 s or 24 h (the
    workload's own classes dropped).
    """
    cluster, wl = scen
    if not own_classes:
        # k-means classes are the mean requests of their window jobs: each must request something
        # (a zero request becomes 1% of the least capacity, which still fits every machine).
        least = 0.01 * cluster.capacity[cluster.counts > 0].min(axis=0)
        wl = dataclasses.replace(wl, classes=None, request=np.where(wl.request > 0, wl.request, least))
    opts = {
        "k_sets": k_sets,
        "max_bins": max_bins,
        "kmeans_window_hours": window_h,
        "kmeans_classes": min(n_kmeans, wl.n_jobs),
    }
    refusals = []
    for engine in ("python", "compiled"):
        try:
            Simulation(cluster, wl, create("lotes", **opts), scheduler_rng(seed), engine=engine).run()
        except ParameterError as e:
            refusals.append(str(e))
    if refusals:  # the plan is refused before any kernel runs: the same words on both engines
        assert len(refusals) == 2 and refusals[0] == refusals[1]
        event(f"refused: {refusals[0][:30]}")
        return
    event("ran")
    both(cluster, wl, "lotes", opts, seed, samples=50)


@st.composite
def profile_scenarios(draw: Any) -> tuple[Cluster, Workload]:
    """A random scenario with a profile run-time model, as the profile schedulers need.

    Cold and warm times per (job type, machine type) from a few values (0 included, warm
    above cold sometimes: negative affinity gains), job types sharing databases in random
    groups, some jobs of unknown class (-1, which the specification files under the last
    type), machine types without machines, submit times on a half-second grid (so waits
    equal penalties and heads tie), and one-slot or multi-slot machines whose requests fit
    every machine (the profile schedulers give a job any idle machine).
    """
    R = draw(st.integers(1, 2))
    res = tuple(f"r{i}" for i in range(R))
    n_cfg = draw(st.integers(1, 4))
    counts = draw(st.lists(st.integers(0, 4), min_size=n_cfg, max_size=n_cfg))
    if sum(counts) == 0:
        counts[draw(st.integers(0, n_cfg - 1))] = 1
    one_slot = draw(st.booleans())
    if one_slot:
        cap = np.ones((n_cfg, R))
    else:
        cap = np.array(draw(st.lists(st.sampled_from([0.5, 1.0, 2.0]), min_size=n_cfg * R, max_size=n_cfg * R)))
        cap = cap.reshape(n_cfg, R)
    cluster = Cluster("c", res, tuple(f"m{j}" for j in range(n_cfg)), np.array(counts), cap)
    n_types = draw(st.integers(1, 4))
    times = st.lists(st.sampled_from([0.0, 1.0, 2.0, 2.5, 5.0]), min_size=n_types * n_cfg, max_size=n_types * n_cfg)
    cold = np.array(draw(times)).reshape(n_types, n_cfg)
    warm = np.where(draw(st.booleans()), cold / 2, np.array(draw(times)).reshape(n_types, n_cfg))
    dbs = tuple(draw(st.lists(st.sampled_from(["nt", "nr", "x"]), min_size=n_types, max_size=n_types)))
    table = ProfileTable(
        job_types=tuple(f"t{k}" for k in range(n_types)),
        machine_types=cluster.config_names,
        cpu_s=cold,
        io_s=np.zeros_like(cold),
        warm_s=warm,
        proportions=np.full(n_types, 1.0 / n_types),
        databases=dbs,
    )
    n = draw(st.integers(1, 80))
    submit = np.sort(np.array(draw(st.lists(st.integers(0, 40), min_size=n, max_size=n)), dtype=float) / 2)
    floor = cap[np.array(counts) > 0].min(axis=0)
    req = np.ones((n, R))
    if not one_slot:
        fr = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=n * R, max_size=n * R))
        req = np.array(fr).reshape(n, R) * floor
    cls = np.array(draw(st.lists(st.integers(-1, n_types - 1), min_size=n, max_size=n)), dtype=np.int64)
    horizon = float(draw(st.sampled_from([5.0, 20.0, 60.0])))
    runtime = ProfileRuntime(table, cls)
    wl = Workload("w", res, submit, req, np.ones(n), cls, horizon_s=horizon, runtime=runtime)
    return cluster, wl


@pytest.mark.parametrize(("name", "opts"), PROFILE)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scen=profile_scenarios(), drain=st.booleans())
def test_profile_kernels_make_the_specifications_decisions(
    name: str, opts: dict[str, Any], scen: tuple[Cluster, Workload], drain: bool
) -> None:
    """Affinity and Greedy-1/2/3 over random profile tables: hits, penalties, benefits, ties, learning."""
    cluster, wl = scen
    both(cluster, wl, name, opts, drain=drain, samples=50)


def profile_state(sched: Any) -> tuple[Any, ...]:
    """What a profile scheduler holds after a run: its queues, idle pool and (Greedy-3) learned table."""
    learned = (sched.learned, sched.count, sched.entry) if hasattr(sched, "learned") else None
    return [list(q) for q in sched.queues], sched.waiting, sched.pool.nonempty(), sched.pool.size, learned


@pytest.mark.parametrize(("name", "opts"), PROFILE)
def test_profile_kernels_overloaded_and_their_state_after_the_run(name: str, opts: dict[str, Any]) -> None:
    """Twice the NCBI trace's rate on a small heterogeneous cluster for 3 h: long queues, stopped at the horizon.

    Beyond the schedule, the scheduler's state after the run is the same: the jobs still
    queued per type, the idle pool (groups, order, sequence numbers) and Greedy-3's learned
    table, observation counts and the entries of the jobs still running.
    """
    cluster = resolve_cluster("ncbi-heterogeneous", {"machines_per_type": 3})
    wl = resolve_workload("ncbi-blast", cluster, 2, None, 3.0, {"rate_scale": 2.0})
    out = {}
    for engine in ("python", "compiled"):
        sched = create(name, **opts)
        res = Simulation(cluster, wl, sched, scheduler_rng(0), engine=engine).run()
        assert res.extra["engine"] == engine
        out[engine] = (res, profile_state(sched))
    (a, sa), (b, sb) = out["python"], out["compiled"]
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.sample_queue, b.sample_queue)
    assert sa == sb
    assert a.sample_queue.max() > 100  # overloaded: the per-type queues really were long
    assert sa[1] > 100  # still queued at the horizon


@pytest.mark.parametrize(("name", "opts"), PROFILE)
def test_profile_kernels_refuse_a_job_larger_than_an_idle_machine_as_the_specification_does(
    name: str, opts: dict[str, Any]
) -> None:
    """The profile schedulers give a job any idle machine: one too small is the engine's SchedulingError, both ways.

    The job fits only the second machine; the first has been idle longest and costs the same.
    """
    table = ProfileTable(("a",), ("m0", "m1"), np.ones((1, 2)), np.zeros((1, 2)), np.ones((1, 2)), np.ones(1))
    cluster = Cluster("c", ("cpu",), ("m0", "m1"), np.array([1, 1]), np.array([[1.0], [4.0]]))
    cls = np.zeros(1, dtype=np.int64)
    wl = Workload("w", ("cpu",), [0.0], [[2.0]], [1.0], cls, 10.0, runtime=ProfileRuntime(table, cls))
    for engine in ("python", "compiled"):
        sim = Simulation(cluster, wl, create(name, **opts), scheduler_rng(0), engine=engine)
        with pytest.raises(SchedulingError, match=r"job 0 \(request \[2.0\]\) does not fit on machine 0"):
            sim.run()
        assert sim.started == 0 and sim.free[:, 0].tolist() == [1.0, 4.0]  # the refused start changed nothing


@pytest.mark.parametrize(("name", "opts"), [k for k in KERNELS if k not in PROFILE])
@pytest.mark.parametrize("load", [0.9, 3.0])
def test_google_like_at_and_over_capacity(name: str, opts: dict[str, Any], load: float) -> None:
    """10 configurations of 30 machines (10 over capacity), google-like: the queues, ties and random draws of a real
    run. Over capacity a third of the machines still gives thousands of jobs and queues in the hundreds, and keeps the
    specification's runs (whose queue scans grow with the queue) to seconds."""
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 30 if load < 1 else 10})
    wl = resolve_workload("google-like", cluster, 1, load, 0.5)
    res = both(cluster, wl, name, opts, seed=1)
    assert res.n_jobs > 1000
    if load > 1:
        assert res.sample_queue.max() > 100  # overloaded: the queues really were exercised


class IndexedTetris(Tetris):
    """Tetris whose specification takes its score index from 64 queued jobs on (2,048 by default)."""

    _index_threshold = 64
    indexed = 0

    def _complete_indexed(self, machine: int, f: list[float]) -> None:
        self.indexed += 1
        super()._complete_indexed(machine, f)


@pytest.mark.parametrize("workload", ["google-like", "lotes-phi"])
def test_tetris_kernel_matches_the_score_index_regime(workload: str) -> None:
    """Long queues: the specification finds its jobs through the ScoreIndex, the kernel its own way."""
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 10})
    wl = resolve_workload(workload, cluster, 2, 3.0, 1.0 if workload == "google-like" else 3.0)
    runs = {}
    for engine in ("python", "compiled"):
        sched = IndexedTetris()
        runs[engine] = Simulation(cluster, wl, sched, scheduler_rng(0), engine=engine).run()
        assert runs[engine].extra["engine"] == engine
        if engine == "python":
            assert sched.indexed > 1000  # completions through the index, not the scan
    a, b = runs["python"], runs["compiled"]
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.sample_util, b.sample_util)
    assert a.sample_queue.max() > 2 * IndexedTetris._index_threshold


def test_lotes_overloaded_section_5_4_point() -> None:
    """A fixed LoTES overload case: ``lotes-phi`` at twice lambda* (rates by configuration).

    Beyond the schedule, the scheduler's state after the run is the same: the scores
    (kappa, which the kernel updates in the scheduler's own array) and the jobs still queued, queue by
    queue (the kernel's ``done`` rebuilds the Python queues).
    """
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 10})
    wl = resolve_workload("lotes-phi", cluster, 3, 2.0, 0.5)
    out = {}
    for engine in ("python", "compiled"):
        sched = create("lotes")
        sim = Simulation(cluster, wl, sched, scheduler_rng(3), engine=engine)
        res = sim.run()
        assert res.extra["engine"] == engine
        queued = [q.jobs() for q in sched.queues] + [sched.orphans.jobs()]
        out[engine] = (res, sched.kappa, sched.n_queued, queued)
    (a, ka, qa, ja), (b, kb, qb, jb) = out["python"], out["compiled"]
    assert ja == jb  # the same jobs wait in the same class and orphan queues, in the same order
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.sample_util, b.sample_util)
    assert np.array_equal(ka, kb)
    assert qa == qb == a.extra["arrived"] - int(np.sum(~np.isnan(a.start)))
    assert a.sample_queue.max() > 100  # overloaded: the class queues really were exercised


@pytest.mark.parametrize("window", [100, 0])
def test_mris_overloaded_state_after_the_run(window: int) -> None:
    """MRIS far over capacity: beyond the schedule, the candidate set is the same after the run.

    Window 100: a long backlog that refills the candidates; window 0: every waiting job is a
    candidate (thousands), so the slot arrays grow and are compacted many times, and the
    running total of their requests (alpha's numerator, recomputed at each compaction) must
    agree to the bit.
    """
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 5})
    wl = resolve_workload("google-like", cluster, 2, 3.0, 0.5)
    out = {}
    for engine in ("python", "compiled"):
        sched = create("mris", mris_window=window)
        res = Simulation(cluster, wl, sched, scheduler_rng(2), engine=engine).run()
        assert res.extra["engine"] == engine
        out[engine] = (res, sched)
    (a, sa), (b, sb) = out["python"], out["compiled"]
    assert np.array_equal(a.machine, b.machine)
    assert np.array_equal(a.start, b.start, equal_nan=True)
    assert np.array_equal(a.sample_util, b.sample_util)
    assert sa.selections == sb.selections > 1000
    assert sa._used == sb._used and np.array_equal(sa._ids, sb._ids)
    assert sa._slot_of == sb._slot_of and list(sa._backlog) == list(sb._backlog)
    assert sa._total.tolist() == sb._total.tolist()
    assert a.sample_queue.max() > 1000


#: Small versions of every cluster preset: (preset, its parameters, hours of google-like on it).
SMALL_CLUSTERS = {
    "google-balanced": ({"machines_per_config": 5}, 1.0),
    "google-2011": ({}, 0.01),
}


@pytest.mark.parametrize("preset", sorted(WORKLOADS.names()))
def test_every_workload_preset(preset: str) -> None:
    """Every workload preset on its default cluster (the Google ones made small), each kernel.

    The ``workflows`` presets are task graphs, which no kernel runs: asked for the compiled
    engine, the run falls back to Python and says so. Comparing the two engines there would
    compare the Python loop with itself, so those presets check the fallback only.
    """
    p = WORKLOADS.get(preset)
    name = p.default_cluster or "google-balanced"
    params, hours = SMALL_CLUSTERS.get(name, ({}, 2.0))
    cluster = resolve_cluster(name, params)
    wl = resolve_workload(preset, cluster, 0, 0.95, min(p.default_hours or hours, hours))
    for sched, opts in KERNELS:
        if SCHEDULERS.get(sched).requires - p.provides:
            continue
        if wl.graph is not None:
            # The fallback is the engine's, the same for every scheduler: one scheduler shows it (the schedulers
            # on task graphs have tests of their own).
            sim = Simulation(cluster, wl, create(sched, **opts), scheduler_rng(0), drain=wl.horizon_s <= 0)
            res = sim.run()
            assert res.extra["engine"] == "python"
            assert res.extra["engine_note"] == "task graphs run in the Python engine"
            break
        both(cluster, wl, sched, opts, drain=wl.horizon_s <= 0)


@pytest.mark.parametrize(
    ("cluster_name", "workload"),
    [("google-2011", "google-like"), ("ncbi-homogeneous", "ncbi-blast"), ("ncbi-heterogeneous", "ncbi-blast-reduced")],
)
def test_every_cluster_preset(cluster_name: str, workload: str) -> None:
    """Each cluster preset (dse-2020: the workflows preset above) with a workload it serves."""
    params, hours = SMALL_CLUSTERS.get(cluster_name, ({}, 2.0))
    cluster = resolve_cluster(cluster_name, params)
    wl = resolve_workload(workload, cluster, 0, 0.95, hours)
    provides = WORKLOADS.get(workload).provides
    for sched, opts in KERNELS:
        if SCHEDULERS.get(sched).requires - provides:
            continue
        assert both(cluster, wl, sched, opts).extra["engine"] == "compiled"


def test_progress_and_cancellation_during_a_compiled_run() -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 20})
    wl = resolve_workload("google-like", cluster, 0, 0.9, 2.0)
    seen = []

    def stop(p: Any) -> None:
        seen.append(p.arrived)
        if len(seen) == 2:
            raise Cancelled("stop")

    sim = Simulation(cluster, wl, create("greedy"), scheduler_rng(0), progress=stop, progress_every_s=0.0)
    with pytest.raises(Cancelled):
        sim.run()
    assert sim.engine_used == "compiled"
    assert 0 < seen[0] < seen[1] < wl.n_jobs  # reported between chunks, stopped before the end
    assert sim.arrived == seen[1]


def test_python_engine_and_plugins_run_the_reference_loop() -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 2})
    wl = resolve_workload("google-like", cluster, 0, 0.9, 0.05)
    sim = Simulation(cluster, wl, create("greedy"), scheduler_rng(0), engine="python")
    assert sim.run().extra == {
        "arrived": wl.n_jobs,
        "drained": False,
        "engine": "python",
        "compile_s": None,
        "engine_note": "",
    }
    sim = Simulation(cluster, wl, FirstFitPlugin(), scheduler_rng(0))
    extra = sim.run().extra
    assert extra["engine"] == "python" and "no compiled kernel" in extra["engine_note"]


class FirstFitPlugin(Scheduler):
    """A plugin scheduler (no kernel): first fit on arrival, nothing on completion."""

    name = "first-fit-plugin"

    def on_arrival(self, job: int) -> None:
        m = self.sim.view.first_fit(job)
        if m >= 0:
            self.sim.start(job, m)

    def on_completion(self, job: int, machine: int) -> None:
        pass


def test_unknown_engine_is_refused() -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 1})
    wl = resolve_workload("google-like", cluster, 0, 0.9, 0.01)
    with pytest.raises(Exception, match="engine 'fortran' is not one of compiled, python"):
        Simulation(cluster, wl, create("greedy"), scheduler_rng(0), engine="fortran")


def test_the_compiled_start_enforces_capacity() -> None:
    """A kernel that starts a job where it does not fit gets the engine's SchedulingError."""
    from simcore.compiled import core as K
    from simcore.compiled.driver import Kernel
    from simcore.compiled.jit import njit

    @njit
    def reckless(core: Any, hp: Any, st: Any, smp: Any, budget: int) -> Any:
        done = 0
        while True:
            status, kind, t = K.before_event(core, hp, smp, done, budget)
            if status != K.GO:
                return status, hp
            core.fl[K.NOW] = t
            if kind == K.EV_ARRIVAL:
                hp = K.start(core, hp, K.arrive(core), 0)  # always machine 0
            else:
                K.complete(core, hp)
            if core.ctr[K.ERR] != 0:
                return K.S_ERROR, hp
            done += 1

    class Reckless(type(create("greedy"))):  # type: ignore[misc]
        def kernel(self, sim: Simulation) -> Kernel:
            return Kernel(step=reckless, state=(np.zeros(1),))

    cluster = Cluster("c", ("cpu",), ("a",), np.array([2]), np.array([[1.0]]))
    wl = Workload("w", ("cpu",), [0.0, 1.0], [[0.6], [0.6]], [10.0, 10.0], [0, 0], horizon_s=5.0)
    sim = Simulation(cluster, wl, Reckless(), scheduler_rng(0))
    with pytest.raises(SchedulingError, match=r"job 1 \(request \[0.6\]\) does not fit on machine 0"):
        sim.run()
    assert sim.free[0].tolist() == [pytest.approx(0.4)]  # the refused start changed nothing
    assert sim.started == 1


def test_bench_reports_the_engine_and_plans_the_paper_point_only_when_asked() -> None:
    from simcore.bench.runs import DEFAULT_SCENARIOS, BenchOptions, child, plan_specs

    assert "paper" not in DEFAULT_SCENARIOS
    specs = plan_specs(BenchOptions(schedulers="greedy", scenarios="paper", paper_hours=0.01))
    assert [(s["scenario"], s["hours"], s["engine"]) for s in specs if s["scenario"] == "paper"] == [
        ("paper", 0.01, "compiled")
    ]
    google = plan_specs(BenchOptions(schedulers="greedy", scenarios="google", machines_per_config=2, hours=0.05))
    for engine in ("compiled", "python"):
        out = child({**google[0], "engine": engine})
        assert out["status"] == "ok" and out["engine"] == engine and out["jobs"] > 100
        assert (out["compile_s"] is None) == (engine == "python")


def test_without_numba_a_run_uses_the_python_engine_and_says_why(tmp_path: Any) -> None:
    # An environment installed before numba became a dependency: numba's import fails (a shim first on the path).
    import json
    import os
    import subprocess
    import sys

    (tmp_path / "numba.py").write_text("raise ImportError('numba is not installed here')\n")
    env = {**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    cmd = [sys.executable, "-m", "simcore", "run", "--cluster", "google-balanced", "--workload", "google-like"]
    cmd += ["--machines-per-config", "2", "--hours", "0.5", "--scheduler", "greedy", "--seed", "3"]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    summary = json.loads(out.stdout)
    assert summary["engine"] == "python" and summary["engine_note"].startswith("numba is not installed")
    reference = json.loads(
        subprocess.run([*cmd, "--engine", "python"], capture_output=True, text=True, check=True).stdout
    )
    assert summary["mean_response_s"] == reference["mean_response_s"] and summary["jobs"] == reference["jobs"] > 0


def long_overloaded_run() -> tuple[Cluster, Workload]:
    """40,000 jobs at about half the capacity of six machines, then a burst of 6,000 at once.

    The steady part is about 80,000 events: the kernel returns at 65,536 (``CHUNK_EVENTS``)
    with a short queue; then the burst queues more than 4,096 jobs, where the completion heap
    grows (``driver.grow_heap``), in the run's second chunk.
    """
    rng = np.random.default_rng(0)
    steady, burst = 40_000, 6_000
    n = steady + burst
    res = ("cpu", "mem")
    cluster = Cluster("c", res, ("a", "b"), np.array([3, 3]), np.array([[1.0, 1.0], [1.0, 0.5]]))
    cls = rng.integers(0, 2, n)
    classes = ClassTable(("a", "b"), np.full((2, 2), 0.1), np.ones((2, 2)), np.array([0.5, 0.5]))
    submit = np.concatenate([np.sort(rng.uniform(0.0, 5000.0, steady)), np.full(burst, 5000.0)])
    req = np.round(rng.uniform(0.1, 0.5, (n, 2)), 2)
    work = rng.choice([0.5, 1.0, 2.0], n)
    return cluster, Workload("w", res, submit, req, work, cls, 5100.0, classes=classes)


@pytest.mark.parametrize(("name", "opts"), [k for k in KERNELS if k not in PROFILE and k[1] != {"work_weight": 2.5}])
def test_a_run_across_the_chunk_boundary_with_heap_regrowth_is_the_run_in_one_piece(
    name: str, opts: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel returns to Python every 65,536 events and whenever its heap must grow; it must
    resume exactly where it stopped. A run that crosses the boundary and regrows its heap (as a
    real run does) gives the same records as the same kernel run in one piece with a heap large
    enough from the start, and as chunks of 4,099 events (about a dozen boundaries, growths between).

    The Python engine is not run here (46,000 jobs of it take minutes on a busy machine): the kernel
    run in one piece is the oracle, and the specification is compared with it on shorter runs above.
    """
    from simcore.compiled import loop

    cluster, wl = long_overloaded_run()
    grown: list[int] = []
    chunks: list[int] = []

    def counted_grow(hp: Any, ctr: Any) -> Any:
        grown.append(int(ctr[0]) + int(ctr[2]))  # events handled so far: arrivals and completions
        return real_grow(hp, ctr)

    def run(chunk: int, heap: Any) -> SimResult:
        grown.clear()
        chunks.clear()
        monkeypatch.setattr(loop, "CHUNK_EVENTS", chunk)
        monkeypatch.setattr(loop, "new_heap", heap or real_new)
        sim = Simulation(
            cluster,
            wl,
            create(name, **opts),
            scheduler_rng(1),
            progress=lambda p: chunks.append(p.arrived + p.completed),
            progress_every_s=0.0,
        )
        res = expect_engine(sim.run(), "compiled")
        return res

    real_grow, real_new = loop.grow_heap, loop.new_heap
    assert loop.CHUNK_EVENTS == 65_536
    monkeypatch.setattr(loop, "grow_heap", counted_grow)
    real = run(loop.CHUNK_EVENTS, None)
    # A report between chunks (the last report is the run's end): the run crossed 65,536 events.
    # Greedy and LoTES return for fresh uniform draws more often than that, and a return restarts
    # the count: they cross no boundary, but resume as often.
    assert chunks[-1] > 65_536
    assert (len(chunks) >= 2 and chunks[0] == 65_536) or name in ("greedy", "lotes")
    assert grown and grown[0] > 65_536  # and the heap grew after that, in the next chunk
    assert real.sample_queue.max() > 4096
    small = run(4099, None)
    assert len(chunks) >= 11 and len(grown) >= 1  # fewer than 16: a return to grow the heap restarts the count
    # One chunk, and a heap of room for every job from the start (the driver's layout: two keys a
    # job, then the job of each sequence number), which never grows.
    whole = run(10**9, lambda n: (np.empty(2 * (n + 1)), np.empty(n + 1, dtype=np.int64)))
    assert len(chunks) == 1 and grown == []  # the end's report only
    for other in (real, small):
        assert np.array_equal(other.machine, whole.machine)
        assert np.array_equal(other.start, whole.start, equal_nan=True)
        assert np.array_equal(other.finish, whole.finish, equal_nan=True)
        assert np.array_equal(other.sample_queue, whole.sample_queue)
        assert np.array_equal(other.sample_util, whole.sample_util)
        assert other.end_s == whole.end_s
