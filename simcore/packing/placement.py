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
* the search skips machines that cannot hold the request: a pointer per
  distinct request vector, and blocks of machines whose per-resource maximum
  free capacity is below the request (:class:`FirstFit`), so a task costs a
  few numpy calls on small slices instead of a pass over all machines.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError
from simcore.packing.snapshot import EPS, FloatArray, IntArray, Snapshot

#: Name -> what the tasks are sorted by (decreasing; ties keep arrival order).
ORDERINGS: dict[str, str] = {
    "arrival": "the order the tasks arrived in (the snapshot's task order)",
    "cpu": "decreasing cpu request",
    "mem": "decreasing memory request",
    "sum": "decreasing cpu + memory, each normalised by the median machine",
}

#: Machines a search scans first from its pointer (later chunks double): a fit is usually near.
FIRST_CHUNK = 2048


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

    Two things make a search cheap without changing which machine first fit
    picks:

    * *Per-shape pointers.* Free capacity only shrinks, so a machine that
      cannot hold a request vector now never will: each distinct request
      vector keeps the first machine that could still hold it, and its next
      search starts there. With quantised requests (real traces: a few
      hundred distinct vectors) a shape passes each machine about once per pack.
    * *A resource-major copy of the fit test's left side,* ``free + EPS``
      with shape (R, N), C order, updated for the machines a placement
      changes. A search compares one contiguous row per requested resource
      with the request, ANDs the masks and takes the first true: a few numpy
      calls over a chunk of machines (:data:`FIRST_CHUNK`, then doubling),
      with no Python per machine. With continuous requests every task is its
      own shape and the pointers do not help; this is what keeps such a pack
      fast (114,324 distinct tasks on 12,583 machines: about 15 CPU-s per
      pack with the former row-major chunks, about 1.3 s now).

    Tried and dropped: an index of per-block maxima of free capacity (first
    fit skipping blocks whose maximum in some resource is below the
    request). On a nearly full heterogeneous cluster the cpu maximum and the
    memory maximum of a block come from different machines, so almost every
    block passed and was scanned for nothing (67 such blocks per task on the
    snapshot above; slower than no index). Testing every machine in C is
    cheaper than pruning blocks in Python.

    Placing more tasks later on the same state is exactly first fit of the
    concatenated sequence. ``free`` is updated in place.
    """

    def __init__(self, free: FloatArray, first_chunk: int = 0) -> None:
        self.free = free
        n = len(free)
        #: Machines the first chunk of a search covers (tests make it small to cross chunk edges).
        self.first_chunk = first_chunk or FIRST_CHUNK
        # fe[r, m] == free[m, r] + EPS bit for bit: the same float sum the fit test makes.
        self._fe = np.ascontiguousarray((free + EPS).T)
        self._mask = np.empty(n, dtype=bool)
        self._tmp = np.empty(n, dtype=bool)
        self._start: dict[tuple[float, ...], int] = {}

    def copy(self) -> FirstFit:
        """An independent state equal to this one: placing on it continues this first fit exactly.

        Horizontal inflation places the same original tasks before every
        factor's clones; it places them once and continues from copies.
        """
        out = FirstFit.__new__(FirstFit)
        out.free = self.free.copy()
        out.first_chunk = self.first_chunk
        out._fe = self._fe.copy()
        out._mask = np.empty_like(self._mask)
        out._tmp = np.empty_like(self._tmp)
        out._start = dict(self._start)
        return out

    def _first(self, cols: list[tuple[int, float]], lo: int, hi: int) -> int:
        """The first machine in ``[lo, hi)`` holding the request (``cols``: its positive resources), or -1."""
        fe, m, tmp = self._fe, self._mask[: hi - lo], self._tmp[: hi - lo]
        r, v = cols[0]
        np.greater_equal(fe[r, lo:hi], v, out=m)
        for r, v in cols[1:]:
            np.greater_equal(fe[r, lo:hi], v, out=tmp)
            m &= tmp
        i = int(m.argmax())
        return lo + i if m[i] else -1

    def _take(self, rows: IntArray | int, amount: FloatArray) -> None:
        """Subtract ``amount`` from machines ``rows`` and refresh their column of ``free + EPS``."""
        self.free[rows] -= amount
        self._fe[:, rows] = (self.free[rows] + EPS).T

    def place(self, request: FloatArray) -> IntArray:
        """Machine rows the tasks went to, in order, or -1 (pending)."""
        n_tasks, n_mach, free, fe = len(request), len(self.free), self.free, self._fe
        out = np.full(n_tasks, -1, dtype=np.int64)
        if n_tasks == 0:
            return out
        change = np.any(request[1:] != request[:-1], axis=1)
        starts = np.concatenate(([0], np.flatnonzero(change) + 1))
        ends = np.concatenate((starts[1:], [n_tasks]))
        start_of = self._start
        # Python floats per run: the per-task work below is a handful of calls, so numpy
        # scalar overheads would dominate. Float arithmetic is the same IEEE arithmetic.
        for s, e, row in zip(starts.tolist(), ends.tolist(), request[starts].tolist(), strict=True):
            # Resources with a zero request always pass (free + EPS >= 0) and lose nothing: skipped.
            cols = [(r, v) for r, v in enumerate(row) if v > 0]
            if not cols:
                out[s:e] = 0  # a zero request fits on the first machine, full or not
                continue
            key = tuple(row)
            pos = start_of.get(key, 0)
            chunk = self.first_chunk
            k = e - s
            if k == 1:
                while pos < n_mach:
                    end = min(n_mach, pos + chunk)
                    hit = self._first(cols, pos, end)
                    if hit >= 0:
                        pos = hit
                        out[s] = hit
                        for r, v in cols:
                            x = float(free[hit, r]) - v
                            free[hit, r] = x
                            fe[r, hit] = x + EPS
                        break
                    pos, chunk = end, chunk * 2
                start_of[key] = pos
                continue
            q = request[s]
            pos_r = q > 0
            qp = q[pos_r][:, None]
            while k > 0 and pos < n_mach:
                end = min(n_mach, pos + chunk)
                cnt = np.minimum(np.floor((fe[pos_r, pos:end] / qp).min(axis=0)), k)
                cnt = np.maximum(cnt, 0.0).astype(np.int64)
                cs = np.cumsum(cnt)
                if cs[-1] >= k:
                    j = int(np.searchsorted(cs, k))
                    cnt = cnt[: j + 1]
                    cnt[j] -= int(cs[j] - k)
                hits = np.flatnonzero(cnt)
                if len(hits):
                    took = cnt[hits]
                    n_took = int(took.sum())
                    rows = hits + pos
                    out[e - k : e - k + n_took] = np.repeat(rows, took)
                    self._take(rows, took[:, None] * q)
                    k -= n_took
                    if k == 0:
                        pos = int(rows[-1])  # machines before the last that took a copy hold no further copy
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
