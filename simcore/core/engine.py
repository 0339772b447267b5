"""The discrete-event engine: arrivals and completions, rules enforced here.

Arrivals come from the workload's sorted ``submit`` array (no heap entry per
job); completions live in a heap of ``(time, sequence, job, machine)`` tuples,
the sequence number making ties deterministic (SimPy's habit). At equal
times completions are handled before arrivals, so a job arriving exactly
when another finishes sees the freed resources, and wake-ups a scheduler
asked for (:meth:`Simulation.wake_at`) come last, so a scheduler that defers
its decisions to a wake-up at ``now`` sees every event of that instant.

Jobs made of tasks (:mod:`simcore.core.taskgraph`): when the workload has a
graph, its units are tasks. A task is released to the scheduler
(``on_arrival``) when its job has arrived and its last parent has finished,
right after ``on_completion`` of that parent, children in task order. A
workload without a graph runs exactly as before (every unit a job).

The engine, not the scheduler, enforces the rules (:meth:`Simulation.start`):
a machine never runs more than its capacity in any resource, a job starts no
earlier than it arrives and only once, and it runs for its (machine-dependent)
processing time.
"""

from __future__ import annotations

import heapq
import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError, SchedulingError
from simcore.core.model import Cluster, FloatArray, IntArray, Workload, check_compatible
from simcore.core.seeding import scheduler_rng
from simcore.core.timeavg import release_times
from simcore.core.view import EPS, EngineView, flat_view, read_only

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel

__all__ = [
    "ENGINES",
    "EPS",
    "EngineView",
    "Progress",
    "ProgressCallback",
    "Scheduler",
    "SimResult",
    "Simulation",
    "flat_view",
    "simulate",
]

#: Number of samples of the queue length and utilisation series.
DEFAULT_SAMPLES = 2000

QUEUED, RUNNING, DONE, WAITING = 0, 1, 2, 3

#: Events of the Python loop between two looks at the clock for progress reports.
CHECK_EVERY = 4096

#: ``compiled``: a built-in scheduler's kernel runs the loop where it has one (the default);
#: ``python``: always the reference loop below with the scheduler's Python methods.
ENGINES = ("compiled", "python")  # WAITING: a task whose parents have not all finished


class Scheduler(Protocol):
    """What the engine calls on a scheduler: the hooks of :class:`simcore.schedulers.base.Scheduler`.

    Declared here, at the engine, so that the engine depends on the calls it
    makes and not on the scheduler layer above it (every scheduler derives
    from the base class there, which satisfies this protocol).
    """

    @property
    def name(self) -> str: ...

    @property
    def rng(self) -> np.random.Generator:
        """The stream given to :meth:`setup` (the compiled loop refills a kernel's draws from it)."""
        ...

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None: ...

    def on_arrival(self, job: int) -> None: ...

    def on_completion(self, job: int, machine: int) -> None: ...

    def on_wake(self) -> None: ...

    def kernel(self, sim: Simulation) -> Kernel | None: ...


@dataclass(frozen=True)
class Progress:
    """How far a run is, for progress bars."""

    now: float
    horizon: float
    arrived: int
    started: int
    completed: int
    jobs: int
    wall_s: float
    #: Of ``wall_s``, the seconds spent compiling the kernel or loading it from the cache (0 in Python):
    #: a one-off cost that the rest of the run does not pay again.
    compile_s: float = 0.0

    @property
    def fraction(self) -> float:
        if self.horizon <= 0:
            return 1.0
        return min(1.0, self.now / self.horizon)

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the pace so far, compile time left out; None before any progress, 0 when done.

        A scheduler's first compiled run spends 3-95 s compiling before simulating anything:
        counted in the pace, it made a 5-minute run show an ETA of 2,214 s (issue 28).
        """
        f = self.fraction
        if f >= 1.0:
            return 0.0
        if f <= 0.0:
            return None
        return max(self.wall_s - self.compile_s, 0.0) * (1.0 - f) / f


ProgressCallback = Callable[[Progress], None]


@dataclass
class SimResult:
    """Per-job records as flat arrays plus the sampled series.

    The series (``sample_*``) are samples of the state at ``sample_t``, for charts; the
    summary's time averages are exact integrals over the per-job records
    (:mod:`simcore.core.timeavg`), which is why the result also carries every job's
    request, the cluster's total capacity and, for task graphs, each task's release time.
    """

    n_jobs: int
    submit: FloatArray
    start: FloatArray  # NaN if never started
    finish: FloatArray  # NaN if not finished by the end
    machine: IntArray  # -1 if never started
    job_class: IntArray
    sample_t: FloatArray
    sample_queue: IntArray
    sample_running: IntArray
    sample_util: FloatArray  # (samples, resources)
    horizon_s: float
    end_s: float
    wall_s: float
    resources: tuple[str, ...]
    config_of_machine: IntArray
    extra: dict[str, Any] = field(default_factory=dict)
    #: (jobs, resources) requests and the cluster's capacity per resource (for the exact utilisation).
    request: FloatArray | None = None
    total_capacity: FloatArray | None = None
    #: Task graphs only: when each task was released to the scheduler (NaN: never); None: at its submit time.
    release: FloatArray | None = None

    @property
    def started_mask(self) -> NDArray[np.bool_]:
        return ~np.isnan(self.start)

    @property
    def completed_mask(self) -> NDArray[np.bool_]:
        return ~np.isnan(self.finish)


class Simulation:
    """One run of one scheduler on one cluster and workload.

    Schedulers read the engine's state through ``view`` (an
    :class:`~simcore.core.view.EngineView`: free capacity by resource and machine,
    requests, configurations and their machine ranges, fit masks), plus
    ``now``, ``arrived``, ``started``, ``completed``, ``n_jobs``, ``submit``,
    ``job_class``, ``start_t``, ``runtime``, ``cluster`` and ``workload``,
    and act only through :meth:`start`. ``free``, ``request``, ``capacity``,
    ``config_of``, ``running`` and ``last_class`` are the view's arrays,
    repeated here for convenience. Every array a scheduler can reach is
    read-only; the engine writes through handles of its own.

    Speed: the per-event work touches single values, where a numpy call costs
    about a microsecond and a Python float operation a few tens of
    nanoseconds. So the engine reads and writes its state through flat
    :class:`memoryview` objects over the same buffers as the view's numpy
    arrays: schedulers keep vectorised views while the bookkeeping stays
    scalar. Free capacity is resource-major (``free[r * N + m]``), the layout
    of the schedulers' scans. Per-job inputs are never turned into Python
    lists, so a 10-million-job run holds only its numpy arrays.
    """

    def __init__(
        self,
        cluster: Cluster,
        workload: Workload,
        scheduler: Scheduler,
        rng: np.random.Generator,
        *,
        drain: bool = False,
        samples: int = DEFAULT_SAMPLES,
        progress: ProgressCallback | None = None,
        progress_every_s: float = 0.5,
        engine: str = "compiled",
    ) -> None:
        check_compatible(cluster, workload)
        if engine not in ENGINES:
            raise ParameterError(f"engine {engine!r} is not one of {', '.join(ENGINES)}")
        #: The engine asked for; ``engine_used`` says which ran (see :meth:`run`).
        self.engine = engine
        self.engine_used = "python"
        self.engine_note = ""
        self.compile_s: float | None = None
        #: CPU seconds of the same (``compile_s`` is wall time, which a busy machine stretches).
        self.compile_cpu_s: float | None = None
        self.cluster = cluster
        self.workload = workload
        self.scheduler = scheduler
        self.rng = rng
        self.drain = drain
        self.horizon = float(workload.horizon_s)
        self.now = 0.0
        self.n_jobs = workload.n_jobs
        self.n_machines = cluster.n_machines
        self._R = len(cluster.resources)
        self._init_arrays(cluster, workload)
        self._init_view(cluster, workload)
        self._init_counters(workload)
        self._init_flat_views()
        self._n_samples = max(2, int(samples))
        self._progress = progress
        self._progress_every_s = progress_every_s

    def _init_arrays(self, cluster: Cluster, workload: Workload) -> None:
        """The engine's writable state; schedulers see it only through read-only views, and the
        compiled path (:mod:`simcore.compiled`) works on these very buffers."""
        n = workload.n_jobs
        N = cluster.n_machines
        self._request = np.ascontiguousarray(workload.request, dtype=np.float64)
        self._job_class = np.ascontiguousarray(workload.job_class, dtype=np.int64)
        self._submit = np.ascontiguousarray(workload.submit, dtype=np.float64)
        # Resource-major (free[r, m]), the layout of the schedulers' scans.
        self._cap_rows = np.ascontiguousarray(cluster.machine_capacity.T)
        self._free_rows = self._cap_rows.copy()
        self._running = np.zeros(N, dtype=np.int64)
        self._last = np.full(N, -1, dtype=np.int64)
        self._start_t = np.full(n, np.nan)
        self._finish_t = np.full(n, np.nan)
        self._machine_of = np.full(n, -1, dtype=np.int64)
        self._config_of = np.ascontiguousarray(cluster.machine_config, dtype=np.int64)
        self._state = np.zeros(n, dtype=np.int8)
        self._total_cap = cluster.total_capacity()

    def _init_view(self, cluster: Cluster, workload: Workload) -> None:
        """The read-only arrays schedulers see (the view's, and the per-job inputs and start times)."""
        self.view = EngineView(cluster, self._free_rows, self._request, self._running, self._last)
        v = self.view
        self.free: FloatArray = v.free
        self.request: FloatArray = v.request
        self.capacity: FloatArray = v.capacity
        self.config_of: IntArray = v.config_of
        self.running: IntArray = v.running
        self.last_class: IntArray = v.last_class
        self.submit: FloatArray = read_only(self._submit)
        self.job_class: IntArray = read_only(self._job_class)
        self.start_t: FloatArray = read_only(self._start_t)
        self.runtime = workload.runtime_model(cluster)
        #: True when every job can run on every configuration (no rate is 0), so schedulers
        #: may skip :meth:`can_run`; False when that is not known to hold.
        self.all_runnable: bool = _all_runnable(self.runtime)
        self._duration = self.runtime.duration

    def _init_counters(self, workload: Workload) -> None:
        """Event counters, the completion heap and wake-up timers, and the task graph's parent counts."""
        self.arrived = 0
        self.started = 0
        self.completed = 0
        #: Tasks that arrived but wait for their parents (always 0 without a task graph).
        self.held = 0
        self._seq = 0
        self._heap: list[tuple[float, int, int, int]] = []
        self._timers: list[float] = []
        self.graph = workload.graph
        if self.graph is not None:
            self._waiting = self.graph.n_parents.copy()
            self._state[self._waiting > 0] = WAITING

    def _init_flat_views(self) -> None:
        """Writable flat scalar views sharing memory with the arrays above (see the class docstring)."""
        self._config_list: list[int] = self.view.config_list
        self._cap_list: list[float] = self._cap_rows.reshape(-1).tolist()
        self._req_mv = flat_view(self._request)
        self._free_mv = flat_view(self._free_rows)
        self._running_mv = flat_view(self._running)
        self._last_mv = flat_view(self._last)
        self._cls_mv = flat_view(self._job_class)
        self._state_mv = flat_view(self._state)
        self._start_mv = flat_view(self._start_t)
        self._finish_mv = flat_view(self._finish_t)
        self._machine_mv = flat_view(self._machine_of)

    # -- the scheduler's one action -------------------------------------------------
    def fits(self, job: int, machine: int) -> bool:
        """Whether ``job`` fits in the free capacity of ``machine`` now (see :meth:`EngineView.fits`)."""
        return self.view.fits(job, machine)

    def start(self, job: int, machine: int) -> float:
        """Start ``job`` on ``machine`` now; returns its processing time (s).

        Raises :class:`SchedulingError` if the job has not arrived, was already
        started, does not fit, or cannot run on the machine (an infinite or
        undefined processing time). Every check comes before any change, so a
        caught error leaves the state as it was.
        """
        if job >= self.arrived or job < 0:
            raise SchedulingError(f"job {job} started at t={self.now} before it arrived")
        if not 0 <= machine < self.n_machines:
            raise SchedulingError(f"job {job} started on machine {machine}, which does not exist")
        state = self._state_mv
        if state[job] != QUEUED:
            if state[job] == WAITING:
                raise SchedulingError(f"task {job} started at t={self.now} before its parents finished")
            raise SchedulingError(f"job {job} started twice")
        req = self._req_mv
        free = self._free_mv
        R = self._R
        N = self.n_machines
        jb = job * R
        # One and two resources are unrolled: this runs once per job, and a loop costs more than its body.
        if R == 2:
            fits = free[machine] >= req[jb] - EPS and free[N + machine] >= req[jb + 1] - EPS
        elif R == 1:
            fits = free[machine] >= req[jb] - EPS
        else:
            fits = all(free[off * N + machine] >= req[jb + off] - EPS for off in range(R))
        if not fits:
            raise SchedulingError(
                f"job {job} (request {self.request[job].tolist()}) does not fit on machine {machine} "
                f"(free {self.free[machine].tolist()})"
            )
        config = self._config_list[machine]
        p = self._duration(job, config, self._last_mv[machine])
        if not 0.0 <= p < math.inf:  # also rejects NaN
            raise SchedulingError(
                f"job {job} has processing time {p} on machine {machine} (configuration {config}); it cannot run there"
            )
        if R == 2:
            free[machine] -= req[jb]
            free[N + machine] -= req[jb + 1]
        else:
            for off in range(R):
                free[off * N + machine] -= req[jb + off]
        now = self.now
        state[job] = RUNNING
        self._running_mv[machine] += 1
        self.started += 1
        self._start_mv[job] = now
        self._machine_mv[job] = machine
        self._seq += 1
        heapq.heappush(self._heap, (now + p, self._seq, job, machine))
        return p

    def processing_time(self, job: int, machine: int) -> float:
        """How long ``job`` would run on ``machine`` if started now (s)."""
        return self._duration(job, self._config_list[machine], self._last_mv[machine])

    def can_run(self, job: int, machine: int) -> bool:
        """Whether ``job`` can run on ``machine`` at all: a finite processing time there.

        A rate of 0 (LoTES section 5.3: "cannot run there") gives an infinite
        time; the engine refuses such a start, and no scheduler may choose it.
        """
        return 0.0 <= self._duration(job, self._config_list[machine], self._last_mv[machine]) < math.inf

    def runnable_configs(self, job: int) -> list[bool]:
        """Per configuration, whether ``job`` can run there (a finite processing time on an idle machine)."""
        dur = self._duration
        return [0.0 <= dur(job, c, -1) < math.inf for c in range(self.view.n_configs)]

    def wake_at(self, t: float) -> None:
        """Ask for a call of the scheduler's ``on_wake`` at time ``t`` (>= now).

        Wake-ups at one instant come after that instant's completions and
        arrivals, and several asked for the same instant give one call. Like
        every event, a wake-up past the horizon happens only when draining.
        """
        if not t >= self.now:  # also refuses NaN
            raise SchedulingError(f"wake-up asked for t={t}, before now ({self.now})")
        heapq.heappush(self._timers, float(t))

    @property
    def queued(self) -> int:
        """Jobs (tasks) released to the scheduler that have not started."""
        return self.arrived - self.held - self.started

    def used(self) -> FloatArray:
        """Capacity in use over the whole cluster, per resource."""
        return self._total_cap - self._free_rows.sum(axis=1)  # type: ignore[no-any-return]

    # -- the loop ------------------------------------------------------------------------
    def run(self) -> SimResult:
        """Run to the horizon (or until every job finished when draining).

        With ``engine="compiled"`` the scheduler's kernel (:meth:`Scheduler.kernel`) runs the
        loop when it has one for this scenario; else, or with ``engine="python"``, the loop
        below calls the scheduler's Python methods. ``engine_used``, ``engine_note`` (why
        Python ran although compiled was asked) and ``compile_s`` (the kernel's first call:
        compilation, or loading it from the cache) say what happened.
        """
        wall0 = time.perf_counter()
        sched = self.scheduler
        sched.setup(self, self.rng)
        kernel = self._kernel()
        if kernel is not None:
            from simcore.compiled.loop import run_kernel

            return run_kernel(self, kernel, wall0)
        return self._run_python(wall0)

    def _kernel(self) -> Any:
        """The scheduler's compiled kernel for this run, or None (then ``engine_note`` says why)."""
        if self.engine == "python":
            return None
        name = self.scheduler.name or type(self.scheduler).__name__
        if self.graph is not None and not getattr(self.scheduler, "kernel_runs_graphs", False):
            self.engine_note = "task graphs run in the Python engine"
            return None
        if not hasattr(self.runtime, "compiled_form"):
            self.engine_note = f"the run-time model {type(self.runtime).__name__} has no compiled form"
            return None
        # Importing numba and the kernel (compiled, or loaded from the cache) counts as compile time:
        # the clocks start before the import, which takes most of a cached kernel's first call.
        c0 = time.perf_counter()
        p0 = time.process_time()
        if not _numba_available():
            # An environment installed before numba became a dependency still runs, in the reference loop.
            self.engine_note = "numba is not installed (pip install numba, or make install): ran the Python engine"
            return None
        kernel = self.scheduler.kernel(self)
        if kernel is None:
            self.engine_note = f"scheduler {name!r} has no compiled kernel for this run"
        else:
            self.compile_s = time.perf_counter() - c0
            self.compile_cpu_s = time.process_time() - p0
        return kernel

    def _new_samples(self) -> tuple[FloatArray, IntArray, IntArray, FloatArray, FloatArray]:
        horizon = self.horizon
        n_s = self._n_samples
        # Samples span the first arrival to the horizon: a trace window that opens on a long empty
        # stretch (an SWF log in Unix time, a mid-trace Google part) must not dilute utilisation
        # with idle samples nor judge stability on an empty queue (issue 17).
        submit = self._submit
        first = float(submit[0]) if len(submit) else 0.0
        t_lo = first if horizon > first else 0.0
        sample_t = np.linspace(t_lo, horizon, n_s) if horizon > 0 else np.zeros(n_s)
        s_queue = np.zeros(n_s, dtype=np.int64)
        s_running = np.zeros(n_s, dtype=np.int64)
        s_util = np.zeros((n_s, len(self._total_cap)))
        safe_cap = np.where(self._total_cap > 0, self._total_cap, 1.0)
        return sample_t, s_queue, s_running, s_util, safe_cap

    def _sample(
        self, si: int, s_queue: IntArray, s_running: IntArray, s_util: FloatArray, safe_cap: FloatArray
    ) -> None:
        s_queue[si] = self.arrived - self.held - self.started
        s_running[si] = self.started - self.completed
        s_util[si] = self.used() / safe_cap

    def _result(
        self,
        wall0: float,
        si: int,
        samples: tuple[FloatArray, IntArray, IntArray, FloatArray, FloatArray],
    ) -> SimResult:
        sample_t, s_queue, s_running, s_util, safe_cap = samples
        end = self.now if self.drain else max(self.now, self.horizon)
        while si < self._n_samples:
            self._sample(si, s_queue, s_running, s_util, safe_cap)
            si += 1
        self.now = end
        wall = time.perf_counter() - wall0
        if self._progress is not None:
            self._progress(self._progress_info(wall))
        return SimResult(
            n_jobs=self.n_jobs,
            submit=self._submit,
            start=self._start_t,
            finish=self._finish_t,
            machine=self._machine_of,
            job_class=self._job_class,
            sample_t=sample_t,
            sample_queue=s_queue,
            sample_running=s_running,
            sample_util=s_util,
            horizon_s=self.horizon,
            end_s=end,
            wall_s=wall,
            resources=tuple(self.cluster.resources),
            config_of_machine=self.config_of,
            request=self._request,
            total_capacity=self._total_cap,
            release=self._release_times(),
            extra={
                "arrived": self.arrived,
                "drained": bool(self.drain),
                "engine": self.engine_used,
                "compile_s": self.compile_s,
                "engine_note": self.engine_note,
            },
        )

    def _release_times(self) -> FloatArray | None:
        """Task graphs: each task's release to the scheduler (see :func:`simcore.core.timeavg.release_times`)."""
        g = self.graph
        if g is None:
            return None
        return release_times(self._submit, self._finish_t, g.parent_ptr, g.parents)

    def _run_python(self, wall0: float) -> SimResult:
        """The reference loop: events in time order (completions, arrivals, wake-ups), the scheduler's hooks."""
        on_arrival, on_completion = self.scheduler.on_arrival, self.scheduler.on_completion
        timers, heap, heappop = self._timers, self._heap, heapq.heappop
        waiting, child_ptr, children = self._graph_rows()
        submit = flat_view(self._submit)
        n, horizon, drain, inf = self.n_jobs, self.horizon, self.drain, math.inf
        i, next_arrival = 0, (submit[0] if n else inf)
        # Completion bookkeeping lives in the loop itself: it runs once per job, and a
        # method call there costs more than the bookkeeping.
        R, N, cap = self._R, self.n_machines, self._cap_list
        req, free, running, state = self._req_mv, self._free_mv, self._running_mv, self._state_mv
        finish, last, cls = self._finish_mv, self._last_mv, self._cls_mv
        samples = self._new_samples()
        si, next_sample = 0, float(samples[0][0])
        countdown, last_report = CHECK_EVERY, wall0

        while True:
            if heap and heap[0][0] <= next_arrival:
                t = heap[0][0]
                kind = 0
            elif i < n:
                t = next_arrival
                kind = 1
            else:
                t = inf
                kind = 3
            # Wake-ups come after the completions and arrivals of their instant.
            if timers and timers[0] < t:
                t = timers[0]
                kind = 2
            elif kind == 3:
                break
            if t > horizon and not drain:
                break
            if t >= next_sample:
                si, next_sample = self._sample_until(t, si, samples)
            self.now = t
            if kind == 1:
                i += 1
                self.arrived = i
                next_arrival = submit[i] if i < n else inf
                if waiting is not None and waiting[i - 1] > 0:
                    self.held += 1  # released when its last parent finishes
                else:
                    on_arrival(i - 1)
            elif kind == 2:
                self._wake(t)
            else:
                _, _, job, m = heappop(heap)
                left = running[m] - 1
                running[m] = left
                if left == 0:
                    # An idle machine is exactly empty (no accumulated rounding error).
                    for off in range(R):
                        free[off * N + m] = cap[off * N + m]
                elif R == 2:
                    jb = job * 2
                    free[m] += req[jb]
                    free[N + m] += req[jb + 1]
                else:
                    jb = job * R
                    for off in range(R):
                        free[off * N + m] += req[jb + off]
                state[job] = DONE
                finish[job] = t
                self.completed += 1
                last[m] = cls[job]
                on_completion(job, m)
                if children is not None and child_ptr[job] != child_ptr[job + 1]:
                    self._release_children(job, waiting, child_ptr, children, on_arrival)
            countdown -= 1
            if countdown == 0:
                countdown = CHECK_EVERY
                last_report = self._report(wall0, last_report)

        return self._result(wall0, si, samples)

    def _graph_rows(self) -> tuple[Any, Any, Any]:
        """Task graphs: parents still running per task and children in CSR rows, as flat views (None: no graph)."""
        graph = self.graph
        if graph is None:
            return None, None, None
        return flat_view(self._waiting), flat_view(graph.child_ptr), flat_view(graph.children)

    def _sample_until(
        self, t: float, si: int, samples: tuple[FloatArray, IntArray, IntArray, FloatArray, FloatArray]
    ) -> tuple[int, float]:
        """Take every sample due at or before ``t`` from the state as it was just before the event at ``t``;
        returns the next sample's index and time (inf after the last)."""
        sample_t, s_queue, s_running, s_util, safe_cap = samples
        n_s = self._n_samples
        while si < n_s and t >= sample_t[si]:
            self._sample(si, s_queue, s_running, s_util, safe_cap)
            si += 1
        return si, (float(sample_t[si]) if si < n_s else math.inf)

    def _wake(self, t: float) -> None:
        """The scheduler's wake-up at ``t``: one call for every wake-up asked for this instant."""
        timers = self._timers
        while timers and timers[0] <= t:
            heapq.heappop(timers)
        self.scheduler.on_wake()

    def _report(self, wall0: float, last_report: float) -> float:
        """Report progress if the last report is old enough; returns the time of the last report."""
        if self._progress is None:
            return last_report
        w = time.perf_counter()
        if w - last_report >= self._progress_every_s:
            self._progress(self._progress_info(w - wall0))
            return w
        return last_report

    def _release_children(
        self, task: int, waiting: Any, child_ptr: Any, children: Any, on_arrival: Callable[[int], None]
    ) -> None:
        """``task`` finished: children whose last parent it was become queued, and arrived ones are released."""
        state = self._state_mv
        for k in range(child_ptr[task], child_ptr[task + 1]):
            c = children[k]
            left = waiting[c] - 1
            waiting[c] = left
            if left == 0:
                state[c] = QUEUED
                # A zero-length parent can finish before a sibling arrived at the same instant;
                # such a child is released by its own arrival.
                if c < self.arrived:
                    self.held -= 1
                    on_arrival(c)

    def _progress_info(self, wall: float) -> Progress:
        return Progress(
            now=self.now,
            horizon=self.horizon,
            arrived=self.arrived,
            started=self.started,
            completed=self.completed,
            jobs=self.n_jobs,
            wall_s=wall,
            compile_s=self.compile_s or 0.0,
        )


def _all_runnable(runtime: object) -> bool:
    """Whether ``runtime`` says every job can run everywhere (its ``all_runnable`` attribute; False if absent)."""
    return bool(getattr(runtime, "all_runnable", False))


def simulate(
    cluster: Cluster,
    workload: Workload,
    scheduler: Scheduler,
    seed: int | np.random.Generator = 0,
    **kwargs: Any,
) -> SimResult:
    """Run ``scheduler`` on ``cluster`` and ``workload``; see :class:`Simulation`.

    An integer ``seed`` gives the scheduler the stream :mod:`simcore.core.seeding` assigns it,
    the same as :func:`simcore.api.run` under that seed; a Generator is used as it is.
    """
    rng = seed if isinstance(seed, np.random.Generator) else scheduler_rng(seed)
    return Simulation(cluster, workload, scheduler, rng, **kwargs).run()


def _numba_available() -> bool:
    """Whether numba imports (the kernel imports it next anyway, so trying costs nothing more)."""
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True
