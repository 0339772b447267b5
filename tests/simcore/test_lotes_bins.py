"""Algorithm 1 (LoTES section 4.2): non-dominated bins."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster
from simcore.schedulers.lotes.bins import config_bins, nondominated_bins


def _as_set(bins: np.ndarray) -> set[tuple[int, ...]]:
    return {tuple(int(v) for v in row) for row in bins}


def test_it_finds_exactly_the_three_bins_of_figure_5() -> None:
    # One resource of capacity 7; class 1 needs 2 cores, class 2 needs 3.
    bins = nondominated_bins(np.array([7.0]), np.array([[2.0], [3.0]]))
    assert _as_set(bins) == {(3, 0), (2, 1), (0, 2)}
    assert len(bins) == 3  # no duplicates, and not the dominated {1x2, 1x3} Algorithm 1 prints


def test_it_returns_the_empty_bin_when_no_class_is_considered_or_fits() -> None:
    assert nondominated_bins(np.array([1.0, 1.0]), np.zeros((0, 2))).shape == (1, 0)
    assert _as_set(nondominated_bins(np.array([1.0]), np.array([[2.0]]))) == {(0,)}


def test_it_packs_exact_fits_despite_floating_point() -> None:
    # 0.1 * 3 > 0.3 in floating point; three jobs of 0.1 must still fit in 0.3.
    assert _as_set(nondominated_bins(np.array([0.3]), np.array([[0.1]]))) == {(3,)}


def test_it_refuses_to_enumerate_beyond_max_bins_and_names_the_configuration() -> None:
    cap = np.array([1.0, 1.0])
    req = np.full((6, 2), 0.01)
    with pytest.raises(ParameterError, match=r"configuration 3 \('big'\).*at least \d+ candidate bins.*max_bins=1000"):
        nondominated_bins(cap, req, max_bins=1000, label="configuration 3 ('big')")


def test_config_bins_puts_counts_in_the_columns_of_k_j() -> None:
    cluster = Cluster("c", ("cpu",), ("a", "b"), np.array([1, 1]), np.array([[7.0], [4.0]]))
    classes = ClassTable(("x", "y", "z"), np.array([[2.0], [5.0], [3.0]]), np.ones((3, 2)), np.ones(3) / 3)
    a, b = config_bins(cluster, classes, ((0, 2), (1,)))
    assert _as_set(a) == {(3, 0, 0), (2, 0, 1), (0, 0, 2)}
    assert _as_set(b) == {(0, 0, 0)}  # class y (5) does not fit in 4: only the empty bin


def _brute_force(cap: np.ndarray, req: np.ndarray) -> set[tuple[int, ...]]:
    eps = 1e-9
    limits = []
    for r in req:
        pos = r > 0
        limits.append(int(np.floor(((cap[pos] + eps) / r[pos]).min())))
    out = set()
    for counts in itertools.product(*(range(m + 1) for m in limits)):
        used = np.array(counts, dtype=float) @ req
        if np.any(used > cap + eps):
            continue
        rem = cap - used
        if not any(np.all(r <= rem + eps) for r in req):
            out.add(tuple(counts))
    return out


@st.composite
def instances(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray]:
    n_res = draw(st.integers(1, 2))
    n_cls = draw(st.integers(1, 4))
    cap = np.array([draw(st.integers(1, 12)) for _ in range(n_res)], dtype=float)
    req = np.array([[draw(st.integers(0, 6)) for _ in range(n_res)] for _ in range(n_cls)], dtype=float)
    for row in req:  # every class requests something
        if row.max() == 0:
            row[0] = 1.0
    return cap, req


@settings(max_examples=150, deadline=None)
@given(instances())
def test_enumerated_bins_are_feasible_non_dominated_and_complete(inst: tuple[np.ndarray, np.ndarray]) -> None:
    cap, req = inst
    bins = nondominated_bins(cap, req)
    for row in bins:
        used = row.astype(float) @ req
        assert np.all(used <= cap + 1e-9)  # feasible
        rem = cap - used
        assert not any(np.all(r <= rem + 1e-9) for r in req)  # adding any class violates capacity
    assert len(_as_set(bins)) == len(bins)
    assert _as_set(bins) == _brute_force(cap, req)
