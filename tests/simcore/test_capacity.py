"""The allocation LP (LoTES stage 1): worked examples, hand-solved instances, invariants."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.capacity import allocation_lp
from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster
from simcore.presets import CLUSTERS
from simcore.presets.google import google_like_classes


def one_config(count: int, capacity: list[float], resources: tuple[str, ...] = ("cpu",)) -> Cluster:
    return Cluster("c", resources, ("only",), np.array([count]), np.array([capacity]))


def test_it_reproduces_the_worked_example_of_section_4_1() -> None:
    # Two machines of capacity 5, jobs of size 3 served at one job per minute
    # per machine: the fluid relaxation pools 10 units, 10/3 jobs at a time,
    # so 10/3 jobs per minute (the real system manages only 2).
    cluster = one_config(2, [5.0])
    classes = ClassTable(("job",), np.array([[3.0]]), np.array([[1.0 / 60.0]]), np.array([1.0]))
    alloc = allocation_lp(cluster, classes)
    assert alloc.lambda_star * 60.0 == pytest.approx(10.0 / 3.0, rel=1e-9)
    assert alloc.delta[0, 0, 0] == pytest.approx(1.0)
    assert alloc.classes_of(0) == [0]


def test_google_2011_with_google_like_classes_gives_1314_11_jobs_per_second() -> None:
    cluster = CLUSTERS.get("google-2011").build()
    alloc = allocation_lp(cluster, google_like_classes(cluster))
    assert alloc.lambda_star == pytest.approx(1314.11, abs=0.005)
    # Constraint (2) holds with equality at the optimum for every class.
    served = alloc.throughput.sum(axis=0)
    assert served == pytest.approx(alloc.lambda_star * np.array([0.23, 0.46, 0.30, 0.01]), rel=1e-6)


def test_it_pairs_each_class_with_the_configuration_shaped_like_it() -> None:
    # Config A (cpu 4, mem 2), config B (cpu 2, mem 4); class X needs (2, 1),
    # class Y (1, 2), half of the jobs each, one job per second per slot.
    # Every job averages 1.5 cpu and 1.5 mem against 6 + 6 in total, so
    # lambda <= 4; X on A and Y on B reaches it with both machines full:
    # y_AX = y_BY = 2 jobs/s, nothing else.
    cluster = Cluster("two", ("cpu", "mem"), ("A", "B"), np.array([1, 1]), np.array([[4.0, 2.0], [2.0, 4.0]]))
    classes = ClassTable(("X", "Y"), np.array([[2.0, 1.0], [1.0, 2.0]]), np.ones((2, 2)), np.array([0.5, 0.5]))
    alloc = allocation_lp(cluster, classes)
    assert alloc.lambda_star == pytest.approx(4.0, rel=1e-9)
    assert alloc.throughput == pytest.approx(np.array([[2.0, 0.0], [0.0, 2.0]]), abs=1e-9)
    assert alloc.classes_of(0) == [0]
    assert alloc.classes_of(1) == [1]
    # delta_jkl: A gives X all of its cpu and memory (2 jobs x (2, 1) / (4, 2)).
    assert alloc.delta[0, 0] == pytest.approx([1.0, 1.0])
    assert alloc.delta[1, 1] == pytest.approx([1.0, 1.0])


def test_it_uses_comparative_advantage_when_rates_depend_on_the_machine() -> None:
    # One resource, two single machines of capacity 1, both classes of size 1,
    # half the jobs each. Class 1 runs twice as fast on A (mu = 2) as on B (1);
    # class 2 runs at 1 everywhere. Best: class 2 all on B (1 job/s) plus a
    # share s of A; class 1 gets the rest of A: 2 (1 - s) = 1 + s = lambda/2
    # gives s = 1/3 and lambda* = 8/3.
    cluster = Cluster("ab", ("cpu",), ("A", "B"), np.array([1, 1]), np.array([[1.0], [1.0]]))
    classes = ClassTable(("1", "2"), np.array([[1.0], [1.0]]), np.array([[2.0, 1.0], [1.0, 1.0]]), np.array([0.5, 0.5]))
    alloc = allocation_lp(cluster, classes)
    assert alloc.lambda_star == pytest.approx(8.0 / 3.0, rel=1e-9)
    assert alloc.throughput == pytest.approx(np.array([[4.0 / 3.0, 1.0 / 3.0], [0.0, 1.0]]), abs=1e-9)


def test_a_zero_rate_keeps_a_class_off_a_configuration() -> None:
    cluster = Cluster("ab", ("cpu",), ("A", "B"), np.array([1, 1]), np.array([[1.0], [1.0]]))
    classes = ClassTable(("1",), np.array([[0.5]]), np.array([[0.0, 1.0]]), np.array([1.0]))
    alloc = allocation_lp(cluster, classes)
    assert alloc.lambda_star == pytest.approx(2.0)  # B alone: 2 slots of size 0.5 at 1 job/s
    assert alloc.classes_of(0) == []


def test_it_rejects_classes_with_no_request() -> None:
    classes = ClassTable(("nothing",), np.array([[0.0]]), np.array([[1.0]]), np.array([1.0]))
    with pytest.raises(ParameterError, match="positive amount"):
        allocation_lp(one_config(1, [1.0]), classes)


@settings(max_examples=40, deadline=None)
@given(
    count=st.integers(1, 50),
    cap=st.lists(st.floats(0.1, 10.0), min_size=2, max_size=2),
    req=st.lists(st.lists(st.floats(0.01, 2.0), min_size=2, max_size=2), min_size=1, max_size=4),
    rate=st.lists(st.floats(0.01, 5.0), min_size=4, max_size=4),
    alpha=st.lists(st.floats(0.05, 1.0), min_size=4, max_size=4),
)
def test_one_configuration_matches_the_closed_form(
    count: int, cap: list[float], req: list[list[float]], rate: list[float], alpha: list[float]
) -> None:
    # With one configuration every class shares it; the binding resource l gives
    # lambda* = 1 / max_l sum_k alpha_k r_kl / (c_l n mu_k).
    K = len(req)
    r = np.array(req)
    mu = np.array(rate[:K])
    a = np.array(alpha[:K]) / sum(alpha[:K])
    cluster = one_config(count, cap, ("cpu", "mem"))
    classes = ClassTable(tuple(map(str, range(K))), r, mu[:, None], a)
    expected = 1.0 / max(float((a * r[:, l] / (cap[l] * count * mu)).sum()) for l in range(2))
    assert allocation_lp(cluster, classes).lambda_star == pytest.approx(expected, rel=1e-6)


@settings(max_examples=25, deadline=None)
@given(factor=st.integers(1, 20))
def test_lambda_star_scales_with_the_number_of_machines(factor: int) -> None:
    base = CLUSTERS.get("google-balanced").build(machines_per_config=1)
    scaled = CLUSTERS.get("google-balanced").build(machines_per_config=factor)
    one = allocation_lp(base, google_like_classes(base)).lambda_star
    many = allocation_lp(scaled, google_like_classes(scaled)).lambda_star
    assert many == pytest.approx(factor * one, rel=1e-7)
