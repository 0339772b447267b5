"""One honest engine state: the public read-only view, zero rates, reusable schedulers, declared needs."""

from __future__ import annotations

import ast
import math
from pathlib import Path

import numpy as np
import pytest

from simcore.catalog import catalog
from simcore.core.engine import EPS, SimResult, Simulation, simulate
from simcore.core.errors import ParameterError, SchedulingError
from simcore.core.model import ClassTable, Cluster, RateRuntime, Workload
from simcore.scenario import validate_scenario
from simcore.schedulers import SCHEDULERS, create
from simcore.schedulers.base import Scheduler

ROOT = Path(__file__).resolve().parents[2]
RATE_BASED = [n for n in SCHEDULERS.names() if not SCHEDULERS.get(n).requires]
RES = ("cpu", "mem")


def zero_rate_scenario(n: int = 30) -> tuple[Cluster, Workload]:
    """Two configurations; class 0 cannot run on configuration 0 (rate 0), which comes first."""
    cluster = Cluster("z", RES, ("a", "b"), np.array([3, 2]), np.array([[1.0, 1.0], [1.0, 1.0]]))
    rng = np.random.default_rng(1)
    submit = np.sort(rng.uniform(0.0, 10.0, n))
    request = rng.uniform(0.1, 0.6, (n, 2))
    job_class = rng.integers(0, 2, n)
    work = rng.uniform(0.5, 3.0, n)
    rates = np.array([[0.0, 1.0], [1.0, 2.0]])
    classes = ClassTable(("k0", "k1"), np.full((2, 2), 0.35), rates, np.array([0.5, 0.5]))
    wl = Workload(
        "w", RES, submit, request, work, job_class, horizon_s=20.0, classes=classes,
        runtime=RateRuntime(work, job_class, rates),
    )  # fmt: skip
    return cluster, wl


# -- zero rates -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", RATE_BASED)
def test_no_scheduler_starts_a_job_where_its_rate_is_zero(name: str, engine: str) -> None:
    cluster, wl = zero_rate_scenario()
    res = simulate(cluster, wl, create(name), 3, drain=True, engine=engine)
    started = res.started_mask
    assert started.all(), name  # every job can run on configuration 1, so all of them finish
    cls0 = started & (wl.job_class == 0)
    assert (cluster.machine_config[res.machine[cls0]] == 1).all(), name
    # Class 1 uses both configurations somewhere (the zero rate is per class, not per machine).
    assert set(cluster.machine_config[res.machine[started & (wl.job_class == 1)]].tolist()) <= {0, 1}


def test_the_engine_refuses_a_start_where_the_job_cannot_run() -> None:
    cluster, wl = zero_rate_scenario(2)

    class Naive(Scheduler):
        def on_arrival(self, job: int) -> None:
            self.sim.start(job, 0)

        def on_completion(self, job: int, machine: int) -> None:
            pass

    # The first job is of class 1 or 0; find one of class 0 and check the refusal names the reason.
    wl.job_class[:] = 0
    wl.runtime = RateRuntime(wl.work, wl.job_class, np.array([[0.0, 1.0], [1.0, 2.0]]))
    with pytest.raises(SchedulingError, match="cannot run there"):
        simulate(cluster, wl, Naive(), 0)


def test_a_refused_start_leaves_the_state_as_it_was() -> None:
    cluster, wl = zero_rate_scenario(2)
    wl.job_class[:] = 0
    wl.runtime = RateRuntime(wl.work, wl.job_class, np.array([[0.0, 1.0], [1.0, 2.0]]))
    caught: list[str] = []

    class TriesThenRuns(Scheduler):
        def on_arrival(self, job: int) -> None:
            sim = self.sim
            before = (sim.view.free_by_resource.copy(), sim.running.copy(), sim.started, len(sim._heap))
            try:
                sim.start(job, 0)  # configuration 0: rate 0, refused
            except SchedulingError as e:
                caught.append(str(e))
            after = (sim.view.free_by_resource.copy(), sim.running.copy(), sim.started, len(sim._heap))
            np.testing.assert_array_equal(before[0], after[0])
            np.testing.assert_array_equal(before[1], after[1])
            assert before[2:] == after[2:]
            sim.start(job, 3)  # configuration 1: fine, and the job was not marked started

        def on_completion(self, job: int, machine: int) -> None:
            pass

    res = simulate(cluster, wl, TriesThenRuns(), 0, drain=True)
    assert len(caught) == 2
    assert res.machine.tolist() == [3, 3] or res.started_mask.all()


# -- the view -------------------------------------------------------------------------------------------


def test_every_array_of_the_view_is_read_only() -> None:
    cluster, wl = zero_rate_scenario(3)
    sim = Simulation(cluster, wl, create("greedy"), np.random.default_rng(0))
    v = sim.view
    for arr in (v.free_by_resource, v.free, v.capacity, v.capacity_by_resource, v.request, v.config_of,
                v.running, v.last_class, sim.submit, sim.job_class, sim.start_t):  # fmt: skip
        with pytest.raises(ValueError, match="read-only"):
            arr[(0,) * arr.ndim] = 1
    with pytest.raises(TypeError):
        v.free_flat[0] = 0.0


def test_the_view_tracks_starts_and_completions() -> None:
    cluster = Cluster("one", RES, ("a",), np.array([2]), np.array([[1.0, 2.0]]))
    wl = Workload("w", RES, submit=[0.0, 1.0], request=[[0.5, 0.5], [0.25, 1.0]], work=[5.0, 2.0],
                  job_class=[0, 0], horizon_s=10.0)  # fmt: skip
    seen: list[list[list[float]]] = []

    class Watch(Scheduler):
        def on_arrival(self, job: int) -> None:
            self.sim.start(job, 1)
            seen.append(self.sim.view.free_by_resource.tolist())

        def on_completion(self, job: int, machine: int) -> None:
            seen.append(self.sim.view.free_by_resource.tolist())

    simulate(cluster, wl, Watch(), 0, drain=True)
    assert seen == [
        [[1.0, 0.5], [2.0, 1.5]],  # job 0 on machine 1
        [[1.0, 0.25], [2.0, 0.5]],  # job 1 too
        [[1.0, 0.5], [2.0, 1.5]],  # job 1 done at 3
        [[1.0, 1.0], [2.0, 2.0]],  # job 0 done at 5: an idle machine is exactly empty
    ]


def test_fit_masks_and_first_fit_agree_with_the_engine_around_the_tolerance() -> None:
    cluster = Cluster("c", RES, ("a", "b"), np.array([3, 3]), np.array([[1.0, 1.0], [0.5, 2.0]]))
    n = 50
    rng = np.random.default_rng(8)
    base = rng.uniform(0.0, 1.0, (n, 2))
    # Requests within a few EPS of the free capacity, both sides.
    wl = Workload("w", RES, np.zeros(n), base, np.ones(n), np.zeros(n, dtype=np.int64), horizon_s=1.0)
    sim = Simulation(cluster, wl, create("greedy"), rng)
    free = sim._free_rows  # white-box: the test sets the engine's own buffer
    for z in range(n):
        for m in range(cluster.n_machines):
            free[:, m] = base[z] + rng.choice([-2.0, -0.5, 0.0, 0.5, 2.0], 2) * EPS
        mask = sim.view.fit_mask(sim.view.floors_of(z))
        for m in range(cluster.n_machines):
            expect = all(free[r, m] >= base[z, r] - EPS for r in range(2))
            assert sim.view.fits(z, m) == expect == bool(mask[m])
        ff = sim.view.first_fit(z)
        assert ff == (int(np.argmax(mask)) if mask.any() else -1)


# -- reuse ----------------------------------------------------------------------------------------------


def _scenario_pair(name: str) -> list[tuple[Cluster, Workload]]:
    from simcore.api import resolve_cluster, resolve_workload

    if SCHEDULERS.get(name).requires:
        a = resolve_cluster("ncbi-heterogeneous", {"machines_per_type": 3})
        b = resolve_cluster("ncbi-heterogeneous", {"machines_per_type": 5})
        return [(a, resolve_workload("ncbi-blast", a, 1, hours=1.0)),
                (b, resolve_workload("ncbi-blast-reduced", b, 2, hours=1.0))]  # fmt: skip
    a = resolve_cluster("google-balanced", {"machines_per_config": 2})
    b = resolve_cluster("google-balanced", {"machines_per_config": 3})
    return [(a, resolve_workload("google-like", a, 1, 0.95, 0.2)), (b, resolve_workload("google-like", b, 2, 1.1, 0.1))]


def _same(a: SimResult, b: SimResult) -> None:
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.machine, b.machine)


@pytest.mark.parametrize("name", SCHEDULERS.names())
def test_a_reused_scheduler_runs_each_scenario_as_a_fresh_one(name: str) -> None:
    (c1, w1), (c2, w2) = _scenario_pair(name)
    reused = create(name)
    first = simulate(c1, w1, reused, 4)
    second = simulate(c2, w2, reused, 5)
    _same(first, simulate(c1, w1, create(name), 4))
    _same(second, simulate(c2, w2, create(name), 5))
    assert reused.offline_solution() == create(name).offline_solution() or name == "lotes"


# -- declared needs -------------------------------------------------------------------------------------


def test_profile_schedulers_declare_that_they_need_a_profile() -> None:
    needs = {n: sorted(SCHEDULERS.get(n).requires) for n in SCHEDULERS.names()}
    assert {n for n, r in needs.items() if r} == {"affinity", "greedy1", "greedy2", "greedy3"}
    assert needs["fcfs"] == []


def test_validation_refuses_a_scheduler_the_workload_cannot_serve_with_the_reason() -> None:
    scenario = {
        "cluster": {"preset": "google-balanced"}, "workload": {"preset": "google-like"},
        "schedulers": ["greedy", "affinity"], "seeds": [0],
    }  # fmt: skip
    with pytest.raises(ParameterError, match="scheduler 'affinity' needs a workload with a run-time profile"):
        validate_scenario(scenario)
    scenario["workload"] = {"preset": "ncbi-blast"}
    assert validate_scenario(scenario)["schedulers"] == ["greedy", "affinity"]


def test_the_catalogue_lists_each_schedulers_needs_and_each_workloads_offer() -> None:
    cat = catalog()
    req = {s["name"]: [r["need"] for r in s["requires"]] for s in cat["schedulers"]}
    assert req["affinity"] == ["profile"] and req["fcfs"] == [] and req["lotes"] == []
    offers = {w["name"]: w["provides"] for w in cat["workloads"]}
    assert offers["ncbi-blast"] == ["profile"] and offers["google-like"] == []


def test_bench_runs_each_scheduler_where_its_needs_are_met() -> None:
    from simcore.bench.runs import BenchOptions, plan_specs

    args = BenchOptions(scenarios="google", machines_per_config=10, hours=0.01)
    specs = plan_specs(args)
    where = {(s["scheduler"], s["scenario"]) for s in specs}
    assert ("fcfs", "google") in where and ("fcfs", "profile") in where
    assert ("affinity", "profile") in where and ("affinity", "google") not in where
    assert ("greedy", "profile") in where


# -- layering -------------------------------------------------------------------------------------------


def test_no_scheduler_touches_a_private_engine_attribute() -> None:
    # The rule: under simcore/schedulers, no attribute whose name starts with "_" is read from an
    # expression that names the simulation or its view (sim, self.sim, view, self.view, ...).
    offenders = []
    # simcore/dse/staged holds the staged scheduler's cycle and atoms: scheduler code too.
    paths = [*(ROOT / "simcore" / "schedulers").rglob("*.py"), *(ROOT / "simcore" / "dse" / "staged").rglob("*.py")]
    for path in sorted(paths):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
                owner = ast.unparse(node.value)
                if any(w in ("sim", "view") for w in owner.replace(".", " ").split()):
                    offenders.append(f"{path.relative_to(ROOT)}:{node.lineno}: {owner}.{node.attr}")
    assert offenders == []


def test_the_layering_rule_catches_an_offender() -> None:
    # The check above is only evidence if it can fail.
    node = ast.parse("x = self.sim._free_mv[0]")
    attrs = [n for n in ast.walk(node) if isinstance(n, ast.Attribute) and n.attr.startswith("_")]
    assert [ast.unparse(a.value) for a in attrs] == ["self.sim"]


def test_zero_rates_make_an_infinite_time_not_a_crash() -> None:
    rt = RateRuntime(np.array([1.0]), np.array([0]), np.array([[0.0, 2.0]]))
    assert rt.duration(0, 0, -1) == math.inf and rt.duration(0, 1, -1) == 0.5
    assert not rt.all_runnable


# -- one seeding rule -----------------------------------------------------------------------------------


def test_simulate_with_a_seed_reproduces_the_api_run_with_that_seed() -> None:
    from simcore.api import RunSpec, resolve_cluster, resolve_workload, run

    spec = RunSpec(
        cluster="google-balanced", workload="google-like", scheduler="greedy", seed=5, load=1.05, hours=0.2,
        cluster_params={"machines_per_config": 2},
    )  # fmt: skip
    outcome = run(spec)
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 2})
    wl = resolve_workload("google-like", cluster, 5, 1.05, 0.2)
    direct = simulate(cluster, wl, create("greedy"), 5)
    # Greedy draws random tie-breaks under overload, so equal records mean equal streams.
    assert outcome.result.extra["arrived"] == direct.extra["arrived"]
    np.testing.assert_array_equal(outcome.result.start, direct.start)
    np.testing.assert_array_equal(outcome.result.machine, direct.machine)
    other = simulate(cluster, wl, create("greedy"), 6)
    assert not np.array_equal(other.machine, direct.machine)  # the tie-breaks do depend on the seed


# -- the workload validates its values -----------------------------------------------------------------


def _workload(**changes: object) -> Workload:
    fields: dict[str, object] = dict(
        submit=[0.0, 1.0, 2.0], request=[[0.5, 0.5], [0.4, 0.4], [0.5, 0.5]], work=[1.0, 1.0, 1.0],
        job_class=[0, 0, 0], horizon_s=10.0,
    )  # fmt: skip
    fields.update(changes)
    return Workload("w", RES, **fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"submit": [0.0, float("nan"), 2.0]}, r"submit\[1\] is nan"),
        ({"submit": [0.0, 1.0, float("inf")]}, r"submit\[2\] is inf"),
        ({"request": [[0.5, 0.5], [0.4, -0.2], [0.5, 0.5]]}, r"request\[1, 1\] is -0.2"),
        ({"work": [1.0, -3.0, 1.0]}, r"work\[1\] is -3.0"),
        ({"job_class": [0, -2, 0]}, r"job_class\[1\] is -2"),
        ({"horizon_s": float("nan")}, "horizon_s is nan"),
    ],
)
def test_a_workload_refuses_non_finite_or_negative_values_naming_field_and_index(
    changes: dict[str, object], message: str
) -> None:
    with pytest.raises(ParameterError, match=message):
        _workload(**changes)


def test_negative_requests_can_no_longer_overfill_a_machine() -> None:
    # Before validation, three jobs totalling 1.4 cpu ran on a machine of capacity 1.0.
    with pytest.raises(ParameterError, match="request"):
        _workload(request=[[0.7, 0.1], [-0.3, 0.1], [0.7, 0.1]])


def test_a_rate_must_be_finite_and_non_negative() -> None:
    with pytest.raises(ParameterError, match=r"rate\[0\]\[1\] is -1.0"):
        RateRuntime(np.ones(1), np.zeros(1, dtype=np.int64), np.array([[1.0, -1.0]]))
