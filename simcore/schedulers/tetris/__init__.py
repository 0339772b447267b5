"""The Tetris scheduler (Grandl et al., SIGCOMM 2014) as the LoTES paper uses it (section 5.1)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from simcore.core.engine import Simulation
from simcore.core.model import FixedRuntime, FloatArray, IntArray, RateRuntime
from simcore.core.view import EPS
from simcore.schedulers import register
from simcore.schedulers.base import Param, Scheduler
from simcore.schedulers.tetris.score_index import ScoreIndex

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel

#: Jobs sampled (evenly spaced, no randomness) to estimate the mean processing
#: time when it cannot be read off the workload directly.
PBAR_SAMPLE = 4096

NEG_INF = -math.inf


@register("tetris")
class Tetris(Scheduler):
    """Packing score minus work score; the best-scoring (job, machine) pair runs.

    LoTES section 5.1: for a job with request vector ``r`` and a machine with
    free capacity ``C``, the packing score is ``omega = r . C`` and the work
    score is ``gamma = p (r . 1)`` with ``p`` the job's processing time on that
    machine (:meth:`Simulation.processing_time`). With equal weights the
    score is ``omega - gamma``; larger is better.

    * **Arrival.** Among the machines where the job fits now, it starts on
      the one with the largest score (ties: lowest machine index, i.e.
      configuration order). If it fits nowhere it joins one global queue.
      An arrival may start while older jobs wait: those fit on no machine.
    * **Completion on machine m.** Among the queued jobs that fit on m, the
      one with the largest score on m starts (ties: earliest arrival); this
      repeats until no queued job fits on m.

    **Normalisation** (left open by the paper; its intent is two comparable
    terms). Every resource is divided by the largest capacity of that
    resource in the cluster, and ``p`` by the workload's mean processing time
    ``p_bar``::

        omega = sum_l (r_l / cmax_l) (C_l / cmax_l)
        gamma = work_weight * (p / p_bar) * sum_l r_l / cmax_l

    For the Google presets, which already normalise resources to the largest
    machine (Table 1), the first step changes nothing; for a cluster given
    in cores and GiB it stops the resource with the bigger unit from
    dominating. With ``p`` in units of ``p_bar`` the two terms are equal for
    a job of average length on an empty largest machine, so neither swamps
    the other: in seconds, ``gamma`` would be ~100x ``omega`` for the Google
    jobs (mean ~110 s) and Tetris would degenerate to shortest-job-first; in
    hours it would vanish for short jobs. ``p_bar`` is a constant fixed
    before the run (it uses the workload's jobs only through this one mean): the mean of ``work`` when processing time
    does not depend on the machine, otherwise the mean over an evenly spaced
    sample of up to 4,096 jobs of their processing time averaged over the
    configurations. ``work_weight`` (default 1: the paper's equal weights)
    scales ``gamma``.

    **Where a job cannot run.** A processing time that is infinite, NaN or
    negative (a rate of 0: the job cannot run on that configuration, LoTES
    section 5.3) gives a work score of +inf whatever the weight, so the
    score is -inf; Tetris never starts a job where its score is -inf, on
    arrival (every path) or on completion (a queued job that fits only
    where it cannot run stays queued). It therefore never chooses a machine
    where the job cannot run. (With a runtime that does not depend on the
    machine the processing time is the job's ``work``, finite by
    :class:`~simcore.core.model.Workload`'s validation.)

    **Fits** use the engine's one rule (:mod:`simcore.core.view`): a job fits
    where free capacity ``>= request - EPS`` in every resource. The request
    minus EPS is computed once per job (its *fit floor*) and compared with
    the engine's own free capacity, so Tetris and the engine never disagree.

    Implementation: on arrival every machine is scored in one vectorised
    pass over the engine's free capacity, read through its public view
    (``sim.view.free_by_resource``: one contiguous row per resource): about
    ten numpy calls over 10,000 machines, no Python loop over machines and
    no copy of the state. ``p`` is evaluated
    once per configuration when the runtime model depends on the
    configuration only (the built-in models); otherwise (a runtime that
    depends on the machine's last job class) once per distinct
    (configuration, last class) pair among the fitting machines. In a full
    cluster (a long queue) the top-scoring machine rarely has room; after a few
    such arrivals in a row, arrivals score only the machines where they fit
    (same scores, same choice, one pass fewer). The queue is a set of numpy
    columns (fit floor, score factors, processing time per configuration); an
    O(1) test against the smallest queued fit floor per resource skips
    completions where nothing can fit. A short queue is scored whole, in a
    few vectorised operations; from 2,048 queued jobs a
    :class:`~simcore.schedulers.tetris.score_index.ScoreIndex` (buckets of queued
    jobs with upper bounds on their scores) finds the same job while
    scoring a few buckets, so a completion costs about the same with 50,000
    queued jobs as with 2,000.

    Compiled: :mod:`simcore.schedulers.tetris.kernel` makes the same decisions in
    numba (the default engine), with its own structures: a branch and bound over
    a max tree of free capacity on arrival, a grid of buckets over long queues.

    Per-run state: :meth:`setup` rebuilds all of it (queue, index, arrival
    mode counters) from the options, so an instance may run several
    simulations in turn, each as a fresh instance would.

    Versus the paper: on the Phi sweep (Figure 11) Tetris leads LoTES with the
    paper's per-job request variability (CV 0.5): scoring each job's own request
    against each machine's free capacity packs job shapes that LoTES's class-mean
    plan does not see; with ``request_cv=0`` it falls behind LoTES, as in the paper.
    """

    name = "tetris"
    #: Live queued jobs from which completions use a :class:`ScoreIndex` instead of
    #: scoring the whole queue (same decisions, found faster). Below it a scan is
    #: cheaper than keeping the index; tests lower it to 0 or raise it out of reach
    #: to force one path.
    _index_threshold = 2048
    #: Target live jobs per bucket of the index, and the cap on buckets per grid side.
    _index_per_cell = 8
    _index_max_side = 64
    #: Arrivals in a busy cluster (at least _busy_queue queued jobs, _busy_min_machines
    #: machines): after _misses_to_switch arrivals in a row whose top-scoring machine was
    #: full, the next _fitting_run arrivals score only the machines where they fit, unless
    #: one fits on at least 1 / _dense_fit of them. This changes the cost, never the choice.
    #: (A brief queue at moderate load leaves many machines with room: there scoring
    #: all machines is cheaper.)
    _busy_queue = 256
    _busy_min_machines = 4096
    _misses_to_switch = 3
    _fitting_run = 32
    _dense_fit = 2
    description = "Tetris: best packing score minus work score, on arrival and on completion (Grandl et al. 2014)"
    params = (
        Param(
            "work_weight",
            float,
            1.0,
            "Tetris: weight of the work score against the packing score (the LoTES paper uses 1)",
            min=0.0,
        ),
    )

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.work_weight = float(self.options.get("work_weight", 1.0))
        cluster = sim.cluster
        view = sim.view
        R = view.n_resources
        N = view.n_machines
        self.R = R
        self.N = N
        #: The engine's free capacity, (R, N) C order, and the same memory flat (read-only).
        self.F = view.free_by_resource
        self._fmv = view.free_flat
        self._req = view.request_flat
        self._cfg = view.config_list
        present = cluster.counts > 0
        cmax = cluster.capacity[present].max(axis=0)
        cmax = np.where(cmax > 0, cmax, 1.0)
        self.inv: list[float] = (1.0 / cmax).tolist()
        self.inv2: list[float] = (1.0 / cmax**2).tolist()
        self.n_cfg = cluster.n_configs
        self.cfg_present: list[int] = np.flatnonzero(present).tolist()
        self.cfg_has: list[bool] = present.tolist()
        runtime = sim.runtime
        if isinstance(runtime, FixedRuntime):
            self.mode = "fixed"  # p independent of the machine
        elif isinstance(runtime, RateRuntime) or getattr(runtime, "config_only", False):
            self.mode = "config"  # p depends on the configuration only
        else:
            self.mode = "general"  # p may depend on the machine's last job class
        self.pbar = self._mean_processing_time()
        self.wfac = self.work_weight / self.pbar
        self._sc = np.empty(N)
        self._tmp = np.empty(N)
        self._nok = np.empty(N, dtype=bool)
        self._btmp = np.empty(N, dtype=bool)
        #: Machines of each configuration are contiguous: (config, first, end).
        self.segments: list[tuple[int, int, int]] = [
            (c, lo, hi) for c, (lo, hi) in enumerate(view.config_ranges) if hi > lo
        ]
        #: Machine -> position of its configuration in ``segments``.
        self.seg_of: IntArray = np.repeat(np.arange(len(self.segments)), [hi - lo for _, lo, hi in self.segments])
        self._misses = 0  # arrivals in a row whose top-scoring machine was full
        self._fitting_left = 0  # arrivals left that score only the fitting machines
        # Queue columns, grown by doubling; entries are dead once started.
        cap = 1024
        n_p = 1 if self.mode == "fixed" else self.n_cfg
        self.q_job: IntArray = np.zeros(cap, dtype=np.int64)
        self.q_fl: FloatArray = np.zeros((cap, R))  # fit floors: request - EPS
        self.q_a: FloatArray = np.zeros((cap, R))
        self.q_g: FloatArray = np.zeros(cap)
        self.q_p: FloatArray = np.zeros((cap, n_p))
        self.q_alive = np.zeros(cap, dtype=bool)
        self.qn = 0  # used slots
        self.qcount = 0  # live jobs
        # Per-resource lower bound on the queued fit floors: an O(1) "nothing fits" test.
        self.q_min: list[float] = [math.inf] * R
        # The index needs p per configuration up front (not 'general') and non-negative
        # requests (its bounds assume them; see score_index).
        wl = sim.workload
        self._indexable = self.mode != "general" and (wl.n_jobs == 0 or float(view.request.min()) >= 0.0)
        self._index: ScoreIndex | None = None

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.tetris.kernel import make

        return make(self, sim)

    def _mean_processing_time(self) -> float:
        sim = self.sim
        wl = sim.workload
        if self.mode == "fixed" and wl.n_jobs:
            pbar = float(np.mean(wl.work))
        elif wl.n_jobs:
            jobs = np.unique(np.linspace(0, wl.n_jobs - 1, min(PBAR_SAMPLE, wl.n_jobs)).astype(np.int64)).tolist()
            times = [self._p(z, c) for z in jobs for c in self.cfg_present]
            finite = [t for t in times if t < math.inf]
            pbar = sum(finite) / len(finite) if finite else 1.0
        else:
            pbar = 1.0
        return pbar if pbar > 0 and math.isfinite(pbar) else 1.0

    # -- scores -----------------------------------------------------------------------------
    def _factors(self, job: int) -> tuple[list[float], list[float], float]:
        """(fit floors r_l - EPS, packing weights r_l / cmax_l^2, work factor w * sum(r_l / cmax_l) / p_bar)."""
        R = self.R
        req = self._req
        jb = job * R
        if R == 2:  # the common case, without the generic loops
            r0 = req[jb]
            r1 = req[jb + 1]
            inv = self.inv
            inv2 = self.inv2
            return [r0 - EPS, r1 - EPS], [r0 * inv2[0], r1 * inv2[1]], (r0 * inv[0] + r1 * inv[1]) * self.wfac
        r = [req[jb + off] for off in range(R)]
        a = [r[off] * self.inv2[off] for off in range(R)]
        # A plain left-to-right sum (not ``sum``, whose float rounding changed in Python 3.12):
        # the compiled kernel computes the same float on every Python.
        s = 0.0
        for off in range(R):
            s += r[off] * self.inv[off]
        return [x - EPS for x in r], a, s * self.wfac

    def _p(self, job: int, config: int) -> float:
        """Processing time on ``config`` (s); infinite where the job cannot run (a zero rate)."""
        try:
            p = self.sim.runtime.duration(job, config, -1)
        except ZeroDivisionError:
            return math.inf
        return _runnable(p)

    # -- arrival --------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        fl, a, gfac = self._factors(job)
        best = self._best_machine_general if self.mode == "general" else self._best_machine
        m = best(job, fl, a, gfac)
        if m >= 0:
            self.sim.start(job, m)
        else:
            self._enqueue(job, fl, a, gfac)

    def _best_machine(self, job: int, fl: list[float], a: list[float], gfac: float) -> int:
        """The best fitting machine by one vectorised pass; p depends on the configuration only."""
        g: list[float] | None = None  # work score per configuration segment, None if it is the same everywhere
        if self.mode == "config":
            gl = [_work(gfac, self._p(job, c)) for c, _, _ in self.segments]
            if any(x != gl[0] for x in gl):
                g = gl
            elif gl[0] == math.inf:
                return -1  # it can run nowhere
            # else: a constant work score cannot change the choice and is left out
        N = self.N
        busy = self.qcount >= self._busy_queue and N >= self._busy_min_machines
        if self._fitting_left and busy:
            self._fitting_left -= 1
            return self._best_fitting(fl, a, g)
        R = self.R
        F = self.F
        sc = self._sc
        tmp = self._tmp
        # Elementwise ufuncs, not a BLAS dot: a dot may fuse multiply-adds in some
        # lanes and not others, so identical machines could score differently by an
        # ulp, and results would depend on the BLAS build.
        np.multiply(F[0], a[0], out=sc)
        for off in range(1, R):
            np.multiply(F[off], a[off], out=tmp)
            np.add(sc, tmp, out=sc)
        if g is not None:
            for (_, lo, hi), gc in zip(self.segments, g, strict=True):
                sc[lo:hi] -= gc
        # The best machine overall usually has room (it has the most free capacity
        # in the job's direction); if it fits, it is also the best fitting one, with
        # the same lowest-index tie rule. Only otherwise is the fit mask needed.
        k = int(sc.argmax())
        if sc[k] == NEG_INF:
            return -1
        fmv = self._fmv
        for off in range(R):
            if not fmv[off * N + k] >= fl[off]:  # the engine's test
                break
        else:
            self._misses = 0
            return k
        if busy:
            # In a full cluster the top machine is rarely the one with room: after a few
            # such arrivals in a row, skip the pass of scores over all machines for a while.
            self._misses += 1
            if self._misses >= self._misses_to_switch:
                self._misses = 0
                self._fitting_left = self._fitting_run
        nok = self._nok
        btmp = self._btmp
        # Machines where the job does NOT fit (the engine's test, negated).
        np.less(F[0], fl[0], out=nok)
        for off in range(1, R):
            np.less(F[off], fl[off], out=btmp)
            np.logical_or(nok, btmp, out=nok)
        np.copyto(sc, NEG_INF, where=nok)
        k = int(sc.argmax())  # ties: the lowest machine index
        return k if sc[k] != NEG_INF else -1

    def _best_fitting(self, fl: list[float], a: list[float], g: list[float] | None) -> int:
        """:meth:`_best_machine` scoring only the machines where the job fits: same scores, same choice."""
        F = self.F
        ok = self._nok
        btmp = self._btmp
        np.greater_equal(F[0], fl[0], out=ok)  # the engine's test
        for off in range(1, self.R):
            np.greater_equal(F[off], fl[off], out=btmp)
            np.logical_and(ok, btmp, out=ok)
        cand = np.flatnonzero(ok)
        if len(cand) * self._dense_fit >= self.N:
            self._fitting_left = 0  # room on many machines: the top one may well fit again
        if len(cand) == 0:
            return -1
        sc = F[0][cand] * a[0]
        for off in range(1, self.R):
            sc += F[off][cand] * a[off]
        if g is not None:
            sc -= np.array(g)[self.seg_of[cand]]
        k = int(sc.argmax())  # ties: the lowest machine index (cand is ascending)
        return int(cand[k]) if sc[k] != NEG_INF else -1

    def _best_machine_general(self, job: int, fl: list[float], a: list[float], gfac: float) -> int:
        """Every fitting machine scored; p from one runtime call per (configuration, last class)."""
        sim = self.sim
        view = sim.view
        cand = np.flatnonzero(view.fit_mask(fl))
        if len(cand) == 0:
            return -1
        F = self.F
        sc = F[0, cand] * a[0]
        for off in range(1, self.R):
            sc += F[off, cand] * a[off]
        cfg = view.config_of[cand]
        last = view.last_class[cand]
        keys = cfg * (int(last.max()) + 2) + last + 1
        _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        dur = sim.runtime.duration
        w = [_work(gfac, _runnable(dur(job, int(cfg[i]), int(last[i])))) for i in first.tolist()]
        sc -= np.array(w)[inv]
        k = int(sc.argmax())  # ties: the lowest machine index
        return int(cand[k]) if sc[k] != NEG_INF else -1  # -inf: it cannot run where it fits

    # -- queue ------------------------------------------------------------------------------
    def _enqueue(self, job: int, fl: list[float], a: list[float], gfac: float) -> None:
        if self.qn == len(self.q_job):
            self._compact(grow=True)
        i = self.qn
        self.qn += 1
        self.qcount += 1
        self.q_job[i] = job
        self.q_fl[i] = fl
        self.q_a[i] = a
        self.q_g[i] = gfac
        dur = self.sim.runtime.duration
        if self.mode == "fixed":
            self.q_p[i, 0] = _runnable(dur(job, 0, -1))
        elif self.mode == "config":
            has = self.cfg_has
            self.q_p[i] = [self._p(job, c) if has[c] else 0.0 for c in range(self.n_cfg)]
        self.q_alive[i] = True
        qm = self.q_min
        for off in range(self.R):
            if fl[off] < qm[off]:
                qm[off] = fl[off]
        index = self._index
        if index is not None and self.qcount < 2 * index.built:
            index.add(i)
        elif self._indexable and self.qcount >= self._index_threshold:
            self._build_index()  # first build, or the queue doubled: new quantile edges and grid size

    def _build_index(self) -> None:
        self._index = ScoreIndex(
            self.q_fl, self.q_a, self.q_g, self.q_p, self.q_alive, self.qn, self._index_per_cell, self._index_max_side
        )

    def _compact(self, grow: bool) -> None:
        """Drop dead entries (keeping arrival order); with ``grow``, double the columns if over half full."""
        live = np.flatnonzero(self.q_alive[: self.qn])
        n = len(live)
        cap = len(self.q_job)
        if grow and n > cap // 2:
            cap *= 2
        self.q_job = _take(self.q_job, live, cap)
        self.q_fl = _take(self.q_fl, live, cap)
        self.q_a = _take(self.q_a, live, cap)
        self.q_g = _take(self.q_g, live, cap)
        self.q_p = _take(self.q_p, live, cap)
        alive = np.zeros(cap, dtype=bool)
        alive[:n] = True
        self.q_alive = alive
        self.qn = n
        self.q_min = self.q_fl[:n].min(axis=0).tolist() if n else [math.inf] * self.R
        # The index refers to the old columns and slot numbers: rebuild it.
        if self._indexable and self.qcount >= self._index_threshold:
            self._build_index()
        else:
            self._index = None

    # -- completion -------------------------------------------------------------------------
    def _free_of(self, machine: int) -> list[float]:
        """``machine``'s free capacity now, one float per resource."""
        fmv = self._fmv
        N = self.N
        return [fmv[off * N + machine] for off in range(self.R)]

    def on_completion(self, job: int, machine: int) -> None:
        if self.qcount == 0:
            return
        R = self.R
        f = self._free_of(machine)
        qm = self.q_min
        if any(qm[off] > f[off] for off in range(R)):
            return  # even the smallest queued fit floor is above the free capacity
        if self._index is not None:
            self._complete_indexed(machine, f)
        else:
            self._complete_scan(machine, f)
        if self.qcount == 0:
            # The queue is empty: reset it so later scans cover no dead entries.
            self.qn = 0
            self.q_min = [math.inf] * R
            self._index = None
        elif self.qn > 4096 and self.qcount < self.qn // 4:
            self._compact(grow=False)  # scans cost the used slots, not the live jobs
        elif self._index is not None and self.qcount < self._index_threshold // 4:
            self._index = None  # short again: the scan is cheaper

    def _complete_indexed(self, machine: int, f: list[float]) -> None:
        """:meth:`_complete_scan`'s decisions, with the best job found through the index."""
        sim = self.sim
        R = self.R
        col = 0 if self.mode == "fixed" else self._cfg[machine]
        index = self._index
        assert index is not None
        qm = self.q_min
        while True:
            slot = index.best(f, col)
            if slot < 0:
                break
            sim.start(int(self.q_job[slot]), machine)
            self.q_alive[slot] = False
            self.qcount -= 1
            if self.qcount == 0:
                break
            f = self._free_of(machine)
            if any(qm[off] > f[off] for off in range(R)):
                break  # nothing else fits

    def _complete_scan(self, machine: int, f: list[float]) -> None:
        """Score every fitting queued job on ``machine``, start the best, repeat."""
        sim = self.sim
        R = self.R
        n = self.qn
        q_fl = self.q_fl
        fit = self.q_alive[:n].copy()
        for off in range(R):
            fit &= q_fl[:n, off] <= f[off]  # the engine's test: free >= request - EPS
        # Queue slots of the jobs that fit, in arrival order. Starting jobs only
        # shrinks m's free capacity, so later rounds filter this set, not the queue.
        cand = np.flatnonzero(fit)
        c = self._cfg[machine]
        col = 0 if self.mode == "fixed" else c
        while len(cand):
            q_a = self.q_a
            sc = q_a[cand, 0] * f[0]
            for off in range(1, R):
                sc += q_a[cand, off] * f[off]
            if self.mode == "general":
                # p depends on this machine's last class: one runtime call per fitting job.
                dur = sim.runtime.duration
                last = int(sim.view.last_class[machine])
                p = np.array([_runnable(dur(z, c, last)) for z in self.q_job[cand].tolist()])
                with np.errstate(invalid="ignore"):  # 0 * inf: a job that cannot run here
                    g = self.q_g[cand] * p
            else:
                with np.errstate(invalid="ignore"):
                    g = self.q_g[cand] * self.q_p[cand, col]
            g[np.isnan(g)] = math.inf
            sc -= g
            k = int(sc.argmax())  # ties: the earliest arrival
            if sc[k] == NEG_INF:
                break  # what fits cannot run here (infinite processing time)
            slot = int(cand[k])
            sim.start(int(self.q_job[slot]), machine)
            self.q_alive[slot] = False
            self.qcount -= 1
            f = self._free_of(machine)
            cand = np.delete(cand, k)
            keep = q_fl[cand, 0] <= f[0]
            for off in range(1, R):
                keep &= q_fl[cand, off] <= f[off]
            cand = cand[keep]


def _runnable(p: float) -> float:
    """``p`` where the engine accepts it as a processing time (0 <= p < inf), otherwise +inf."""
    return p if 0.0 <= p < math.inf else math.inf


def _work(gfac: float, p: float) -> float:
    """The work score; infinite (never chosen) where the job cannot run, whatever the weight."""
    return math.inf if p == math.inf else gfac * p


def _take(a: np.ndarray, rows: np.ndarray, cap: int) -> np.ndarray:
    out = np.zeros((cap, *a.shape[1:]), dtype=a.dtype)
    out[: len(rows)] = a[rows]
    return out
