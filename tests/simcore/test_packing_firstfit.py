"""First fit's search indexes (per-shape pointers, resource-major chunks) never change where a task goes.

The reference is the plain definition, task by task: each task goes to the
first machine whose free capacity plus the tolerance holds it in every
resource. Continuous requests (every task its own shape, the case the
indexes were rebuilt for), quantised ones (runs of identical requests, the
counted path), several resources, small first chunks (so searches cross chunk
edges) and placements spread over several calls.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.packing.placement import FirstFit, first_fit
from simcore.packing.snapshot import EPS


def plain_first_fit(capacity: np.ndarray, request: np.ndarray) -> list[int]:
    free = capacity.copy()
    out = []
    for q in request:
        i = -1
        for m in range(len(free)):
            if (free[m] + EPS >= q).all():
                i = m
                break
        if i >= 0:
            free[i] -= q
        out.append(i)
    return out


unit = st.floats(0.001, 1.0, allow_nan=False, allow_infinity=False)


@settings(max_examples=80, deadline=None)
@given(
    n_mach=st.integers(1, 40),
    n_res=st.integers(1, 3),
    n_tasks=st.integers(1, 120),
    chunk=st.integers(1, 9),
    seed=st.integers(0, 2**32 - 1),
)
def test_continuous_requests_go_where_plain_first_fit_puts_them(
    n_mach: int, n_res: int, n_tasks: int, chunk: int, seed: int
) -> None:
    rng = np.random.default_rng(seed)
    cap = rng.uniform(0.2, 1.0, (n_mach, n_res))
    req = rng.uniform(0.0, 0.5, (n_tasks, n_res))  # distinct floats: every task is its own shape
    req[rng.random(req.shape) < 0.1] = 0.0  # some resources not requested at all
    assert FirstFit(cap.copy(), first_chunk=chunk).place(req).tolist() == plain_first_fit(cap, req)


@settings(max_examples=80, deadline=None)
@given(
    caps=st.lists(st.tuples(st.integers(1, 64), st.integers(1, 64)), min_size=1, max_size=30),
    # Few distinct sizes, so a shape comes back after others and resumes from its pointer.
    shapes=st.lists(
        st.tuples(st.sampled_from([0, 5, 8, 13, 21]), st.sampled_from([3, 8, 16, 27]), st.integers(1, 6)),
        min_size=1,
        max_size=30,
    ),
    chunk=st.integers(1, 9),
)
def test_runs_of_identical_requests_go_where_plain_first_fit_puts_them(
    caps: list[tuple[int, int]], shapes: list[tuple[int, int, int]], chunk: int
) -> None:
    # Multiples of 1/64 are exact in binary: counting k copies at once and k subtractions agree.
    cap = np.array(caps, float) / 64
    req = np.repeat(np.array([s[:2] for s in shapes], float) / 64, [s[2] for s in shapes], axis=0)
    assert FirstFit(cap.copy(), first_chunk=chunk).place(req).tolist() == plain_first_fit(cap, req)


@settings(max_examples=60, deadline=None)
@given(
    n_mach=st.integers(1, 30),
    sizes=st.lists(st.tuples(unit, unit), min_size=2, max_size=60),
    cut=st.integers(0, 60),
    chunk=st.integers(1, 9),
    seed=st.integers(0, 1000),
)
def test_placing_in_two_calls_is_first_fit_of_the_whole_sequence(
    n_mach: int, sizes: list[tuple[float, float]], cut: int, chunk: int, seed: int
) -> None:
    cap = np.random.default_rng(seed).uniform(0.5, 1.5, (n_mach, 2))
    req = np.array(sizes) * 0.4
    ff = FirstFit(cap.copy(), first_chunk=chunk)
    got = ff.place(req[:cut]).tolist() + ff.place(req[cut:]).tolist()
    assert got == plain_first_fit(cap, req)


def test_free_capacity_after_a_pack_is_capacity_minus_what_each_machine_took() -> None:
    rng = np.random.default_rng(3)
    cap = rng.uniform(0.5, 1.0, (50, 2))
    req = rng.uniform(0.0, 0.3, (200, 2))
    free = cap.copy()
    rows = first_fit(free, req)
    used = np.zeros_like(cap)
    np.add.at(used, rows[rows >= 0], req[rows >= 0])
    np.testing.assert_allclose(free, cap - used, atol=1e-12)
    assert (free >= -EPS).all()
