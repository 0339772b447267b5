"""Jobs made of tasks with precedence constraints (the design-space exploration paper, section 2.1).

A :class:`~simcore.core.model.Workload` is a stream of schedulable units. Without a
graph every unit is a job of its own (the LoTES, Tetris, Greedy, MRIS and
profile-study setting). With a :class:`TaskGraph` the units are *tasks*:
``job_of[t]`` is the job of task ``t`` and ``parents`` lists, in compressed
sparse rows, the tasks that must finish before ``t`` may start (a DAG; a bag
of tasks is a DAG without edges). A task's submit time is its job's, as in the
paper's model ("each job consists of a set of one or several tasks, with
precedence constraints"); the metrics use the job's *first* task submission,
which is also what they would use for a trace whose tasks of one job were
submitted at different times (Google 2011), so that case is allowed too.

Invariants (checked by :meth:`TaskGraph.__post_init__`, vectorised):

- tasks are numbered in submission order (the workload's order), and every
  parent has a lower number than its child, so the numbering is a
  topological order and a graph can never hold a cycle;
- a parent belongs to its child's job and was submitted no later;
- job numbers are ``0..n_jobs-1``, every number used.

Arrays, never one object per task: a million-task workload is a few numpy
arrays. The engine (:mod:`simcore.core.engine`) releases a task to the scheduler
(``on_arrival``) when its job has arrived and its last parent has finished.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import InputError

# The model's array aliases, repeated here because the model imports this module.
FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

__all__ = ["TaskGraph"]


@dataclass(frozen=True)
class TaskGraph:
    """The job of every task and the parents of every task (CSR: ``parents[parent_ptr[t]:parent_ptr[t+1]]``)."""

    job_of: IntArray
    parent_ptr: IntArray
    parents: IntArray
    #: Derived in ``__post_init__``: children in CSR form, parent counts, tasks per job.
    child_ptr: IntArray = field(init=False, repr=False)
    children: IntArray = field(init=False, repr=False)
    n_parents: IntArray = field(init=False, repr=False)
    job_size: IntArray = field(init=False, repr=False)
    #: The job IDs a trace gave (Google 2011's job ID, a CSV ``job`` column), one per job; None: the numbers.
    job_ids: IntArray | None = None

    def __post_init__(self) -> None:
        job_of = np.ascontiguousarray(self.job_of, dtype=np.int64)
        ptr = np.ascontiguousarray(self.parent_ptr, dtype=np.int64)
        par = np.ascontiguousarray(self.parents, dtype=np.int64)
        n = len(job_of)
        if ptr.shape != (n + 1,) or ptr[0] != 0 or (np.diff(ptr) < 0).any() or ptr[-1] != len(par):
            raise InputError(f"parent_ptr must be {n + 1} non-decreasing offsets from 0 to {len(par)} (CSR rows)")
        if n and (int(job_of.min()) < 0):
            t = int(np.argmax(job_of < 0))
            raise InputError(f"task {t}: job number {int(job_of[t])} is negative")
        n_jobs = int(job_of.max()) + 1 if n else 0
        size = np.bincount(job_of, minlength=n_jobs).astype(np.int64)
        if n and (size == 0).any():
            j = int(np.argmax(size == 0))
            raise InputError(f"job numbers must be 0..{n_jobs - 1} with none unused; job {j} has no task")
        child = np.repeat(np.arange(n, dtype=np.int64), np.diff(ptr))
        if len(par):
            bad = (par < 0) | (par >= child)
            if bad.any():
                k = int(np.argmax(bad))
                raise InputError(
                    f"task {int(child[k])}: parent {int(par[k])} must be an earlier task "
                    "(tasks are numbered so that parents come first; a cycle cannot be numbered so)"
                )
            other = job_of[par] != job_of[child]
            if other.any():
                k = int(np.argmax(other))
                raise InputError(
                    f"task {int(child[k])} (job {int(job_of[child[k]])}): parent {int(par[k])} "
                    f"belongs to another job ({int(job_of[par[k]])})"
                )
        # Children in CSR form, each row sorted (a stable sort by parent keeps children in task order).
        order = np.argsort(par, kind="stable")
        counts = np.bincount(par, minlength=n).astype(np.int64) if len(par) else np.zeros(n, dtype=np.int64)
        cptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(counts, out=cptr[1:])
        object.__setattr__(self, "job_of", job_of)
        object.__setattr__(self, "parent_ptr", ptr)
        object.__setattr__(self, "parents", par)
        object.__setattr__(self, "child_ptr", cptr)
        object.__setattr__(self, "children", np.ascontiguousarray(child[order]))
        object.__setattr__(self, "n_parents", np.diff(ptr).astype(np.int64))
        object.__setattr__(self, "job_size", size)
        if self.job_ids is not None:
            ids = np.ascontiguousarray(self.job_ids, dtype=np.int64)
            if ids.shape != (n_jobs,):
                raise InputError(f"job_ids has {ids.size} values, expected one per job ({n_jobs})")
            object.__setattr__(self, "job_ids", ids)

    # -- constructors ------------------------------------------------------------------------
    @classmethod
    def bag_of_tasks(cls, job_of: Sequence[int] | IntArray, job_ids: IntArray | None = None) -> TaskGraph:
        """Jobs of independent tasks (no edges): Google 2011's jobs, for instance."""
        job = np.asarray(job_of, dtype=np.int64)
        return cls(job, np.zeros(len(job) + 1, dtype=np.int64), np.zeros(0, dtype=np.int64), job_ids=job_ids)

    @classmethod
    def from_parent_lists(cls, job_of: Sequence[int] | IntArray, parents: Sequence[Sequence[int]]) -> TaskGraph:
        """From one list of parent task numbers per task (small graphs, tests, readers)."""
        lengths = [len(p) for p in parents]
        ptr = np.zeros(len(parents) + 1, dtype=np.int64)
        np.cumsum(lengths, out=ptr[1:])
        flat = np.fromiter((int(x) for p in parents for x in p), dtype=np.int64, count=int(ptr[-1]))
        return cls(np.asarray(job_of, dtype=np.int64), ptr, flat)

    @classmethod
    def single_tasks(cls, n: int) -> TaskGraph:
        """Every task a job of its own: the graph of a workload without one."""
        return cls.bag_of_tasks(np.arange(n, dtype=np.int64))

    # -- queries -----------------------------------------------------------------------------
    @property
    def n_tasks(self) -> int:
        return len(self.job_of)

    @property
    def n_jobs(self) -> int:
        return len(self.job_size)

    @property
    def n_edges(self) -> int:
        return len(self.parents)

    def parents_of(self, task: int) -> IntArray:
        return self.parents[self.parent_ptr[task] : self.parent_ptr[task + 1]]

    def children_of(self, task: int) -> IntArray:
        return self.children[self.child_ptr[task] : self.child_ptr[task + 1]]

    def check_submit(self, submit: FloatArray, where: str = "workload") -> None:
        """Fail unless every parent was submitted no later than its child (sorted submission needs it)."""
        if len(submit) != self.n_tasks:
            raise InputError(f"{where}: the task graph has {self.n_tasks} tasks but the workload has {len(submit)}")
        child = np.repeat(np.arange(self.n_tasks, dtype=np.int64), self.n_parents)
        late = submit[self.parents] > submit[child]
        if late.any():
            k = int(np.argmax(late))
            raise InputError(f"{where}: task {int(child[k])} has parent {int(self.parents[k])} submitted after it")

    def critical_path(self, duration: FloatArray) -> FloatArray:
        """Per job, the length of its longest chain of tasks with the given per-task durations (s).

        Tasks are numbered parents first, so one pass in task order gives each
        task's earliest possible finish; a job's critical path is the largest.
        The pass runs in Python over the tasks that have parents only (a bag of
        tasks is one vectorised maximum).
        """
        d = np.asarray(duration, dtype=np.float64)
        finish = d.copy()
        ptr = self.parent_ptr
        par = self.parents
        for t in np.flatnonzero(self.n_parents).tolist():
            finish[t] += float(finish[par[ptr[t] : ptr[t + 1]]].max())
        out = np.zeros(self.n_jobs, dtype=np.float64)
        np.maximum.at(out, self.job_of, finish)
        return out

    def prefix(self, n: int) -> TaskGraph:
        """The graph of the first ``n`` tasks (closed under parents, which come first); jobs renumbered in order."""
        job = self.job_of[:n]
        kept, renumbered = np.unique(job, return_inverse=True)
        k = int(self.parent_ptr[n])
        ids = self.job_ids[kept] if self.job_ids is not None else None
        return TaskGraph(
            renumbered.astype(np.int64), self.parent_ptr[: n + 1].copy(), self.parents[:k].copy(), job_ids=ids
        )

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "job_of": self.job_of.tolist(),
            "parent_ptr": self.parent_ptr.tolist(),
            "parents": self.parents.tolist(),
        }
        if self.job_ids is not None:
            out["job_ids"] = self.job_ids.tolist()
        return out
