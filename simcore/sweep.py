"""Parameter sweeps: a grid of parameter values x schedulers x seeds, each run through :func:`simcore.api.run`.

A figure such as LoTES Figure 11 (mean response against Phi, five seeds per
point, several schedulers) is one sweep. Every run is an ordinary
:class:`~simcore.api.RunSpec` with its own seed, so a sweep's numbers equal
those of separate ``simcore run`` calls, and they do not depend on how many
processes ran them: results come back in grid order (points, then schedulers,
then seeds), whichever process finished first.
"""

from __future__ import annotations

import itertools
import math
import multiprocessing
import re
import signal
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from dataclasses import dataclass, field
from typing import Any

from simcore import api
from simcore.convert import BadValue, boolean, finite_float, positive_float
from simcore.errors import ParameterError, SchedulingError, SimcoreError
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param

#: A guard against a typo such as ``0-100000``: a range is expanded only below this many seeds.
MAX_SEEDS = 10_000
#: Run-level settings that can be varied besides the preset and scheduler parameters.
RUN_SETTINGS = ("load", "hours")


def param_converter(p: Param) -> Callable[[str], Any]:
    """The converter for a registry parameter's text value (the command line wraps it as an argparse type)."""
    if p.type is bool:
        return boolean
    if p.type is float:
        return finite_float
    return p.type


# -- which preset or scheduler takes a parameter -------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """A preset or scheduler that takes a parameter; ``label`` is how the API's messages name it."""

    kind: str  # "cluster", "workload" or "scheduler"
    label: str
    param: Param
    params: tuple[Param, ...]


def param_owners(cluster: str, workload: str, schedulers: Sequence[str]) -> dict[str, list[Owner]]:
    """Parameter name -> the presets and schedulers of this scenario that take it.

    A cluster or trace file has no parameters; a name can belong to several owners (it then goes to each).
    """
    groups: list[tuple[str, str, tuple[Param, ...]]] = []
    if cluster in CLUSTERS:
        groups.append(("cluster", f"cluster {cluster!r}", CLUSTERS.get(cluster).params))
    if workload in WORKLOADS:
        groups.append(("workload", f"workload {workload!r}", WORKLOADS.get(workload).params))
    for s in schedulers:
        groups.append(("scheduler", f"scheduler {s!r}", SCHEDULERS.get(s).params))
    owners: dict[str, list[Owner]] = {}
    for kind, label, params in groups:
        for p in params:
            owners.setdefault(p.name, []).append(Owner(kind, label, p, params))
    return owners


def _does_not_apply(option: str, cluster: str, workload: str, schedulers: Sequence[str]) -> str:
    return (
        f"{option} does not apply to cluster {cluster!r}, workload {workload!r} or scheduler(s) {', '.join(schedulers)}"
    )


def split_params(
    given: dict[str, Any], cluster: str, workload: str, schedulers: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Route ``--name value`` options to (cluster, workload, scheduler) parameters; refuse those nobody takes."""
    owners = param_owners(cluster, workload, schedulers)
    out: dict[str, dict[str, Any]] = {"cluster": {}, "workload": {}, "scheduler": {}}
    for k, v in given.items():
        if k not in owners:
            raise ParameterError(_does_not_apply(f"--{k.replace('_', '-')}", cluster, workload, schedulers))
        for o in owners[k]:
            out[o.kind][k] = v
    return out["cluster"], out["workload"], out["scheduler"]


# -- parsing ---------------------------------------------------------------------------------------------------


def parse_seeds(text: str) -> list[int]:
    """'0', '0,1,5' or '0-4' -> the seeds in the order given (as the dashboard's form reads them)."""
    seeds: list[int] = []
    for part in [x.strip() for x in (text or "").split(",") if x.strip()]:
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m:
            lo, hi = int(m.group(1)), int(m.group(2))
            if hi < lo:
                raise ParameterError(f"--seeds: range {part!r} goes backwards")
            if hi - lo + 1 > MAX_SEEDS:
                raise ParameterError(f"--seeds: range {part!r} has more than {MAX_SEEDS} seeds")
            seeds.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d+", part):
            seeds.append(int(part))
        else:
            raise ParameterError(
                f"--seeds: {part!r} is not a non-negative integer or a range like 0-4 (e.g. 0 or 0,1,2 or 0-4)"
            )
    if not seeds:
        raise ParameterError("--seeds: give at least one seed, e.g. 0 or 0,1,2 or 0-4")
    if len(seeds) > MAX_SEEDS:
        raise ParameterError(f"--seeds: more than {MAX_SEEDS} seeds")
    seen: set[int] = set()
    for x in seeds:
        if x in seen:
            raise ParameterError(f"--seeds: seed {x} is listed twice")
        seen.add(x)
    return seeds


def seeds_text(seeds: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (sorted)."""
    ss, out, i = sorted(seeds), [], 0
    while i < len(ss):
        j = i
        while j + 1 < len(ss) and ss[j + 1] == ss[j] + 1:
            j += 1
        out.append(str(ss[i]) if i == j else f"{ss[i]}-{ss[j]}")
        i = j + 1
    return ",".join(out)


@dataclass(frozen=True)
class Axis:
    """One varied parameter: its canonical name (``load``, ``hours`` or a Param name) and its values."""

    name: str
    values: tuple[Any, ...]


def parse_axis(text: str, cluster: str, workload: str, schedulers: Sequence[str]) -> Axis:
    """``NAME=v1,v2,...`` -> an :class:`Axis`, every value converted and range-checked now.

    ``NAME`` is ``load``, ``hours`` or a parameter of the cluster, workload or a scheduler, spelled
    like its option (``machines-per-config``) or its parameter (``machines_per_config``).
    """
    raw_name, eq, raw_values = text.partition("=")
    name = raw_name.strip().replace("-", "_")
    shown = raw_name.strip() or text
    if not eq or not name:
        raise ParameterError(f"--vary {text!r}: expected NAME=VALUE[,VALUE...], e.g. phi=0,0.003,0.006")
    if name == "seed":
        raise ParameterError("--vary seed: give seeds with --seeds, e.g. --seeds 0-4")
    owners = param_owners(cluster, workload, schedulers)
    if name not in RUN_SETTINGS and name not in owners:
        valid = ", ".join(n.replace("_", "-") for n in [*RUN_SETTINGS, *sorted(owners)])
        raise ParameterError(
            f"{_does_not_apply(f'--vary {shown}', cluster, workload, schedulers)}; parameters that do: {valid}"
        )
    items = [v.strip() for v in raw_values.split(",")]
    if not raw_values.strip():
        raise ParameterError(f"--vary {shown}: no values; give a list such as {shown}=1,2,3")
    if "" in items:
        raise ParameterError(f"--vary {shown}: empty value in {raw_values!r}")
    convert = positive_float if name in RUN_SETTINGS else param_converter(owners[name][0].param)
    values: list[Any] = []
    for item in items:
        try:
            v = convert(item)
        except (BadValue, ParameterError) as e:  # ParameterError: a checked text (a staged policy)
            raise ParameterError(f"--vary {shown}: {e}") from None
        except (TypeError, ValueError):
            type_name = owners[name][0].param.type.__name__
            raise ParameterError(f"--vary {shown}: expected {type_name}, got {item!r}") from None
        for o in owners.get(name, []):
            try:
                coerce_params(o.label, o.params, {name: v})
            except ParameterError as e:
                raise ParameterError(f"--vary {shown}: {e}") from None
        if v in values:
            raise ParameterError(f"--vary {shown}: value {item!r} is listed twice")
        values.append(v)
    return Axis(name, tuple(values))


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

    def __post_init__(self) -> None:
        if not self.schedulers:
            raise ParameterError("--schedulers needs at least one scheduler name")
        if not self.seeds:
            raise ParameterError("--seeds: give at least one seed, e.g. 0 or 0,1,2 or 0-4")
        seen: set[str] = set()
        for ax in self.axes:
            option = ax.name.replace("_", "-")
            if ax.name in seen:
                raise ParameterError(f"--vary {option} is given twice; list all its values in one --vary")
            if ax.name in self.params:
                raise ParameterError(f"--{option} is both fixed and varied; drop --{option} or --vary {option}")
            seen.add(ax.name)
            if not ax.values:
                raise ParameterError(f"--vary {option}: no values")
        if not (self.load > 0 and math.isfinite(self.load)):
            raise ParameterError(f"--load must be a positive number, got {self.load}")
        if self.hours is not None and not (self.hours > 0 and math.isfinite(self.hours)):
            raise ParameterError(f"--hours must be a positive number, got {self.hours}")
        split_params(self.params, self.cluster, self.workload, self.schedulers)
        owners = param_owners(self.cluster, self.workload, self.schedulers)
        for k, v in self.params.items():  # range-check the fixed values now too, not at the first run
            for o in owners[k]:
                coerce_params(o.label, o.params, {k: v})

    def points(self) -> list[dict[str, Any]]:
        """The cartesian product of the axes, the first axis varying slowest; one empty point without axes."""
        names = [ax.name for ax in self.axes]
        return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(ax.values for ax in self.axes))]

    def spec(self, point: dict[str, Any], scheduler: str, seed: int) -> api.RunSpec:
        given = {k: v for k, v in point.items() if k not in RUN_SETTINGS}
        c, w, s = split_params({**self.params, **given}, self.cluster, self.workload, self.schedulers)
        return api.RunSpec(
            cluster=self.cluster,
            workload=self.workload,
            scheduler=scheduler,
            seed=seed,
            load=point.get("load", self.load),
            hours=point.get("hours", self.hours),
            drain=self.drain,
            cluster_params=c,
            workload_params=w,
            scheduler_params=s,
        )

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
    try:
        return TaskResult(api.run(spec).summary)
    except SimcoreError as e:
        return TaskResult(None, str(e))
    except SchedulingError as e:
        return TaskResult(None, str(e), broke_engine_rule=True)


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the parent stops the workers itself, so they
    # must not die mid-queue-read and print tracebacks of their own.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def execute(
    tasks: Sequence[Task], workers: int = 1, on_done: Callable[[int, int], None] | None = None
) -> Generator[tuple[Task, TaskResult], None, None]:
    """Run ``tasks`` in ``workers`` processes; yield (task, result) in task order as soon as each is ready.

    ``on_done(done, total)`` is called after every finished run, in finishing order. Closing the
    iterator early (an error in the caller) cancels the runs not yet started and stops the workers.
    """
    total = len(tasks)
    if workers <= 1 or total <= 1:
        for i, t in enumerate(tasks):
            r = run_task(t.spec)
            if on_done:
                on_done(i + 1, total)
            yield t, r
        return
    # 'spawn': a fresh interpreter per worker shares no state with the parent (no forked locks
    # or registries); each run depends only on its spec.
    pool = ProcessPoolExecutor(
        max_workers=min(workers, total), mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint
    )
    finished_cleanly = False
    try:
        futures: list[Future[TaskResult]] = [pool.submit(run_task, t.spec) for t in tasks]
        pending: set[Future[TaskResult]] = set(futures)
        done = nxt = 0
        while nxt < total:
            if pending:
                ready, pending = wait(pending, return_when=FIRST_COMPLETED)
                for _ in ready:  # several can finish together: one call per run, as documented
                    done += 1
                    if on_done:
                        on_done(done, total)
            while nxt < total and futures[nxt].done():
                yield tasks[nxt], futures[nxt].result()
                nxt += 1
        finished_cleanly = True
    finally:
        if finished_cleanly:
            pool.shutdown(wait=True)
        else:
            _stop(pool)


def _stop(pool: ProcessPoolExecutor) -> None:
    """Cancel queued runs and end the running ones now rather than after they finish."""
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
