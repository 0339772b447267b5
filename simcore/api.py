"""The high-level entry point: from a run specification to summary, series and per-job records.

The command line and the dashboard's workers both go through :func:`run` (or
:func:`run_objects` when the cluster and workload are already built, e.g.
from an uploaded trace), so a run gives the same numbers wherever it runs.

Seeds follow the one rule of :mod:`simcore.core.seeding`: one integer seed is
split into independent streams for the workload generator and the
scheduler, so every scheduler compared under one seed sees exactly the same
jobs, and :func:`simcore.core.engine.simulate` with the same seed reproduces it.
"""

from __future__ import annotations

import csv
import dataclasses
import json
import os
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simcore.capacity import allocation_lp
from simcore.core import metrics
from simcore.core.engine import DEFAULT_SAMPLES, ProgressCallback, SimResult, simulate
from simcore.core.errors import InputError, ParameterError
from simcore.core.jobmetrics import dag_summary, run_job_metrics
from simcore.core.model import ClassTable, Cluster, Workload
from simcore.core.seeding import scheduler_rng, workload_rng

# resolve_cluster is re-exported (the "as" form): the CLI and the dashboard call api.resolve_cluster.
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params
from simcore.presets import resolve_cluster as resolve_cluster
from simcore.schedulers import SCHEDULERS, create
from simcore.sources import looks_like_file
from simcore.version import code_version


@dataclass
class RunSpec:
    """What to run. ``cluster``/``workload`` are preset names or file paths."""

    cluster: str
    workload: str
    scheduler: str
    seed: int = 0
    #: Preset: fraction of lambda* (None: 0.9). Trace file: replay rate (None: as recorded).
    load: float | None = None
    hours: float | None = None
    drain: bool = False
    cluster_params: dict[str, Any] = field(default_factory=dict)
    workload_params: dict[str, Any] = field(default_factory=dict)
    scheduler_params: dict[str, Any] = field(default_factory=dict)
    #: ``compiled`` (a built-in's kernel where it has one) or ``python`` (the reference); same schedule.
    engine: str = "compiled"
    #: Samples of the queue-length and utilisation series (charts only; the summary's statistics are exact).
    samples: int = DEFAULT_SAMPLES

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


#: The most samples a series may have (each is a row of queue.csv and a point on a chart).
MAX_SAMPLES = 1_000_000

#: Integer per-job columns whose -1 means "none" (the job never started): written empty / null.
NULL_IF_NEGATIVE = frozenset({"machine", "config"})


@dataclass
class RunOutcome:
    """Everything a run produced."""

    summary: dict[str, Any]
    series: dict[str, Any]
    per_class: list[dict[str, Any]]
    offline: dict[str, Any] | None
    result: SimResult
    workload: Workload
    cluster: Cluster

    def jobs_columns(self) -> dict[str, np.ndarray]:
        """The per-job records as named columns (what CSV and Parquet downloads hold).

        A job that never started has NaN start, finish and times, and machine
        and config -1 (integer columns have no NaN); the CSV and Parquet files
        write all of them as empty / null (:data:`NULL_IF_NEGATIVE`).
        """
        r = self.result
        n = int(r.extra.get("arrived", r.n_jobs))
        start = r.start[:n]
        finish = r.finish[:n]
        submit = r.submit[:n]
        machine = r.machine[:n]
        config = np.where(machine >= 0, r.config_of_machine[np.maximum(machine, 0)], -1)
        return {
            "job": np.arange(n, dtype=np.int64),
            "submit_s": submit,
            "class": r.job_class[:n],
            "machine": machine,
            "config": config,
            "start_s": start,
            "finish_s": finish,
            "response_s": start - submit,
            "completion_s": finish - submit,
        }

    def kept_records(self, policy: str = "all") -> tuple[np.ndarray | None, dict[str, Any]]:
        """Which jobs' records ``policy`` keeps (simcore.records.keep_records: None for all) and what was kept."""
        from simcore import records

        n = int(self.result.extra.get("arrived", self.result.n_jobs))
        seed = int(self.summary.get("seed", 0))
        keep = records.keep_records(n, policy, seed)
        return keep, records.describe(n, policy, seed, keep)

    def iter_job_rows(self, keep: np.ndarray | None = None) -> Iterator[list[str]]:
        """Per-job CSV rows, streamed (a million-job run is never one string); only jobs ``keep`` if given."""
        cols = self.jobs_columns()
        if keep is not None:
            cols = {k: v[keep] for k, v in cols.items()}
        names = list(cols)
        yield names
        n = len(cols["job"])
        step = 65_536
        nullable = [c in NULL_IF_NEGATIVE for c in names]
        for lo in range(0, n, step):
            chunk = [cols[c][lo : lo + step] for c in names]
            for row in zip(*(c.tolist() for c in chunk), strict=True):
                yield ["" if null and v < 0 else _fmt(v) for v, null in zip(row, nullable, strict=True)]

    def write(self, out_dir: str | os.PathLike[str], job_records: str = "all") -> list[Path]:
        """Write per-job results and series as CSV and JSON into ``out_dir``.

        ``job_records`` (simcore.records): which jobs' rows jobs.csv holds; with "none" there is no jobs.csv.
        summary.json's ``records`` entry says what was kept; every other number is computed from all jobs.
        """
        d = Path(out_dir)
        d.mkdir(parents=True, exist_ok=True)
        written = []
        keep, kept = self.kept_records(job_records)
        p = d / "jobs.csv"
        if kept["kept"] == "none":
            p.unlink(missing_ok=True)  # a folder written before must not keep a stale jobs.csv
        else:
            with p.open("w", newline="") as f:
                w = csv.writer(f)
                for row in self.iter_job_rows(keep):
                    w.writerow(row)
            written.append(p)
        summary, offline, timings = split_timings(self.summary, self.offline)
        summary = {**summary, "records": kept}
        p = d / "summary.json"
        p.write_text(json.dumps(summary, indent=2))
        written.append(p)
        p = d / "series.json"
        p.write_text(json.dumps({"series": self.series, "per_class": self.per_class, "offline": offline}))
        written.append(p)
        p = d / TIMINGS_FILE
        p.write_text(json.dumps(timings, indent=2))
        written.append(p)
        s = self.series
        tables = {
            "cdf.csv": (["p", "response_s"], zip(s["cdf"]["p"], s["cdf"]["response_s"], strict=True)),
            "ccdf.csv": (
                ["response_s", "fraction_longer"],
                zip(s["ccdf"]["response_s"], s["ccdf"]["longer"], strict=True),
            ),
            "per_day.csv": (
                ["day", "mean_response_s", "jobs"],
                zip(s["per_day"]["day"], s["per_day"]["mean_response_s"], s["per_day"]["jobs"], strict=True),
            ),
            # Samples of the state, for charts (the summary's time averages are exact): the first column says so.
            "queue.csv": (
                ["sample_t_s", "queued", "running"],
                zip(s["queue"]["t_s"], s["queue"]["queued"], s["queue"]["running"], strict=True),
            ),
            "utilization.csv": (
                ["sample_t_s", *self.cluster.resources],
                zip(s["utilization"]["t_s"], *(s["utilization"][r] for r in self.cluster.resources), strict=True),
            ),
        }
        for name, (header, rows) in tables.items():
            p = d / name
            with p.open("w", newline="") as f:
                w = csv.writer(f)
                w.writerow(header)
                w.writerows(rows)
            written.append(p)
        return written


#: The one file of an output folder whose numbers come from the host's clock (see :func:`split_timings`).
TIMINGS_FILE = "timings.json"
#: Keys, at any depth of the summary or the offline plan, whose values are wall-clock or CPU seconds.
WALL_CLOCK_KEYS = frozenset({"wall_s", "jobs_per_s", "compile_s", "timings_s", "seconds"})


def split_timings(
    summary: dict[str, Any], offline: dict[str, Any] | None
) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any]]:
    """``summary`` and ``offline`` without their clock readings, and those readings, under the same keys.

    Two runs of one spec give the same numbers except for how long they took; written apart
    (to :data:`TIMINGS_FILE`), every other file of an output folder is byte-identical.
    """
    summ, summ_t = _split(summary)
    if offline is None:
        return summ, None, {"summary": summ_t}
    off, off_t = _split(offline)
    return summ, off, {"summary": summ_t, "offline": off_t}


def _split(d: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    kept: dict[str, Any] = {}
    clock: dict[str, Any] = {}
    for k, v in d.items():
        if k in WALL_CLOCK_KEYS:
            clock[k] = v
        elif isinstance(v, dict):
            kept[k], inner = _split(v)
            if inner:
                clock[k] = inner
        else:
            kept[k] = v
    return kept, clock


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return "" if v != v else repr(v)
    return str(v)


def resolve_workload(
    name: str,
    cluster: Cluster,
    seed: int,
    load: float | None = None,
    hours: float | None = None,
    params: dict[str, Any] | None = None,
) -> Workload:
    """A workload from a preset name (generated under ``seed``) or a trace file.

    ``load``: for a preset, the arrival rate as a fraction of lambda* (default
    0.9); for a trace file, the replay rate (:func:`replay_at`: 1.2 = the same
    trace with inter-arrival times divided by 1.2; default as recorded).
    """
    params = dict(params or {})
    load_given = load is not None
    load = 0.9 if load is None else load
    if not (load > 0 and np.isfinite(load)):
        raise ParameterError(f"load must be a positive number, got {load}")
    if hours is not None and not (hours > 0 and np.isfinite(hours)):
        raise ParameterError(f"hours must be a positive number, got {hours}")
    if name in WORKLOADS:
        preset = WORKLOADS.get(name)
        h = preset.default_hours if hours is None else hours
        rng = workload_rng(seed)
        wl = preset.build(
            cluster, rng, load=load, hours=h, **coerce_params(f"workload {name!r}", preset.params, params)
        )
        if wl.n_jobs == 0:
            # Short windows at low load can draw no arrival at all: say so here, before a
            # simulation of nothing ends in a metric that has no jobs to average.
            what = f"at load {load:g}; raise hours or load" if preset.uses_load else "; raise hours"
            raise ParameterError(f"the workload {name!r} generated no jobs in {h:g} h {what} (seed {seed})")
        return wl
    if looks_like_file(name):
        if params:
            raise ParameterError(f"trace file {name!r} takes no parameters (got {sorted(params)})")
        if name.lower().endswith((".json", ".json.gz")):
            wl = _wfcommons_file(name, cluster, hours)
            return replay_at(wl, load) if load_given else wl
        from simcore.traces.tracefile import read_trace

        wl = read_trace(name, resources=cluster.resources)
        if load_given:
            wl = replay_at(wl, load)
        # `simcore import --classes K` writes classes.json beside the trace: runs use that
        # table (LoTES then needs no k-means of its own), as the dashboard does.
        beside = Path(name).parent / "classes.json"
        if wl.classes is None and wl.n_jobs and int(wl.job_class.min()) >= 0 and beside.is_file():
            from simcore.workloads.classfile import with_classes

            wl = with_classes(wl, beside, cluster)
        if hours is not None:
            wl = cut_to_hours(wl, hours)
            if wl.n_jobs == 0:
                raise ParameterError(f"trace file {name!r} has no jobs in its first {hours:g} h; raise hours")
        return wl
    WORKLOADS.get(name)
    raise AssertionError  # pragma: no cover


def _wfcommons_file(name: str, cluster: Cluster, hours: float | None) -> Workload:
    """A WfCommons instance (``.json``/``.json.gz``) as one job at time 0, on ``cluster`` (which needs cores).

    To replay several instances as a stream, convert them with ``simcore import --format wfcommons``.
    """
    from simcore.traces.importer import import_trace

    wl = import_trace("wfcommons", [name], cluster=cluster).workload
    return cut_to_hours(wl, hours) if hours is not None else wl


def replay_at(wl: Workload, rate: float) -> Workload:
    """The trace replayed ``rate`` times as fast: submit times and the horizon divided by ``rate``.

    Durations and requests are unchanged, so the offered load scales by
    ``rate`` ("the same trace at 1.2x"). Recorded as ``replay_rate``.
    """
    if not (rate > 0 and np.isfinite(rate)):
        raise ParameterError(f"a trace's replay rate (load) must be a positive number, got {rate}")
    if rate == 1.0:
        return dataclasses.replace(wl, params={**wl.params, "replay_rate": 1.0})
    return dataclasses.replace(
        wl, submit=wl.submit / rate, horizon_s=wl.horizon_s / rate, params={**wl.params, "replay_rate": rate}
    )


def cut_to_hours(wl: Workload, hours: float) -> Workload:
    """The jobs of ``wl`` submitted in its first ``hours`` hours."""
    horizon = hours * 3600.0
    n = int(np.searchsorted(wl.submit, horizon, side="left"))
    return Workload(
        name=wl.name,
        resources=wl.resources,
        submit=wl.submit[:n],
        request=wl.request[:n],
        work=wl.work[:n],
        job_class=wl.job_class[:n],
        horizon_s=horizon,
        classes=wl.classes,
        runtime=wl.runtime,
        params={**wl.params, "hours": hours},
        graph=wl.graph.prefix(n) if wl.graph is not None else None,
    )


def class_table(workload: Workload, cluster: Cluster) -> ClassTable:
    """The workload's job classes, or one class summarising all jobs.

    Traces without classes get a single class with the mean request and the
    mean duration, so the allocation LP still gives a capacity bound (a loose
    one: fragmentation between different job sizes is invisible to it).
    """
    if workload.classes is not None:
        return workload.classes
    if workload.n_jobs == 0:
        raise InputError(f"workload {workload.name!r} has no jobs")
    mean_req = workload.request.mean(axis=0)
    mean_p = float(workload.work.mean())
    if mean_p <= 0:
        mean_p = 1e-9
    return ClassTable(("all",), mean_req[None, :], np.full((1, cluster.n_configs), 1.0 / mean_p), np.ones(1))


def lambda_star(workload: Workload, cluster: Cluster) -> float | None:
    try:
        return allocation_lp(cluster, class_table(workload, cluster)).lambda_star
    except ParameterError:
        return None


def run_objects(
    cluster: Cluster,
    workload: Workload,
    scheduler: str,
    seed: int = 0,
    *,
    scheduler_params: dict[str, Any] | None = None,
    drain: bool = False,
    progress: ProgressCallback | None = None,
    labels: dict[str, Any] | None = None,
    engine: str = "compiled",
    samples: int = DEFAULT_SAMPLES,
) -> RunOutcome:
    """Run a registered scheduler on a built cluster and workload (``samples``: of the charts' series)."""
    cls = SCHEDULERS.get(scheduler)
    opts = coerce_params(
        f"scheduler {scheduler!r}",
        cls.params,
        {k: v for k, v in (scheduler_params or {}).items() if k in {p.name for p in cls.params}},
    )
    sched = create(scheduler, **opts)
    # An empty arrival window (every job at time 0: one workflow, a batch) has nothing to stop at: run
    # until every job finished, as if drained; otherwise nothing after time 0 would be simulated.
    drain = drain or workload.horizon_s <= 0
    if not 2 <= samples <= MAX_SAMPLES:
        raise ParameterError(f"samples must be between 2 and {MAX_SAMPLES:,}, got {samples}")
    res = simulate(
        cluster, workload, sched, scheduler_rng(seed), drain=drain, progress=progress, engine=engine, samples=samples
    )
    summ: dict[str, Any] = {
        "scheduler": scheduler,
        "cluster": cluster.name,
        "workload": workload.name,
        "seed": int(seed),
        **(labels or {}),
    }
    waits = metrics.Waits(res)
    summ.update(metrics.summary(res, waits))
    if workload.graph is not None:
        summ.update(dag_summary(run_job_metrics(res, workload, cluster)))
    summ["lambda_star"] = lambda_star(workload, cluster)
    summ["arrival_rate"] = float(workload.params.get("arrival_rate", 0.0)) or (
        workload.n_jobs / workload.horizon_s if workload.horizon_s > 0 else None
    )
    if "replay_rate" in workload.params:
        summ["replay_rate"] = float(workload.params["replay_rate"])
    summ["machines"] = cluster.n_machines
    summ["version"] = code_version()
    names = list(workload.classes.names) if workload.classes is not None else None
    return RunOutcome(
        summary=summ,
        series=metrics.series(res, waits),
        per_class=metrics.per_class(res, names),
        offline=sched.offline_solution(),
        result=res,
        workload=workload,
        cluster=cluster,
    )


def prepare(spec: RunSpec) -> tuple[Cluster, Workload, dict[str, Any]]:
    """Build the cluster and workload named in ``spec``, and the labels its summary carries."""
    SCHEDULERS.get(spec.scheduler)  # fail on a bad name before generating anything
    cluster = resolve_cluster(spec.cluster, spec.cluster_params)
    workload = resolve_workload(spec.workload, cluster, spec.seed, spec.load, spec.hours, spec.workload_params)
    labels = {
        "cluster": spec.cluster if spec.cluster in CLUSTERS else cluster.name,
        "workload": spec.workload if spec.workload in WORKLOADS else workload.name,
        "load": spec.load if spec.load is not None else (0.9 if spec.workload in WORKLOADS else None),
        "hours": workload.horizon_s / 3600.0,
    }
    return cluster, workload, labels


#: RunSpec fields that choose how a scenario is run, not what it is: every other field builds the cluster or workload.
RUN_FIELDS = frozenset({"scheduler", "scheduler_params", "drain", "engine", "samples"})


def scenario_key(spec: RunSpec) -> str:
    """What :func:`prepare` builds from ``spec``, as text: specs with the same key build the same cluster and
    workload (derived by leaving out :data:`RUN_FIELDS`, so a field added to RunSpec counts until listed there)."""
    return json.dumps({k: v for k, v in spec.to_dict().items() if k not in RUN_FIELDS}, sort_keys=True, default=repr)


def run_prepared(
    spec: RunSpec,
    prepared: tuple[Cluster, Workload, dict[str, Any]],
    progress: ProgressCallback | None = None,
) -> RunOutcome:
    """Run ``spec`` on a cluster and workload :func:`prepare` built for it (or for a spec of the same scenario)."""
    cluster, workload, labels = prepared
    return run_objects(
        cluster,
        workload,
        spec.scheduler,
        spec.seed,
        scheduler_params=spec.scheduler_params,
        drain=spec.drain,
        progress=progress,
        labels=labels,
        engine=spec.engine,
        samples=spec.samples,
    )


def run(spec: RunSpec, progress: ProgressCallback | None = None) -> RunOutcome:
    """Build the cluster and workload named in ``spec`` and run its scheduler."""
    return run_prepared(spec, prepare(spec), progress)
