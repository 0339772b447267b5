"""LoTES Stage 3 (section 4.3): the online dispatcher, and the scheduler class.

State: per machine and class the score v = N_ijk - kappa_jk, kept (plus a
constant offset that makes it positive) in a (K, machines) float array. Free
capacity is the engine's own, read through its public view
(``sim.view.free_by_resource``, one contiguous row per resource): no copy is
kept. Choosing a machine in a configuration is then an argmax on a contiguous
slice: first the machine of highest v alone (it usually fits: a scalar
check), otherwise a few vectorised comparisons over the configuration.
Scalar reads and updates go through flat memoryviews (cheaper than numpy
scalar indexing). Fits use the engine's one rule (:mod:`simcore.core.view`):
free capacity ``>= request - EPS`` in every resource.
"""

from __future__ import annotations

import bisect
import math
import time
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError
from simcore.core.model import ClassTable, Cluster, FixedRuntime, FloatArray, IntArray, RateRuntime
from simcore.core.view import EPS, EngineView, flat_view
from simcore.schedulers.base import Param, Scheduler
from simcore.schedulers.lotes.assignment import Assignment, OfflinePlan, plan_offline, plan_to_dict
from simcore.schedulers.lotes.bins import DEFAULT_MAX_BINS
from simcore.schedulers.lotes.queues import ClassQueue
from simcore.schedulers.lotes.stage1 import K_SETS
from simcore.workloads.classify import kmeans_classes

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel
    from simcore.core.engine import Simulation

#: Added to every score v so that scores are positive (v >= -jobs on a machine).
OFFSET = float(2**40)
#: Uniforms for the roulette wheel are drawn from the injected generator in blocks.
U_BLOCK = 8192

#: How processing time depends on the machine (see :meth:`LoTESDispatcher.setup`).
FIXED, CONFIG, GENERAL = 0, 1, 2


class LoTESDispatcher(Scheduler):
    """LoTES (Long Term Evaluation Scheduling), all three stages.

    Offline, in :meth:`setup`: the allocation LP (stage 1) gives K^j; Algorithm
    1 enumerates the non-dominated bins of every configuration over K^j; the
    machine assignment LP (eq. 6-10) and the paper's rounding say how many
    machines emulate each bin; rho_jk follows from the rounded Delta_jkl.
    Online: on an arrival, a configuration is drawn by roulette wheel with
    probabilities rho_jk, and the job goes to the fitting machine with the
    highest v = N_ijk - kappa_jk; failing that, to the other configurations
    with Delta_jk > 0 by roulette wheel among those not yet tried; failing
    that, to any machine with room; otherwise it joins its class queue. On a
    completion, the machine takes queued jobs of the classes with Delta_jk > 0
    on its configuration, in order of v, each queue searched in arrival order;
    it stays idle rather than take a class with Delta_jk = 0.

    Classes: the workload's own (``Workload.classes`` and ``job_class``) when
    every job has one; otherwise k-means (:func:`simcore.workloads.classify.kmeans_classes`)
    on the requests of the jobs of the first ``kmeans_window_hours``, as in
    section 5.3.2, with later jobs labelled by the nearest centroid.

    Deviations from the paper, and why:

    * Algorithm 1 as printed can also emit dominated bins (e.g. {1x2, 1x3} in
      Figure 5's example); we keep exactly the non-dominated bins, as the text
      defines them, and enumerate them vectorised (see ``bins.py``).
    * Bin enumeration is capped at ``max_bins`` candidates per configuration
      and fails with a ParameterError beyond it, so it can never hang.
    * If the fluid LP gives a class only to configurations where one job of
      its expected size does not fit on a machine, the class would be in no
      bin and its queue would never be served; we then add it to K^j of every
      configuration where it fits (never happens on the paper's instances).
    * Orphans. Requests vary around the class mean, so a queued job may be
      too large for an *empty* machine of every configuration with
      Delta_jk > 0 (e.g. google-like class 4, mean memory 0.06, is planned
      only on the (1.00, 0.06) machines, and half its jobs ask for more
      memory). Under the paper's idling rule such a job would wait forever:
      no machine that may take it can ever hold it. It joins instead a single
      orphan queue (arrival order) that every machine serves on completion,
      after the priority list. Jobs of a class with Delta = 0 everywhere
      (alpha_k = 0) are orphans too. The queue length reported by the
      engine includes them.
    * K^j is read off the optimal vertex that HiGHS returns. The allocation
      LP can have many optima (on Table 1 with Table 2's classes its optimal
      face allows up to 4 classes on most configurations); the paper's
      Table 1 column reflects the optimum its solver (CPLEX) returned, ours
      differs, and so do the bins. ``k_sets="interior"`` (not the default)
      takes instead an optimum of largest support: K^j holds every class
      that some optimal solution puts on j (see ``stage1.py``).
    * Machines of configuration j are given bins in bin order (the first x_0j
      machines emulate bin 0, ...); the paper does not say which machine
      emulates which bin, and machines of one configuration are identical.
    * Ties in v go to the lowest machine index; the fallback "any machine with
      room" picks the highest v too (the paper does not say which machine);
      ties between classes of equal v on completion keep their current order
      (class index initially), so a class is "demoted" only when its v drops
      strictly below the next one's.
    * ``rho_weighting="throughput"`` (not the default) weights rho_jk by
      mu_jk too, which matches throughputs when rates depend on the
      configuration; the paper's formula uses Delta alone.
    * The roulette wheel draws its uniforms in blocks from the injected
      generator (same distribution, fewer calls).

    **Where a job cannot run.** A rate of 0 (``mu_jk = 0``, the paper's
    architecture limits; an infinite processing time) means the job cannot
    run on that configuration. The plan gives such a pair no slots, but the
    fallbacks, the orphan queue, k-means classes (whose table need not match
    the workload's rates) and hand-made plans could still reach one. So no
    path ever chooses a machine where the job cannot run: when processing
    time depends on the configuration only, a configuration is tried only if
    the job's processing time there is finite (0 <= p < inf, the engine's
    rule); when it also depends on the machine's last job class, the chosen
    machine is checked and, failing that, only the machines where the job
    can run are searched. A queued job is started on a completion only if
    it can run on the freed machine; one that can run on none of its
    class's planned configurations waits in the orphan queue (any machine
    that can run it takes it). A job with a machine-independent processing
    time (its ``work``, finite by the workload's validation) runs anywhere.

    Per-run state: :meth:`setup` rebuilds all of it (plan, queues, scores,
    labels, roulette uniforms), so one instance can run several simulations
    in turn, each as a fresh instance would. A plan passed as the ``plan``
    option (Python API) is used for every run and reported as "given"; a plan
    computed in one run is never carried into the next.

    Versus the paper: on the Phi sweep (Figure 11) LoTES trails Tetris with the
    paper's per-job request variability (CV 0.5), because Tetris places each job's
    own request shape while LoTES plans with class means; with every job at its
    class mean (``request_cv=0``) LoTES leads, as the paper finds.
    """

    name: ClassVar[str] = "lotes"
    description: ClassVar[str] = (
        "LoTES: allocation LP, non-dominated bins and machine assignment LP offline; "
        "bin-emulating dispatch with class queues online"
    )
    params: ClassVar[tuple[Param, ...]] = (
        Param(
            "kmeans_classes", int, 4, "LoTES: number of k-means job classes for traces without classes", min=1, max=1000
        ),
        Param(
            "kmeans_window_hours",
            float,
            24.0,
            "LoTES: hours of jobs from the start of the trace used to fit the k-means classes",
            min=0.0,
        ),
        Param(
            "max_bins",
            int,
            DEFAULT_MAX_BINS,
            "LoTES: limit on candidate bins per machine configuration (Algorithm 1)",
            min=1,
            # A bound, so that the web forms accept the section 5.4 presets' 5,000,000 (a million
            # candidates take about 2 GB); beyond it a worker could run out of memory.
            max=5_000_000,
        ),
        Param(
            "rho_weighting",
            str,
            "paper",
            "LoTES: configuration shares rho from Delta ('paper') or Delta*mu ('throughput')",
            choices=("paper", "throughput"),
        ),
        Param(
            "k_sets",
            str,
            "vertex",
            "LoTES: the sets K^j from the allocation LP's optimal vertex ('vertex', as the solver returns it) "
            "or from an optimum of largest support ('interior': every class-configuration pair that some "
            "optimal solution uses; more bins)",
            choices=K_SETS,
        ),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.kmeans_k = int(options.get("kmeans_classes", 4))
        self.kmeans_window_s = float(options.get("kmeans_window_hours", 24.0)) * 3600.0
        self.max_bins = int(options.get("max_bins", DEFAULT_MAX_BINS))
        self.rho_weighting = str(options.get("rho_weighting", "paper"))
        self.k_sets = str(options.get("k_sets", "vertex"))
        # A precomputed plan (Python API only, not a Param): reuse one offline
        # solution across runs, or hand-build one in tests.
        self._given_plan: OfflinePlan | None = options.get("plan")
        #: The plan of the current (or last) run, set by :meth:`setup`.
        self.plan: OfflinePlan | None = None
        self._offline: dict[str, Any] | None = None

    # -- offline stages ------------------------------------------------------------------
    def _classes(self, sim: Simulation, rng: np.random.Generator) -> tuple[ClassTable, IntArray, dict[str, Any]]:
        wl = sim.workload
        if wl.classes is not None and (wl.n_jobs == 0 or wl.job_class.min() >= 0):
            if wl.n_jobs and wl.job_class.max() >= wl.classes.n_classes:
                raise ParameterError(
                    f"workload {wl.name!r} has job classes up to {int(wl.job_class.max())} but only "
                    f"{wl.classes.n_classes} class definitions"
                )
            return wl.classes, wl.job_class, {"source": "workload"}
        t0 = time.perf_counter()
        labels, table = kmeans_classes(wl, self.kmeans_k, self.kmeans_window_s, rng)
        return (
            table,
            labels,
            {
                "source": "kmeans",
                "k": self.kmeans_k,
                "window_hours": self.kmeans_window_s / 3600.0,
                "seconds": time.perf_counter() - t0,
            },
        )

    def _build_wheels(self, a: Assignment, cluster: Cluster) -> None:
        """Per class, the roulette wheel over configurations (rho > 0); per configuration, the classes it serves on a
        completion; per class, the configurations that may take it from its queue (setup's plan tables)."""
        K = a.rho.shape[1]
        M = cluster.n_configs
        delta_pos = a.slots > 0  # (M, K): Delta_jk > 0
        # Roulette wheel per class over configurations with rho > 0.
        self._wheel_cfg: list[list[int]] = []
        self._wheel_cum: list[list[float]] = []
        self._wheel_p: list[list[float]] = []
        for k in range(K):
            js = np.flatnonzero(a.rho[:, k] > 0)
            p = a.rho[js, k] / a.rho[js, k].sum() if len(js) else np.zeros(0)
            self._wheel_cfg.append(js.tolist())
            self._wheel_p.append(p.tolist())
            self._wheel_cum.append(np.cumsum(p).tolist())
        # On completion: classes with Delta_jk > 0 on the machine's configuration.
        self._served_by_cfg = [np.flatnonzero(delta_pos[j]).tolist() for j in range(M)]
        # The configurations (with machines) that may take class k from its queue:
        # a queued job fitting none of them, even empty, or able to run on none, is an orphan.
        self._planned_cfgs = [np.flatnonzero(delta_pos[:, k] & (cluster.counts > 0)).tolist() for k in range(K)]
        self._planned_caps = [cluster.capacity[js] for js in self._planned_cfgs]

    def _build_views(self, view: EngineView, ranges: list[tuple[int, int]], K: int) -> None:
        """Views and scratch buffers per configuration's machine range (``ranges``), the last one the whole cluster."""
        N = view.n_machines
        R = view.n_resources
        F = view.free_by_resource
        ranges.append((0, N))
        self._rng_lo = [lo for lo, _ in ranges]
        self._ranges = ranges
        self._ft_views = [[F[r, lo:hi] for r in range(R)] for lo, hi in ranges]
        self._W_views = [[self._W[k, lo:hi] for k in range(K)] for lo, hi in ranges]
        self._ok = [np.empty(hi - lo, dtype=bool) for lo, hi in ranges]
        self._tmp = [np.empty(hi - lo, dtype=bool) for lo, hi in ranges]
        self._score = [np.empty(hi - lo) for lo, hi in ranges]
        #: Per range: (free rows, fit mask, scratch mask, scores, W rows per class, first machine).
        self._ctx: list[
            tuple[list[FloatArray], NDArray[np.bool_], NDArray[np.bool_], FloatArray, list[FloatArray], int]
        ] = list(zip(self._ft_views, self._ok, self._tmp, self._score, self._W_views, self._rng_lo, strict=True))

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        cluster = sim.cluster
        view = sim.view
        classes, labels, origin = self._classes(sim, rng)
        if self._given_plan is None:
            plan = plan_offline(
                cluster, classes, max_bins=self.max_bins, rho_weighting=self.rho_weighting, k_sets=self.k_sets
            )
        else:
            plan = self._given_plan
            _check_plan(plan, cluster, labels)
            origin = {**origin, "plan": "given"}
        self.plan = plan
        self._offline = {**plan_to_dict(plan, cluster), "class_source": origin}
        a = plan.assignment
        K = plan.classes.n_classes
        N = view.n_machines
        R = view.n_resources

        # Per-machine plan: target[k, m] = N_ijk of the bin machine m emulates.
        target = np.zeros((K, N), dtype=np.int64)
        ranges = list(view.config_ranges)
        for j, (lo, hi) in enumerate(ranges):
            per_machine = np.repeat(a.bins[j], a.x[j], axis=0)  # (n_j, K)
            target[:, lo:hi] = per_machine.T
        self.target = target
        # W = OFFSET + v, v = N_ijk - kappa_jk (kappa starts at 0). The offset
        # keeps W positive, so "W times fits" is zero exactly where the job
        # does not fit and one argmax finds the fitting machine of highest v.
        self._W = target.astype(np.float64) + OFFSET
        self._N = N
        self._R = R
        self._lo = [lo for lo, _ in ranges]
        self._hi = [hi for _, hi in ranges]

        self._build_wheels(a, cluster)

        runtime = sim.runtime
        if isinstance(runtime, FixedRuntime):
            self._mode = FIXED  # the job's work wherever it runs: it can run anywhere
        elif isinstance(runtime, RateRuntime) or getattr(runtime, "config_only", False):
            self._mode = CONFIG  # whether it can run depends on the configuration only
        else:
            self._mode = GENERAL  # it may also depend on the machine's last job class
        self._duration = runtime.duration

        # A flat memoryview, not a list: fast scalar reads without a Python
        # object per job (a 10-million-job run stays in numpy memory).
        self.labels = np.ascontiguousarray(labels, dtype=np.int64)
        self._cls = flat_view(self.labels)
        self._cfg_of: list[int] = view.config_list
        self._req = view.request_flat  # request_flat[job * R + r]
        self._free = view.free  # (N, R) view: free[m] is machine m's free capacity, always current
        self._free_mv = view.free_flat  # free_flat[r * N + m]
        self._W_mv = flat_view(self._W)
        self._build_views(view, ranges, K)
        self.queues = [ClassQueue(R) for _ in range(K)]
        self.orphans = ClassQueue(R)
        self.n_queued = 0
        self._u = rng.random(U_BLOCK).tolist()
        self._ui = 0

    def offline_solution(self) -> dict[str, Any] | None:
        return self._offline

    def kernel(self, sim: Simulation) -> Kernel:
        """The online dispatch compiled (``lotes/kernel.py``); the plan above stays Python, computed once."""
        from simcore.schedulers.lotes.kernel import make

        return make(self, sim)

    # -- helpers ---------------------------------------------------------------------------
    def _uniform(self) -> float:
        if self._ui == len(self._u):
            self._u = self.rng.random(U_BLOCK).tolist()
            self._ui = 0
        u = self._u[self._ui]
        self._ui += 1
        return u  # type: ignore[no-any-return]

    def _floors(self, job: int) -> list[float]:
        """``job``'s fit floors (request - EPS per resource: free capacity must reach them)."""
        R = self._R
        req = self._req
        jb = job * R
        return [req[jb + r] - EPS for r in range(R)]

    def _runs_on_config(self, job: int, j: int) -> bool:
        """Whether ``job`` can run on configuration ``j`` (processing time there 0 <= p < inf).

        Exact when processing time depends on the configuration only; with a
        last-class-dependent runtime it is the cold-cache time.
        """
        return 0.0 <= self._duration(job, j, -1) < math.inf

    def _runs_on(self, job: int, m: int) -> bool:
        """Whether ``job`` can run on machine ``m`` now (the engine's own test of its processing time)."""
        return 0.0 <= self.sim.processing_time(job, m) < math.inf

    def _best_machine(self, j: int, k: int, fl: list[float], job: int) -> int:
        """Machine of configuration j (j = M: any machine) with the highest v for class k
        among those where the job fits and can run; -1 if none. Ties: lowest index.

        ``fl``: the job's fit floors. With a configuration-dependent runtime the
        caller only passes j = M when every configuration can run the job.
        """
        mode = self._mode
        if mode == CONFIG and j < len(self._lo) and not self._runs_on_config(job, j):
            return -1
        ft, ok, tmp, sc, wv, lo = self._ctx[j]
        wk = wv[k]
        # Fast path: if the machine of highest v (lowest index among ties) fits,
        # it is the answer; one argmax and a scalar check instead of a full scan.
        m = lo + int(wk.argmax())
        fr, N = self._free_mv, self._N
        for r in range(self._R):
            if not fr[r * N + m] >= fl[r]:  # the engine's test
                break
        else:
            if mode == GENERAL and not self._runs_on(job, m):
                return self._best_runnable(j, k, fl, job)
            return m
        np.greater_equal(ft[0], fl[0], out=ok)
        for r in range(1, len(ft)):
            np.greater_equal(ft[r], fl[r], out=tmp)
            np.logical_and(ok, tmp, out=ok)
        np.multiply(wk, ok, out=sc)
        i = int(sc.argmax())
        if not sc[i] > 0.0:
            return -1
        if mode == GENERAL and not self._runs_on(job, lo + i):
            return self._best_runnable(j, k, fl, job)
        return lo + i

    def _best_runnable(self, j: int, k: int, fl: list[float], job: int) -> int:
        """:meth:`_best_machine` restricted to the machines where ``job`` can run now.

        For a runtime that depends on the machine's last job class: one runtime
        call per distinct (configuration, last class) among the fitting machines.
        """
        lo, hi = self._ranges[j]
        view = self.sim.view
        ok = view.fit_mask(fl, lo, hi)
        cand = np.flatnonzero(ok)
        if len(cand) == 0:
            return -1
        cfg = view.config_of[lo:hi][cand]
        last = view.last_class[lo:hi][cand]
        keys = cfg * (int(last.max()) + 2) + last + 1
        _, first, inv = np.unique(keys, return_index=True, return_inverse=True)
        dur = self._duration
        runs = np.array([0.0 <= dur(job, int(cfg[i]), int(last[i])) < math.inf for i in first.tolist()])
        ok[cand[~runs[inv]]] = False
        sc = self._W[k, lo:hi] * ok
        i = int(sc.argmax())
        return lo + i if sc[i] > 0.0 else -1

    def _start(self, job: int, m: int, k: int) -> None:
        self.sim.start(job, m)
        self._W_mv[k * self._N + m] -= 1.0

    def v(self, machine: int, k: int) -> int:
        """The score v = N_ijk - kappa_jk of ``machine`` for class ``k``."""
        return int(self._W[k, machine] - OFFSET)

    @property
    def kappa(self) -> IntArray:
        """Jobs of each class running on each machine, shape (machines, K)."""
        return (self.target - (self._W - OFFSET).astype(np.int64)).T.copy()

    # -- events ------------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        k = self._cls[job]
        R = self._R
        req = self._req
        jb = job * R
        fl = [req[jb + r] - EPS for r in range(R)]  # fit floors (simcore.core.view.fit_floor, inlined)
        cfgs = self._wheel_cfg[k]
        if cfgs:
            # Roulette wheel (inlined uniform draw: this is the hot path).
            if self._ui == U_BLOCK:
                self._u = self.rng.random(U_BLOCK).tolist()
                self._ui = 0
            u = self._u[self._ui]
            self._ui += 1
            idx = bisect.bisect_right(self._wheel_cum[k], u)
            if idx >= len(cfgs):  # u within rounding of 1
                idx = len(cfgs) - 1
            m = self._best_machine(cfgs[idx], k, fl, job)
            if m >= 0:
                self._start(job, m, k)
                return
            if self._fallback(job, k, fl, idx):
                return
        else:
            m = self._any_machine(job, k, fl, ())
            if m >= 0:
                self._start(job, m, k)
                return
        self._enqueue(job, k, fl)

    def _enqueue(self, job: int, k: int, fl: list[float]) -> None:
        R = self._R
        req = self._req
        jb = job * R
        request = [req[jb + r] for r in range(R)]
        caps = self._planned_caps[k]
        planned = False
        if len(caps):
            fits = (caps >= fl).all(axis=1)  # the engine's rule, on empty machines
            if self._mode == FIXED:
                planned = bool(fits.any())
            else:
                cfgs = self._planned_cfgs[k]
                planned = any(self._runs_on_config(job, cfgs[i]) for i in np.flatnonzero(fits).tolist())
        if planned:
            self.queues[k].push(job, request)
        else:
            self.orphans.push(job, request)
        self.n_queued += 1

    def _any_machine(self, job: int, k: int, fl: list[float], skip: tuple[int, ...] | set[int]) -> int:
        """The machine of highest v for class k where the job fits and can run, outside the
        configurations in ``skip``; ties: lowest index. -1 if none."""
        M = len(self._lo)
        if not skip and self._mode != CONFIG:
            return self._best_machine(M, k, fl, job)  # one scan of the whole cluster
        best, best_w = -1, 0.0
        W = self._W_mv
        N = self._N
        for j in range(M):
            if j in skip or self._lo[j] == self._hi[j]:  # tried already, or no machines
                continue
            m = self._best_machine(j, k, fl, job)
            if m >= 0 and W[k * N + m] > best_w:
                best, best_w = m, W[k * N + m]
        return best

    def _fallback(self, job: int, k: int, fl: list[float], tried_idx: int) -> bool:
        """Other configurations with Delta > 0 by roulette wheel, then any machine with room."""
        cfgs = self._wheel_cfg[k]
        p = self._wheel_p[k]
        left = [i for i in range(len(cfgs)) if i != tried_idx]
        while left:
            w = [p[i] for i in left]
            u = self._uniform() * sum(w)
            acc = 0.0
            pick = len(left) - 1
            for t, wt in enumerate(w):
                acc += wt
                if u < acc:
                    pick = t
                    break
            m = self._best_machine(cfgs[left.pop(pick)], k, fl, job)
            if m >= 0:
                self._start(job, m, k)
                return True
        # Any remaining machine (configurations with Delta_jk = 0): highest v, lowest index.
        best = self._any_machine(job, k, fl, set(cfgs))
        if best < 0:
            return False
        self._start(job, best, k)
        return True

    def _first_runnable(self, q: ClassQueue, free: Any, pos: int, machine: int) -> int:
        """``q.first_fit(free, pos)``, skipping jobs that cannot run on ``machine``."""
        idx = q.first_fit(free, pos)
        if self._mode == FIXED:
            return idx
        while idx >= 0 and not self._runs_on(int(q.ids[idx]), machine):
            idx = q.first_fit(free, idx + 1)
        return idx

    def on_completion(self, job: int, machine: int) -> None:
        N = self._N
        self._W_mv[self._cls[job] * N + machine] += 1.0
        if self.n_queued == 0:
            return
        j = self._cfg_of[machine]
        queues = self.queues
        active = [k for k in self._served_by_cfg[j] if queues[k].alive]
        orphans = self.orphans
        if not active and not orphans.alive:
            return
        free = self._free[machine]  # a view of the engine's state: reflects every start below
        W = self._W_mv
        # Priority list: v descending, ties in class order (stable sort).
        v = {k: W[k * N + machine] for k in active}
        order = sorted(active, key=lambda c: -v[c])
        pos = dict.fromkeys(order, 0)
        while order:
            k = order[0]
            q = queues[k]
            idx = self._first_runnable(q, free, pos[k], machine)
            if idx < 0:
                order.pop(0)  # nothing more of this class fits here
                continue
            z = q.pop_at(idx)
            self.n_queued -= 1
            self._start(z, machine, k)
            pos[k] = idx + 1
            v[k] -= 1
            # Re-order: the class moves down past classes whose v is now strictly higher.
            t = 0
            while t + 1 < len(order) and v[order[t + 1]] > v[k]:
                order[t], order[t + 1] = order[t + 1], order[t]
                t += 1
        # Orphans (see the class docstring): lowest priority, arrival order.
        p = 0
        while orphans.alive:
            idx = self._first_runnable(orphans, free, p, machine)
            if idx < 0:
                break
            z = orphans.pop_at(idx)
            self.n_queued -= 1
            self._start(z, machine, self._cls[z])
            p = idx + 1


def _check_plan(plan: OfflinePlan, cluster: Cluster, labels: IntArray) -> None:
    """A plan given as an option must be one for ``cluster`` and the run's job classes."""
    x = plan.assignment.x
    counts = cluster.counts.tolist()
    planned = [int(np.sum(xj)) for xj in x]
    if planned != counts:
        raise ParameterError(
            f"the given LoTES plan assigns machines {planned} to its {len(x)} configurations, but cluster "
            f"{cluster.name!r} has {counts}: plan for this cluster, or leave the plan out"
        )
    K = plan.classes.n_classes
    if len(labels) and int(labels.max()) >= K:
        raise ParameterError(
            f"the given LoTES plan has {K} job classes, but the workload has jobs of class {int(labels.max())}"
        )
