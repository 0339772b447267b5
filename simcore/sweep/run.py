"""Parameter sweeps: a grid of parameter values x schedulers x seeds, each run through :func:`simcore.api.run`.

A figure such as LoTES Figure 11 (mean response against Phi, five seeds per
point, several schedulers) is one sweep. Every run is an ordinary
:class:`~simcore.api.RunSpec` with its own seed, so a sweep's numbers equal
those of separate ``simcore run`` calls, and they do not depend on how many
processes ran them: results come back in grid order (points, then schedulers,
then seeds), whichever process finished first.

The grid's text form (``--vary``, ``--seeds``) is read by
:mod:`simcore.sweep.grammar`, the one grammar the command line, the
dashboard's form and its API share; :mod:`simcore.sweep.scenario` turns a
grid into the scenario the dashboard stores and back into cells.
"""

from __future__ import annotations

import gc
import itertools
import math
import multiprocessing
import shlex
import signal
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from typing import Any

from simcore import api
from simcore.core.errors import ParameterError, SchedulingError, SimcoreError
from simcore.schedulers import SCHEDULERS
from simcore.sweep.grammar import (
    PRESET_AXES,
    RUN_SETTINGS,
    Axis,
    check_axes_distinct,
    check_fixed_params,
    route_params,
    seeds_text,
)

__all__ = ["Sweep", "Task", "TaskResult", "describe", "execute", "run_task"]


# -- the grid --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Task:
    """One run of the grid: its position, the point's values, and the spec that reproduces it alone."""

    index: int
    point: dict[str, Any]
    scheduler: str
    seed: int
    spec: api.RunSpec


@dataclass
class Sweep:
    """The fixed scenario plus the axes; ``tasks()`` is the grid in its one order."""

    cluster: str
    workload: str
    schedulers: list[str]
    seeds: list[int]
    axes: list[Axis] = field(default_factory=list)
    load: float = 0.9
    hours: float | None = None
    drain: bool = False
    #: Fixed preset and scheduler parameters by name, as the options give them.
    params: dict[str, Any] = field(default_factory=dict)
    #: ``compiled`` or ``python`` (the same numbers; see simcore.core.engine.ENGINES).
    engine: str = "compiled"

    def __post_init__(self) -> None:
        if not self.schedulers:
            raise ParameterError("--schedulers needs at least one scheduler name")
        if not self.seeds:
            raise ParameterError("--seeds: give at least one seed, e.g. 0 or 0,1,2 or 0-4")
        check_axes_distinct(self.axes, self.params)
        for name in PRESET_AXES:
            if name in self.params:
                raise ParameterError(f"--{name} is a preset name; vary it with --vary {name}=A,B")
        if not (self.load > 0 and math.isfinite(self.load)):
            raise ParameterError(f"--load must be a positive number, got {self.load}")
        if self.hours is not None and not (self.hours > 0 and math.isfinite(self.hours)):
            raise ParameterError(f"--hours must be a positive number, got {self.hours}")
        # Range-check the fixed values now, against every preset the grid runs, not at the first run.
        check_fixed_params(self.params, self.clusters(), self.workloads(), self.schedulers)

    def _axis(self, name: str) -> Axis | None:
        return next((ax for ax in self.axes if ax.name == name), None)

    def clusters(self) -> list[str]:
        """Every cluster of the grid: the fixed one, or the values of a ``cluster`` axis."""
        ax = self._axis("cluster")
        return [str(v) for v in ax.values] if ax else [self.cluster]

    def workloads(self) -> list[str]:
        ax = self._axis("workload")
        return [str(v) for v in ax.values] if ax else [self.workload]

    def points(self) -> list[dict[str, Any]]:
        """The cartesian product of the axes, the first axis varying slowest; one empty point without axes."""
        names = [ax.name for ax in self.axes]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(ax.values for ax in self.axes))]

    def spec(self, point: dict[str, Any], scheduler: str, seed: int) -> api.RunSpec:
        cluster = str(point.get("cluster", self.cluster))
        workload = str(point.get("workload", self.workload))
        given = {k: v for k, v in point.items() if k not in RUN_SETTINGS and k not in PRESET_AXES}
        c, w, s = route_params({**self.params, **given}, cluster, workload, self.schedulers)
        return api.RunSpec(
            cluster=cluster,
            workload=workload,
            scheduler=scheduler,
            seed=seed,
            load=point.get("load", self.load),
            hours=point.get("hours", self.hours),
            drain=self.drain,
            engine=self.engine,
            cluster_params=c,
            workload_params=w,
            scheduler_params=s,
        )

    def command_line(self, *, table: bool = False, metric: str | None = None, workers: int = 1) -> str:
        """The ``simcore sweep`` command that runs this grid (what a reproduction page prints)."""
        argv = ["simcore", "sweep"]
        if self._axis("cluster") is None:
            argv += ["--cluster", self.cluster]
        if self._axis("workload") is None:
            argv += ["--workload", self.workload]
        # A varied load or arrival window is given by its --vary alone: a fixed --load beside --vary load
        # read as if the sweep ran at that load (issue 28).
        if self._axis("load") is None:
            argv += ["--load", repr(float(self.load))]
        if self.hours is not None and self._axis("hours") is None:
            argv += ["--hours", repr(float(self.hours))]
        if self.drain:
            argv.append("--drain")
        if self.engine != "compiled":
            argv += ["--engine", self.engine]
        for k, v in self.params.items():
            if v is None:
                continue
            argv += [f"--{k.replace('_', '-')}", repr(v) if isinstance(v, float) else str(v)]
        argv += ["--schedulers", ",".join(self.schedulers), "--seeds", seeds_text(self.seeds)]
        for ax in self.axes:
            argv += ["--vary", ax.text()]
        if table:
            argv.append("--table")
            if metric:
                argv += ["--metric", metric]
        if workers > 1:
            argv += ["--workers", str(workers)]
        return shlex.join(argv)

    def tasks(self) -> list[Task]:
        """Every run, in grid order: points, then schedulers, then seeds."""
        out: list[Task] = []
        for point in self.points():
            for scheduler in self.schedulers:
                for seed in self.seeds:
                    out.append(Task(len(out), point, scheduler, seed, self.spec(point, scheduler, seed)))
        return out


# -- running ---------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TaskResult:
    """What came back from one run: a summary, or the message of an input error or an engine-rule breach.

    Errors travel as text: exception classes with their own constructors do not survive pickling.
    """

    summary: dict[str, Any] | None
    error: str | None = None
    broke_engine_rule: bool = False


def run_task(spec: api.RunSpec) -> TaskResult:
    """Run one spec (in this process or a worker process)."""
    return run_group([spec])[0]


def run_group(specs: Sequence[api.RunSpec]) -> list[TaskResult]:
    """Run specs of one scenario (one :func:`simcore.api.scenario_key`), building its cluster and workload once.

    Each summary is the one ``api.run`` gives for its spec alone: runs share the workload, which no
    run changes, and nothing else. (A paper-scale Figure 11 workload, 33 million jobs, takes about
    25 s to generate and check: its three schedulers now pay that once.)
    """
    out: list[TaskResult] = []
    prepared: tuple[Any, Any, dict[str, Any]] | None = None
    failure: SimcoreError | None = None
    for spec in specs:
        try:
            SCHEDULERS.get(spec.scheduler)
            if failure is not None:
                raise failure
            if prepared is None:
                try:
                    prepared = api.prepare(spec)
                except SimcoreError as e:
                    failure = e  # the same scenario fails the same way for every spec
                    raise
            out.append(TaskResult(api.run_prepared(spec, prepared).summary))
        except SimcoreError as e:
            out.append(TaskResult(None, str(e)))
        except SchedulingError as e:
            out.append(TaskResult(None, str(e), broke_engine_rule=True))
        # A run's Simulation and its scheduler refer to each other (``scheduler.sim``), so its arrays (GBs at
        # paper scale) outlive the run until Python's cycle collector happens to run, which large numpy
        # allocations do not prompt: a worker's garbage grew over groups until the system killed it.
        gc.collect()
    return out


def _groups(tasks: Sequence[Task]) -> list[list[int]]:
    """Positions of ``tasks`` by scenario, each group in grid order, groups by their first task."""
    groups: dict[str, list[int]] = {}  # in first-task order
    for i, t in enumerate(tasks):
        groups.setdefault(api.scenario_key(t.spec), []).append(i)
    return list(groups.values())


class _InOrder:
    """Finished runs, handed on in grid order: ``add`` a group's results as they come, then take ``ready()``."""

    def __init__(self, tasks: Sequence[Task], on_done: Callable[[int, int], None] | None) -> None:
        self.tasks = tasks
        self.on_done = on_done
        self.results: dict[int, TaskResult] = {}
        self.done = 0  # runs finished
        self.yielded = 0  # runs handed on: every one before this position

    def add(self, positions: Sequence[int], results: Sequence[TaskResult]) -> None:
        for i, r in zip(positions, results, strict=True):
            self.results[i] = r
            self.done += 1
            if self.on_done:
                self.on_done(self.done, len(self.tasks))

    def ready(self) -> Generator[tuple[Task, TaskResult], None, None]:
        while self.yielded in self.results:
            yield self.tasks[self.yielded], self.results.pop(self.yielded)
            self.yielded += 1


class WorkerLost(SimcoreError):
    """A worker process ended without a result: killed from outside, most often for lack of memory."""

    def __init__(self, done: int, total: int) -> None:
        super().__init__(
            f"a worker process of the sweep ended without a result: something killed it, most often the "
            f"system for lack of memory; {done} of {total} runs had finished. Each worker holds one "
            f"scenario's workload and one run at a time: run with fewer --workers, or fewer hours"
        )


def ignore_sigint() -> None:
    """A worker process's initializer: Ctrl-C is the parent's to handle (simcore.planning.local uses it too)."""
    # Ctrl-C reaches the whole process group: the parent stops the workers itself, so they
    # must not die mid-queue-read and print tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def execute(
    tasks: Sequence[Task], workers: int = 1, on_done: Callable[[int, int], None] | None = None
) -> Generator[tuple[Task, TaskResult], None, None]:
    """Run ``tasks`` in ``workers`` processes; yield (task, result) in task order as soon as each is ready.

    Runs of one scenario (the schedulers of one point and seed) run together, in one process, on one
    copy of the workload (:func:`run_group`). ``on_done(done, total)`` is called after every finished
    run, in finishing order. Closing the iterator early (an error in the caller) cancels the runs not
    yet started and stops the workers.
    """
    total = len(tasks)
    groups = _groups(tasks)
    out = _InOrder(tasks, on_done)
    if workers <= 1 or len(groups) <= 1:
        for g in groups:
            out.add(g, run_group([tasks[i].spec for i in g]))
            yield from out.ready()
        return
    # 'spawn': a fresh interpreter per worker shares no state with the parent (no forked locks
    # or registries); each run depends only on its spec.
    pool = ProcessPoolExecutor(
        max_workers=min(workers, len(groups)),
        mp_context=multiprocessing.get_context("spawn"),
        initializer=ignore_sigint,
    )
    finished_cleanly = False
    try:
        futures = {pool.submit(run_group, [tasks[i].spec for i in g]): g for g in groups}
        pending: set[Future[list[TaskResult]]] = set(futures)
        while out.yielded < total:
            if pending:
                finished, pending = wait(pending, return_when=FIRST_COMPLETED)
                for f in finished:  # several can finish together: one call per run, as documented
                    try:
                        out.add(futures[f], f.result())
                    except BrokenProcessPool:
                        raise WorkerLost(out.done, total) from None
            yield from out.ready()
        finished_cleanly = True
    finally:
        if finished_cleanly:
            pool.shutdown(wait=True)
        else:
            stop_workers(pool)


def stop_workers(pool: ProcessPoolExecutor) -> None:
    """Cancel queued work and end the running workers now rather than after they finish."""
    pool.shutdown(wait=False, cancel_futures=True)
    # No public way to end running workers before Python 3.14 (terminate_workers); the
    # executor's own process table is the only handle on them.
    processes = getattr(pool, "_processes", None) or {}
    for p in list(processes.values()):
        if p.is_alive():
            p.terminate()
    for p in list(processes.values()):
        p.join(timeout=5)


def describe(task: Task) -> str:
    """'lotes, phi=0.003, seed 2' for messages."""
    parts = [task.scheduler, *(f"{k}={v}" for k, v in task.point.items()), f"seed {task.seed}"]
    return ", ".join(parts)
