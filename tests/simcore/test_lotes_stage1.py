"""LoTES stage 1: K^j from the optimal vertex or from a largest-support optimum (k_sets)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore import api
from simcore.capacity import allocation_problem
from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster
from simcore.presets.google import google_2011, google_like_classes
from simcore.schedulers.lotes.assignment import plan_offline, plan_to_dict
from simcore.schedulers.lotes.stage1 import FACE_TOL, solve_stage1


def _pair_maxima(cluster: Cluster, classes: ClassTable) -> np.ndarray:
    """Independent check: per pair, the largest share max_l delta_jkl over the optimal face (one LP each)."""
    lp = allocation_problem(cluster, classes)
    obj = np.zeros(lp.n_vars)
    obj[0] = -1.0
    lam = lp.solve(obj)[0]
    w = lp.coef.max(axis=2)
    out = np.zeros(lp.shape)
    for v, (j, k) in enumerate(lp.pairs):
        o = np.zeros(lp.n_vars)
        o[1 + v] = -w[j, k]
        out[j, k] = lp.solve(o, lambda_min=lam)[1 + v] * w[j, k]
    return out


def _assert_optimal(throughput: np.ndarray, delta: np.ndarray, classes: ClassTable, lam: float) -> None:
    served = throughput.sum(axis=0)
    assert np.all(served >= lam * classes.proportions * (1 - 1e-9) - 1e-12)  # (2) at lambda*
    assert np.all(delta.sum(axis=1) <= 1 + 1e-9)  # (4)
    assert np.all(delta >= 0)


def test_interior_takes_every_pair_of_a_hand_computed_optimal_face() -> None:
    # Two one-machine configurations of capacity 1, two classes of request 1, mu = 1, alpha = 1/2 each.
    # lambda* = 2 and the optimal face is y = [[t, 1-t], [1-t, t]], t in [0, 1]: a vertex (t = 0 or 1)
    # gives each configuration one class, the interior (HiGHS-independent) both.
    cluster = Cluster("two", ("cpu",), ("a", "b"), np.array([1, 1]), np.array([[1.0], [1.0]]))
    classes = ClassTable(("x", "y"), np.array([[1.0], [1.0]]), np.ones((2, 2)), np.array([0.5, 0.5]))
    vertex = solve_stage1(cluster, classes)
    interior = solve_stage1(cluster, classes, k_sets="interior")
    assert vertex.lambda_star == pytest.approx(2.0)
    assert [len(k) for k in vertex.classes_of] == [1, 1]
    assert interior.lambda_star == vertex.lambda_star
    assert interior.classes_of == ((0, 1), (0, 1))
    assert interior.vertex_classes_of == vertex.classes_of
    # The average of the vertex and the one face LP: t = 1/2.
    assert interior.face_lps == 1
    assert interior.allocation.throughput.tolist() == [[0.5, 0.5], [0.5, 0.5]]


def test_interior_on_google_2011_keeps_lambda_and_widens_k_j_to_the_optimal_face() -> None:
    cluster = google_2011()
    classes = google_like_classes(cluster)
    vertex = solve_stage1(cluster, classes)
    interior = solve_stage1(cluster, classes, k_sets="interior")
    assert interior.lambda_star == vertex.lambda_star == pytest.approx(1314.11, abs=0.01)
    assert interior.k_sets == "interior" and vertex.k_sets == "vertex" and vertex.face_lps == 0
    for big, small in zip(interior.classes_of, vertex.classes_of, strict=True):
        assert set(small) <= set(big)
    # Measured: 4 face LPs; every class fits the optimum on 7 configurations, only class 4
    # (the big one, 0.20 cores) on the three memory-poor ones (G6, G7, G10). Vertex: 2,2,1,3,2,1,1,1,1,1.
    assert interior.face_lps == 4
    assert [len(k) for k in interior.classes_of] == [4, 4, 4, 4, 4, 1, 1, 4, 4, 1]
    assert interior.classes_of[5] == interior.classes_of[6] == interior.classes_of[9] == (3,)
    # The interior point is itself optimal, and K^j is read off its delta as for the vertex.
    a = interior.allocation
    _assert_optimal(a.throughput, a.delta, classes, interior.lambda_star)
    assert tuple(tuple(a.classes_of(j)) for j in range(10)) == interior.classes_of
    # Exactly the pairs that some optimal solution can make positive (one LP per pair).
    maxima = _pair_maxima(cluster, classes)
    assert ((maxima > FACE_TOL) == a.delta.max(axis=2).astype(bool)).all()


def test_interior_plan_on_google_2011_has_more_bins_and_a_higher_stage_2_lambda() -> None:
    cluster = google_2011()
    plan = plan_offline(cluster, google_like_classes(cluster), k_sets="interior")
    a = plan.assignment
    for j in range(cluster.n_configs):
        assert int(a.x[j].sum()) == int(cluster.counts[j])
        assert a.x_lp[j].sum() == pytest.approx(cluster.counts[j])
        assert np.all(np.abs(a.x[j] - a.x_lp[j]) < 1.0 + 1e-6)
    assert a.lambda_rounded <= a.lambda_lp + 1e-9 <= plan.stage1.lambda_star + 1e-6
    # Seeded golden values (vertex: 155 bins, lambda_lp 1306.1186, rounded 1305.8776).
    assert [len(b) for b in a.bins] == [139, 74, 160, 812, 29, 1, 1, 160, 409, 1]
    assert a.lambda_lp == pytest.approx(1314.0114, abs=1e-3)
    assert a.lambda_rounded == pytest.approx(1313.8889, abs=1e-3)
    d = json.loads(json.dumps(plan_to_dict(plan, cluster)))
    assert d["k_sets"] == "interior"
    assert d["K_sizes"] == [4, 4, 4, 4, 4, 1, 1, 4, 4, 1]
    assert d["K_sizes_vertex"] == [2, 2, 1, 3, 2, 1, 1, 1, 1, 1]
    assert d["stage1_face_lps"] == 4
    assert sum(d["bins_per_config"]) == 1786


def test_the_default_plan_reports_the_vertex() -> None:
    cluster = google_2011()
    d = plan_to_dict(plan_offline(cluster, google_like_classes(cluster)), cluster)
    assert d["k_sets"] == "vertex"
    assert d["K_sizes"] == d["K_sizes_vertex"] == [2, 2, 1, 3, 2, 1, 1, 1, 1, 1]
    assert d["stage1_face_lps"] == 0


def test_the_bin_guard_still_stops_an_interior_plan_and_says_why() -> None:
    cluster = google_2011()
    with pytest.raises(
        ParameterError,
        match=r"configuration 3 \('G4'\).*max_bins=500.*k_sets='interior' gives "
        r"K\^j sizes 4, 4, 4, 4, 4, 1, 1, 4, 4, 1",
    ):
        plan_offline(cluster, google_like_classes(cluster), k_sets="interior", max_bins=500)
    # The vertex plan fits under the same limit (its largest configuration has 129 bins).
    plan_offline(cluster, google_like_classes(cluster), max_bins=500)


def test_an_unknown_k_sets_choice_is_refused() -> None:
    cluster = google_2011()
    with pytest.raises(ParameterError, match="k_sets must be one of vertex, interior; got 'middle'"):
        solve_stage1(cluster, google_like_classes(cluster), k_sets="middle")


def test_the_scheduler_takes_k_sets_and_reports_it() -> None:
    out = api.run(
        api.RunSpec(
            cluster="google-2011",
            workload="google-like",
            scheduler="lotes",
            load=0.5,
            hours=5 / 3600,
            scheduler_params={"k_sets": "interior"},
        )
    )
    assert out.offline is not None
    assert out.offline["k_sets"] == "interior"
    assert out.offline["K_sizes"] == [4, 4, 4, 4, 4, 1, 1, 4, 4, 1]
    assert out.offline["lambda_assignment_lp"] == pytest.approx(1314.0114, abs=1e-3)
    assert out.summary["completed"] + out.summary["running_at_end"] == out.summary["started"]


@st.composite
def systems(draw: st.DrawFn) -> tuple[Cluster, ClassTable]:
    M = draw(st.integers(1, 3))
    R = draw(st.integers(1, 2))
    K = draw(st.integers(1, 3))
    # Few distinct values make ties, hence large optimal faces, common.
    caps = np.array([[draw(st.sampled_from([0.25, 0.5, 1.0])) for _ in range(R)] for _ in range(M)])
    counts = np.array([draw(st.integers(1, 4)) for _ in range(M)])
    req = np.array([[draw(st.sampled_from([0.05, 0.1, 0.2])) for _ in range(R)] for _ in range(K)])
    rates = np.array([[draw(st.sampled_from([0.5, 1.0, 2.0])) for _ in range(M)] for _ in range(K)])
    alpha = np.array([draw(st.sampled_from([1.0, 2.0])) for _ in range(K)])
    cluster = Cluster("h", tuple(f"r{i}" for i in range(R)), tuple(f"m{j}" for j in range(M)), counts, caps)
    return cluster, ClassTable(tuple(f"c{k}" for k in range(K)), req, rates, alpha / alpha.sum())


@settings(max_examples=40, deadline=None)
@given(systems())
def test_interior_k_j_is_the_optimal_face_support_on_random_systems(system: tuple[Cluster, ClassTable]) -> None:
    cluster, classes = system
    vertex = solve_stage1(cluster, classes)
    interior = solve_stage1(cluster, classes, k_sets="interior")
    assert interior.lambda_star == vertex.lambda_star
    for big, small in zip(interior.classes_of, vertex.classes_of, strict=True):
        assert set(small) <= set(big)
    a = interior.allocation
    _assert_optimal(a.throughput, a.delta, classes, interior.lambda_star)
    support = np.zeros((cluster.n_configs, classes.n_classes), dtype=bool)
    for j, ks in enumerate(interior.classes_of):
        support[j, list(ks)] = True
    assert (support == (_pair_maxima(cluster, classes) > FACE_TOL)).all()
