"""Ordering tasks read from files (submission time, then file order, parents first) and subsets of task graphs."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.errors import InputError
from simcore.core.taskgraph import TaskGraph
from simcore.workloads.taskorder import order_tasks, parents_csr, subset


def _fail(r: int, message: str) -> InputError:
    return InputError(f"row {r}: {message}")


NAMES = "abcdefgh"


def _name(r: int) -> str:
    return NAMES[r]


def test_rows_already_in_order_keep_their_order() -> None:
    order, g = order_tasks(np.zeros(3, np.int64), np.zeros(3), parents_csr([[], [0], [1]]), _fail, _name)
    assert order.tolist() == [0, 1, 2]
    assert g.parents.tolist() == [0, 1] and g.parent_ptr.tolist() == [0, 0, 1, 2]


def test_a_child_listed_before_its_parents_moves_after_them() -> None:
    # Rows: d (parents b, c), a, b (parent a), c (parent a): the diamond listed join first.
    order, g = order_tasks(np.zeros(4, np.int64), np.zeros(4), parents_csr([[2, 3], [], [1], [1]]), _fail, _name)
    assert order.tolist() == [1, 2, 3, 0]
    assert [g.parents_of(t).tolist() for t in range(4)] == [[], [0], [0], [1, 2]]


def test_submission_time_comes_before_file_order() -> None:
    order, g = order_tasks(np.array([5, 9, 5]), np.array([3.0, 1.0, 2.0]), None, _fail, _name)
    assert order.tolist() == [1, 2, 0]
    # Jobs numbered by their first task in the new order: job 9 first, then job 5.
    assert g.job_of.tolist() == [0, 1, 1] and g.job_ids is not None and g.job_ids.tolist() == [9, 5]


def test_a_cycle_is_named_task_by_task() -> None:
    with pytest.raises(InputError, match=r"row 1: the parents form a cycle: b -> c -> b"):
        order_tasks(np.zeros(3, np.int64), np.zeros(3), parents_csr([[], [2], [1]]), _fail, _name)


def test_a_task_that_is_its_own_parent_is_a_cycle() -> None:
    with pytest.raises(InputError, match=r"row 0: the parents form a cycle: a -> a"):
        order_tasks(np.zeros(1, np.int64), np.zeros(1), parents_csr([[0]]), _fail, _name)


def test_a_parent_submitted_after_its_child_is_refused() -> None:
    with pytest.raises(InputError, match=r"row 1: its parent a is submitted later \(5 s\)"):
        order_tasks(np.zeros(2, np.int64), np.array([5.0, 1.0]), parents_csr([[], [0]]), _fail, _name)


def test_subset_drops_the_descendants_of_a_dropped_task() -> None:
    # Job 7: a -> b -> c; job 8: d. Dropping b drops c too.
    g = TaskGraph.from_parent_lists([0, 0, 0, 1], [[], [0], [1], []])
    g = TaskGraph(g.job_of, g.parent_ptr, g.parents, job_ids=np.array([7, 8]))
    sub, kept = subset(g, np.array([True, False, True, True]))
    assert kept.tolist() == [True, False, False, True]
    assert sub.job_of.tolist() == [0, 1] and sub.n_edges == 0 and sub.job_ids is not None
    assert sub.job_ids.tolist() == [7, 8]


def test_subset_renumbers_parents() -> None:
    g = TaskGraph.from_parent_lists([0, 1, 1], [[], [], [1]])
    sub, _ = subset(g, np.array([False, True, True]))
    assert sub.job_of.tolist() == [0, 0] and sub.parents.tolist() == [0]


@st.composite
def shuffled_dags(draw: st.DrawFn) -> tuple[list[list[int]], list[int], list[float]]:
    """A random DAG over rows in a random order: (parent rows per row, job per row, submit per row)."""
    n = draw(st.integers(1, 25))
    jobs = sorted(draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)))
    times = {j: float(draw(st.integers(0, 3))) for j in set(jobs)}
    parents = [[p for p in range(t) if jobs[p] == jobs[t] and draw(st.booleans())] for t in range(n)]
    perm = draw(st.permutations(range(n)))
    where = {old: new for new, old in enumerate(perm)}
    rows = [sorted(where[p] for p in parents[old]) for old in perm]
    return rows, [jobs[old] for old in perm], [times[jobs[old]] for old in perm]


@settings(max_examples=200, deadline=None)
@given(shuffled_dags())
def test_any_shuffled_dag_comes_out_sorted_parents_first_with_its_edges(
    case: tuple[list[list[int]], list[int], list[float]],
) -> None:
    rows, jobs, submit = case
    order, g = order_tasks(np.array(jobs), np.array(submit), parents_csr(rows), _fail, str)
    # TaskGraph itself refuses a parent numbered after its child or in another job.
    assert sorted(order.tolist()) == list(range(len(rows)))
    assert (np.diff(np.array(submit)[order]) >= 0).all()
    new = {int(r): k for k, r in enumerate(order)}
    edges = {(new[p], new[c]) for c, ps in enumerate(rows) for p in ps}
    assert edges == {(int(p), t) for t in range(g.n_tasks) for p in g.parents_of(t)}
    assert g.job_ids is not None and g.job_ids[g.job_of].tolist() == [jobs[r] for r in order.tolist()]
