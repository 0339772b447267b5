"""The model's "fits some machine" check applies the engine's one fit rule (:mod:`simcore.core.fit`).

:func:`simcore.core.model._fits_chunked` tests the largest configurations first and the others only on
the jobs still without one; it must say what testing every configuration with ``fits_in`` says,
at the rule's edges (requests equal to a capacity, within EPS of it, just above it, zero). The
expectation is the rule written out in plain Python, and a table of cases worked out by hand.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core import model
from simcore.core.fit import EPS, fits_in
from simcore.core.model import Cluster, Workload, check_compatible

EDGES = [0.0, 0.1, 0.25, 0.5, 0.5 - EPS / 2, 0.5 + EPS / 2, 0.5 + 2 * EPS, 1.0, 1.0 + 2 * EPS]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fits_somewhere_is_every_configuration_tested_in_turn(data: Any) -> None:
    R = data.draw(st.integers(1, 3))
    n = data.draw(st.integers(0, 60))
    C = data.draw(st.integers(0, 5))
    req = np.array(data.draw(st.lists(st.sampled_from(EDGES), min_size=n * R, max_size=n * R))).reshape(n, R)
    cap = np.array(data.draw(st.lists(st.sampled_from(EDGES), min_size=C * R, max_size=C * R))).reshape(C, R)
    # The rule written out, float by float, without the project's code (``fits_in`` is what the
    # chunked check calls, so it cannot be the oracle): some configuration holds every resource.
    expected = [any(all(c[r] >= q[r] - EPS for r in range(R)) for c in cap.tolist()) for q in req.tolist()]
    assert model._fits_chunked(req, cap).tolist() == expected


def test_fits_somewhere_on_hand_computed_edges() -> None:
    """Two configurations, (1, 0.5) and (0.5, 1); each request worked out by hand.

    EPS = 1e-9: a request fits a capacity c when it is at most c + EPS.
    """
    cap = np.array([[1.0, 0.5], [0.5, 1.0]])
    cases = [
        ([1.0, 0.5], True),  # exactly configuration 0
        ([1.0 + EPS / 2, 0.5], True),  # 1 + 5e-10 <= 1 + 1e-9: configuration 0 by the tolerance
        ([1.0 + 2 * EPS, 0.5], False),  # 1 + 2e-9 > 1 + 1e-9 on 0; cpu 1 > 0.5 on 1
        ([0.5 + EPS / 2, 1.0 + EPS / 2], True),  # configuration 1, both within the tolerance
        ([0.5 + 2 * EPS, 1.0], False),  # cpu beyond configuration 1's 0.5; memory 1 > 0.5 on 0
        ([0.75, 0.75], False),  # cpu fits only 0, memory only 1: no single configuration
        ([0.0, 0.0], True),
    ]
    req = np.array([q for q, _ in cases])
    assert model._fits_chunked(req, cap).tolist() == [want for _, want in cases]


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fits_in_is_the_rule_as_written_for_every_broadcast(data: Any) -> None:
    """``fits_in`` compares one resource at a time; it must say what the rule as written says:
    ``np.all(free >= request - EPS, axis=-1)``, for rows against one capacity, one request against
    rows, and rows against rows of another axis."""
    R = data.draw(st.integers(0, 3))
    n = data.draw(st.integers(0, 20))
    m = data.draw(st.integers(1, 4))
    shapes = data.draw(
        st.sampled_from([((n, R), (R,)), ((R,), (n, R)), ((n, R), (n, R)), ((m, 1, R), (n, R)), ((R,), (R,))])
    )

    def arr(shape: tuple[int, ...]) -> Any:
        size = int(np.prod(shape))
        return np.array(data.draw(st.lists(st.sampled_from(EDGES), min_size=size, max_size=size))).reshape(shape)

    req, free = arr(shapes[0]), arr(shapes[1])
    got = fits_in(req, free)
    want = np.all(free >= req - EPS, axis=-1)
    assert got.shape == np.shape(want) and np.array_equal(got, want)


def test_chunks_do_not_change_the_answer(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = np.random.default_rng(3)
    req = rng.choice(EDGES, size=(1000, 2))
    cap = rng.choice(EDGES, size=(4, 2))
    whole = model._fits_chunked(req, cap)
    monkeypatch.setattr(model, "FIT_CHUNK", 7)
    assert np.array_equal(model._fits_chunked(req, cap), whole)


def test_a_job_no_configuration_holds_is_named() -> None:
    cluster = Cluster("c", ("cpu", "mem"), ("a", "b"), np.array([1, 1]), np.array([[1.0, 0.25], [0.25, 1.0]]))
    wl = Workload("w", ("cpu", "mem"), [0.0, 1.0], [[0.25, 0.25], [0.5, 0.5]], [1.0, 1.0], [0, 0], horizon_s=5.0)
    with pytest.raises(Exception, match=r"job 1 requests .*no configuration has them all"):
        check_compatible(cluster, wl)
