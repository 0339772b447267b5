"""The task columns of the project's trace format (:mod:`simcore.traces.tracefile`): ``job``, ``task``, ``parents``.

Reading: :class:`TaskRows` keeps each row's task id and parent ids (the
slow, exact CSV path reads them), and :func:`task_graph` resolves parent ids
within each job, checks them, and orders the rows with
:func:`simcore.workloads.taskorder.order_tasks`. Writing: :func:`graph_columns` gives
each task's job (its ID when the graph has ``job_ids``), its position in its
job and its parents' positions. The syntax is documented in
:mod:`simcore.traces.tracefile`.
"""

from __future__ import annotations

import numpy as np

from simcore.core.errors import InputError
from simcore.core.taskgraph import FloatArray, IntArray, TaskGraph
from simcore.workloads.taskorder import order_tasks, parents_csr

__all__ = ["JOB", "PARENTS", "TASK", "TaskRows", "graph_columns", "task_graph"]

JOB = "job"
TASK = "task"
PARENTS = "parents"


class TaskRows:
    """Task ids, parent ids and line numbers of the rows, in file order (traces with a task column)."""

    def __init__(self, label: str, task_idx: int, parents_idx: int | None) -> None:
        self.label, self.task_idx, self.parents_idx = label, task_idx, parents_idx
        self.ids: list[str] = []
        self.parents: list[list[str]] = []
        self.lines: list[int] = []

    def add(self, row: list[str], line: int) -> None:
        """Keep the task id and parent ids of one CSV row (already split into fields) on ``line``."""
        tid = row[self.task_idx].strip()
        if not tid or any(ch.isspace() for ch in tid):
            what = "empty task id" if not tid else f"task id {tid!r} contains a space (parents are separated by spaces)"
            raise InputError(what, file=self.label, line=line, column=TASK)
        self.ids.append(tid)
        self.parents.append(row[self.parents_idx].split() if self.parents_idx is not None else [])
        self.lines.append(line)


def task_graph(job: FloatArray, submit: FloatArray, tasks: TaskRows | None, label: str) -> tuple[IntArray, TaskGraph]:
    """The rows' order and task graph: jobs from the job column, DAG edges from the task and parents columns."""
    key = job.astype(np.int64)
    if tasks is None:
        return order_tasks(key, submit, None, _no_fail, str)
    rows: dict[tuple[int, str], int] = {}
    keys = key.tolist()
    for r, tid in enumerate(tasks.ids):
        first = rows.setdefault((keys[r], tid), r)
        if first != r:
            raise InputError(
                f"task {tid!r} appears twice in job {keys[r]} (first on line {tasks.lines[first]})",
                file=label,
                line=tasks.lines[r],
                column=TASK,
            )
    parent_rows: list[list[int]] = []
    for r, names in enumerate(tasks.parents):
        mine: list[int] = []
        for p in names:
            q = rows.get((keys[r], p))
            if q is None:
                raise InputError(
                    f"parent {p!r} is not a task of job {keys[r]}", file=label, line=tasks.lines[r], column=PARENTS
                )
            if q not in mine:
                mine.append(q)
        parent_rows.append(mine)

    def fail(r: int, message: str) -> InputError:
        return InputError(f"task {tasks.ids[r]!r} of job {keys[r]}: {message}", file=label, line=tasks.lines[r])

    def describe(r: int) -> str:
        return f"{tasks.ids[r]!r} (line {tasks.lines[r]})"

    return order_tasks(key, submit, parents_csr(parent_rows), fail, describe)


def _no_fail(r: int, message: str) -> InputError:  # pragma: no cover - bags of tasks raise nothing
    return InputError(message)


def graph_columns(g: TaskGraph) -> tuple[list[str], list[str] | None, list[str] | None]:
    """The job, task and parents column values of every task (task: its position in its job, from 0)."""
    job = (g.job_ids[g.job_of] if g.job_ids is not None else g.job_of).tolist()
    if g.n_edges == 0:
        return list(map(str, job)), None, None
    by_job = np.argsort(g.job_of, kind="stable")
    start = np.zeros(g.n_jobs + 1, dtype=np.int64)
    np.cumsum(g.job_size, out=start[1:])
    pos = np.empty(g.n_tasks, dtype=np.int64)
    pos[by_job] = np.arange(g.n_tasks, dtype=np.int64) - start[g.job_of[by_job]]
    parents = [""] * g.n_tasks
    ptr, par = g.parent_ptr.tolist(), pos[g.parents].tolist()
    for t in np.flatnonzero(g.n_parents).tolist():
        parents[t] = " ".join(map(str, par[ptr[t] : ptr[t + 1]]))
    return list(map(str, job)), list(map(str, pos.tolist())), parents
