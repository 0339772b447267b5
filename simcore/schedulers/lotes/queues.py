"""The per-class job queues of the LoTES dispatcher (section 4.3).

Each queue keeps job ids and their fit floors (request - EPS, see
:mod:`simcore.core.view`) in growable numpy buffers in arrival order, so "the first
queued job, in arrival order, that fits on this machine" is one vectorised
comparison instead of a Python loop over the queue, and it is the engine's
own test (``free >= request - EPS``). Jobs leave from anywhere in the queue
(whichever fits), so removal marks the slot dead (floor +inf never fits) and
the buffer is compacted when more than half of it is dead.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from simcore.core.model import FloatArray
from simcore.core.view import fit_floor


class ClassQueue:
    """FIFO of the jobs of one class waiting to start."""

    def __init__(self, n_resources: int, capacity: int = 64) -> None:
        self.ids = np.full(capacity, -1, dtype=np.int64)
        self.floor = np.full((capacity, n_resources), np.inf)
        self.head = 0
        self.tail = 0
        self.alive = 0
        # Component-wise lower bound of the fit floors pushed since the last
        # compaction: a machine with less free capacity than this fits none.
        self.min_floor = [np.inf] * n_resources  # Python floats: checked on every completion

    def __len__(self) -> int:
        return self.alive

    def push(self, job: int, request: Sequence[float] | FloatArray) -> None:
        """Queue ``job`` with its request vector (one value per resource)."""
        if self.tail == len(self.ids):
            self._make_room()
        fl = [fit_floor(float(q)) for q in request]
        self.ids[self.tail] = job
        self.floor[self.tail] = fl
        self.tail += 1
        self.alive += 1
        self.min_floor = [min(a, b) for a, b in zip(self.min_floor, fl, strict=True)]

    def first_fit(self, free: FloatArray, start: int) -> int:
        """Index of the first job at or after ``start`` that fits in ``free``, or -1."""
        if self.alive == 0:
            return -1
        for f, lo in zip(free.tolist(), self.min_floor, strict=True):
            if not f >= lo:
                return -1
        lo = max(start, self.head)
        if lo >= self.tail:
            return -1
        ok: NDArray[np.bool_] = np.all(self.floor[lo : self.tail] <= free, axis=1)
        i = int(ok.argmax())
        return lo + i if ok[i] else -1

    def pop_at(self, idx: int) -> int:
        """Remove and return the job at buffer index ``idx``."""
        job = int(self.ids[idx])
        self.ids[idx] = -1
        self.floor[idx] = np.inf
        self.alive -= 1
        if idx == self.head:
            h = self.head + 1
            while h < self.tail and self.ids[h] < 0:
                h += 1
            self.head = h
        if self.alive == 0:
            self.head = self.tail = 0
            self.min_floor = [np.inf] * len(self.min_floor)
        return job

    def jobs(self) -> list[int]:
        """Queued job ids in arrival order."""
        ids = self.ids[self.head : self.tail]
        return ids[ids >= 0].tolist()  # type: ignore[no-any-return]

    def _make_room(self) -> None:
        live = self.ids[self.head : self.tail] >= 0
        n = int(live.sum())
        if n <= len(self.ids) // 2:
            ids = self.ids[self.head : self.tail][live]
            floor = self.floor[self.head : self.tail][live]
            self.ids[:] = -1
            self.floor[:] = np.inf
            self.ids[:n] = ids
            self.floor[:n] = floor
            self.min_floor = floor.min(axis=0).tolist() if n else [np.inf] * len(self.min_floor)
            self.head, self.tail = 0, n
            return
        cap = 2 * len(self.ids)
        ids2 = np.full(cap, -1, dtype=np.int64)
        floor2 = np.full((cap, self.floor.shape[1]), np.inf)
        ids2[: self.tail] = self.ids[: self.tail]
        floor2[: self.tail] = self.floor[: self.tail]
        self.ids, self.floor = ids2, floor2
