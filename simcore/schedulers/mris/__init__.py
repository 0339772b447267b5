"""MRIS: Multi-dimensional Resource Integrated Scheduling (Nagendram et al., 2011).

The paper maps scheduling on one shared resource pool to a bounded
multi-dimensional knapsack problem (B-MDKP, equations 2-4): application j has
``mu_j`` queued jobs, each demanding ``w_ij`` of resource i; choose counts
``x_j <= mu_j`` with ``sum_j w_ij x_j <= r_i`` maximising ``sum_j p_j x_j``.
MRIS is a greedy heuristic for it. This module holds the pure pool-level
algorithm as small functions (:func:`profit`, :func:`scarcity`,
:func:`efficiency`, :func:`binary_split`, :func:`mris_select`, plus the FIFO
baseline :func:`fifo_select` and :func:`utilisation` of the worked example)
and the simulator adaptation (:class:`MRIS`, registered as ``mris``).

Readings of the paper (its text is garbled or inconsistent in places; each
choice below reproduces the worked example of section III-A):

* Equation (1), profit: ``p_j = 1 / ((1/m) sum_i w_ij / c_i)``. The printed
  ``c_j`` is read as ``c_i``, the capacity of resource i, so the denominator is
  the job's average share of the pool ("inversely proportional to the average
  resource consumption"). In the simulator ``c_i`` is the machine's full
  capacity (argument ``norm``), which keeps p_j defined when a resource is
  momentarily fully used.
* Equation (6), scarcity: ``alpha_i = (sum_j w_ij mu_j - r_i) / sum_j w_ij mu_j``
  exactly as printed, with ``mu_j`` the unscheduled jobs and ``r_i`` the free
  capacity at the time of the selection; ``alpha_i = 0`` for a resource no job
  demands (0/0 in the formula; the term ``w_ij alpha_i`` is zero anyway).
* Equation (5), efficiency: ``e_j = 1 / sum_i w_ij alpha_i``. The printed
  subscript ``alpha_j`` is read as ``alpha_i`` (the text says "multiply w_ij by
  alpha_i"). A negative alpha_i (demand below supply) is clipped to 0: the
  text calls alpha_i the "over-requiring proportion", which is 0 for a
  resource that is not over-required, and without the clip the denominator
  can reach zero or change sign, inverting the order. A job that needs only
  non-scarce resources gets ``e_j = +inf``: it fits whatever else is chosen.
* Logarithmic transformation: a bound ``mu_j`` becomes items of 1, 2, 4, ...
  jobs and one remainder, ``ceil(log2(mu_j + 1))`` items in all (13 -> 1, 2, 4,
  6); an item of q jobs has profit ``q p_j`` and weight ``q w_j``, the same e_j.
* Order: the paper says "non-decreasing order of e_j" but then picks "the
  first application instance with the highest efficiency"; we sort by e_j
  from highest to lowest, ties by item profit from highest to lowest (so the
  largest item of an application comes first), then by application order
  (oldest first). Equal e_j means exactly equal floats.
* Division (Algorithm steps 3-5): take the group of items with the highest
  e_j. If its first item fits whole, it is assigned. Otherwise every item of
  the group is divided to ``X = min(q, min_i floor(c_i / w_ij))`` jobs (the
  garbled step-4 formula, c_i the remaining capacity), and the one with the
  highest updated profit ``X p_j`` is assigned as X jobs (first in order on
  ties); X = 0 items are skipped. If nothing in the group can be assigned the
  group is removed. Repeat until no item is left. After a division no further
  job of that application fits, so the rest of the item is dropped.
* e_j and alpha are computed once per selection (step 2); step 6 updates
  only the capacities and bounds, as the algorithm lists them.
* Integrated utilisation is the arithmetic mean over resources: the example's
  (100% + 83.3% + 83.3%) / 3 = 88.9%, "up to 89%".

The result is maximal: when :func:`mris_select` returns, no further job of
any application fits in the remaining capacity.

Implementation: the greedy loop is vectorised. Each pass finds, with one
numpy test over the remaining items, the first item of which at least one job
still fits, drops the items before it (steps 3-5 would remove them: a group
whose divided items are all 0 is removed, and a 0 item is never kept) and
applies steps 4-5 to that item's group, so a pass assigns one item and the
loop runs once per assignment rather than once per item. The tests check it
against a plain, literal implementation of steps 1-6. The sum of equation (5)
runs over resources in order (:func:`efficiency`), not as a BLAS matrix
product, whose rounding depends on the CPU and the matrix size: e_j and its
ties are the same on every machine.

Compiled kernel (:mod:`simcore.schedulers.mris.kernel`, issue 16): the same
decisions in numba, for every option and run-time model; the tests compare
every start with this class's. A subclass that overrides the event methods
runs in the Python loop.

Worked example (section III-A): pool (12, 12, 12), applications (6,2,2),
(5,4,8), (4,6,2), (2,2,6), one job each. alpha = (5/17, 2/14, 6/18), e =
(0.368, 0.212, 0.370, 0.348), so MRIS takes applications 3, 1, 4 and reaches
(12, 10, 10): 100%, 83.3%, 83.3%, integrated 88.9%. FIFO takes 1 and 2 and
stops at 3: (11, 6, 10), memory 50%.

Adaptation to the simulator (the paper schedules one pool; here every machine
is a pool of its own):

* Applications: the paper models jobs with different demands as different
  applications, so queued jobs are grouped by identical request vectors (not
  by class: jobs of one class may request different amounts). Within an
  application the oldest jobs start first. With continuous request
  distributions every job is its own application with bound 1.
* Candidates: the ``mris_window`` oldest waiting jobs (default 4096; 0 means
  all of them, as in the paper). Younger jobs wait in a FIFO backlog and join
  the candidates as places free up. Bounding the set bounds the work per
  event in overloaded million-job runs whose queue grows without limit; the
  default is large enough that it rarely binds otherwise. alpha (equation 6)
  is computed over all candidates (their total demand is kept as a running
  sum), while only the applications that fit on the machine enter the greedy
  loop (the others would be skipped there anyway).
* Events. Between events every candidate fits on no machine (invariant), so:
  - on a completion on machine m, only m has gained capacity: the selection
    runs on m alone (the machine just freed), with ``r = free capacity of m``;
  - on an arrival, and when backlog jobs join the candidates, only the new
    candidates can fit anywhere. The per-machine selection over machines in
    configuration order (the LoTES Table 1 order, as its Greedy policy) then
    reduces, for one new job, to first fit in that order -- in particular an
    arriving job is placed directly when there is no queue. With several new
    candidates the selection runs on the first machine where any of them
    fits, and repeats until none fits anywhere.
* Starvation: MRIS favours efficient jobs and may keep passing over a large
  one, as the paper's heuristic does; the window bounds how many younger jobs
  compete with it.
* Tolerance: the project's one fit rule (:mod:`simcore.core.fit`, ``free >=
  request - EPS``) decides every start: first fit uses the engine view's
  mask, and each job the selection picks is checked with ``sim.view.fits``
  before it starts (the selection's arithmetic subtracts ``x * w`` where the
  engine subtracts ``w`` x times, so the two can differ by round-off; a job
  the rule refuses simply stays queued).
* Where a job cannot run (an infinite processing time: a rate of 0, LoTES
  section 5.3), it is never started: first fit skips those configurations,
  and the selection on a machine considers only candidates that can run there.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from simcore.core.errors import ParameterError
from simcore.core.fit import EPS
from simcore.schedulers import register
from simcore.schedulers.base import Param, Scheduler

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel
    from simcore.core.engine import Simulation

FloatArray = NDArray[np.float64]
IntArray = NDArray[np.int64]

#: Default size of the candidate set (oldest waiting jobs) per selection.
DEFAULT_WINDOW = 4096


# -- the pool-level algorithm -----------------------------------------------------------


def profit(demands: FloatArray, norm: FloatArray) -> FloatArray:
    """Equation (1): ``p_j = m / sum_i (w_ij / c_i)``, shape ``(A,)``.

    ``demands`` is ``(A, R)`` (one row per application, per-job demand),
    ``norm`` is ``(R,)`` the capacities ``c_i`` in the same units. A demand on
    a resource of zero capacity gives p_j = 0; a job demanding nothing has
    p_j = +inf.
    """
    m = demands.shape[1]
    with np.errstate(divide="ignore", invalid="ignore"):
        share = np.where(demands > 0, demands / norm, 0.0)
        total = share.sum(axis=1)
        return np.where(total > 0, m / total, np.inf)


def scarcity(demands: FloatArray, counts: FloatArray, capacity: FloatArray) -> FloatArray:
    """Equation (6): ``alpha_i = (sum_j w_ij mu_j - r_i) / sum_j w_ij mu_j``, shape ``(R,)``.

    As printed: negative when the queued demand is below the capacity. A
    resource nobody demands gets 0.
    """
    total = counts @ demands
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(total > 0, (total - capacity) / total, 0.0)


def efficiency(demands: FloatArray, alpha: FloatArray) -> FloatArray:
    """Equation (5): ``e_j = 1 / sum_i w_ij max(alpha_i, 0)``, shape ``(A,)``; +inf when the sum is 0.

    The sum runs over resources in order, one product at a time, not as a
    matrix product: BLAS (``demands @ a``) orders and fuses the operations by
    CPU and matrix size, so e_j, and the ties between equal e_j, would depend
    on the machine; this way they are the same everywhere, and in the kernel.
    """
    a = np.maximum(alpha, 0.0).tolist()
    d = np.zeros(demands.shape[0])
    for i, ai in enumerate(a):
        d += demands[:, i] * ai
    with np.errstate(divide="ignore"):
        return np.where(d > 0, 1.0 / d, np.inf)


def binary_split(bound: int) -> list[int]:
    """The logarithmic transformation of a bound: 1, 2, 4, ... and a remainder (13 -> [1, 2, 4, 6])."""
    sizes: list[int] = []
    k = 1
    left = int(bound)
    while k <= left:
        sizes.append(k)
        left -= k
        k *= 2
    if left > 0:
        sizes.append(left)
    return sizes


def _select(
    demands: FloatArray,
    counts: IntArray,
    capacity: FloatArray,
    norm: FloatArray,
    tol: float,
    alpha: FloatArray | None = None,
) -> IntArray:
    """:func:`mris_select` without input checks (the scheduler's hot path).

    ``alpha``: equation (6) computed by the caller over a larger job set than
    ``demands`` (the scheduler passes only the applications that fit and keeps
    the candidates' total demand as a running sum).
    """
    n_apps = len(counts)
    chosen = np.zeros(n_apps, dtype=np.int64)
    # Step 2: profit, scarcity and efficiency of every application.
    p = profit(demands, norm)
    if alpha is None:
        alpha = scarcity(demands, counts.astype(np.float64), capacity)
    e = efficiency(demands, alpha)
    # An application of which not one job fits now never fits later (capacity
    # only shrinks during a selection); it is never picked in a division, so
    # dropping it early changes nothing.
    live = np.flatnonzero(np.all(demands <= capacity + tol, axis=1) & (counts > 0))
    if len(live) == 0:
        return chosen
    ia, iq = split_items(live, counts[live])
    ie = e[ia]
    ip = p[ia] * iq
    # Highest e first, then highest item profit, then oldest application, then largest item.
    order = np.lexsort((-iq, ia, -ip, -ie))
    ia, iq, ie = ia[order], iq[order], ie[order]
    iw = demands[ia]  # (items, R)
    ipu = p[ia]  # unit profit p_j of each item's application
    # Items of equal e are contiguous; group_end[k] is one past the last item of k's group.
    starts = np.flatnonzero(np.r_[True, ie[1:] != ie[:-1]])
    group_end = np.repeat(np.r_[starts[1:], len(ie)], np.diff(np.r_[starts, len(ie)]))
    alive = np.ones(len(ia), dtype=bool)
    cap = capacity.astype(np.float64).copy()
    with np.errstate(divide="ignore", invalid="ignore"):
        while True:
            # Items of which at least one job still fits. Leading items that do
            # not fit would be removed by steps 3-5 (a group whose divided items
            # are all 0 is removed; a 0 item is never the one kept), so skip them.
            fit1 = alive & np.all(iw <= cap + tol, axis=1)
            k = int(fit1.argmax())
            if not fit1[k]:
                break
            alive[:k] = False
            # Steps 3-5 on k's group: X = min(q, min_i floor(c_i / w_ij)) for each item.
            g = slice(k, int(group_end[k]))
            per = np.where(iw[g] > 0, np.floor((cap + tol) / iw[g]), np.inf).min(axis=1)
            x = np.where(alive[g], np.minimum(iq[g], per), 0)
            if x[0] >= iq[k]:
                pick = 0  # step 4: the first item fits whole
            else:
                # Step 5: the highest updated profit X p_j among X > 0, first on ties.
                pick = int(np.argmax(np.where(x > 0, x * ipu[g], -1.0)))
            it = k + pick
            n = int(x[pick])
            chosen[ia[it]] += n
            # Step 6: update the capacities; the item is used up.
            cap -= n * iw[it]
            alive[it] = False
    return chosen


def split_items(apps: IntArray, bounds: IntArray) -> tuple[IntArray, IntArray]:
    """The logarithmic transformation of many bounds at once: ``(application, size)`` of every item.

    Application ``apps[t]`` with bound ``bounds[t]`` gets items 1, 2, 4, ...,
    ``2**(k-1)`` with ``k = floor(log2(b + 1))`` and a remainder ``b - (2**k - 1)``
    if positive, as :func:`binary_split`.
    """
    b = np.asarray(bounds, dtype=np.int64)
    if len(b) and b.max() == 1:  # the common case in the simulator: every job its own application
        return np.asarray(apps, dtype=np.int64), np.ones(len(b), dtype=np.int64)
    k = np.frexp((b + 1).astype(np.float64))[1].astype(np.int64) - 1  # floor(log2(b + 1)), exact
    rem = b - ((np.int64(1) << k) - 1)
    pow_app = np.repeat(apps, k)
    first = np.repeat(np.cumsum(k) - k, k)
    pow_size = np.int64(1) << (np.arange(len(pow_app), dtype=np.int64) - first)
    has_rem = rem > 0
    return (
        np.concatenate([pow_app, np.asarray(apps)[has_rem]]).astype(np.int64),
        np.concatenate([pow_size, rem[has_rem]]).astype(np.int64),
    )


def mris_select(
    demands: ArrayLike,
    counts: ArrayLike,
    capacity: ArrayLike,
    *,
    norm: ArrayLike | None = None,
    tol: float = 0.0,
) -> IntArray:
    """The MRIS selection on one pool: how many jobs of each application to start.

    ``demands``: ``(A, R)`` per-job demand ``w_j`` of each application.
    ``counts``: ``(A,)`` queued jobs ``mu_j`` (the bounds).
    ``capacity``: ``(R,)`` free capacity ``r_i``.
    ``norm``: ``(R,)`` capacities ``c_i`` of equation (1); defaults to ``capacity``.
    ``tol``: a demand fits when ``demand <= remaining + tol`` (resource units).
    Returns ``x``, shape ``(A,)``, with ``x <= counts`` and ``x @ demands <= capacity + tol``.
    """
    w = np.asarray(demands, dtype=np.float64)
    if w.ndim != 2:
        raise ParameterError(f"demands must be a 2-D array (applications, resources), got shape {w.shape}")
    mu = np.asarray(counts)
    if mu.shape != (w.shape[0],):
        raise ParameterError(f"counts must have shape ({w.shape[0]},), got {mu.shape}")
    if mu.size and (not np.all(mu == np.round(mu)) or mu.min() < 0):
        raise ParameterError("counts must be non-negative integers")
    c = np.asarray(capacity, dtype=np.float64)
    n = c if norm is None else np.asarray(norm, dtype=np.float64)
    for label, arr in (("capacity", c), ("norm", n)):
        if arr.shape != (w.shape[1],):
            raise ParameterError(f"{label} must have shape ({w.shape[1]},), got {arr.shape}")
        if not np.all(np.isfinite(arr)) or np.any(arr < 0):
            raise ParameterError(f"{label} must be finite and non-negative")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ParameterError("demands must be finite and non-negative")
    if not tol >= 0:
        raise ParameterError(f"tol must be non-negative, got {tol}")
    return _select(w, mu.astype(np.int64), c, n, float(tol))


def fifo_select(demands: ArrayLike, counts: ArrayLike, capacity: ArrayLike, *, tol: float = 0.0) -> IntArray:
    """The paper's Schedule 1: jobs in arrival order, first fit, stop at the first that does not fit."""
    w = np.asarray(demands, dtype=np.float64)
    cap = np.asarray(capacity, dtype=np.float64).copy()
    out = np.zeros(len(w), dtype=np.int64)
    for a, b in enumerate(np.asarray(counts, dtype=np.int64).tolist()):
        for _ in range(b):
            if np.any(w[a] > cap + tol):
                return out
            cap -= w[a]
            out[a] += 1
    return out


def utilisation(demands: ArrayLike, chosen: ArrayLike, capacity: ArrayLike) -> FloatArray:
    """Used fraction of each resource, ``(R,)``; the integrated utilisation is its mean."""
    used = np.asarray(chosen, dtype=np.float64) @ np.asarray(demands, dtype=np.float64)
    return used / np.asarray(capacity, dtype=np.float64)


# -- the simulator adaptation -------------------------------------------------------------


def applications(request: FloatArray) -> IntArray:
    """The application of each job: identical request rows share one, numbered in lexicographic order.

    ``np.unique(request, axis=0, return_inverse=True)``'s labels, three times faster (it sorts
    rows as structured records; a million-job run spent a quarter of its time there).
    """
    n = len(request)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.lexsort(request.T[::-1])  # by the first resource, then the next, ...
    rows = request[order]
    new = np.empty(n, dtype=bool)
    new[0] = True
    new[1:] = (rows[1:] != rows[:-1]).any(axis=1)
    app = np.empty(n, dtype=np.int64)
    app[order] = np.cumsum(new) - 1
    return app


@register("mris")
class MRIS(Scheduler):
    """MRIS run per machine at every scheduling event (see the module docstring)."""

    name = "mris"
    description = (
        "Multi-dimensional Resource Integrated Scheduling (Nagendram et al. 2011): greedy B-MDKP "
        "selection by scarcity-weighted efficiency, run per machine over the oldest queued jobs"
    )
    params = (
        Param(
            "mris_window",
            int,
            DEFAULT_WINDOW,
            "MRIS: how many of the oldest waiting jobs each selection considers (0: all)",
            min=0,
            max=10_000_000,
        ),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        w = int(options.get("mris_window", DEFAULT_WINDOW))
        if w < 0:
            raise ParameterError(f"scheduler 'mris' parameter 'mris_window' must be at least 0, got {w}")
        self.window_size = w if w > 0 else 1 << 62

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self._req = sim.request
        self._free = sim.free  # the engine view's (machines, resources) free capacity, read-only
        self._cap = sim.capacity
        R = sim.request.shape[1]
        # Application of every job: identical request vectors form one application.
        self._app: IntArray = applications(sim.request)
        # The candidates, oldest first, as slots of two arrays: job ids and their
        # requests (contiguous, so the fit pre-check is a column scan, no gather).
        # A started candidate's slot is emptied (id -1, request +inf: it never
        # fits) and the arrays are compacted when half the slots are empty.
        size = 64
        self._ids: IntArray = np.full(size, -1, dtype=np.int64)
        self._creq: FloatArray = np.full((size, R), np.inf)
        self._slot_of: dict[int, int] = {}  # job -> slot
        self._used = 0  # slots in use (alive or emptied)
        self._total = np.zeros(R)  # sum of the candidates' requests (equation 6's numerator)
        self._backlog: deque[int] = deque()  # younger waiting jobs, FIFO
        self.selections = 0  # per-machine selections that ran (for tests and benchmarks)

    def kernel(self, sim: Simulation) -> Kernel | None:
        # A subclass that changes what the scheduler does runs its own Python methods.
        own = ("on_arrival", "on_completion", "_place_new", "_select_on", "_first_fit", "_start", "_refill")
        if any(getattr(type(self), f) is not getattr(MRIS, f) for f in own):
            return None
        from simcore.schedulers.mris.kernel import make

        return make(self, sim)

    # -- events -------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        if not self._slot_of:
            # No queue: the selection over one job reduces to first fit.
            m = self._first_fit(job)
            if m >= 0:
                self.sim.start(job, m)
            else:
                self._add(job)
            return
        if len(self._slot_of) < self.window_size:
            self._add(job)
            self._place_new([job])
        else:
            self._backlog.append(job)

    def on_completion(self, job: int, machine: int) -> None:
        if not self._slot_of:
            return
        self._select_on(machine)
        new = self._refill()
        if new:
            self._place_new(new)

    # -- the candidate set ----------------------------------------------------------------
    def _add(self, job: int) -> None:
        if self._used == len(self._ids):
            self._compact(grow=True)
        k = self._used
        self._ids[k] = job
        self._creq[k] = self._req[job]
        self._slot_of[job] = k
        self._used = k + 1
        self._total += self._req[job]

    def _remove(self, job: int) -> None:
        k = self._slot_of.pop(job)
        self._ids[k] = -1
        self._creq[k] = np.inf
        if not self._slot_of:
            # Empty: reset (also drops the running sum's round-off).
            self._used = 0
            self._total[:] = 0.0
        else:
            self._total -= self._req[job]

    def _compact(self, grow: bool = False) -> None:
        n = self._used
        keep = np.flatnonzero(self._ids[:n] >= 0)
        alive = len(keep)
        size = len(self._ids)
        if grow and alive > size // 2:
            size *= 2
        ids = np.full(size, -1, dtype=np.int64)
        creq = np.full((size, self._creq.shape[1]), np.inf)
        ids[:alive] = self._ids[keep]
        creq[:alive] = self._creq[keep]
        self._ids, self._creq, self._used = ids, creq, alive
        self._slot_of = dict(zip(ids[:alive].tolist(), range(alive), strict=True))
        self._total = self._req[ids[:alive]].sum(axis=0)

    def _refill(self) -> list[int]:
        """Move backlog jobs into the candidate set; return the ones moved."""
        moved: list[int] = []
        while self._backlog and len(self._slot_of) < self.window_size:
            j = self._backlog.popleft()
            self._add(j)
            moved.append(j)
        return moved

    # -- placing ---------------------------------------------------------------------------
    def _first_fit(self, job: int) -> int:
        """Lowest-numbered machine (configuration order) where ``job`` fits now and can run, or -1."""
        sim = self.sim
        view = sim.view
        m = view.first_fit(job)
        if m < 0 or sim.all_runnable or sim.can_run(job, m):
            return m
        runnable = sim.runnable_configs(job)
        for c, (lo, hi) in enumerate(view.config_ranges):
            if runnable[c] and hi > lo:
                m = view.first_fit(job, lo, hi)
                if m >= 0:
                    return m
        return -1

    def _start(self, job: int, m: int) -> None:
        self.sim.start(job, m)
        self._remove(job)

    def _place_new(self, pending: list[int]) -> None:
        """Place new candidates: the per-machine selection in machine order, reduced (module docstring)."""
        first_fit = self._first_fit
        while pending:
            if len(pending) == 1:
                j = pending[0]
                m = first_fit(j)
                if m < 0:
                    return
                self._start(j, m)
                pending = self._refill()
                continue
            # The first machine, in configuration order, where any new candidate fits.
            hits = [m for m in map(first_fit, pending) if m >= 0]
            if not hits:
                return
            m = min(hits)
            started = set(self._select_on(m))
            if not started:
                # Defensive: first fit and the selection use the same test, so a
                # fitting job is always selected; never loop without progress.
                j = next(j for j in pending if first_fit(j) == m)
                self._start(j, m)
                started = {j}
            pending = [j for j in pending if j not in started] + self._refill()

    def _select_on(self, m: int) -> list[int]:
        """Run the MRIS selection on machine ``m`` over the candidates; start and return the chosen jobs."""
        n = self._used
        creq = self._creq
        free = self._free[m].copy()
        # Only candidates that fit now can be chosen (they are also the only
        # applications the greedy loop would look at); one column scan, by the engine's fit rule.
        f = free.tolist()
        ok = f[0] >= creq[:n, 0] - EPS
        for i in range(1, len(f)):
            ok &= f[i] >= creq[:n, i] - EPS
        slots = np.flatnonzero(ok)
        sim = self.sim
        if len(slots) and not sim.all_runnable:
            ids_ok = self._ids[slots].tolist()
            slots = slots[[sim.can_run(j, m) for j in ids_ok]]
        if len(slots) == 0:
            return []
        self.selections += 1
        ids = self._ids[slots]
        # Equation (6) over all candidates: their total demand against m's free capacity.
        total = self._total
        with np.errstate(divide="ignore", invalid="ignore"):
            alpha = np.where(total > 0, (total - free) / total, 0.0)
        # Applications among the fitting candidates, in order of their oldest job. All
        # candidates of an application have the same request, so they all fit or none.
        _, first, inv, cnt = np.unique(self._app[ids], return_index=True, return_inverse=True, return_counts=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        chosen = _select(creq[slots[first[order]]], cnt[order].astype(np.int64), free, self._cap[m], EPS, alpha)
        left = chosen.tolist()
        started: list[int] = []
        for job, a in zip(ids.tolist(), rank[inv.reshape(-1)].tolist(), strict=True):
            if left[a]:
                left[a] -= 1
                started.append(job)
        fits = sim.view.fits
        done: list[int] = []
        for j in started:
            if fits(j, m):  # the engine's rule, after the previous starts on m
                self._start(j, m)
                done.append(j)
        started = done
        if self._used > 64 and 2 * len(self._slot_of) < self._used:
            self._compact()
        return started
