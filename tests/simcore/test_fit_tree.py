"""The compiled engine's fit tree finds the machine a scan finds (issue 16).

:func:`simcore.compiled.core.ftree_first_fit` prunes subtrees by per-resource
maxima and by maxima of weighted combinations of the resources; a pruned
subtree must never hold a machine where the job fits. Checked against the
engine's fit rule applied machine by machine, over random capacities (ties,
zeros, values equal to requests), requests (zero ones too), ranges, weights
and updates of single machines as starts and completions make them.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.compiled import core as K
from simcore.compiled.driver import FIT_TREE_K, build_fit_tree, fit_weights
from simcore.compiled.jit import njit
from simcore.core.fit import EPS


@njit
def _first_fit(core: Any, job: int, lo: int, hi: int) -> int:
    return K.ftree_first_fit(core, job, lo, hi)


@njit
def _set(core: Any, m: int) -> None:
    K.ftree_set(core, m)


def _core(free: np.ndarray[Any, Any], req: np.ndarray[Any, Any], weights: np.ndarray[Any, Any]) -> K.Core:
    """The fields of ``core`` the fit tree reads (the rest are placeholders of the right kinds)."""
    R, N = free.shape
    nodes, blocks, S = build_fit_tree(free, weights)
    dims = np.zeros(9, dtype=np.int64)
    dims[K.D_N], dims[K.D_R], dims[K.D_FTREE], dims[K.D_FT_S] = N, R, blocks, S
    f64, i64, f2 = np.zeros(1), np.zeros(1, dtype=np.int64), np.zeros((1, 1))
    fields: dict[str, Any] = dict.fromkeys(K.Core._fields, f64)
    fields.update(dict.fromkeys(("running", "last", "state", "machine_of", "config_of", "dcls", "ctr"), i64))
    fields.update(dict.fromkeys(("job_class", "tree_stack", "leaf_of", "machine_at", "pw_stack"), i64))
    fields.update(dict.fromkeys(("tab", "tab2", "tree"), f2))
    fields.update(
        free=free.reshape(-1),  # a view: updating ``free`` updates the core
        req=np.ascontiguousarray(req).reshape(-1),
        dims=dims,
        ft_nodes=nodes,
        ft_weights=np.ascontiguousarray(weights, dtype=np.float64).reshape(-1),
        ft_thr=np.zeros(S),
        tree_on=None,
        ftree_on=1,
    )
    return K.Core(**fields)


def _scan(free: np.ndarray[Any, Any], req: np.ndarray[Any, Any], job: int, lo: int, hi: int) -> int:
    """The engine's fit rule, machine by machine."""
    for m in range(max(lo, 0), min(hi, free.shape[1])):
        if all(free[r, m] >= req[job, r] - EPS for r in range(free.shape[0])):
            return m
    return -1


VALUES = [0.0, 0.1, 0.25, 0.3, 0.5, 0.75, 1.0, 2.0]


@st.composite
def cases(draw: Any) -> tuple[Any, ...]:
    R = draw(st.integers(1, 3))
    N = draw(st.integers(1, 70))
    free = np.array(draw(st.lists(st.sampled_from(VALUES), min_size=R * N, max_size=R * N))).reshape(R, N)
    J = draw(st.integers(1, 8))
    req = np.array(draw(st.lists(st.sampled_from(VALUES), min_size=J * R, max_size=J * R))).reshape(J, R)
    if draw(st.booleans()) or R == 1:
        weights = fit_weights(req, FIT_TREE_K)
    else:  # any positive weights keep the search exact
        k = draw(st.integers(1, 4))
        weights = np.array(draw(st.lists(st.sampled_from([1e-3, 0.2, 0.5, 1.0]), min_size=k * R, max_size=k * R)))
        weights = weights.reshape(k, R)
    changes = draw(
        st.lists(st.tuples(st.integers(0, N - 1), st.integers(0, R - 1), st.sampled_from(VALUES)), max_size=30)
    )
    queries = draw(
        st.lists(st.tuples(st.integers(0, J - 1), st.integers(-2, N + 2), st.integers(0, N + 3)), min_size=1)
    )
    return free, req, weights, changes, queries


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=cases())
def test_the_fit_tree_finds_the_first_machine_a_scan_finds(case: tuple[Any, ...]) -> None:
    free, req, weights, changes, queries = case
    core = _core(free, req, weights)
    for m, r, v in [(None, None, None), *changes]:
        if m is not None:
            free[r, m] = v  # a start or completion changed machine m
            _set(core, m)
        for job, lo, hi in queries:
            assert _first_fit(core, job, lo, hi) == _scan(free, req, job, lo, hi)


def test_fit_weights_point_along_the_requests() -> None:
    """One weight vector per quantile of the requests' direction, each the inverse of a typical request."""
    req = np.array([[1.0, 0.1], [1.0, 0.1], [0.1, 1.0], [0.1, 1.0]])
    w = fit_weights(req, 2)
    assert np.allclose(w, [[0.1, 1.0], [1.0, 0.1]])


def test_fit_weights_without_positive_requests_are_none() -> None:
    assert fit_weights(np.zeros((3, 2)), 4).shape == (0, 2)
    assert fit_weights(np.ones((3, 1)), 4).shape == (0, 1)
