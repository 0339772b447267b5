"""``simcore import``: real traces (Google 2011, SWF, the project CSV) to a trace file and a cluster file.

The command writes ``DIR/trace.csv`` (or ``trace.csv.gz`` with ``--gzip``),
``DIR/cluster.json`` and, with ``--classes K``, ``DIR/classes.json``, and
prints a JSON summary (jobs, time span, request and duration ranges, rows
skipped and jobs dropped by reason). ``simcore run --cluster DIR/cluster.json
--workload DIR/trace.csv`` then runs on them.

The functions below work on *sources* (paths, the bytes of an upload, or
binary file objects) and take a ``progress`` callback, so the dashboard's
Celery task calls :func:`import_trace`, :func:`write_outputs` and
:func:`summary` exactly as the command line does.

Job classes (``--classes K``): k-means on the requests (and, with
``--class-duration``, the durations) of the jobs submitted in the first
``--class-window-hours`` (default 24, the LoTES paper's first day, section
5.3.2) via :func:`simcore.workloads.classify.kmeans_classes`; every later job gets the
class of its nearest centroid. Deterministic under ``--seed``.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster, Workload
from simcore.traces import ImportProgress, ImportReport, ImportResult, ProgressFn, Source, workload_summary
from simcore.traces.report import fits_any

Format = Literal["google2011", "swf", "csv", "wfcommons", "alibaba", "azure"]
FORMATS: tuple[str, ...] = ("google2011", "swf", "csv", "wfcommons", "alibaba", "azure")


def _resolve_cluster(spec: str | Cluster | None) -> Cluster | None:
    if spec is None or isinstance(spec, Cluster):
        return spec
    from simcore.presets import resolve_cluster

    return resolve_cluster(spec)


def _cut_window(wl: Workload, start_s: float, end_s: float | None, report: ImportReport) -> Workload:
    """Jobs submitted in ``[start_s, end_s)``, shifted to start at 0 (project CSV traces)."""
    lo = int(np.searchsorted(wl.submit, start_s, side="left"))
    hi = int(np.searchsorted(wl.submit, end_s, side="left")) if end_s is not None else wl.n_jobs
    report.drop("submitted before the window's start", lo)
    report.drop("submitted at or after the window's end", wl.n_jobs - hi)
    horizon = (end_s - start_s) if end_s is not None else max(wl.horizon_s - start_s, 0.0)
    keep = np.zeros(wl.n_jobs, dtype=bool)
    keep[lo:hi] = True
    wl = _select(wl, keep, report)
    return dataclasses.replace(wl, submit=wl.submit - start_s, horizon_s=float(horizon))


def _select(wl: Workload, keep: np.ndarray, report: ImportReport) -> Workload:
    """The units in ``keep``; with a task graph, a task whose parent is not kept goes too (counted)."""
    graph = wl.graph
    if graph is not None:
        from simcore.workloads.taskorder import subset

        graph, closed = subset(graph, keep)
        report.drop("a parent task was dropped", int(np.count_nonzero(keep & ~closed)))
        keep = closed
    return dataclasses.replace(
        wl,
        submit=wl.submit[keep],
        request=wl.request[keep],
        work=wl.work[keep],
        job_class=wl.job_class[keep],
        graph=graph,
    )


def csv_default_cluster(resources: Sequence[str]) -> Cluster | None:
    """The cluster a CSV is checked against when none is named: the same for the CLI and the dashboard.

    ``google-2011`` when the trace requests its resources (``cpu``, ``mem``,
    normalised to its largest machine); otherwise none (jobs are kept as they
    are and checked against the cluster a run uses).
    """
    from simcore.presets import CLUSTERS

    cluster = CLUSTERS.get(CSV_DEFAULT_CLUSTER).build()
    return cluster if tuple(cluster.resources) == tuple(resources) else None


#: The preset :func:`csv_default_cluster` takes.
CSV_DEFAULT_CLUSTER = "google-2011"
#: The preset a format's reader checks requests against when no cluster is named and its files name no
#: machines (Google 2011 without machine_events, WfCommons); the other formats derive their machines.
READ_AGAINST = {"google2011": "google-2011", "csv": CSV_DEFAULT_CLUSTER, "wfcommons": "dse-2020"}


def read_against(fmt: str, resources: Sequence[str]) -> str | None:
    """The preset an import of ``fmt`` requesting ``resources`` was read against when it derived no machines.

    None when there is none (a CSV whose resources are not the default's, or a
    format that always derives its machines). The platform offers it as the
    trace's own machines: a Google import without machine_events *is* a
    trace of the ``google-2011`` machines.
    """
    from simcore.presets import CLUSTERS

    name = READ_AGAINST.get(fmt)
    if name is None:
        return None
    if fmt == "csv" and tuple(CLUSTERS.get(name).build().resources) != tuple(resources):
        return None
    return name


def _read_csv(
    inputs: Sequence[Source],
    cluster: Cluster | None,
    start_s: float,
    end_s: float | None,
    name: str | None,
    progress: ProgressFn | None,
    on_error: Literal["raise", "skip"] = "raise",
    column_map: str | None = None,
    where: str | None = None,
) -> ImportResult:
    from simcore.traces.tracefile import read_trace

    if len(inputs) != 1:
        raise ParameterError(f"--format csv reads one trace file, got {len(inputs)}")
    t0 = time.perf_counter()
    c0 = time.process_time()
    src = inputs[0]
    label = os.fspath(src) if isinstance(src, (str, os.PathLike)) else str(getattr(src, "name", None) or "upload")
    if isinstance(src, (bytes, bytearray, memoryview)):
        import io

        src = io.BytesIO(bytes(src))
    report = ImportReport("csv")
    report.files["trace"] = [label]
    if column_map is not None or where is not None or on_error == "skip":
        wl = _read_mapped(src, label, cluster, column_map, where, on_error, name, report)
    else:
        wl = read_trace(src, resources=cluster.resources if cluster is not None else None, name=name)
        report.rows_read["trace"] = wl.n_jobs
        report.notes.append(
            "read with simcore.traces.tracefile: checked strictly (on_error=skip reads through simcore.traces.colmap)"
        )
    if cluster is None:
        cluster = csv_default_cluster(wl.resources)
        report.notes.append(
            f"no cluster named: checked against the default {CSV_DEFAULT_CLUSTER!r} (the trace requests its resources)"
            if cluster is not None
            else f"no cluster named, and the trace's resources {list(wl.resources)} are not those of the default "
            f"{CSV_DEFAULT_CLUSTER!r}: jobs kept as they are (a run checks them against its cluster)"
        )
    else:
        report.notes.append(f"checked against cluster {cluster.name!r}")
    if wl.params.get("sorted_on_read"):
        report.notes.append("rows were not in submit order: sorted (stable)")
    if start_s > 0 or end_s is not None:
        wl = _cut_window(wl, start_s, end_s, report)
    if cluster is not None:
        fits = fits_any(wl.request, cluster)
        report.drop("request larger than every machine of the cluster", int(np.count_nonzero(~fits)))
        if not fits.all():
            wl = _select(wl, fits, report)
    if wl.n_jobs == 0:
        raise InputError("no job is left (see the dropped counts: every job was dropped)", file=label)
    if progress is not None:
        progress(ImportProgress("trace", label, 0, 1, 1, 1, wl.n_jobs))
    report.wall_s = time.perf_counter() - t0
    report.cpu_s = time.process_time() - c0
    return ImportResult(wl, cluster, report)


def _read_mapped(
    src: Source,
    label: str,
    cluster: Cluster | None,
    column_map: str | None,
    where: str | None,
    on_error: Literal["raise", "skip"],
    name: str | None,
    report: ImportReport,
) -> Workload:
    """A CSV read through :mod:`simcore.traces.colmap` (a map, a filter, bad rows skipped), in cluster order."""
    from simcore.traces import colmap

    mapping = colmap.parse_map(column_map) if column_map is not None else None
    flt = colmap.parse_where(where) if where is not None else None
    got = colmap.read_mapped(src, mapping, flt, on_error=on_error, name=name, label=label)
    wl = got.workload
    report.rows_read["trace"] = got.rows_read
    report.absorb(got.errors)
    report.drop(f"filtered out by where {flt.text() if flt else ''}".strip(), got.filtered)
    report.notes.append(
        f"columns mapped with {wl.params['column_map']}"
        if mapping
        else "read with simcore.traces.colmap (project header)"
    )
    if mapping is not None:
        report.notes.extend(_map_notes(mapping, got))
        count = mapping.expr(colmap.COUNT)
        if count is not None:
            report.drop(f"count={count.text()} is 0: the row makes no job", got.zero_count)
    if on_error == "skip" and not got.errors.skipped:
        report.notes.append("on_error=skip: no row needed skipping")
    if cluster is not None and tuple(cluster.resources) != wl.resources:
        if sorted(cluster.resources) != sorted(wl.resources):
            raise ParameterError(
                f"the map gives resources {list(wl.resources)}; cluster {cluster.name!r} has "
                f"{list(cluster.resources)} (map one column to each)"
            )
        idx = [wl.resources.index(r) for r in cluster.resources]
        wl = dataclasses.replace(wl, resources=tuple(cluster.resources), request=wl.request[:, idx])
    return wl


def _map_notes(mapping: Any, got: Any) -> list[str]:
    """What a map's copies and added constants did, said in the report (issue 26)."""
    from simcore.traces import colmap

    out: list[str] = []
    count = mapping.expr(colmap.COUNT)
    if count is not None:
        out.append(
            f"count={count.text()}: each row became that many identical jobs ({got.count_rows:,} rows -> "
            f"{got.workload.n_jobs:,} jobs)"
        )
    for target, e in mapping.items:
        if isinstance(e.minus, float) and e.minus < 0:
            out.append(
                f"{target}={e.text()}: {-e.minus:g} added to {e.column} (before any scale), so rows before the "
                f"trace's zero are kept: the zero moves that much earlier (an added constant, not a negative "
                "window start, keeps every arrival >= 0)"
            )
    return out


def _read_wfcommons(
    inputs: Sequence[Source],
    cluster: Cluster | None,
    jobs: int,
    arrival: str,
    interarrival_s: float,
    seed: int,
    name: str | None,
    progress: ProgressFn | None,
) -> ImportResult:
    """WfCommons instances replayed as jobs; requests over the largest machine's cores are clipped to it."""
    from simcore.core.seeding import workload_rng
    from simcore.presets import CLUSTERS
    from simcore.traces.wfcommons import RESOURCE, read_wfcommons

    if cluster is None:
        cluster = CLUSTERS.get("dse-2020").build()
    if RESOURCE not in cluster.resources:
        raise ParameterError(
            f"WfCommons tasks request {RESOURCE!r}; cluster {cluster.name!r} has {list(cluster.resources)} "
            "(use a cluster with a cores resource, e.g. dse-2020)"
        )
    largest = float(cluster.capacity[cluster.counts > 0, cluster.resources.index(RESOURCE)].max())
    result = read_wfcommons(
        inputs,
        jobs=jobs,
        arrival=arrival,  # type: ignore[arg-type]
        interarrival_s=interarrival_s,
        rng=workload_rng(seed),
        max_cores=largest,
        name=name,
        progress=progress,
    )
    wl = result.workload
    if tuple(cluster.resources) != wl.resources:
        # Other resources of the cluster (memory...) are not requested: 0.
        req = np.zeros((wl.n_jobs, len(cluster.resources)))
        req[:, cluster.resources.index(RESOURCE)] = wl.request[:, 0]
        wl = dataclasses.replace(wl, resources=tuple(cluster.resources), request=req)
    result.report.notes.append(f"requests checked against cluster {cluster.name!r} (at most {largest:g} cores)")
    return ImportResult(wl, cluster, result.report)


def import_trace(
    fmt: Format,
    inputs: Sequence[Source],
    *,
    job_events: Sequence[Source] = (),
    machine_events: Source | None = None,
    cluster: str | Cluster | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    unfinished: Literal["cut", "drop"] = "cut",
    running_at_start: Literal["keep", "drop"] = "keep",
    machines_per_type: int = 100,
    on_error: Literal["raise", "skip"] = "raise",
    procs: Literal["allocated", "requested"] = "allocated",
    memory: Literal["requested", "used"] = "requested",
    machine_procs: float | None = None,
    machine_mem_kb: float | None = None,
    name: str | None = None,
    progress: ProgressFn | None = None,
    jobs: int = 0,
    arrival: str = "together",
    interarrival_s: float = 0.0,
    seed: int = 0,
    column_map: str | None = None,
    where: str | None = None,
) -> ImportResult:
    """Read a trace in format ``fmt`` (times in seconds) into a workload and its cluster.

    ``cluster``: a preset name, a JSON cluster file or a Cluster; default:
    the ``google-2011`` preset (or the machines of ``machine_events``) for
    Google and CSV traces, the parallel computer as one machine for SWF, the
    ``dse-2020`` preset for WfCommons instances, the assumed ``alibaba-2018``
    cluster for Alibaba and the inferred machine types of an Azure trace.
    ``start_s`` None: the window starts at the trace's first event (Google,
    SWF, Alibaba; Azure: the trace's start, 0), and CSV traces at 0.
    ``running_at_start``: jobs running at the window's start are kept as
    its initial batch with their remaining durations, or dropped (Google,
    Alibaba, Azure). WfCommons only: ``jobs``,
    ``arrival``, ``interarrival_s`` and ``seed`` (Poisson gaps) replay the
    instances as a stream (:func:`simcore.traces.wfcommons.wfcommons_workload`).
    CSV only: ``column_map`` and ``where`` (:mod:`simcore.traces.colmap`'s grammar)
    read a CSV with other column names; ``on_error="skip"`` skips and counts
    bad rows. A CSV without ``cluster`` is checked against
    :func:`csv_default_cluster`.
    """
    _check_format(fmt, inputs, column_map, where)
    # Every keyword of this function (nothing else is bound yet), shared by the per-format readers below.
    o = _Options(**{k: v for k, v in locals().items() if k not in ("fmt", "inputs", "cluster")})
    cl = _resolve_cluster(cluster)
    if fmt != "google2011" and (job_events or machine_events is not None):
        raise ParameterError("--job-events and --machine-events apply to --format google2011 only")
    return _READERS[fmt](inputs, cl, o)


def _check_format(fmt: str, inputs: Sequence[Source], column_map: str | None, where: str | None) -> None:
    if fmt != "csv" and (column_map is not None or where is not None):
        raise ParameterError("--map and --where apply to --format csv only")
    if fmt not in FORMATS:
        raise ParameterError(f"unknown trace format {fmt!r}; valid formats: {', '.join(FORMATS)}")
    if not inputs:
        raise ParameterError("no input files given")


@dataclass(frozen=True)
class _Options:
    """The keywords of :func:`import_trace` other than the format, the inputs and the cluster."""

    job_events: Sequence[Source]
    machine_events: Source | None
    start_s: float | None
    end_s: float | None
    unfinished: Literal["cut", "drop"]
    running_at_start: Literal["keep", "drop"]
    machines_per_type: int
    on_error: Literal["raise", "skip"]
    procs: Literal["allocated", "requested"]
    memory: Literal["requested", "used"]
    machine_procs: float | None
    machine_mem_kb: float | None
    name: str | None
    progress: ProgressFn | None
    jobs: int
    arrival: str
    interarrival_s: float
    seed: int
    column_map: str | None
    where: str | None


def _google2011(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    from simcore.traces.google2011 import read_google2011

    return read_google2011(
        inputs,
        job_events=o.job_events,
        machine_events=o.machine_events,
        cluster=cl,
        start_s=o.start_s,
        end_s=o.end_s,
        unfinished=o.unfinished,
        running_at_start=o.running_at_start,
        on_error=o.on_error,
        progress=o.progress,
        name=o.name or "google-2011-trace",
    )


def _alibaba(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    from simcore.traces.alibaba import read_alibaba

    return read_alibaba(
        inputs,
        cluster=cl,
        start_s=o.start_s,
        end_s=o.end_s,
        running_at_start=o.running_at_start,
        unfinished=o.unfinished,
        on_error=o.on_error,
        progress=o.progress,
        name=o.name,
    )


def _azure(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    from simcore.traces.azure import read_azure

    if len(inputs) != 1:
        raise ParameterError(f"--format azure reads one SQLite database, got {len(inputs)} inputs")
    return read_azure(
        inputs[0],
        cluster=cl,
        machines_per_type=o.machines_per_type,
        start_s=o.start_s,
        end_s=o.end_s,
        running_at_start=o.running_at_start,
        unfinished=o.unfinished,
        on_error=o.on_error,
        progress=o.progress,
        name=o.name,
    )


def _wfcommons(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    return _read_wfcommons(inputs, cl, o.jobs, o.arrival, o.interarrival_s, o.seed, o.name, o.progress)


def _swf(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    from simcore.traces.swf import read_swf

    return read_swf(
        inputs,
        cluster=cl,
        procs=o.procs,
        memory=o.memory,
        machine_procs=o.machine_procs,
        machine_mem_kb=o.machine_mem_kb,
        start_s=o.start_s,
        end_s=o.end_s,
        on_error=o.on_error,
        progress=o.progress,
        name=o.name,
    )


def _csv(inputs: Sequence[Source], cl: Cluster | None, o: _Options) -> ImportResult:
    start_s = 0.0 if o.start_s is None else o.start_s
    return _read_csv(inputs, cl, start_s, o.end_s, o.name, o.progress, o.on_error, o.column_map, o.where)


#: The reader of each format (:data:`FORMATS`).
_READERS: dict[str, Callable[[Sequence[Source], Cluster | None, _Options], ImportResult]] = {
    "google2011": _google2011,
    "alibaba": _alibaba,
    "azure": _azure,
    "wfcommons": _wfcommons,
    "swf": _swf,
    "csv": _csv,
}


def stream_google2011(
    inputs: Sequence[Source],
    out_dir: str | os.PathLike[str],
    *,
    gzip: bool = False,
    job_events: Sequence[Source] = (),
    machine_events: Source | None = None,
    cluster: str | Cluster | None = None,
    start_s: float | None = None,
    end_s: float | None = None,
    unfinished: Literal["cut", "drop"] = "cut",
    running_at_start: Literal["keep", "drop"] = "keep",
    on_error: Literal["raise", "skip"] = "raise",
    name: str | None = None,
    progress: ProgressFn | None = None,
) -> dict[str, Any]:
    """Import Google 2011 task events straight to ``out_dir`` in bounded memory; returns the JSON summary.

    Writes the files :func:`write_outputs` writes for :func:`import_trace`'s
    result (identical trace file) without holding the jobs in memory
    (:mod:`simcore.traces.google_stream`); the summary has the same keys as
    :func:`summary`.
    """
    from simcore.clusterfile import write_cluster
    from simcore.traces.google_stream import import_google2011_to

    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output directory: {e.strerror or e}", file=str(d)) from None
    trace = d / ("trace.csv.gz" if gzip else "trace.csv")
    res = import_google2011_to(
        trace,
        inputs,
        job_events=job_events,
        machine_events=machine_events,
        cluster=_resolve_cluster(cluster),
        start_s=start_s,
        end_s=end_s,
        unfinished=unfinished,
        running_at_start=running_at_start,
        on_error=on_error,
        progress=progress,
        name=name or "google-2011-trace",
    )
    cp = d / "cluster.json"
    write_cluster(res.cluster, cp)
    wl = dict(res.workload)
    out: dict[str, Any] = {
        "format": res.report.format,
        "jobs": wl.pop("jobs"),
        "time_span_s": [wl.pop("first_submit_s"), wl.pop("last_submit_s")],
        **{k: v for k, v in wl.items() if k not in ("task_jobs", "params")},
        "cluster": {
            "name": res.cluster.name,
            "machines": res.cluster.n_machines,
            "configurations": res.cluster.n_configs,
        },
    }
    out.update(res.report.to_dict())
    total = (res.cluster.capacity * res.cluster.counts[:, None]).sum(axis=0)
    est = {
        r: res.request_work[r] / (float(total[i]) * res.horizon_s)
        for i, r in enumerate(res.cluster.resources)
        if res.horizon_s > 0 and total[i] > 0
    }
    _add_estimate(out, est, res.cluster, res.report)
    out["written"] = {"trace": str(trace), "cluster": str(cp)}
    return out


def classify(
    result: ImportResult, k: int, *, window_hours: float = 24.0, seed: int = 0, use_duration: bool = False
) -> ImportResult:
    """Give every job a k-means class (LoTES section 5.3.2) learnt on the first ``window_hours``."""
    from simcore.workloads.classify import kmeans_classes

    if seed < 0:
        raise ParameterError(f"seed must be a non-negative integer, got {seed}")
    if not (np.isfinite(window_hours) and window_hours > 0):
        raise ParameterError(f"the class window must be a positive number of hours, got {window_hours}")
    wl = result.workload
    n_configs = result.cluster.n_configs if result.cluster is not None else 1
    labels, table = kmeans_classes(
        wl, k, window_hours * 3600.0, np.random.default_rng(seed), use_duration, n_configs=n_configs
    )
    wl2 = dataclasses.replace(
        wl,
        job_class=labels,
        classes=table,
        params={
            **wl.params,
            "classes": {"k": k, "window_hours": window_hours, "seed": seed, "use_duration": use_duration},
        },
    )
    in_window = int(np.searchsorted(wl.submit, window_hours * 3600.0))
    classification: dict[str, Any] = {
        "k": k,
        "found": table.n_classes,
        "window_hours": window_hours,
        "seed": seed,
        "use_duration": use_duration,
        "training_jobs": max(in_window, k),
    }
    # Said in the summary, not left for the reader to notice (issue 17).
    warnings = []
    if in_window < k:
        warnings.append(f"the {window_hours:g} h window holds only {in_window} job(s); the first {k} jobs trained")
    if table.n_classes < k:
        warnings.append(
            f"{k} classes asked for, {table.n_classes} found: the training jobs have fewer distinct requests"
        )
    if warnings:
        classification["warning"] = "; ".join(warnings)
    result.report.extra["classification"] = classification
    return ImportResult(wl2, result.cluster, result.report, priority=result.priority)


def class_table_dict(wl: Workload) -> dict[str, Any]:
    """The class table as written to ``classes.json``: per class mean duration (s), mean requests, proportion."""
    if wl.classes is None:
        raise ParameterError("the workload has no job classes")
    c = wl.classes
    jobs = np.bincount(wl.job_class[wl.job_class >= 0], minlength=c.n_classes)
    return {
        "resources": list(wl.resources),
        "params": wl.params.get("classes", {}),
        "classes": [
            {
                "id": k,
                "name": c.names[k],
                "mean_duration_s": float(1.0 / c.rates[k, 0]),
                "mean_request": dict(zip(wl.resources, c.requests[k].tolist(), strict=True)),
                "proportion": float(c.proportions[k]),
                "jobs_in_trace": int(jobs[k]),
            }
            for k in range(c.n_classes)
        ],
        "table": c.to_dict(),
    }


def write_outputs(result: ImportResult, out_dir: str | os.PathLike[str], *, gzip: bool = False) -> dict[str, str]:
    """Write the trace, the cluster and (if classified) the class table into ``out_dir``; returns their paths."""
    from simcore.clusterfile import write_cluster
    from simcore.traces.tracefile import write_trace

    d = Path(out_dir)
    try:
        d.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create the output directory: {e.strerror or e}", file=str(d)) from None
    paths: dict[str, str] = {}
    trace = d / ("trace.csv.gz" if gzip else "trace.csv")
    write_trace(result.workload, trace)
    paths["trace"] = str(trace)
    if result.cluster is not None:
        cp = d / "cluster.json"
        write_cluster(result.cluster, cp)
        paths["cluster"] = str(cp)
    if result.workload.classes is not None:
        kp = d / "classes.json"
        kp.write_text(json.dumps(class_table_dict(result.workload), indent=2))
        paths["classes"] = str(kp)
    return paths


def summary(result: ImportResult, files: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON summary: the workload's numbers, then every count of the import report."""
    wl = workload_summary(result.workload)
    out: dict[str, Any] = {
        "format": result.report.format,
        "jobs": wl.pop("jobs"),
        "time_span_s": [wl.pop("first_submit_s"), wl.pop("last_submit_s")],
        **wl,
        "cluster": None
        if result.cluster is None
        else {
            "name": result.cluster.name,
            "machines": result.cluster.n_machines,
            "configurations": result.cluster.n_configs,
        },
    }
    out.update(result.report.to_dict())
    if result.cluster is not None:
        from simcore.traces.report import utilisation_estimate

        _add_estimate(out, utilisation_estimate(result.workload, result.cluster), result.cluster, result.report)
    if files:
        out["written"] = files
    return out


def _add_estimate(out: dict[str, Any], est: dict[str, float], cluster: Cluster, report: ImportReport) -> None:
    """The utilisation estimate into the summary, with its warnings and, when it is one, its lower-bound label."""
    from simcore.traces.report import load_warnings

    out["utilisation_estimate"] = {r: round(u, 6) for r, u in est.items()}
    if report.estimate_bound:
        # Said next to the numbers, not only in a warning: a reader quoting the estimate sees it (issue 26).
        out["utilisation_estimate_is"] = f"a lower bound: {report.estimate_bound}"
    warnings = load_warnings(est, cluster, report.estimate_bound)
    if warnings:
        out["warnings"] = [*out.get("warnings", []), *warnings]


# -- command line ----------------------------------------------------------------------------------


__all__ = [
    "CSV_DEFAULT_CLUSTER",
    "FORMATS",
    "csv_default_cluster",
    "stream_google2011",
    "class_table_dict",
    "classify",
    "import_trace",
    "summary",
    "write_outputs",
]
