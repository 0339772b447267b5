"""Block maxima of free capacity: find fitting machines without scanning every machine.

Machines are cut into blocks of at most ``BLOCK`` consecutive machines that
never straddle two configurations (so anything that depends only on the
configuration, such as a Tetris processing time, is constant in a block).
For every block we keep the exact maximum free capacity per resource. A job
can only fit in a block whose maximum is at least its request in every
resource, so a scan looks at ~160 block maxima and then at the machines of a
few blocks instead of at all 10,000 machines.

Per-resource maxima are a weak filter for first fit: in a block of packed
machines one machine may have spare CPU and another spare memory, so the
block passes and no machine fits. With ``grid=True`` the index also keeps,
for thresholds ``t_g`` on resource 0 (quantiles of the jobs' resource-0
requests), ``gmax[l, b, g]``: the largest free amount of resource ``l`` among
the machines of block ``b`` with at least ``t_g`` free of resource 0. A job
with request ``r`` uses the largest ``t_g <= r_0``, so only machines that
nearly fit in resource 0 can vouch for the other resources. ``gmax`` is kept
as an upper bound: raised when a machine frees capacity, left alone when a
job starts (free capacity only dropped), and recomputed for a block when a
scan finds that the bound misled it.

The scheduler keeps the index current by telling it about every change of
a machine's free capacity: :meth:`BlockIndex.started` after each
``sim.start`` and :meth:`BlockIndex.freed` in ``on_completion``.
"""

from __future__ import annotations

import bisect
import math
from typing import TYPE_CHECKING

import numpy as np

from simcore.engine import EPS
from simcore.model import FloatArray, IntArray

if TYPE_CHECKING:
    from simcore.engine import Simulation

#: Machines per block: ~sqrt(10,000) balances the block scan (numpy, ~160
#: entries for google-balanced) against the scan inside a block.
BLOCK = 32

#: A started job lowers its machine's free capacity; if that machine held the
#: block's maximum in some resource (compared with this slack, since
#: ``free - req + req`` need not equal ``free`` in floating point) the block's
#: maximum is recomputed exactly.
SLACK = 1e-12

#: Number of resource-0 thresholds of the ``grid`` filter (quantiles of the
#: requests), and how many evenly spaced jobs the quantiles are taken from.
GRID_LEVELS = 32
GRID_SAMPLE = 4096
import os
LAZY = os.environ.get("LAZY") == "1"
BLOCK = int(os.environ.get("BLOCK", "32"))


class BlockIndex:
    """Per-block maxima of ``sim.free`` with first-fit and fit-mask queries.

    Without ``grid`` the maxima are exact at all times (what Tetris's branch
    and bound wants). With ``grid`` (first fit) every bound, ``bmax``
    included, is a lazily refreshed upper bound: starting a job costs
    nothing, and a block is recomputed only when a scan of it fails.
    """

    def __init__(self, sim: Simulation, block: int = BLOCK, grid: bool = False) -> None:
        self.sim = sim
        config_of = sim.config_of
        n = sim.n_machines
        lo: list[int] = []
        a = 0
        while a < n:
            c = config_of[a]
            b = a
            while b < n and config_of[b] == c and b - a < block:
                b += 1
            lo.append(a)
            a = b
        self.n_blocks = len(lo)
        self.lo: list[int] = lo
        self.hi: list[int] = lo[1:] + [n]
        self.lo_arr: IntArray = np.asarray(lo, dtype=np.int64)
        #: Configuration of each block.
        self.config: IntArray = config_of[self.lo_arr]
        sizes = np.diff(np.asarray(lo + [n], dtype=np.int64))
        self.block_of: list[int] = np.repeat(np.arange(self.n_blocks), sizes).tolist()
        self.R = sim.free.shape[1]
        # Column-major (resource, block) so each resource's row is contiguous for the scans.
        self.bmax: FloatArray = np.empty((self.R, self.n_blocks))
        self._bmv = memoryview(self.bmax.reshape(-1))
        self._free_mv = sim._free_mv
        self._req_mv = sim._req_mv
        for b in range(self.n_blocks):
            self._recompute(b)
        self.grid = grid and self.R >= 2
        if self.grid:
            n_jobs = sim.n_jobs
            sample = np.linspace(0, max(n_jobs - 1, 0), min(GRID_SAMPLE, n_jobs)).astype(np.int64)
            r0 = sim.request[sample, 0] if n_jobs else np.zeros(1)
            q = np.unique(np.quantile(r0, np.linspace(0.0, 1.0, GRID_LEVELS)))
            #: thresholds[0] = -inf: every job has a level.
            self.thresholds: list[float] = [-math.inf, *q[q > 0].tolist()]
            self._t_arr = np.asarray(self.thresholds)
            self.G = len(self.thresholds)
            self.gmax: FloatArray = np.empty((self.R - 1, self.n_blocks, self.G))
            self._gmv = memoryview(self.gmax.reshape(-1))
            for b in range(self.n_blocks):
                self._regrid(b)

    def _recompute(self, b: int) -> None:
        self.bmax[:, b] = self.sim.free[self.lo[b] : self.hi[b]].max(axis=0)

    def _regrid(self, b: int) -> None:
        sub = self.sim.free[self.lo[b] : self.hi[b]]
        self.bmax[:, b] = sub.max(axis=0)
        above = sub[:, :1] >= self._t_arr[None, :]  # (machines, levels)
        for off in range(1, self.R):
            self.gmax[off - 1, b] = np.where(above, sub[:, off : off + 1], -math.inf).max(axis=0)

    # -- keeping the maxima exact ------------------------------------------------------
    def started(self, job: int, m: int) -> None:
        """``job`` was just started on ``m`` (its free capacity went down)."""
        b = self.block_of[m]
        R = self.R
        nb = self.n_blocks
        free = self._free_mv
        req = self._req_mv
        mb = m * R
        jb = job * R
        if self.grid:
            if LAZY:
                return
            # m held a bound only if it equalled it before the start: for
            # resource 0 that is bmax; for resource l it is enough to look at
            # the highest level m belonged to, since lower levels are at least
            # as high (and m's value was the same at all its levels).
            f0_old = free[mb] + req[jb]
            if f0_old >= self._bmv[b] - SLACK:
                self._regrid(b)
                return
            k = bisect.bisect_right(self.thresholds, f0_old) - 1
            gm = self._gmv
            G = self.G
            for off in range(1, R):
                if free[mb + off] + req[jb + off] >= gm[((off - 1) * nb + b) * G + k] - SLACK:
                    self._regrid(b)
                    return
            return
        bm = self._bmv
        for off in range(R):
            # Before the start, free[m] was free + req; if that was the block's
            # maximum in this resource, the maximum may have dropped.
            if free[mb + off] + req[jb + off] >= bm[off * nb + b] - SLACK:
                self._recompute(b)
                return

    def freed(self, m: int) -> None:
        """``m``'s free capacity went up (a job finished there)."""
        b = self.block_of[m]
        R = self.R
        nb = self.n_blocks
        free = self._free_mv
        bm = self._bmv
        mb = m * R
        for off in range(R):
            v = free[mb + off]
            if v > bm[off * nb + b]:
                bm[off * nb + b] = v
        if self.grid:
            # gmax[l, b, g] is non-increasing in g (a lower threshold admits more
            # machines), so raising levels from the top down can stop at the first
            # level that is already high enough.
            k = bisect.bisect_right(self.thresholds, free[mb])
            G = self.G
            gm = self._gmv
            for off in range(1, R):
                v = free[mb + off]
                base = ((off - 1) * nb + b) * G
                for g in range(base + k - 1, base - 1, -1):
                    if gm[g] >= v:
                        break
                    gm[g] = v

    # -- queries ------------------------------------------------------------------------
    def candidate_blocks(self, job: int) -> np.ndarray:
        """Boolean mask of blocks whose maxima could hold ``job`` (a superset of the fitting ones)."""
        R = self.R
        req = self._req_mv
        jb = job * R
        bmax = self.bmax
        # Twice the engine's tolerance: a superset of the blocks the exact test accepts.
        r0 = req[jb] - 2 * EPS
        ok = bmax[0] >= r0
        if self.grid:
            g = bisect.bisect_right(self.thresholds, r0) - 1
            for off in range(1, R):
                ok &= self.gmax[off - 1, :, g] >= req[jb + off] - 2 * EPS
        else:
            for off in range(1, R):
                ok &= bmax[off] >= req[jb + off] - 2 * EPS
        return ok

    def first_fit(self, job: int) -> int:
        """Lowest-numbered machine where ``job`` fits now, or -1."""
        ok = self.candidate_blocks(job)
        b = int(ok.argmax())
        if not ok[b]:
            return -1
        m = self._scan(job, b)
        if m >= 0:
            return m
        # The block's bounds came from different machines (or were stale): refresh
        # them and try the other candidates.
        if self.grid:
            self._regrid(b)
        for b2 in (np.flatnonzero(ok[b + 1 :]) + (b + 1)).tolist():
            m = self._scan(job, b2)
            if m >= 0:
                return m
            if self.grid:
                self._regrid(b2)
        return -1

    def _scan(self, job: int, b: int) -> int:
        """First machine of block ``b`` where ``job`` fits, or -1.

        A Python scan: it usually ends within a few machines and costs less
        than the handful of numpy calls a vectorised check needs. The test is
        written exactly as the engine's, so the two never disagree.
        """
        R = self.R
        req = self._req_mv
        free = self._free_mv
        jb = job * R
        if R == 2:
            r0 = req[jb]
            r1 = req[jb + 1]
            for m in range(self.lo[b], self.hi[b]):
                if r0 <= free[2 * m] + EPS and r1 <= free[2 * m + 1] + EPS:
                    return m
            return -1
        rr = [req[jb + off] for off in range(R)]
        for m in range(self.lo[b], self.hi[b]):
            mb = m * R
            for off in range(R):
                if rr[off] > free[mb + off] + EPS:
                    break
            else:
                return m
        return -1

    def fit_mask(self, job: int, lo: int, hi: int) -> np.ndarray:
        """Boolean mask over machines ``lo..hi-1``: where ``job`` fits now."""
        R = self.R
        req = self._req_mv
        jb = job * R
        sub = self.sim.free[lo:hi]
        # Written as the engine's test (request <= free + EPS) so the two never disagree.
        ok = sub[:, 0] + EPS >= req[jb]
        for off in range(1, R):
            ok &= sub[:, off] + EPS >= req[jb + off]
        return ok
