"""The engine's rules and the invariants every scheduler's runs must satisfy.

Hypothesis draws small random clusters and workloads (1-3 resources, a few
machines, machine-dependent or fixed processing times) and runs every
registered scheduler that accepts them; the records the engine returns must
never exceed a machine's capacity, never start a job before it arrives,
run every job for exactly its processing time, account for every job, and
be identical under the same seed.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.core.engine import EPS, SimResult, Simulation, simulate
from simcore.core.errors import SchedulingError
from simcore.core.model import ClassTable, Cluster, RateRuntime, Workload
from simcore.profiles.build import RESOURCES, profile_cluster
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import ProfileTable
from simcore.schedulers import SCHEDULERS, create
from simcore.schedulers.base import Scheduler

# -- random scenarios ----------------------------------------------------------------------------------


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[Cluster, Workload]:
    R = draw(st.integers(1, 3))
    M = draw(st.integers(1, 3))
    resources = tuple(f"r{i}" for i in range(R))
    caps = np.array([[draw(st.sampled_from([0.25, 0.5, 1.0])) for _ in range(R)] for _ in range(M)])
    counts = np.array([draw(st.integers(1, 3)) for _ in range(M)])
    cluster = Cluster("h", resources, tuple(f"c{j}" for j in range(M)), counts, caps)
    n = draw(st.integers(1, 40))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    submit = np.sort(rng.exponential(1.0, n).cumsum())
    # Rates of 0 ("cannot run there", LoTES section 5.3) are drawn too; every class keeps one
    # configuration where it runs.
    K = draw(st.integers(1, 3))
    rates = rng.uniform(0.5, 2.0, (K, M))
    if M > 1 and draw(st.booleans()):
        rates[rng.random((K, M)) < 0.4] = 0.0
        for k in range(K):
            if not (rates[k] > 0).any():
                rates[k, rng.integers(0, M)] = 1.0
    job_class = rng.integers(0, K, n)
    # Each class has a home configuration where it runs and all its jobs fit, so its mean
    # request (the class table LoTES plans with) fits there too.
    class_home = np.array([rng.choice(np.flatnonzero(rates[k] > 0)) for k in range(K)], dtype=np.int64)
    home = class_home[job_class]
    request = caps[home] * rng.uniform(0.05, 1.0, (n, R))
    if draw(st.booleans()):
        # Coarse requests make exact fits (free == request) and simultaneous events common.
        request = np.floor(request * 4) / 4
        request = np.maximum(request, 0.0)
        submit = np.floor(submit)
    work = rng.exponential(3.0, n)
    class_req = np.array(
        [request[job_class == k].mean(axis=0) if (job_class == k).any() else caps.min(axis=0) / 2 for k in range(K)]
    )
    machine_dependent = draw(st.booleans())
    classes = ClassTable(tuple(f"k{k}" for k in range(K)), np.maximum(class_req, 1e-3), rates, np.full(K, 1.0 / K))
    wl = Workload(
        "w",
        resources,
        submit,
        request,
        work,
        job_class,
        horizon_s=float(submit[-1]) + 1.0,
        classes=classes,
        runtime=RateRuntime(work, job_class, rates) if machine_dependent else None,
    )
    return cluster, wl


@st.composite
def profile_scenarios(draw: st.DrawFn) -> tuple[Cluster, Workload]:
    """One-slot machines and a run-time profile (the profile study's setting), drawn small."""
    K = draw(st.integers(1, 3))
    M = draw(st.integers(1, 3))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    cold = rng.uniform(1.0, 10.0, (K, M))
    io = cold * rng.uniform(0.0, 0.5, (K, M))
    warm = np.where(rng.random((K, M)) < 0.5, cold - io * rng.uniform(0.0, 1.0, (K, M)), cold)
    table = ProfileTable(
        job_types=tuple(f"j{k}" for k in range(K)),
        machine_types=tuple(f"m{j}" for j in range(M)),
        cpu_s=cold - io,
        io_s=io,
        warm_s=np.maximum(warm, 0.5),
        proportions=np.full(K, 1.0 / K),
        machine_attributes=tuple({} for _ in range(M)),
        databases=tuple(draw(st.sampled_from(["nt", "nr"])) for _ in range(K)),
    )
    counts = {f"m{j}": draw(st.integers(1, 3)) for j in range(M)}
    cluster = profile_cluster(table, counts, "p")
    n = draw(st.integers(1, 40))
    submit = np.sort(np.floor(rng.exponential(2.0, n).cumsum()))
    kinds = rng.integers(0, K, n)
    classes = ClassTable(table.job_types, np.ones((K, 1)), 1.0 / table.cold_s, table.proportions)
    wl = Workload(
        "pw",
        RESOURCES,
        submit,
        np.ones((n, 1)),
        table.cold_s.mean(axis=1)[kinds],
        kinds,
        horizon_s=float(submit[-1]) + 1.0,
        classes=classes,
        runtime=ProfileRuntime(table, kinds),
    )
    return cluster, wl


def scenarios_for(name: str) -> st.SearchStrategy[tuple[Cluster, Workload]]:
    """Scenarios of the kind ``name`` declares it can run (Scheduler.requires)."""
    return profile_scenarios() if "profile" in SCHEDULERS.get(name).requires else scenarios()


def run(
    cluster: Cluster, wl: Workload, name: str, seed: int = 7, drain: bool = True, engine: str = "compiled"
) -> SimResult:
    """The run; a scheduler refusing a scenario of the kind it declares is a failure, never a skip.

    ``engine="compiled"`` falls back to Python where the scheduler or the run-time model has no
    compiled form (the run says so); ``"python"`` always runs the specification.
    """
    return simulate(cluster, wl, create(name), seed, drain=drain, engine=engine)


#: Hypothesis examples each scheduler faced in the property test (reported in the closing note).
EXAMPLES: dict[tuple[str, str], int] = {}


def check_invariants(cluster: Cluster, wl: Workload, res: SimResult, name: str, drain: bool) -> None:
    start, finish, machine = res.start, res.finish, res.machine
    started = ~np.isnan(start)
    done = ~np.isnan(finish)
    # Conservation: every job that arrived is completed, running, or still queued; the others never started.
    arrived = res.extra["arrived"]
    assert arrived == (wl.n_jobs if drain else int((wl.submit <= wl.horizon_s).sum())), name
    assert not started[arrived:].any(), name
    assert not (done & ~started).any(), name
    assert ((machine >= 0) == started).all(), name
    queued = int((~started[:arrived]).sum())
    running = int((started & ~done).sum())
    assert int(done.sum()) + running + queued == arrived, name
    if drain:
        assert running == 0, name  # the run went on until nothing could finish any more
    else:
        assert (finish[done] <= wl.horizon_s).all(), name
        assert (start[started & ~done] <= wl.horizon_s).all(), name
    # Causality: no start before arrival; a job runs exactly its processing time.
    assert (start[started] >= wl.submit[started]).all(), name
    # The processing time may depend on the class of the machine's last finished job (the
    # profile study's warm caches): any job that finished last on the machine before the start
    # (ties at one instant are ambiguous) gives an acceptable time.
    rt = wl.runtime_model()
    cfg = cluster.machine_config
    for z in np.flatnonzero(done):
        m = machine[z]
        before = np.flatnonzero((machine == m) & done & (finish <= start[z]))
        before = before[before != z]
        lasts = (
            [-1]
            if len(before) == 0
            else sorted({int(wl.job_class[b]) for b in before if finish[b] == finish[before].max()})
        )
        times = [rt.duration(int(z), int(cfg[m]), k) for k in lasts]
        assert any(finish[z] == pytest.approx(start[z] + p, rel=1e-12, abs=1e-12) for p in times), (name, z, times)
    # Capacity: replay starts and finishes per machine (finishes first at equal times, as the engine does).
    cap = cluster.machine_capacity
    for m in np.unique(machine[started]):
        jobs = np.flatnonzero(machine == m)
        events = [(finish[z], 0, -wl.request[z]) for z in jobs if done[z]]
        events += [(start[z], 1, wl.request[z]) for z in jobs]
        events.sort(key=lambda e: (e[0], e[1]))
        used = np.zeros(cluster.capacity.shape[1])
        for _, _, delta in events:
            used = used + delta
            assert (used <= cap[m] + 1e-6).all(), (name, m, used, cap[m])


@pytest.mark.parametrize("name", SCHEDULERS.names())
def test_every_scheduler_respects_capacity_causality_and_conservation(name: str, engine: str) -> None:
    # Every registered scheduler, each on random scenarios of the kind it declares it runs
    # (rates of 0 included for the rate-based ones), with no skips.
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(scenarios_for(name), st.booleans())
    def check(scn: tuple[Cluster, Workload], drain: bool) -> None:
        cluster, wl = scn
        if not drain:
            # Cut the run at the median arrival: later jobs never arrive, some are left running or queued.
            wl.horizon_s = float(np.median(wl.submit))
        res = run(cluster, wl, name, drain=drain, engine=engine)
        check_invariants(cluster, wl, res, name, drain)
        EXAMPLES[name, engine] = EXAMPLES.get((name, engine), 0) + 1

    check()
    assert EXAMPLES[name, engine] >= 30, EXAMPLES


@pytest.mark.parametrize("name", SCHEDULERS.names())
def test_the_same_seed_gives_identical_records(name: str) -> None:
    @settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(scenarios_for(name), st.integers(0, 1000))
    def check(scn: tuple[Cluster, Workload], seed: int) -> None:
        cluster, wl = scn
        a = run(cluster, wl, name, seed)
        b = run(cluster, wl, name, seed)
        np.testing.assert_array_equal(a.start, b.start, err_msg=name)
        np.testing.assert_array_equal(a.finish, b.finish, err_msg=name)
        np.testing.assert_array_equal(a.machine, b.machine, err_msg=name)
        np.testing.assert_array_equal(a.sample_queue, b.sample_queue, err_msg=name)

    check()


# -- the engine enforces the rules ---------------------------------------------------------------------


def two_machines() -> tuple[Cluster, Workload]:
    cluster = Cluster("two", ("cpu", "mem"), ("a",), np.array([2]), np.array([[1.0, 1.0]]))
    wl = Workload(
        "w",
        ("cpu", "mem"),
        submit=[0.0, 1.0, 2.0],
        request=[[0.6, 0.5], [0.6, 0.5], [0.3, 0.3]],
        work=[10.0, 10.0, 10.0],
        job_class=[0, 0, 0],
        horizon_s=100.0,
    )
    return cluster, wl


class StartsTwice(Scheduler):
    def on_arrival(self, job: int) -> None:
        self.sim.start(job, 0)
        self.sim.start(job, 1)

    def on_completion(self, job: int, machine: int) -> None:
        pass


class StartsBeforeArrival(Scheduler):
    def on_arrival(self, job: int) -> None:
        self.sim.start(job + 1, 0)

    def on_completion(self, job: int, machine: int) -> None:
        pass


class Overfills(Scheduler):
    def on_arrival(self, job: int) -> None:
        self.sim.start(job, 0)  # job 1 (cpu 0.6) does not fit next to job 0 (cpu 0.6)

    def on_completion(self, job: int, machine: int) -> None:
        pass


class NoSuchMachine(Scheduler):
    def on_arrival(self, job: int) -> None:
        self.sim.start(job, 2)

    def on_completion(self, job: int, machine: int) -> None:
        pass


class RestartsFinished(Scheduler):
    def on_arrival(self, job: int) -> None:
        if job == 0:
            self.sim.start(0, 0)

    def on_completion(self, job: int, machine: int) -> None:
        self.sim.start(job, machine)


@pytest.mark.parametrize(
    ("sched", "message"),
    [
        (StartsTwice, "started twice"),
        (StartsBeforeArrival, "before it arrived"),
        (Overfills, "does not fit"),
        (NoSuchMachine, "does not exist"),
        (RestartsFinished, "started twice"),
    ],
)
def test_the_engine_rejects_rule_breaking_schedulers(sched: type[Scheduler], message: str) -> None:
    cluster, wl = two_machines()
    with pytest.raises(SchedulingError, match=message):
        simulate(cluster, wl, sched(), 0, drain=True)


def test_a_job_arriving_when_another_finishes_sees_the_freed_capacity() -> None:
    # Job 0 runs [0, 5) taking 0.8 of the single machine; job 1 (0.5) arrives at exactly 5.
    cluster = Cluster("one", ("cpu",), ("a",), np.array([1]), np.array([[1.0]]))
    wl = Workload(
        "w", ("cpu",), submit=[0.0, 5.0], request=[[0.8], [0.5]], work=[5.0, 1.0], job_class=[0, 0], horizon_s=10.0
    )
    res = simulate(cluster, wl, create("greedy"), 0)
    assert res.start.tolist() == [0.0, 5.0]
    assert res.finish.tolist() == [5.0, 6.0]


def test_fits_uses_the_engines_tolerance() -> None:
    cluster = Cluster("one", ("cpu", "mem"), ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", ("cpu", "mem"), submit=[0.0], request=[[1.0, 0.5]], work=[1.0], job_class=[0], horizon_s=1.0)
    sim = Simulation(cluster, wl, create("greedy"), np.random.default_rng(0))
    # White-box: the test writes the engine's own buffer (a scheduler sees it read-only).
    sim._free_rows[0, 0] = 1.0 - EPS / 2  # rounding error below the tolerance still fits
    assert sim.fits(0, 0)
    sim._free_rows[0, 0] = 1.0 - 2 * EPS
    assert not sim.fits(0, 0)


def test_utilisation_samples_track_the_capacity_in_use() -> None:
    # One machine, one job using (0.5, 0.25) from t=0 to t=50 of a 100 s horizon.
    cluster = Cluster("one", ("cpu", "mem"), ("a",), np.array([1]), np.array([[1.0, 1.0]]))
    wl = Workload("w", ("cpu", "mem"), submit=[0.0], request=[[0.5, 0.25]], work=[50.0], job_class=[0], horizon_s=100.0)
    res = simulate(cluster, wl, create("greedy"), 0, samples=11)
    # Samples at 0, 10, ..., 100 describe the state just before each event at that time.
    assert res.sample_util[1:5].tolist() == [[0.5, 0.25]] * 4
    assert res.sample_util[6:].tolist() == [[0.0, 0.0]] * 5
    assert res.sample_running[1:5].tolist() == [1, 1, 1, 1]


def test_samples_start_at_the_first_arrival_not_at_time_0() -> None:
    # Issue 17: one job using 0.5 of the machine over [900, 950) of a window [0, 1000): measured from the
    # first arrival, it is busy half the sampled span, not 5% of it.
    cluster = Cluster("one", ("cpu",), ("a",), np.array([1]), np.array([[1.0]]))
    wl = Workload("w", ("cpu",), submit=[900.0], request=[[0.5]], work=[50.0], job_class=[0], horizon_s=1000.0)
    res = simulate(cluster, wl, create("greedy"), 0, samples=11)
    assert res.sample_t[0] == 900.0 and res.sample_t[-1] == 1000.0
    assert res.sample_util[1:5, 0].tolist() == [0.5] * 4
