"""MRIS: the paper's worked example, its equations on hand-computed cases, invariants, and the simulator adaptation."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.api import run_objects
from simcore.core.engine import SimResult, simulate
from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, Workload
from simcore.schedulers import SCHEDULERS, create
from simcore.schedulers.mris import (
    MRIS,
    applications,
    binary_split,
    efficiency,
    fifo_select,
    mris_select,
    profit,
    scarcity,
    split_items,
    utilisation,
)
from tests.simcore.conftest import expect_engine

# Section III-A: a pool of 12 cores, 12 GB, 12 TB and four applications, one job each.
POOL = np.array([12.0, 12.0, 12.0])
APPS = np.array([[6, 2, 2], [5, 4, 8], [4, 6, 2], [2, 2, 6]], dtype=float)
ONE_EACH = np.ones(4, dtype=np.int64)

#: Fit tolerance of the invariant tests (resource units).
TOL = 1e-9


# -- the worked example ---------------------------------------------------------------------


def test_the_worked_example_mris_reaches_100_83_83_percent_89_integrated() -> None:
    x = mris_select(APPS, ONE_EACH, POOL)
    assert x.tolist() == [1, 0, 1, 1]  # (6,2,2) + (4,6,2) + (2,2,6) = (12, 10, 10)
    u = utilisation(APPS, x, POOL)
    assert u.tolist() == pytest.approx([1.0, 10 / 12, 10 / 12])
    assert [round(100 * v) for v in u] == [100, 83, 83]
    assert u.mean() == pytest.approx(32 / 36)
    assert round(100 * u.mean()) == 89


def test_the_worked_example_fifo_takes_the_first_two_and_leaves_memory_at_50_percent() -> None:
    x = fifo_select(APPS, ONE_EACH, POOL)
    assert x.tolist() == [1, 1, 0, 0]  # (4,6,2) needs 15 cores: FIFO stops there
    u = utilisation(APPS, x, POOL)
    assert u.tolist() == pytest.approx([11 / 12, 0.5, 10 / 12])
    assert u.mean() == pytest.approx(0.75)


# -- equations on hand-computed cases ------------------------------------------------------


def test_scarcity_is_equation_6_on_the_worked_example() -> None:
    # Queued demand (17, 14, 18) against 12 of each.
    alpha = scarcity(APPS, ONE_EACH.astype(float), POOL)
    assert alpha.tolist() == pytest.approx([5 / 17, 2 / 14, 6 / 18])


def test_efficiency_is_equation_5_on_the_worked_example() -> None:
    alpha = scarcity(APPS, ONE_EACH.astype(float), POOL)
    e = efficiency(APPS, alpha)
    # sum_i w_ij alpha_i over the common denominator 357 = 17 * 7 * 3.
    expected = [Fraction(357, 970), Fraction(357, 1681), Fraction(357, 964), Fraction(357, 1026)]
    assert e.tolist() == pytest.approx([float(f) for f in expected])
    assert np.argsort(-e).tolist() == [2, 0, 3, 1]  # the greedy order: (4,6,2), (6,2,2), (2,2,6), (5,4,8)


def test_profit_is_equation_1_the_inverse_of_the_average_share() -> None:
    p = profit(APPS, POOL)
    # m / sum_i w_ij / c_i with m = 3, c_i = 12: sums of demands 10, 17, 12, 10.
    assert p.tolist() == pytest.approx([3.6, 36 / 17, 3.0, 3.6])
    # A demand on a resource of zero capacity: no profit. No demand at all: infinite profit.
    assert profit(np.array([[1.0, 1.0], [0.0, 0.0]]), np.array([2.0, 0.0])).tolist() == [0.0, math.inf]


def test_abundant_resources_count_as_not_scarce() -> None:
    # Demand 1 cpu against 2 free (alpha = -1, as printed), 1 mem against 0.5 (alpha = 0.5).
    d = np.array([[1.0, 0.0], [0.0, 1.0]])
    alpha = scarcity(d, np.ones(2), np.array([2.0, 0.5]))
    assert alpha.tolist() == [-1.0, 0.5]
    # The cpu-only job needs nothing scarce: infinite efficiency, not 1 / -1.
    assert efficiency(d, alpha).tolist() == [math.inf, 2.0]
    # A resource nobody asks for is not scarce (0/0 in equation 6).
    assert scarcity(d[:1], np.ones(1), np.array([2.0, 0.5])).tolist() == [-1.0, 0.0]


@pytest.mark.parametrize(
    ("bound", "items"), [(13, [1, 2, 4, 6]), (1, [1]), (2, [1, 1]), (7, [1, 2, 4]), (8, [1, 2, 4, 1]), (0, [])]
)
def test_the_logarithmic_transformation_splits_bounds_into_powers_of_two_and_a_remainder(
    bound: int, items: list[int]
) -> None:
    assert binary_split(bound) == items


def test_the_transformation_gives_ceil_log2_of_bound_plus_one_items_summing_to_the_bound() -> None:
    for b in range(0, 300):
        items = binary_split(b)
        assert sum(items) == b
        assert len(items) == math.ceil(math.log2(b + 1))


def test_an_item_that_does_not_fit_is_divided_to_what_fits() -> None:
    # Bound 13 -> items 6, 4, 2, 1 (largest first). 9 fit: 6 whole, then 4 divided to 3.
    x = mris_select(np.array([[1.0, 1.0]]), np.array([13]), np.array([9.0, 20.0]))
    assert x.tolist() == [9]


def test_division_keeps_the_item_with_the_highest_updated_profit() -> None:
    # Capacity (5, 10). A = (2, 0) x 7, B = (0, 2) x 14: queued (14, 28), alpha = (9/14, 9/14),
    # so e_A = e_B = 7/9 and every item is in one group. p_A = 5, p_B = 10 (equation 1).
    # Items by profit: B7 (70), B4 (40), A4 (20), B2 (20), A2 (10), B1 (10), A1 (5).
    # B7 does not fit whole; divided: B7 -> 5 (profit 50), B4 -> 4 (40), A4 -> 2 (10), ... -> 5 of B.
    # Then B4 does not fit (no memory left); divided, only A items are non-zero: A4 -> 2 (10) wins.
    # Then one cpu is left, less than A's 2: nothing more fits.
    d = np.array([[2.0, 0.0], [0.0, 2.0]])
    x = mris_select(d, np.array([7, 14]), np.array([5.0, 10.0]))
    assert x.tolist() == [2, 5]


def test_everything_is_taken_when_everything_fits() -> None:
    assert mris_select(APPS, ONE_EACH, np.array([17.0, 14.0, 18.0])).tolist() == [1, 1, 1, 1]


def test_bad_shapes_and_values_are_reported_by_name() -> None:
    with pytest.raises(ParameterError, match="counts must have shape"):
        mris_select(APPS, [1, 1], POOL)
    with pytest.raises(ParameterError, match="capacity must have shape"):
        mris_select(APPS, ONE_EACH, [12.0, 12.0])
    with pytest.raises(ParameterError, match="demands must be finite and non-negative"):
        mris_select(-APPS, ONE_EACH, POOL)
    with pytest.raises(ParameterError, match="counts must be non-negative integers"):
        mris_select(APPS, [1, 0.5, 1, 1], POOL)


# -- invariants -----------------------------------------------------------------------------


def _reference_select(d: np.ndarray, mu: np.ndarray, cap: np.ndarray, tol: float) -> list[int]:
    """The paper's steps 1-6 taken literally, one item at a time, in plain Python.

    No shortcut: every application is split and sorted, including those of
    which no job fits; groups of equal e are handled as steps 3-5 describe.
    """
    p = profit(d, cap).tolist()
    e = efficiency(d, scarcity(d, mu.astype(float), cap)).tolist()
    items = [(a, q) for a in range(len(mu)) for q in binary_split(int(mu[a]))]
    items.sort(key=lambda it: (-e[it[0]], -p[it[0]] * it[1], it[0], -it[1]))
    c = cap.tolist()

    def fit(a: int) -> float:
        return min([math.inf] + [math.floor((ci + tol) / wi) for wi, ci in zip(d[a], c, strict=True) if wi > 0])

    out = [0] * len(mu)
    seq = list(items)
    while seq:
        group = [it for it in seq if e[it[0]] == e[seq[0][0]]]
        a, q = group[0]
        if fit(a) >= q:
            pick, x = group[0], q
        else:
            best, pick, x = -1.0, None, 0
            for a2, q2 in group:
                x2 = min(q2, fit(a2))
                if x2 > 0 and x2 * p[a2] > best:
                    best, pick, x = x2 * p[a2], (a2, q2), x2
            if pick is None:
                seq = [it for it in seq if it not in group]
                continue
        out[pick[0]] += int(x)
        c = [ci - x * wi for ci, wi in zip(c, d[pick[0]], strict=True)]
        seq.remove(pick)
    return out


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_the_fast_selection_equals_the_literal_algorithm(data: st.DataObject) -> None:
    d, mu, cap = data.draw(pools())
    # Duplicate an application now and then so groups of equal e occur.
    if len(mu) > 1 and data.draw(st.booleans()):
        d[1] = d[0]
    assert mris_select(d, mu, cap, tol=TOL).tolist() == _reference_select(d, mu, cap, TOL)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 3000), max_size=8))
def test_the_vectorised_split_equals_the_one_bound_split(bounds: list[int]) -> None:
    apps, sizes = split_items(np.arange(len(bounds)), np.array(bounds, dtype=np.int64))
    for a, b in enumerate(bounds):
        assert sorted(sizes[apps == a].tolist()) == sorted(binary_split(b))


@st.composite
def pools(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    n_apps = draw(st.integers(1, 6))
    n_res = draw(st.integers(1, 4))
    # Integers on a grid of 1/4 keep sums exact; fractional values test the tolerance path.
    unit = draw(st.sampled_from([1.0, 0.25, 0.1]))
    d = (
        np.array(
            draw(
                st.lists(st.lists(st.integers(0, 12), min_size=n_res, max_size=n_res), min_size=n_apps, max_size=n_apps)
            ),
            dtype=float,
        )
        * unit
    )
    mu = np.array(draw(st.lists(st.integers(0, 20), min_size=n_apps, max_size=n_apps)), dtype=np.int64)
    cap = np.array(draw(st.lists(st.integers(0, 60), min_size=n_res, max_size=n_res)), dtype=float) * unit
    return d, mu, cap


@settings(max_examples=300, deadline=None)
@given(pools())
def test_the_selection_respects_bounds_and_capacity_and_is_maximal(case: tuple[np.ndarray, ...]) -> None:
    d, mu, cap = case
    x = mris_select(d, mu, cap, tol=TOL)
    assert (x >= 0).all() and (x <= mu).all()
    left = cap - x @ d
    assert (left >= -TOL).all()
    # Maximal (the paper's "until no more job could be allocated"): no further job of any
    # application with jobs left fits in what remains.
    for j in np.flatnonzero(x < mu):
        assert (d[j] > left + TOL).any(), f"application {j} still fits in {left}"


@settings(max_examples=100, deadline=None)
@given(
    st.lists(st.integers(0, 9), min_size=1, max_size=3),
    st.integers(0, 40),
    st.lists(st.integers(0, 50), min_size=3, max_size=3),
)
def test_one_application_gets_exactly_as_many_jobs_as_fit(w: list[int], mu: int, c: list[int]) -> None:
    d = np.array([w + [0] * (3 - len(w))], dtype=float)
    cap = np.array(c, dtype=float)
    fit = min([mu] + [int(ci // wi) for wi, ci in zip(d[0], cap, strict=True) if wi > 0])
    assert mris_select(d, np.array([mu]), cap).tolist() == [fit]


@settings(max_examples=100, deadline=None)
@given(pools())
def test_fifo_never_exceeds_capacity_and_stops_at_the_first_misfit(case: tuple[np.ndarray, ...]) -> None:
    d, mu, cap = case
    x = fifo_select(d, mu, cap, tol=TOL)
    left = cap - x @ d
    assert (left >= -TOL).all()
    short = np.flatnonzero(x < mu)
    if len(short):
        j = short[0]
        assert (x[j + 1 :] == 0).all()
        assert (d[j] > left + TOL).any()


# -- the simulator adaptation ---------------------------------------------------------------

RES = ("cpu", "mem", "disk")


def _cluster(*machines: tuple[str, tuple[float, float, float]]) -> Cluster:
    return Cluster(
        name="test",
        resources=RES,
        config_names=tuple(n for n, _ in machines),
        counts=np.ones(len(machines), dtype=np.int64),
        capacity=np.array([c for _, c in machines]),
    )


def run(engine: str, cluster: Cluster, wl: Workload, sched: MRIS, drain: bool = False) -> SimResult:
    """``sched``'s run on ``engine`` (checked to be the engine used)."""
    return expect_engine(simulate(cluster, wl, sched, drain=drain, engine=engine), engine)


def _workload(jobs: list[tuple[float, tuple[float, float, float], float]]) -> Workload:
    """Jobs as (submit s, request, duration s)."""
    return Workload(
        name="test",
        resources=RES,
        submit=np.array([s for s, _, _ in jobs]),
        request=np.array([r for _, r, _ in jobs]),
        work=np.array([p for _, _, p in jobs]),
        job_class=np.full(len(jobs), -1),
        horizon_s=1000.0,
    )


# A blocker fills the pool until t=10 while the four applications of the example queue up.
EXAMPLE_JOBS = [
    (0.0, (12, 12, 12), 10.0),
    (1.0, (6, 2, 2), 5.0),
    (2.0, (5, 4, 8), 4.0),
    (3.0, (4, 6, 2), 7.0),
    (4.0, (2, 2, 6), 3.0),
]


def test_a_freed_machine_starts_the_mris_selection_of_the_queue(engine: str) -> None:
    res = run(engine, _cluster(("pool", (12, 12, 12))), _workload(EXAMPLE_JOBS), create("mris"), drain=True)
    # t=10: (6,2,2), (4,6,2), (2,2,6) start; (5,4,8) waits. t=13: (2,2,6) ends, free (2,4,8): still too
    # few cores. t=15: (6,2,2) ends, free (8,6,10): (5,4,8) starts.
    assert res.start.tolist() == [0.0, 10.0, 15.0, 10.0, 10.0]
    assert res.machine.tolist() == [0, 0, 0, 0, 0]


def test_a_window_of_one_degenerates_to_first_come_first_served(engine: str) -> None:
    res = run(
        engine, _cluster(("pool", (12, 12, 12))), _workload(EXAMPLE_JOBS), create("mris", mris_window=1), drain=True
    )
    # t=10: only (6,2,2) is a candidate; it starts, then (5,4,8) joins and fits; (4,6,2) does not.
    # t=14: (5,4,8) ends, free (6,10,10): (4,6,2) starts, then (2,2,6) joins and fits.
    assert res.start.tolist() == [0.0, 10.0, 10.0, 14.0, 14.0]


def test_an_arriving_job_takes_the_first_machine_in_configuration_order_that_fits(engine: str) -> None:
    cluster = _cluster(("small", (4, 4, 4)), ("big", (12, 12, 12)))
    jobs = [(0.0, (2, 2, 2), 100.0), (1.0, (3, 3, 3), 100.0), (2.0, (2, 2, 2), 100.0), (3.0, (1, 1, 1), 100.0)]
    res = run(engine, cluster, _workload(jobs), create("mris"))
    assert res.start.tolist() == [0.0, 1.0, 2.0, 3.0]
    assert res.machine.tolist() == [0, 1, 0, 1]


def test_jobs_beyond_the_window_wait_and_then_go_to_the_first_machine_where_they_fit(engine: str) -> None:
    cluster = _cluster(("big", (12, 12, 12)), ("small", (4, 4, 4)))
    jobs = [
        (0.0, (12, 12, 12), 10.0),
        (1.0, (6, 6, 6), 5.0),
        (2.0, (6, 6, 6), 5.0),
        (3.0, (1, 1, 1), 5.0),
        (4.0, (2, 2, 2), 5.0),
    ]
    # Window 2: the two (6,6,6) jobs fit nowhere until t=10; the small jobs wait behind them even
    # though machine 1 has room, then both join at t=10 and are selected together on machine 1.
    res = run(engine, cluster, _workload(jobs), create("mris", mris_window=2))
    assert res.start.tolist() == [0.0, 10.0, 10.0, 10.0, 10.0]
    assert res.machine.tolist() == [0, 0, 0, 1, 1]
    # With the default window they are candidates at once and start on arrival.
    res = run(engine, cluster, _workload(jobs), create("mris"))
    assert res.start.tolist() == [0.0, 10.0, 10.0, 3.0, 4.0]
    assert res.machine.tolist() == [0, 0, 0, 1, 1]


def test_identical_requests_form_one_application_and_start_oldest_first(engine: str) -> None:
    # Three identical (4,4,4) jobs queue behind a blocker; two fit when it ends: the two oldest.
    jobs = [
        (0.0, (12, 12, 12), 10.0),
        (1.0, (4, 4, 4), 5.0),
        (2.0, (4, 4, 4), 5.0),
        (3.0, (4, 4, 4), 5.0),
        (4.0, (4, 4, 4), 5.0),
    ]
    cluster = _cluster(("pool", (12, 12, 12)))
    res = run(engine, cluster, _workload(jobs + [(5.0, (9, 9, 9), 1.0)]), create("mris"), drain=True)
    # (4,4,4) x 4 and (9,9,9): alpha = (16+9-12)/25 each, e favours the small jobs: three of them
    # start at 10 (12 of 12 used), the fourth at 15, then (9,9,9) at 20.
    assert res.start.tolist() == [0.0, 10.0, 10.0, 10.0, 15.0, 20.0]


class _CheckedMRIS(MRIS):
    """MRIS that asserts, after every event, that no candidate clearly fits on any machine."""

    def on_arrival(self, job: int) -> None:
        super().on_arrival(job)
        self._check()

    def on_completion(self, job: int, machine: int) -> None:
        super().on_completion(job, machine)
        self._check()

    def _check(self) -> None:
        for j in self._slot_of:
            clearly = (self.sim.request[j] <= self.sim.free - 1e-9).all(axis=1)
            assert not clearly.any(), f"candidate {j} fits on machines {np.flatnonzero(clearly)} at {self.sim.now}"


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**31))
def test_a_random_overloaded_run_keeps_every_rule_and_finishes_every_job_when_drained(seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 120
    cluster = Cluster(
        name="rand",
        resources=("cpu", "mem"),
        config_names=("a", "b", "c"),
        counts=np.array([2, 1, 2]),
        capacity=np.array([[1.0, 1.0], [0.5, 1.0], [1.0, 0.25]]),
    )
    wl = Workload(
        name="rand",
        resources=("cpu", "mem"),
        submit=np.sort(rng.uniform(0, 20, n)),
        request=np.round(rng.uniform(0.01, 0.25, (n, 2)), 2),
        work=rng.exponential(5.0, n),
        job_class=np.full(n, -1),
        horizon_s=20.0,
    )
    # Window 0 (all waiting jobs) or a small one, so the backlog path runs too.
    window = int(rng.choice([0, 1, 3, 8]))
    # The engine raises on any capacity or causality breach; _CheckedMRIS on a non-maximal selection.
    # Its checks hook the specification's methods, which only the Python engine calls: the kernel
    # is held to them by making the checked run's decisions.
    res = simulate(cluster, wl, _CheckedMRIS(mris_window=window), drain=True, engine="python")
    assert res.extra["engine"] == "python"
    assert res.started_mask.all() and res.completed_mask.all()
    assert (res.start >= res.submit).all()
    kernel = expect_engine(simulate(cluster, wl, MRIS(mris_window=window), drain=True, engine="compiled"), "compiled")
    assert np.array_equal(kernel.machine, res.machine) and np.array_equal(kernel.start, res.start)


def test_mris_is_registered_and_runs_through_the_api() -> None:
    assert SCHEDULERS.get("mris") is MRIS
    out = run_objects(
        _cluster(("pool", (12, 12, 12))),
        _workload(EXAMPLE_JOBS),
        "mris",
        drain=True,
        scheduler_params={"mris_window": 64},
    )
    assert out.result.start.tolist() == [0.0, 10.0, 15.0, 10.0, 10.0]
    # 0: every waiting job is a candidate, as in the paper.
    out = run_objects(
        _cluster(("pool", (12, 12, 12))),
        _workload(EXAMPLE_JOBS),
        "mris",
        drain=True,
        scheduler_params={"mris_window": 0},
    )
    assert out.result.start.tolist() == [0.0, 10.0, 15.0, 10.0, 10.0]
    with pytest.raises(ParameterError, match="'mris_window' must be at least 0"):
        run_objects(
            _cluster(("pool", (12, 12, 12))), _workload(EXAMPLE_JOBS), "mris", scheduler_params={"mris_window": -1}
        )


@settings(max_examples=50, deadline=None)
@given(st.lists(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0]), min_size=2, max_size=2), min_size=1, max_size=40))
def test_applications_are_numpy_uniques_labels(rows: list[list[float]]) -> None:
    req = np.array(rows)
    _, inv = np.unique(req, axis=0, return_inverse=True)
    assert applications(req).tolist() == inv.reshape(-1).tolist()
