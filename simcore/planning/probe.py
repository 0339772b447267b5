"""One probe of a capacity plan: the plan's schedulers on its cluster resized to ``machines``, under one seed.

:func:`probe` is a pure function of ``(PlanSpec, machines, seed)`` (and,
optionally, which of the plan's schedulers to run), so the command line can
run probes in local processes and the platform each probe as a task. Its
result is plain data (:meth:`ProbeResult.to_dict`).

The workload is fixed while the cluster is resized: a preset's jobs are drawn
once per seed at ``load`` x lambda* *of the given cluster* (its arrival rate
then stays the same at every size), a trace file is replayed as recorded (or
at ``load`` times its rate). A process keeps the last workloads it built
(:data:`WORKLOAD_CACHE_SIZE`), so every size and scheduler it probes under a
seed shares one copy: the shared workloads that make a plan affordable.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from typing import Any

from simcore import api
from simcore.core.errors import SchedulingError, SimcoreError
from simcore.core.model import Cluster, Workload
from simcore.planning.shape import resize
from simcore.planning.target import parse_target
from simcore.presets import WORKLOADS
from simcore.version import code_version

#: Workloads a process keeps (one per seed of a plan; a million-job workload is about 100 MB).
WORKLOAD_CACHE_SIZE = 4
#: Samples of each run's series: the planner reads exact statistics only, so the fewest that keep the
#: stability verdict meaningful.
PROBE_SAMPLES = 64


@dataclass
class PlanSpec:
    """What to plan: a cluster shape and how it is resized, a workload, schedulers, seeds and a target."""

    cluster: str
    workload: str
    schedulers: list[str]
    target: str
    seeds: list[int] = field(default_factory=lambda: [0])
    #: ``all``: every configuration in proportion; or one configuration's name: only it changes.
    resize: str = "all"
    #: Preset: fraction of lambda* of the *given* cluster (None: 0.9), fixed while the cluster is resized.
    #: Trace file: replay rate (None: as recorded).
    load: float | None = None
    hours: float | None = None
    drain: bool = False
    #: Largest size the search may probe (None: four times the given cluster, within SIMCORE_MAX_MACHINES).
    max_machines: int | None = None
    #: Extra sizes for the curve per scheduler, evenly spaced between the lower bound and the given size.
    curve_points: int = 0
    cluster_params: dict[str, Any] = field(default_factory=dict)
    workload_params: dict[str, Any] = field(default_factory=dict)
    scheduler_params: dict[str, Any] = field(default_factory=dict)
    engine: str = "compiled"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PlanSpec:
        return cls(**d)

    def key(self) -> str:
        """What builds the base cluster and the workloads, as text (the cache's key)."""
        parts = ("cluster", "cluster_params", "workload", "workload_params", "load", "hours")
        return json.dumps({k: getattr(self, k) for k in parts}, sort_keys=True, default=repr)


@dataclass
class ProbeResult:
    """The statistic of each scheduler at one size under one seed, and whether it met the target."""

    machines: int
    seed: int
    counts: list[int]
    #: Scheduler -> the target statistic (None: no job to measure, or the run failed).
    values: dict[str, float | None]
    met: dict[str, bool]
    #: Scheduler -> the message of a run that could not be done (it counts as not meeting the target).
    errors: dict[str, str]
    #: Scheduler -> jobs, started, stable, wall_s of its run.
    runs: dict[str, dict[str, Any]]
    wall_s: float
    version: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ProbeResult:
        return cls(**d)


_clusters: dict[str, Cluster] = {}
_workloads: dict[tuple[str, int], Workload] = {}


def base_cluster(spec: PlanSpec) -> Cluster:
    """The given cluster (a preset with its parameters, or a file), built once per process."""
    key = spec.key()
    if key not in _clusters:
        _clusters.clear()
        _clusters[key] = api.resolve_cluster(spec.cluster, spec.cluster_params)
    return _clusters[key]


def plan_workload(spec: PlanSpec, seed: int) -> Workload:
    """The plan's workload under ``seed``, built on the given cluster; the same object for every size."""
    # A trace file does not depend on the seed (only the schedulers' randomness does): one copy serves all.
    key = (spec.key(), seed if spec.workload in WORKLOADS else 0)
    if key not in _workloads:
        while len(_workloads) >= WORKLOAD_CACHE_SIZE:
            _workloads.pop(next(iter(_workloads)))
        _workloads[key] = api.resolve_workload(
            spec.workload, base_cluster(spec), seed, spec.load, spec.hours, spec.workload_params
        )
    return _workloads[key]


def probe(spec: PlanSpec, machines: int, seed: int, schedulers: list[str] | None = None) -> ProbeResult:
    """Run ``schedulers`` (default: all of the plan's) on the cluster resized to ``machines``, under ``seed``.

    A run that fails (a scheduler that cannot handle the shape, a job that fits no machine
    left) is recorded in ``errors`` and does not meet the target; nothing is raised for it.
    """
    t0 = time.monotonic()
    target = parse_target(spec.target)
    cluster = resize(base_cluster(spec), machines, spec.resize)
    workload = plan_workload(spec, seed)
    values: dict[str, float | None] = {}
    met: dict[str, bool] = {}
    errors: dict[str, str] = {}
    runs: dict[str, dict[str, Any]] = {}
    for name in schedulers if schedulers is not None else spec.schedulers:
        try:
            out = api.run_objects(
                cluster,
                workload,
                name,
                seed,
                scheduler_params=spec.scheduler_params,
                drain=spec.drain,
                engine=spec.engine,
                samples=PROBE_SAMPLES,
            )
        except (SimcoreError, SchedulingError) as e:
            values[name], met[name], errors[name] = None, False, str(e)
            continue
        value = target.value(out.result)
        values[name] = value
        met[name] = target.met(value)
        s = out.summary
        runs[name] = {k: s.get(k) for k in ("jobs", "started", "stable", "wall_s")}
    return ProbeResult(
        machines=int(machines),
        seed=int(seed),
        counts=[int(c) for c in cluster.counts],
        values=values,
        met=met,
        errors=errors,
        runs=runs,
        wall_s=time.monotonic() - t0,
        version=code_version(),
    )
