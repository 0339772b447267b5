"""Bucketed score bounds over Tetris's queue: the best fitting queued job without scoring the whole queue.

Tetris (:mod:`simcore.schedulers.tetris`) scores a queued job ``z`` on a
freed machine with free capacity ``f`` as

    score = (a[z, 0] * f[0] + a[z, 1] * f[1] + ...) - g[z] * p[z, col]

and starts the best-scoring job that fits (ties: the lowest queue slot,
i.e. the earliest arrival). A job fits by the engine's one rule
(:mod:`simcore.core.view`): ``f >= request - EPS`` in every resource. Tetris
stores each queued job's *fit floors* ``fl = request - EPS`` (computed once),
so "fits" is ``fl <= f`` here, the very float comparison of the engine. Scoring every queued job costs O(queue) per
completion. This index cuts it to a few buckets.

**Buckets.** A grid over the fit floors in the first two resources (edges at
quantiles of the queue when the index is built). Per bucket: its queue
slots in arrival order, and summaries that only ever err on the safe side:
the smallest fit floor per resource (``lo``), the largest packing weight per
resource (``amax``) and the smallest work term per configuration column
(``wmin``). A start leaves them loose, not wrong; a visit that finds
started jobs recomputes them from the bucket's live jobs.

**Query.** Buckets whose lower grid corner exceeds ``f`` hold no
fitting job; of the rest (a rectangle of the grid) each gets the bound
``amax . max(f, 0) - wmin[col]``, in one vectorised pass. Buckets are
visited in decreasing bound; each visit scores the bucket's fitting jobs
exactly; the search stops when the next bound is *below* the best score
found. Stopping on "below", not "at or below", keeps an equal score of an
earlier arrival in a later bucket in play, so ties resolve exactly as a scan
of the whole queue does.

**Exactness.** Scores are computed with the operations, operand order and
float64 rounding of Tetris's vectorised scan (elementwise IEEE products and
sums, no fused multiply-add; the work term ``g * p`` is stored per slot and
column as the scan computes it, +inf where it is 0 * inf), so a job gets the
bit-identical score either way. Bounds need no safety margin: requests are non-negative (the index is
only used then), so ``a <= amax``, ``a * f <= amax * max(f, 0)`` and
``w >= wmin`` hold for every job of the bucket, and round-to-nearest is
monotone in each operand of a product with a non-negative factor, a sum and
a difference, so the bound computed in float64 is >= the score computed in
float64.
"""

from __future__ import annotations

import math
from array import array
from bisect import bisect_right

import numpy as np

from simcore.core.model import FloatArray
from simcore.core.view import flat_view

NEG_INF = -math.inf
INF = math.inf

#: Buckets larger than this are scored with numpy; smaller ones with a scalar loop
#: (a numpy call costs about a microsecond, a scalar score a fraction of one).
NUMPY_VISIT = 48


class ScoreIndex:
    """Buckets of live queue slots with score bounds; built over the queue columns as they are now.

    The index keeps references to the queue arrays: it is rebuilt whenever
    the queue reallocates them (compaction, growth). ``add`` registers a
    slot just written; started jobs are noticed through ``alive``. It keeps
    one array of its own, the work terms ``w[slot, col]`` (the queue's size
    again), so neither bounds nor scores recompute ``g * p``.
    """

    def __init__(
        self,
        fl: FloatArray,
        a: FloatArray,
        g: FloatArray,
        p: FloatArray,
        alive: np.ndarray,
        used: int,
        per_cell: int,
        max_side: int,
    ) -> None:
        self.R = R = fl.shape[1]
        self.n_p = n_p = p.shape[1]
        self.D = D = min(R, 2)  # resources the grid is over
        self._fl, self._a, self._alive = fl, a, alive
        self._fl_mv = flat_view(fl)
        self._a_mv = flat_view(a)
        self._g_mv = flat_view(g)
        self._p_mv = flat_view(p)
        self._alive_mv = flat_view(alive)
        live = np.flatnonzero(alive[:used])
        n = len(live)
        self.w: FloatArray = np.zeros(p.shape)
        for c in range(n_p):  # one column at a time: temporaries of n floats, not n x configs
            self.w[live, c] = _work(g[live], p[live, c])
        self._w_mv = flat_view(self.w)
        #: Live jobs when built: the owner rebuilds once the queue has doubled.
        self.built = n
        side = max(1, min(max_side, math.isqrt(n // max(1, per_cell))))
        qs = np.linspace(0.0, 1.0, side + 1)[1:-1]
        edges: list[list[float]] = []
        for off in range(D):
            e = np.unique(np.quantile(fl[live, off], qs)) if n and len(qs) else np.zeros(0)
            edges.append(e.tolist())
        self.e0 = edges[0]
        self.e1 = edges[1] if D == 2 else []
        self.G0 = G0 = len(self.e0) + 1
        self.G1 = G1 = len(self.e1) + 1
        self.C = C = G0 * G1
        cell = np.searchsorted(self.e0, fl[live, 0], side="right") * G1
        if D == 2:
            cell += np.searchsorted(self.e1, fl[live, 1], side="right")
        order = np.argsort(cell, kind="stable")  # slot order kept inside each bucket
        slots = live[order]
        cells = cell[order]
        starts = np.flatnonzero(np.r_[True, cells[1:] != cells[:-1]]) if n else np.zeros(0, dtype=np.int64)
        used_cells = cells[starts]
        self.lo: FloatArray = np.full((R, C), INF)
        self.amax: FloatArray = np.zeros((R, C))
        self.wmin: FloatArray = np.full((n_p, C), INF)
        if n:
            self.lo[:, used_cells] = np.minimum.reduceat(fl[slots], starts, axis=0).T
            self.amax[:, used_cells] = np.maximum.reduceat(a[slots], starts, axis=0).T
            self.wmin[:, used_cells] = np.minimum.reduceat(self.w[slots], starts, axis=0).T
        self._lo3 = self.lo.reshape(R, G0, G1)
        self._amax3 = self.amax.reshape(R, G0, G1)
        self._wmin3 = self.wmin.reshape(n_p, G0, G1)
        self._lo_mv = flat_view(self.lo)
        self._amax_mv = flat_view(self.amax)
        self._wmin_mv = flat_view(self.wmin)
        self.slots: list[array[int]] = [array("q") for _ in range(C)]
        bounds = np.r_[starts, n].tolist()
        for k, c in enumerate(used_cells.tolist()):
            self.slots[c] = array("q", slots[bounds[k] : bounds[k + 1]].tobytes())

    # -- maintenance ----------------------------------------------------------------------
    def add(self, slot: int) -> None:
        """Register queue slot ``slot``, whose columns are already written."""
        R = self.R
        fl = self._fl_mv
        b = slot * R
        cell = bisect_right(self.e0, fl[b]) * self.G1
        if self.D == 2:
            cell += bisect_right(self.e1, fl[b + 1])
        self.slots[cell].append(slot)
        C = self.C
        lo = self._lo_mv
        amax = self._amax_mv
        a = self._a_mv
        for off in range(R):
            k = off * C + cell
            if fl[b + off] < lo[k]:
                lo[k] = fl[b + off]
            if a[b + off] > amax[k]:
                amax[k] = a[b + off]
        wmin = self._wmin_mv
        wmv = self._w_mv
        gz = self._g_mv[slot]
        p = self._p_mv
        n_p = self.n_p
        for c in range(n_p):
            w = gz * p[slot * n_p + c]
            if w != w:  # 0 * inf: a job that cannot run there (as in the scan)
                w = INF
            wmv[slot * n_p + c] = w
            k = c * C + cell
            if w < wmin[k]:
                wmin[k] = w

    def _refresh(self, cell: int, live: list[int]) -> None:
        """``cell`` holds exactly the slots ``live`` now: store them and recompute its summaries."""
        self.slots[cell] = array("q", live)
        R = self.R
        C = self.C
        n_p = self.n_p
        lo = self._lo_mv
        amax = self._amax_mv
        wmin = self._wmin_mv
        if not live:
            for off in range(R):
                lo[off * C + cell] = INF
                amax[off * C + cell] = 0.0
            for c in range(n_p):
                wmin[c * C + cell] = INF
            return
        if len(live) > NUMPY_VISIT:
            s = np.array(live, dtype=np.int64)
            self.lo[:, cell] = self._fl[s].min(axis=0)
            self.amax[:, cell] = self._a[s].max(axis=0)
            self.wmin[:, cell] = self.w[s].min(axis=0)
            return
        fl = self._fl_mv
        a = self._a_mv
        w = self._w_mv
        for off in range(R):
            lo[off * C + cell] = min([fl[s * R + off] for s in live])
            amax[off * C + cell] = max([a[s * R + off] for s in live])
        for c in range(n_p):
            wmin[c * C + cell] = min([w[s * n_p + c] for s in live])

    # -- query ------------------------------------------------------------------------------
    def best(self, f: list[float], col: int) -> int:
        """Queue slot of the best-scoring live job that fits in ``f``, or -1.

        ``col`` is the work column of the machine's configuration. A job
        whose score is -inf (it cannot run on this configuration) is never
        returned.
        """
        R = self.R
        i_hi = bisect_right(self.e0, f[0]) + 1
        j_hi = bisect_right(self.e1, f[1]) + 1 if self.D == 2 else 1
        amax = self._amax3
        lo = self._lo3
        x = f[0]
        ub = amax[0, :i_hi, :j_hi] * (x if x > 0.0 else 0.0)
        for off in range(1, R):
            x = f[off]
            ub += amax[off, :i_hi, :j_hi] * (x if x > 0.0 else 0.0)
        ub -= self._wmin3[col, :i_hi, :j_hi]
        # Buckets whose smallest fit floor exceeds f in some resource hold no fitting
        # job. In the grid's resources only the last row and column of the rectangle can
        # (the others lie at or below f by their edges); empty buckets are -inf already.
        i = i_hi - 1
        row = ub[i]
        row[lo[0, i, :j_hi] > f[0]] = NEG_INF
        if self.D == 2:
            j = j_hi - 1
            column = ub[:, j]
            column[lo[1, :i_hi, j] > f[1]] = NEG_INF
        for off in range(2, R):
            ub[lo[off, :i_hi, :j_hi] > f[off]] = NEG_INF
        flat = ub.reshape(-1)  # ub is a fresh contiguous array: a view
        G1 = self.G1
        best = NEG_INF
        bslot = -1
        while True:
            k = int(flat.argmax())
            u = float(flat[k])
            if u == NEG_INF or u < best:
                break
            flat[k] = NEG_INF
            i, j = divmod(k, j_hi)
            cell = i * G1 + j
            if len(self.slots[cell]) > NUMPY_VISIT:
                best, bslot = self._visit_numpy(cell, f, col, best, bslot)
            else:
                best, bslot = self._visit(cell, f, col, best, bslot)
        return bslot

    def _visit(self, cell: int, f: list[float], col: int, best: float, bslot: int) -> tuple[float, int]:
        """Score ``cell``'s fitting jobs one by one; the better of them and (best, bslot)."""
        R = self.R
        fl = self._fl_mv
        a = self._a_mv
        w = self._w_mv
        alive = self._alive_mv
        n_p = self.n_p
        slots = self.slots[cell]
        dead = False
        if R == 2:
            f0, f1 = f
            for s in slots:
                if not alive[s]:
                    dead = True
                    continue
                b = s + s
                if fl[b] > f0 or fl[b + 1] > f1:  # does not fit (free >= floor is the rule)
                    continue
                sc = (a[b] * f0 + a[b + 1] * f1) - w[s * n_p + col]
                if sc > best or (sc == best and s < bslot):
                    best = sc
                    bslot = s
        else:
            for s in slots:
                if not alive[s]:
                    dead = True
                    continue
                b = s * R
                for off in range(R):
                    if fl[b + off] > f[off]:
                        break
                else:
                    sc = a[b] * f[0]
                    for off in range(1, R):
                        sc += a[b + off] * f[off]
                    sc -= w[s * n_p + col]
                    if sc > best or (sc == best and s < bslot):
                        best = sc
                        bslot = s
        if dead:
            self._refresh(cell, [s for s in slots if alive[s]])
        return best, bslot

    def _visit_numpy(self, cell: int, f: list[float], col: int, best: float, bslot: int) -> tuple[float, int]:
        """:meth:`_visit` for a large bucket, vectorised like Tetris's full scan."""
        s = np.array(self.slots[cell], dtype=np.int64)
        alive = self._alive[s]
        if not alive.all():
            s = s[alive]
            self._refresh(cell, s.tolist())
        fl = self._fl
        ok = fl[s, 0] <= f[0]
        for off in range(1, self.R):
            ok &= fl[s, off] <= f[off]
        s = s[ok]
        if len(s) == 0:
            return best, bslot
        a = self._a
        sc = a[s, 0] * f[0]
        for off in range(1, self.R):
            sc += a[s, off] * f[off]
        sc -= self.w[s, col]
        k = int(sc.argmax())  # ties inside the bucket: the lowest slot
        v = float(sc[k])
        z = int(s[k])
        if v > best or (v == best and z < bslot):
            return v, z
        return best, bslot


def _work(g: FloatArray, p: FloatArray) -> FloatArray:
    """Work terms ``g * p``; infinite where the job cannot run (0 * inf included), as Tetris's scan has them."""
    with np.errstate(invalid="ignore"):
        w: FloatArray = g * p
    w[np.isnan(w)] = INF
    return w
