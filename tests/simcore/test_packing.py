"""simcore.packing: first fit, orderings, utilisation, hole filling, inflation and compaction."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.errors import InputError, ParameterError
from simcore.packing import (
    Snapshot,
    aggregate_utilisation,
    compact,
    first_fit,
    hole_filling,
    inflate,
    monte_carlo_inflation,
    order_tasks,
    pack,
    picky_jobs,
)
from simcore.packing.inflation import knee

RES = ("cpu", "mem")


def snap(cap: list[list[float]], req: list[list[float]], placement: list[int] | None = None) -> Snapshot:
    n = len(req)
    return Snapshot(RES, np.array(cap, float), np.array(req, float), np.array(placement or [-1] * n), np.arange(n))


def naive_first_fit(cap: np.ndarray, req: np.ndarray) -> np.ndarray:
    free = cap.copy()
    out = []
    for q in req:
        fit = (free + 1e-9 >= q).all(axis=1)
        i = int(fit.argmax()) if fit.any() else -1
        if i >= 0:
            free[i] -= q
        out.append(i)
    return np.array(out)


def test_it_places_each_task_on_the_first_machine_that_holds_it() -> None:
    cap = np.ones((2, 2))
    req = np.array([[0.6, 0.6], [0.5, 0.5], [0.4, 0.4], [0.5, 0.5], [0.2, 0.2]])
    assert first_fit(cap.copy(), req).tolist() == [0, 1, 0, 1, -1]


def test_it_leaves_pending_what_fits_nowhere() -> None:
    assert first_fit(np.ones((2, 2)), np.full((3, 2), 0.6)).tolist() == [0, 1, -1]


@settings(max_examples=60, deadline=None)
@given(
    n_mach=st.integers(1, 12),
    shapes=st.lists(
        st.tuples(st.sampled_from([0.0, 0.1, 0.25, 0.3, 0.5]), st.sampled_from([0.1, 0.2, 0.5, 0.7])),
        min_size=1,
        max_size=40,
    ),
    seed=st.integers(0, 1000),
)
def test_vectorised_first_fit_equals_task_by_task_first_fit(
    n_mach: int, shapes: list[tuple[float, float]], seed: int
) -> None:
    rng = np.random.default_rng(seed)
    cap = rng.choice([0.25, 0.5, 1.0], size=(n_mach, 2))
    req = np.array(shapes)
    assert first_fit(cap.copy(), req).tolist() == naive_first_fit(cap, req).tolist()


def test_orderings_sort_by_decreasing_request_keeping_arrival_on_ties() -> None:
    s = snap([[1, 1], [1, 0.5]], [[0.1, 0.4], [0.3, 0.1], [0.3, 0.2], [0.2, 0.2]])
    assert order_tasks(s, "arrival").tolist() == [0, 1, 2, 3]
    assert order_tasks(s, "cpu").tolist() == [1, 2, 3, 0]
    assert order_tasks(s, "mem").tolist() == [0, 2, 3, 1]
    # median machine (1, 0.75): sums 0.633, 0.433, 0.567, 0.467
    assert order_tasks(s, "sum").tolist() == [0, 2, 3, 1]


def test_an_unknown_ordering_names_the_valid_ones() -> None:
    with pytest.raises(ParameterError, match="arrival, cpu, mem, sum"):
        order_tasks(snap([[1, 1]], [[0.1, 0.1]]), "random")


def test_an_empty_snapshot_is_refused() -> None:
    with pytest.raises(InputError, match="no tasks"):
        snap([[1, 1]], [])


def test_aggregate_utilisation_counts_placed_tasks_only() -> None:
    s = snap([[1, 1], [1, 1]], [[0.5, 0.2], [0.3, 0.3], [0.9, 0.9]], [0, 1, -1])
    u = aggregate_utilisation(s)
    assert u["cpu"] == pytest.approx(0.4) and u["mem"] == pytest.approx(0.25)


def test_hole_filling_counts_units_per_machine_in_both_resources_at_once() -> None:
    # median machine (1, 1), U = 0.25: machine 0 has (0.5, 0.8) free -> 2 units; machine 1 is empty -> 4.
    s = snap([[1, 1], [1, 1]], [[0.5, 0.2]], [0])
    h = hole_filling(s, 0.25)
    assert h["units"] == 6
    assert h["utilisation"]["cpu"] == pytest.approx((0.5 + 1.5) / 2)
    assert h["utilisation"]["mem"] == pytest.approx((0.2 + 1.5) / 2)


def test_hole_filling_refuses_a_non_positive_unit() -> None:
    with pytest.raises(ParameterError, match="unit size"):
        hole_filling(snap([[1, 1]], [[0.1, 0.1]]), 0.0)


def test_horizontal_inflation_clones_whole_jobs() -> None:
    s = snap([[1, 1], [1, 1]], [[0.4, 0.4], [0.4, 0.4]])
    steps = inflate(s, [1.0, 2.0, 3.0], rng=np.random.default_rng(0))
    assert [x.tasks for x in steps] == [2, 4, 6]
    assert [x.pending for x in steps] == [0, 0, 2]
    assert [x.utilisation["cpu"] for x in steps] == pytest.approx([0.4, 0.8, 0.8])
    assert knee(steps) == 2.0


@settings(max_examples=25, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    n_mach=st.integers(1, 8),
    n_tasks=st.integers(1, 40),
    ordering=st.sampled_from(["arrival", "cpu", "sum"]),
)
def test_horizontal_inflation_equals_first_fit_of_originals_then_clones_task_by_task(
    seed: int, n_mach: int, n_tasks: int, ordering: str
) -> None:
    # The originals are placed once and each factor continues from a copy of their state (issue 28): the
    # outcome must be first fit of the whole sequence, task by task. Few request shapes: runs of equal
    # requests cross the originals/clones boundary.
    rng = np.random.default_rng(seed)
    shapes = np.array([[0.1, 0.2], [0.25, 0.1], [0.5, 0.5], [0.3, 0.0]])
    s = snap(rng.choice([0.5, 1.0], size=(n_mach, 2)).tolist(), shapes[rng.integers(0, 4, n_tasks)].tolist())
    factors = [1.0, 1.3, 1.7, 2.0]
    steps = inflate(s, factors, ordering=ordering, rng=np.random.default_rng(seed))
    from simcore.packing.inflation import Inflater

    inf = Inflater.of(
        s,
        mode="horizontal",
        conforming_only=False,
        clip=True,
        size_threshold=0.6,
        fit_threshold=0.6,
        rng=np.random.default_rng(seed),
    )
    for f, step in zip(factors, steps, strict=True):
        src = inf.clones(f)
        clones = Snapshot(RES, s.capacity, s.request[src], np.full(len(src), -1), s.job[src]) if len(src) else None
        later = s.request[src][order_tasks(clones, ordering)] if clones else np.zeros((0, 2))
        seq = np.concatenate((s.request[order_tasks(s, ordering)], later))
        assert step.tasks == len(seq)
        assert step.pending == int((naive_first_fit(s.capacity, seq) < 0).sum())


def test_vertical_inflation_clips_at_the_largest_machine_unless_told_not_to() -> None:
    s = snap([[1, 1], [1, 1]], [[0.4, 0.4], [0.4, 0.4]])
    clipped = inflate(s, [2.0, 3.0], mode="vertical", rng=np.random.default_rng(0))
    assert [x.pending for x in clipped] == [0, 0]
    assert [x.utilisation["mem"] for x in clipped] == pytest.approx([0.8, 1.0])
    unclipped = inflate(s, [3.0], mode="vertical", clip=False, rng=np.random.default_rng(0))
    assert unclipped[0].pending == 2


def test_a_job_is_picky_when_a_task_is_big_or_fits_on_few_machines() -> None:
    # median (1, 1); task 1 is bigger than 60% of it; task 2 fits only on the one big machine of 3.
    s = snap([[1, 1], [1, 1], [2, 2]], [[0.1, 0.1], [0.7, 0.1], [1.5, 0.1]])
    assert picky_jobs(s).tolist() == [False, True, True]
    assert picky_jobs(s, size_threshold=0.8).tolist() == [False, False, True]


def test_conforming_only_inflation_leaves_picky_jobs_alone() -> None:
    s = snap([[1, 1], [1, 1], [1, 1]], [[0.1, 0.1], [0.7, 0.7]])
    steps = inflate(s, [2.0], conforming_only=True, rng=np.random.default_rng(0))
    assert steps[0].tasks == 3


def test_monte_carlo_inflation_stops_at_the_pending_threshold() -> None:
    s = snap([[1, 1], [1, 1]], [[0.3, 0.3], [0.3, 0.3]])
    out = monte_carlo_inflation(s, 0.1, trials=3, rng=np.random.default_rng(0))
    # 6 tasks fit (3 per machine); the 7th goes pending: 1/7 >= 0.1.
    assert [t["tasks"] for t in out] == [7, 7, 7]
    assert [t["pending"] for t in out] == [1, 1, 1]
    assert out[0]["utilisation"]["cpu"] == pytest.approx(0.9)


def test_compaction_finds_the_shortest_prefix_on_identical_machines() -> None:
    s = snap([[1, 1]] * 4, [[0.5, 0.5]] * 5)
    res = compact(s, [0.0, 0.2], trials=5, rng=np.random.default_rng(0))
    assert res.sizes[0.0] == [3] * 5
    assert res.sizes[0.2] == [2] * 5  # 1 of 5 pending is allowed
    assert res.summary(0.0)["p90_fraction"] == pytest.approx(0.75)


def test_compaction_expands_the_cluster_when_the_workload_does_not_fit() -> None:
    res = compact(snap([[1, 1]], [[0.5, 0.5]] * 3), [0.0], trials=2, rng=np.random.default_rng(0))
    assert res.copies == 2
    assert res.sizes[0.0] == [2, 2]
    assert res.summary(0.0)["p90_fraction"] == pytest.approx(2.0)


def test_compaction_refuses_tau_outside_zero_one() -> None:
    with pytest.raises(ParameterError, match="tau"):
        compact(snap([[1, 1]], [[0.5, 0.5]]), [1.0], rng=np.random.default_rng(0))


def _random_snapshot(seed: int, n_mach: int, n_tasks: int) -> Snapshot:
    rng = np.random.default_rng(seed)
    cap = rng.choice([0.25, 0.5, 1.0], size=(n_mach, 2))
    req = rng.choice([0.05, 0.1, 0.2, 0.3], size=(n_tasks, 2))
    return Snapshot(RES, cap, req, np.full(n_tasks, -1), np.arange(n_tasks))


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000), n_mach=st.integers(2, 15), n_tasks=st.integers(1, 40))
def test_compaction_equals_repacking_every_prefix(seed: int, n_mach: int, n_tasks: int) -> None:
    s = _random_snapshot(seed, n_mach, n_tasks)
    tau = 0.1
    res = compact(s, [tau], trials=2, rng=np.random.default_rng(seed))
    n = s.n_machines * res.copies
    cap = np.concatenate([s.capacity] * res.copies)
    perms = np.random.default_rng(seed)
    for size in res.sizes[tau]:
        perm = perms.permutation(n)
        ok = [
            m
            for m in range(n + 1)
            if np.count_nonzero(naive_first_fit(cap[perm[:m]], s.request) < 0) / s.n_tasks <= tau
        ]
        # Algorithm 3 starts with max = len(p) + 1: a permutation on which even all machines leave
        # too many pending (first fit depends on the machine order) reports n + 1.
        assert size == (min(ok) if ok else n + 1)


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 10_000),
    taus=st.lists(st.floats(0.0, 0.5), min_size=2, max_size=5, unique=True),
)
def test_compaction_never_grows_as_tau_grows(seed: int, taus: list[float]) -> None:
    s = _random_snapshot(seed, 12, 40)
    res = compact(s, sorted(taus), trials=3, rng=np.random.default_rng(seed))
    p90 = [res.summary(t)["p90_machines"] for t in res.taus]
    assert all(a >= b for a, b in zip(p90, p90[1:], strict=False))
    for trial in range(3):
        per = [res.sizes[t][trial] for t in res.taus]
        assert all(a >= b for a, b in zip(per, per[1:], strict=False))


def test_same_seed_gives_identical_results() -> None:
    s = _random_snapshot(7, 20, 60)
    a = compact(s, [0.0, 0.01], trials=5, rng=np.random.default_rng(3))
    b = compact(s, [0.0, 0.01], trials=5, rng=np.random.default_rng(3))
    assert a.sizes == b.sizes
    ia = inflate(s, [1.0, 1.3, 1.7], rng=np.random.default_rng(3))
    ib = inflate(s, [1.0, 1.3, 1.7], rng=np.random.default_rng(3))
    assert ia == ib
    ma = monte_carlo_inflation(s, 0.05, trials=3, rng=np.random.default_rng(3))
    assert ma == monte_carlo_inflation(s, 0.05, trials=3, rng=np.random.default_rng(3))


def test_compacted_size_is_about_one_over_the_conforming_inflation_limit() -> None:
    # The paper's cross-check (section III-D): a conforming workload of small tasks on the Table 1 machines.
    from simcore.presets import CLUSTERS

    cluster = CLUSTERS.get("google-balanced").build(machines_per_config=30)
    rng = np.random.default_rng(11)
    shapes = rng.uniform(0.005, 0.04, (60, 2)).round(4)
    req = shapes[rng.integers(0, 60, 3000)]
    s = Snapshot(RES, cluster.machine_capacity, req, np.full(len(req), -1), np.arange(len(req)))
    assert not picky_jobs(s).any()
    factors = [round(1 + 0.01 * k, 2) for k in range(0, 200)]
    f = knee(inflate(s, factors, conforming_only=True, rng=np.random.default_rng(0)))
    size = compact(s, [0.0], trials=11, rng=np.random.default_rng(0)).summary(0.0)["p90_fraction"]
    assert abs(size - 1 / f) <= 0.1 * (1 / f)


def test_pack_repacks_with_an_ordering_and_keeps_the_tasks() -> None:
    s = snap([[1, 1], [1, 1]], [[0.3, 0.3], [0.7, 0.7], [0.6, 0.6], [0.4, 0.4]])
    assert pack(s, "arrival").placement.tolist() == [0, 0, 1, 1]
    # cpu order 0.7, 0.6, 0.4, 0.3: 0.7 -> m0, 0.6 -> m1, 0.4 -> m1, 0.3 -> m0
    assert pack(s, "cpu").placement.tolist() == [0, 0, 1, 1]
