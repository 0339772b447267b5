"""A transposed mirror of the engine's free capacity, for vectorised machine scans.

``sim.free`` is ``(machines, resources)`` in row order, so one resource of
all machines is a strided column. Schedulers that scan every machine per
arrival (Greedy's first fit, Tetris's scores) keep this mirror instead:
one contiguous row per resource, so a pass over 10,000 machines is one
numpy call of a few microseconds. A full vectorised pass turned out faster
than block maxima with Python scans inside blocks: in a cluster of packed
machines per-resource maxima come from different machines (one has spare
CPU, another spare memory), so the blocks pass the filter without holding a
fitting machine, and keeping finer summaries exact costs more than it saves.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from simcore.engine import EPS, flat_view
from simcore.model import FloatArray

if TYPE_CHECKING:
    from simcore.engine import Simulation

#: Machines examined per numpy pass of :meth:`FreeColumns.first_fit`; bounds
#: the work when the first fit is early in a very large cluster.
CHUNK = 32768


class FreeColumns:
    """``free[l, m]`` and ``fit[l, m] = free[m, l] + EPS`` as contiguous rows per resource.

    ``fit`` holds the very float the engine compares a request with (its
    test is ``request > free + EPS`` -> no fit), so ``fit[:, m] >= request``
    is exactly the engine's test and the two never disagree. The scheduler
    calls :meth:`update` for a machine after every start on it and in
    ``on_completion`` (after the engine has released the finished job).
    """

    def __init__(self, sim: Simulation, chunk: int = CHUNK) -> None:
        self.sim = sim
        self.R = sim._R
        self.N = sim.n_machines
        self.free: FloatArray = np.ascontiguousarray(sim.free.T)
        self.fit: FloatArray = self.free + EPS
        self._fmv = flat_view(self.free)
        self._tmv = flat_view(self.fit)
        self._src = sim._free_mv
        self._req_mv = sim._req_mv
        self.chunk = max(1, chunk)
        size = min(self.chunk, self.N)
        self._ok = np.empty(size, dtype=bool)
        self._tmp = np.empty(size, dtype=bool)
        self._rows = list(self.fit)  # one view per resource, made once

    def update(self, m: int) -> None:
        """Copy machine ``m``'s free capacity from the engine."""
        R = self.R
        N = self.N
        src = self._src
        fmv = self._fmv
        tmv = self._tmv
        mb = m * R
        for off in range(R):
            v = src[mb + off]
            fmv[off * N + m] = v
            tmv[off * N + m] = v + EPS

    def request(self, job: int) -> list[float]:
        """``job``'s request vector as Python floats."""
        R = self.R
        jb = job * R
        req = self._req_mv
        return [req[jb + off] for off in range(R)]

    def fit_mask(self, r: list[float], lo: int = 0, hi: int | None = None, out: np.ndarray | None = None) -> np.ndarray:
        """Boolean mask over machines ``lo..hi-1``: where a request ``r`` fits now."""
        hi = self.N if hi is None else hi
        fit = self.fit
        ok = np.greater_equal(fit[0, lo:hi], r[0], out=out)
        if self.R > 1:
            tmp = np.empty(hi - lo, dtype=bool) if out is None else self._tmp[: hi - lo]
            for off in range(1, self.R):
                np.greater_equal(fit[off, lo:hi], r[off], out=tmp)
                np.logical_and(ok, tmp, out=ok)
        return ok

    def first_fit(self, job: int) -> int:
        """Lowest-numbered machine where ``job`` fits now, or -1."""
        R = self.R
        req = self._req_mv
        jb = job * R
        N = self.N
        if N <= self.chunk:
            # The common case, inlined: R + (R - 1) + 1 numpy calls in all.
            ok = self._ok
            tmp = self._tmp
            rows = self._rows
            np.greater_equal(rows[0], req[jb], out=ok)
            for off in range(1, R):
                np.greater_equal(rows[off], req[jb + off], out=tmp)
                np.logical_and(ok, tmp, out=ok)
            k = int(ok.argmax())  # the first True; 0 if there is none
            return k if ok[k] else -1
        r = self.request(job)
        for lo in range(0, N, self.chunk):
            hi = min(lo + self.chunk, N)
            ok = self.fit_mask(r, lo, hi, out=self._ok[: hi - lo])
            k = int(ok.argmax())
            if ok[k]:
                return lo + k
        return -1
