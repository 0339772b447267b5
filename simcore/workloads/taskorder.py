"""Tasks read from a file, put in the order a :class:`~simcore.core.taskgraph.TaskGraph` needs; subsets of graphs.

A file lists tasks in its own order (a WfCommons instance, a CSV trace with
``job`` and ``parents`` columns); the model wants them sorted by submission
time with every parent before its children. :func:`order_tasks` finds that
order: submission time first, then file order, except that a task listed
before one of its parents moves just after the parent (Kahn's algorithm
taking, among the tasks whose parents are all placed, the one with the
earliest submission and then the earliest row). A file already in that order
keeps it (checked in one vectorised pass; Kahn's loop then never runs).

Whatever is wrong is raised through the caller's ``fail`` callback, which
names the row the way the file does (a line, a JSON path): a parent
submitted after its child, or a cycle, spelled out task by task.

:func:`subset` keeps the tasks of a mask (a time window, the tasks that fit a
cluster) and drops, with them, every task that lost an ancestor: a task
cannot run without its parents.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable, Sequence

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError
from simcore.core.taskgraph import FloatArray, IntArray, TaskGraph

__all__ = ["number_jobs", "order_tasks", "parents_csr", "subset"]

#: ``fail(row, message)``: the error to raise about ``row`` (the caller names the file, line or path).
Fail = Callable[[int, str], InputError]
#: ``describe(row)``: how a message names another row, e.g. ``task 'b' (line 4)``.
Describe = Callable[[int], str]


def parents_csr(parents: Sequence[Sequence[int]]) -> tuple[IntArray, IntArray]:
    """One list of parent rows per row -> CSR ``(ptr, flat)``."""
    ptr = np.zeros(len(parents) + 1, dtype=np.int64)
    np.cumsum([len(p) for p in parents], out=ptr[1:])
    flat = np.fromiter((x for p in parents for x in p), dtype=np.int64, count=int(ptr[-1]))
    return ptr, flat


def order_tasks(
    job_key: IntArray,
    submit: FloatArray,
    parents: tuple[IntArray, IntArray] | None,
    fail: Fail,
    describe: Describe,
) -> tuple[IntArray, TaskGraph]:
    """The order of the rows (``rows[order]`` is the model's task order) and the graph over that order.

    ``job_key[r]``: any integer naming row r's job (jobs are numbered by
    their first task in the new order; the keys become ``TaskGraph.job_ids``).
    ``submit[r]``: its submission time (s). ``parents``: CSR ``(ptr, flat)``
    of parent *rows* per row (same job, no duplicates), or None for bags of
    tasks. Raises ``fail(row, message)`` for a parent submitted after its
    child or a cycle.
    """
    n = len(job_key)
    job_key = np.asarray(job_key, dtype=np.int64)
    submit = np.asarray(submit, dtype=np.float64)
    if parents is None or len(parents[1]) == 0:
        order = np.argsort(submit, kind="stable").astype(np.int64)
        job_of, ids = number_jobs(job_key[order])
        return order, TaskGraph.bag_of_tasks(job_of, job_ids=ids)
    ptr, flat = parents
    counts = np.diff(ptr)
    child = np.repeat(np.arange(n, dtype=np.int64), counts)
    late = submit[flat] > submit[child]
    if late.any():
        k = int(np.argmax(late))
        raise fail(int(child[k]), f"its parent {describe(int(flat[k]))} is submitted later ({submit[flat[k]]:g} s)")
    in_order = bool((flat < child).all()) and not bool(np.any(np.diff(submit) < 0))
    order = np.arange(n, dtype=np.int64) if in_order else _kahn(submit, ptr, flat, fail, describe)
    inv = np.empty(n, dtype=np.int64)
    inv[order] = np.arange(n, dtype=np.int64)
    # Parent rows of each task in the new order, mapped to new task numbers.
    new_counts = counts[order]
    new_ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(new_counts, out=new_ptr[1:])
    take = np.repeat(ptr[order] - new_ptr[:-1], new_counts) + np.arange(int(new_ptr[-1]), dtype=np.int64)
    job_of, ids = number_jobs(job_key[order])
    return order, TaskGraph(job_of, new_ptr, inv[flat[take]], job_ids=ids)


def number_jobs(keys: IntArray) -> tuple[IntArray, IntArray]:
    """Jobs numbered 0.. by first appearance in ``keys``; returns (job number per task, key per job)."""
    if len(keys) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    uniq, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    number = np.empty(len(uniq), dtype=np.int64)
    number[by_first] = np.arange(len(uniq), dtype=np.int64)
    return number[inverse.reshape(-1)], uniq[by_first].astype(np.int64)


def _kahn(submit: FloatArray, ptr: IntArray, flat: IntArray, fail: Fail, describe: Describe) -> IntArray:
    """Kahn's algorithm, taking the ready row of earliest (submit, row) first; a cycle is named."""
    n = len(submit)
    counts = np.diff(ptr)
    order_c = np.argsort(flat, kind="stable")
    child_of = np.repeat(np.arange(n, dtype=np.int64), counts)[order_c].tolist()
    cptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(flat, minlength=n), out=cptr[1:])
    cp = cptr.tolist()
    left = counts.tolist()
    sub = submit.tolist()
    heap = [(sub[r], r) for r in range(n) if left[r] == 0]
    heapq.heapify(heap)
    out: list[int] = []
    push, pop = heapq.heappush, heapq.heappop
    while heap:
        _, r = pop(heap)
        out.append(r)
        for k in range(cp[r], cp[r + 1]):
            c = child_of[k]
            left[c] -= 1
            if left[c] == 0:
                push(heap, (sub[c], c))
    if len(out) < n:
        raise _cycle(np.asarray(left), ptr, flat, fail, describe)
    return np.asarray(out, dtype=np.int64)


def _cycle(left: NDArray[np.int64], ptr: IntArray, flat: IntArray, fail: Fail, describe: Describe) -> InputError:
    """The error naming one cycle among the rows Kahn could not place (each has an unplaced parent)."""
    stuck = left > 0
    r = int(np.argmax(stuck))
    seen: dict[int, int] = {}
    path: list[int] = []
    while r not in seen:
        seen[r] = len(path)
        path.append(r)
        ps = flat[ptr[r] : ptr[r + 1]]
        r = int(ps[np.argmax(stuck[ps])])
    loop = path[seen[r] :] + [r]
    # Printed parent -> child: the loop was walked child -> parent.
    text = " -> ".join(describe(x) for x in reversed(loop))
    return fail(loop[-1], f"the parents form a cycle: {text}")


def subset(graph: TaskGraph, keep: NDArray[np.bool_]) -> tuple[TaskGraph, NDArray[np.bool_]]:
    """The graph of the tasks in ``keep`` whose every ancestor is kept too, and that final mask.

    Tasks are renumbered in order, jobs by first appearance (their IDs follow).
    """
    keep = np.asarray(keep, dtype=bool).copy()
    ptr, par = graph.parent_ptr, graph.parents
    if len(par):
        # Parents come first, so one pass in task order closes the mask under ancestors.
        kl = keep.tolist()
        for t in np.flatnonzero(graph.n_parents).tolist():
            if kl[t] and not all(kl[p] for p in par[ptr[t] : ptr[t + 1]].tolist()):
                kl[t] = False
        keep = np.asarray(kl, dtype=bool)
    idx = np.flatnonzero(keep)
    new_no = np.full(graph.n_tasks, -1, dtype=np.int64)
    new_no[idx] = np.arange(len(idx), dtype=np.int64)
    counts = graph.n_parents[idx]
    new_ptr = np.zeros(len(idx) + 1, dtype=np.int64)
    np.cumsum(counts, out=new_ptr[1:])
    take = np.repeat(ptr[idx] - new_ptr[:-1], counts) + np.arange(int(new_ptr[-1]), dtype=np.int64)
    keys = graph.job_ids[graph.job_of[idx]] if graph.job_ids is not None else graph.job_of[idx]
    job_of, ids = number_jobs(keys)
    return TaskGraph(job_of, new_ptr, new_no[par[take]], job_ids=ids if graph.job_ids is not None else None), keep
