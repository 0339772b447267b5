"""The paper's four job orderings (section IV) and first fit over a fixed machine order.

First fit here is exact: each task, in the given order, goes to the first
machine (in the given machine order) whose free capacity holds it in every
resource, or stays pending. It is vectorised two ways, neither of which
changes the result:

* consecutive tasks with identical request vectors form a *run*; a run of
  ``k`` copies of ``q`` fills machines left to right, each taking
  ``min_r floor(free_r / q_r)`` copies, which is exactly what ``k`` single
  first-fit steps do (a machine that could not take another copy still
  cannot when the next copy comes);
* the search   skips blocks of machines whose per-resource maximum free capacity cannot
  hold the request, so a task costs a few numpy calls on a small slice
  instead of a pass over all machines.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from simcore.errors import ParameterError
from simcore.packing.snapshot import EPS, FloatArray, IntArray, Snapshot

#: Name -> what the tasks are sorted by (decreasing; ties keep arrival order).
ORDERINGS: dict[str, str] = {
    "arrival": "the order the tasks arrived in (the snapshot's task order)",
    "cpu": "decreasing cpu request",
    "mem": "decreasing memory request",
    "sum": "decreasing cpu + memory, each normalised by the median machine",
}

#: Machines in the first chunk a search scans (later chunks double).
_FIRST_CHUNK = 64


def _column(resources: tuple[str, ...], name: str) -> int:
    if name not in resources:
        raise ParameterError(f"ordering needs a {name!r} resource; the snapshot has {list(resources)}")
    return resources.index(name)


def order_tasks(snap: Snapshot, ordering: str) -> IntArray:
    """Task indices in the order ``ordering`` packs them (one of :data:`ORDERINGS`).

    The paper orders *jobs*; we sort tasks with a stable sort, which keeps
    the tasks of a job together whenever they share a request (true of every
    job in our traces and generators, whose jobs are single tasks).
    """
    if ordering not in ORDERINGS:
        raise ParameterError(f"unknown ordering {ordering!r}; valid orderings: {', '.join(ORDERINGS)}")
    n = snap.n_tasks
    if ordering == "arrival":
        return np.arange(n, dtype=np.int64)
    if ordering in ("cpu", "mem"):
        key = snap.request[:, _column(snap.resources, ordering)]
    else:
        med = snap.median_machine()
        key = (snap.request / np.where(med > 0, med, 1.0)).sum(axis=1)
    return np.argsort(-key, kind="stable").astype(np.int64)


class FirstFit:
    """First fit onto ``free`` (rows in machine order), kept between calls.

    Free capacity only shrinks, so a machine that cannot hold a request
    vector now never will: each distinct request vector keeps a pointer to
    the first machine that could still hold it, and its next search starts
    there, scanning chunks that double in size. Over a whole pack a shape
    scans each machine at most a few times, whatever the number of tasks;
    the cost is per distinct shape, which is why real traces (whose requests
    are quantised) pack fast. Known limit: with continuous requests every
    task is its own shape and a search may scan from the first machine, so
    a nearly full cluster costs O(machines) per task. Placing more tasks later on the same state is
    exactly first fit of the concatenated sequence.
    """

    def __init__(self, free: FloatArray) -> None:
        self.free = free
        self._start: dict[bytes, int] = {}

    def place(self, request: FloatArray) -> IntArray:
        """Machine rows the tasks went to, in order, or -1 (pending)."""
        n_tasks, n_mach, free = len(request), len(self.free), self.free
        out = np.full(n_tasks, -1, dtype=np.int64)
        if n_tasks == 0:
            return out
        change = np.any(request[1:] != request[:-1], axis=1)
        starts = np.concatenate(([0], np.flatnonzero(change) + 1))
        ends = np.concatenate((starts[1:], [n_tasks]))
        start_of = self._start
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            q = request[s]
            k = e - s
            pos_r = q > 0
            if not pos_r.any():
                out[s:e] = 0  # a zero request fits on the first machine, full or not
                continue
            key = q.tobytes()
            pos = start_of.get(key, 0)
            chunk = _FIRST_CHUNK
            if k == 1:
                while pos < n_mach:
                    end = min(n_mach, pos + chunk)
                    fit = (free[pos:end] + EPS >= q).all(axis=1)
                    i = int(fit.argmax())
                    if fit[i]:
                        pos += i
                        out[s] = pos
                        free[pos] -= q
                        break
                    pos, chunk = end, chunk * 2
                start_of[key] = pos
                continue
            qp = q[pos_r]
            while k > 0 and pos < n_mach:
                end = min(n_mach, pos + chunk)
                f = free[pos:end]
                cnt = np.minimum(np.floor(((f[:, pos_r] + EPS) / qp).min(axis=1)), k)
                cnt = np.maximum(cnt, 0.0).astype(np.int64)
                cs = np.cumsum(cnt)
                if cs[-1] >= k:
                    j = int(np.searchsorted(cs, k))
                    cnt = cnt[: j + 1]
                    cnt[j] -= int(cs[j] - k)
                hit = np.flatnonzero(cnt)
                if len(hit):
                    took = cnt[hit]
                    n_took = int(took.sum())
                    out[e - k : e - k + n_took] = np.repeat(hit + pos, took)
                    f[hit] -= took[:, None] * q
                    k -= n_took
                    if k == 0:
                        pos += int(hit[0])  # the machines before the first hit could not take one
                        break
                pos, chunk = end, chunk * 2
            start_of[key] = pos
        return out


def first_fit(free: FloatArray, request: FloatArray) -> IntArray:
    """Place ``request`` rows in order on ``free`` rows in order; ``free`` is updated in place.

    Returns the row index of ``free`` each task went to, or -1 (pending).
    """
    ff = FirstFit(free)
    out = ff.place(request)
    free[:] = ff.free
    return out


def pack(
    snap: Snapshot,
    ordering: str = "arrival",
    machine_order: IntArray | None = None,
) -> Snapshot:
    """Repack every task of ``snap`` from scratch by first fit.

    Tasks go in ``ordering``; machines are tried in ``machine_order``
    (default: index order, the paper's "fixed machine order").
    """
    order = order_tasks(snap, ordering)
    perm = np.arange(snap.n_machines, dtype=np.int64) if machine_order is None else machine_order
    free = snap.capacity[perm].copy()
    rows = first_fit(free, snap.request[order])
    placement = np.full(snap.n_tasks, -1, dtype=np.int64)
    placement[order] = np.where(rows >= 0, perm[np.maximum(rows, 0)], -1)
    return snap.with_placement(placement, {"packed_by": f"first fit, {ordering} order"})


def fits_count(request: FloatArray, capacity: FloatArray) -> NDArray[np.int64]:
    """For each task, on how many machines it fits when the machine is empty (chunked over tasks)."""
    shapes, inverse = np.unique(request, axis=0, return_inverse=True)
    per_shape = np.empty(len(shapes), dtype=np.int64)
    step = max(1, 2_000_000 // max(1, len(capacity)))
    for i in range(0, len(shapes), step):
        r = shapes[i : i + step]
        per_shape[i : i + step] = (r[:, None, :] <= capacity[None, :, :] + EPS).all(axis=2).sum(axis=1)
    return per_shape[np.asarray(inverse).reshape(-1)]
