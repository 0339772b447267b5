"""LoTES stages 1 and 2: K^j, the machine assignment LP (eq. 6-10) and its rounding."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.model import ClassTable, Cluster
from simcore.presets.google import google_2011, google_balanced, google_like_classes
from simcore.schedulers.lotes.assignment import (
    assignment_from_counts,
    plan_offline,
    plan_to_dict,
    round_assignment,
)
from simcore.schedulers.lotes.stage1 import solve_stage1


def test_rounding_rounds_up_the_q_most_fractional_values() -> None:
    # floors 1, 2, 0 leave q = 4 - 3 = 1 machine; 0.5 is the most fractional.
    assert round_assignment(np.array([1.5, 2.3, 0.2]), 4).tolist() == [2, 2, 0]
    # q = 1 and a tie of fractionalities 0.5, 0.5: the first (stable order) goes up.
    assert round_assignment(np.array([0.5, 1.5, 3.0]), 5).tolist() == [1, 1, 3]
    # q = 1: 0.5 beats 0.25 and 0.25.
    assert round_assignment(np.array([0.25, 1.25, 2.5]), 4).tolist() == [0, 1, 3]
    # LP noise is not fractionality.
    assert round_assignment(np.array([3.0 - 1e-12, 1e-12]), 3).tolist() == [3, 0]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(0, 50, allow_nan=False, allow_subnormal=False), min_size=1, max_size=12), st.integers(0, 5))
def test_rounding_keeps_the_machine_count(values: list[float], extra: int) -> None:
    x = np.array(values)
    # Scale to an integer total n, as constraint (9) guarantees.
    n = int(np.ceil(x.sum())) + extra
    x = x * (n / x.sum()) if x.sum() > 1e-6 else np.full(len(x), n / len(x))
    r = round_assignment(x, n)
    assert r.sum() == n
    assert np.all(np.abs(r - x) < 1.0 + 1e-9)
    assert np.all(r >= 0)


def _figure5_system(machines: int = 10) -> tuple[Cluster, ClassTable]:
    cluster = Cluster("fig5", ("cpu",), ("only",), np.array([machines]), np.array([[7.0]]))
    classes = ClassTable(("two", "three"), np.array([[2.0], [3.0]]), np.ones((2, 1)), np.array([0.5, 0.5]))
    return cluster, classes


def test_assignment_lp_solves_a_hand_computed_instance() -> None:
    # Bins {3x2}, {2x2,1x3}, {2x3}; alpha = 1/2 each, mu = 1. The LP puts x = (0, 20/3, 10/3):
    # lambda/2 <= 2*(20/3) and lambda/2 <= 20/3 + 2*(10/3) -> lambda = 80/3.
    cluster, classes = _figure5_system()
    plan = plan_offline(cluster, classes)
    a = plan.assignment
    assert plan.stage1.lambda_star == pytest.approx(28.0)  # fluid: 70 cores / (0.5*2 + 0.5*3)
    assert a.lambda_lp == pytest.approx(80 / 3)
    by_bin = {tuple(b): x for b, x in zip(a.bins[0].tolist(), a.x_lp[0], strict=True)}
    assert by_bin[(2, 1)] == pytest.approx(20 / 3)
    assert by_bin[(0, 2)] == pytest.approx(10 / 3)
    # Rounding: q = 1, the 2/3 goes up -> x = (0, 7, 3): slots 14 and 13, lambda = 2 * 13.
    rounded = {tuple(b): int(x) for b, x in zip(a.bins[0].tolist(), a.x[0], strict=True)}
    assert rounded == {(3, 0): 0, (2, 1): 7, (0, 2): 3}
    assert a.slots[0].tolist() == [14.0, 13.0]
    assert a.lambda_rounded == pytest.approx(26.0)
    assert a.lambda_rounded <= a.lambda_lp <= plan.stage1.lambda_star


def test_google_2011_plan_keeps_machine_counts_and_lambda_below_stage_1() -> None:
    cluster = google_2011()
    plan = plan_offline(cluster, google_like_classes(cluster))
    a = plan.assignment
    for j in range(cluster.n_configs):
        assert int(a.x[j].sum()) == int(cluster.counts[j])
        assert a.x_lp[j].sum() == pytest.approx(cluster.counts[j])
    assert plan.stage1.lambda_star == pytest.approx(1314.11, abs=0.01)
    assert a.lambda_rounded <= a.lambda_lp + 1e-9 <= plan.stage1.lambda_star + 1e-6
    # Seeded golden values (HiGHS vertex solution; see the report for the paper's Table 1 column).
    assert [len(k) for k in plan.stage1.classes_of] == [2, 2, 1, 3, 2, 1, 1, 1, 1, 1]
    assert a.lambda_lp == pytest.approx(1306.1186, abs=1e-3)
    assert a.lambda_rounded == pytest.approx(1305.8776, abs=1e-3)
    # rho: each class's shares sum to one over the configurations.
    assert np.allclose(a.rho.sum(axis=0), 1.0)


def test_offline_stages_plan_every_machine_of_google_balanced() -> None:
    # Its speed is measured by `simcore bench` (the LoTES runs include the offline stages).
    cluster = google_balanced(1000)
    plan = plan_offline(cluster, google_like_classes(cluster))
    assert [int(x.sum()) for x in plan.assignment.x] == [1000] * 10
    assert plan.assignment.lambda_rounded <= plan.stage1.lambda_star


def test_a_class_whose_mean_fits_no_machine_of_its_k_j_is_widened_to_where_it_fits() -> None:
    # Config "wide" has lots of memory but little cpu per machine; the fluid LP likes
    # to give the class its cpu there, yet one job (cpu 0.6) fits only on "tall".
    cluster = Cluster("c", ("cpu", "mem"), ("wide", "tall"), np.array([100, 1]), np.array([[0.5, 1.0], [1.0, 0.7]]))
    classes = ClassTable(("big",), np.array([[0.6, 0.6]]), np.ones((1, 2)), np.ones(1))
    plan = plan_offline(cluster, classes)
    assert 0 in plan.classes_of[1]
    assert plan.assignment.lambda_rounded == pytest.approx(1.0)  # one slot on the one tall machine


def test_stage1_k_j_are_the_classes_with_positive_delta() -> None:
    cluster = google_2011()
    s1 = solve_stage1(cluster, google_like_classes(cluster))
    for j, ks in enumerate(s1.classes_of):
        assert list(ks) == [k for k in range(4) if s1.allocation.delta[j, k].max() > 1e-9]


def test_assignment_from_counts_recomputes_delta_lambda_and_rho() -> None:
    cluster, classes = _figure5_system(4)
    bins = [np.array([[3, 0], [0, 2]])]
    a = assignment_from_counts(cluster, classes, bins, [np.array([1, 3])])
    assert a.slots[0].tolist() == [3.0, 6.0]
    assert a.lambda_rounded == pytest.approx(6.0)  # class "two": 3 slots * mu 1 / alpha 0.5
    assert a.rho.tolist() == [[1.0, 1.0]]


def test_offline_solution_dict_is_json_ready() -> None:
    import json

    cluster = google_2011()
    plan = plan_offline(cluster, google_like_classes(cluster))
    d = json.loads(json.dumps(plan_to_dict(plan, cluster)))
    assert d["lambda_stage1"] >= d["lambda_assignment_lp"] >= d["lambda_rounded"]
    assert len(d["configs"]) == 10
    c0 = d["configs"][0]
    assert sum(b["machines"] for b in c0["bins"]) == 6732
    assert c0["n_bins"] == d["bins_per_config"][0]
    assert all(set(b["counts"]) <= set(c0["K_used"]) for b in c0["bins"])


@st.composite
def systems(draw: st.DrawFn) -> tuple[Cluster, ClassTable]:
    M = draw(st.integers(1, 3))
    R = draw(st.integers(1, 2))
    K = draw(st.integers(1, 3))
    caps = np.array([[draw(st.sampled_from([0.25, 0.5, 0.75, 1.0])) for _ in range(R)] for _ in range(M)])
    counts = np.array([draw(st.integers(1, 40)) for _ in range(M)])
    req = np.array([[draw(st.floats(0.02, 0.6)) for _ in range(R)] for _ in range(K)])
    rates = np.array([[draw(st.floats(0.1, 10.0)) for _ in range(M)] for _ in range(K)])
    alpha = np.array([draw(st.floats(0.05, 1.0)) for _ in range(K)])
    cluster = Cluster("h", tuple(f"r{i}" for i in range(R)), tuple(f"m{j}" for j in range(M)), counts, caps)
    return cluster, ClassTable(tuple(f"c{k}" for k in range(K)), req, rates, alpha / alpha.sum())


@settings(max_examples=60, deadline=None)
@given(systems())
def test_rounded_plans_keep_machine_counts_and_never_beat_the_lps(system: tuple[Cluster, ClassTable]) -> None:
    cluster, classes = system
    # Every class must fit on some machine, else there is nothing to plan (a ParameterError).
    fits = (classes.requests[:, None, :] <= cluster.capacity[None, :, :]).all(axis=2).any(axis=1)
    if not fits.all():
        return
    plan = plan_offline(cluster, classes)
    a = plan.assignment
    for j in range(cluster.n_configs):
        assert int(a.x[j].sum()) == int(cluster.counts[j])
        assert np.all(np.abs(a.x[j] - a.x_lp[j]) < 1.0 + 1e-6)
    assert a.lambda_rounded <= a.lambda_lp * (1 + 1e-7) + 1e-9
    assert a.lambda_lp <= plan.stage1.lambda_star * (1 + 1e-7) + 1e-9
