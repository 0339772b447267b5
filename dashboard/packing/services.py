"""Packing analyses: checking a request, storing it, building its snapshot and running it on a worker.

The one place that translates between :class:`~dashboard.packing.models.PackingAnalysis`
rows and :mod:`simcore.packing`. Views, the API and the Celery task call it.

Snapshot sources (``PackingAnalysis.source``):

* ``run``: a finished run at time t. Its stored per-job records give start,
  finish and machine; the requests come from rebuilding its workload, which
  is deterministic under the run's scenario and seed
  (:func:`simcore.scenario.build_workload`). When the rebuilt workload does
  not match the records (a code version that generates differently), the run
  is simulated again under its scenario and seed and the snapshot says so.
* ``trace``: an imported trace at time t, on the machines its import derived
  or a chosen cluster: tasks with ``submit <= t < submit + duration``, all
  pending (:func:`simcore.packing.sources.from_trace`: a converted trace keeps
  no start times, so a task is taken to start when it was submitted).
* ``scenario``: a new simulation (one scheduler, one seed) at time t.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import logging
import tempfile
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q, QuerySet
from django.utils import timezone

from dashboard.common import beats, outages, waiting
from dashboard.common.heartbeat import Heartbeat, clean_json
from dashboard.common.models import Status, Team, Visibility
from dashboard.common.rows import sharing_fields
from dashboard.experiments.jobs import records_text, run_job_chunks
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.services import check_scenario, check_web_scheduler_params, scenario_for
from dashboard.packing import reading, work
from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import materialised_files, read_cluster_bytes, scenario_file_names
from simcore.core.errors import Cancelled, ParameterError, SimcoreError
from simcore.core.model import Cluster, Workload
from simcore.packing.analysis import AS_IS, AnalysisSpec, analyse
from simcore.packing.snapshot import Snapshot
from simcore.packing.sources import from_record_chunks, from_result, from_trace
from simcore.scenario import build_cluster, build_workload, labels_of, run_scenario
from simcore.traces.importer import read_against
from simcore.traces.tracefile import MAX_PRIORITY
from simcore.version import code_version

log = logging.getLogger(__name__)

#: Least wall time between two progress writes of one analysis (s).
PROGRESS_EVERY_S = 0.5
#: What the cluster choice of a trace snapshot calls the machines its import derived.
DERIVED = "derived"


@dataclass(frozen=True)
class SourceChoice:
    """Where a snapshot comes from, as a form or the API gave it (uploads already checked to be the owner's)."""

    kind: str
    run: Run | None = None
    trace: TraceUpload | None = None
    #: For a trace: ``derived``, a preset name, or None with ``cluster_upload``.
    cluster_preset: str | None = None
    cluster_upload: ClusterUpload | None = None
    #: For a scenario: the checked simcore scenario (one scheduler, one seed).
    scenario: dict[str, Any] | None = None
    #: For a trace: keep only its tasks of at least this priority (9: production work); None keeps every task.
    min_priority: int | None = None


# ---------------------------------------------------------------------------- checking a request


def seconds(x: float) -> str:
    """Seconds as people write them: ``86,400`` (never ``8.64e+04``), a fraction only below 100."""
    return f"{x:,.0f}" if abs(x) >= 100 or float(x).is_integer() else f"{x:.3g}"


def _empty(t: float, what: str, span: tuple[float, float]) -> ParameterError:
    return ParameterError(
        f"the snapshot at t = {seconds(t)} s is empty: no {what} is running or queued then "
        f"(they run between {seconds(span[0])} and {seconds(span[1])} s); choose another time"
    )


def _check_run(run: Run, t: float) -> tuple[dict[str, Any], str]:
    if run.status != Status.FINISHED:
        raise ParameterError(f"run {run.pk} is {run.status}; only a finished run can be analysed")
    if (run.records or {}).get("kept", "all") != "all":
        raise ParameterError(
            f"run {run.pk} kept per-job records {records_text(run)}; a packing snapshot needs every job's: "
            "fork its experiment with per-job records all"
        )
    n, end, first_submit, live = 0, -np.inf, np.inf, False
    for cols in run_job_chunks(run):  # one stored chunk in memory at a time
        submit, start, finish = cols["submit_s"], cols["start_s"], cols["finish_s"]
        if len(submit) == 0:
            continue
        n += len(submit)
        end = max(end, float(np.nanmax(np.concatenate((submit, finish[np.isfinite(finish)])))))
        first_submit = min(first_submit, float(submit.min()))
        live = live or bool((((start <= t) & ~(finish <= t)) | ((submit <= t) & ~(start <= t))).any())
    if n == 0:
        raise ParameterError(f"run {run.pk} has no jobs")
    if t > end:
        raise ParameterError(f"snapshot time must be in [0, {seconds(end)}] s (the run's span), got {seconds(t)}")
    if not live:
        raise _empty(t, "job of the run", (first_submit, end))
    exp = run.experiment
    spec = {"experiment": exp.pk, "run": run.pk, "scheduler": run.scheduler, "seed": run.seed}
    if run.point:
        spec["point"] = dict(run.point)
    return spec, f"run {run} of #{exp.pk} {exp.title}"[:200]


def _trace_cluster(choice: SourceChoice) -> tuple[dict[str, Any], str]:
    trace = choice.trace
    assert trace is not None
    if choice.cluster_upload is not None:
        return {"upload": choice.cluster_upload.pk}, f"cluster upload {choice.cluster_upload.name!r}"
    if choice.cluster_preset in (None, "", DERIVED):
        if trace.cluster_upload_id is not None:
            return {"derived": True}, "its own machines"
        # An import that derived no machines (Google 2011 without machine_events) read its requests
        # against a preset: those are the trace's machines, in the units its requests are in.
        name = trace.options.get("cluster") or read_against(trace.format, trace.info.get("resources") or ())
        if name is None:
            raise ParameterError(
                f"trace {trace.name!r} has no machines of its own (its import derived none); choose a cluster"
            )
        return {"preset": name, "from_import": True}, f"cluster {name!r} (the machines its import read it against)"
    from simcore.presets import CLUSTERS

    name = CLUSTERS.get(str(choice.cluster_preset)).name  # unknown: the error lists the presets
    return {"preset": name}, f"cluster {name!r}"


def _trace_cluster_object(trace: TraceUpload, spec: Mapping[str, Any]) -> Cluster:
    from simcore.api import resolve_cluster

    if spec.get("derived") or "upload" in spec:
        pk = trace.cluster_upload_id if spec.get("derived") else spec["upload"]
        up = ClusterUpload.objects.filter(pk=pk).first() if pk is not None else None
        if up is None:
            raise ParameterError("the cluster upload this analysis reads was deleted")
        cluster: Cluster = read_cluster_bytes(up.content(), up.filename)
        return cluster
    return resolve_cluster(spec["preset"])


def _trace_workload(trace: TraceUpload, cluster: Cluster) -> tuple[Workload, np.ndarray | None]:
    """The stored trace and its tasks' priorities (None: it records none)."""
    from simcore.traces.tracefile import read_trace_with_priority

    content = TraceUpload.objects.filter(pk=trace.pk).values_list("content_gz", flat=True).first()
    if not content:
        raise ParameterError(f"trace {trace.name!r} has no imported content")
    # Stored gzip-compressed (TraceUpload.content_gz); the reader takes the text.
    return read_trace_with_priority(
        io.BytesIO(gzip.decompress(bytes(content))), resources=cluster.resources, name=trace.name
    )


def check_min_priority(value: Any) -> int | None:
    """A minimum task priority (None: every task); ParameterError naming the field otherwise."""
    if value is None or value == "":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_PRIORITY:
        raise ParameterError(
            f"min_priority must be an integer from 0 to {MAX_PRIORITY} (9: production work, priorities 9-11), "
            f"got {value!r}"
        )
    return value


def _check_trace(choice: SourceChoice, t: float) -> tuple[dict[str, Any], str]:
    trace = choice.trace
    assert trace is not None
    if not trace.is_ready:
        raise ParameterError(f"trace {trace.name!r} is {trace.status}; only an imported (ready) trace can be analysed")
    cspec, cname = _trace_cluster(choice)
    cluster = _trace_cluster_object(trace, cspec)
    wanted = list(trace.info.get("resources") or [])
    if wanted and wanted != list(cluster.resources):
        raise ParameterError(
            f"trace {trace.name!r} requests resources {wanted} but {cname} has {list(cluster.resources)}"
        )
    # Reading the trace here (the user's own data) turns an empty snapshot into a form error, not a failed run.
    wl, priority = _trace_workload(trace, cluster)
    if t > wl.horizon_s:
        raise ParameterError(
            f"snapshot time must be in [0, {seconds(wl.horizon_s)}] s (the trace's window), got {seconds(t)}"
        )
    live = (wl.submit <= t) & (wl.submit + wl.work > t)
    if not live.any():
        raise _empty(t, "task of the trace", (float(wl.submit.min()), float((wl.submit + wl.work).max())))
    mp = choice.min_priority
    spec: dict[str, Any] = {"trace": trace.pk, "cluster": cspec}
    if mp is not None:
        if priority is None:
            raise ParameterError(
                f"min_priority: trace {trace.name!r} records no task priorities (Google 2011 imports keep them "
                "from this version on: import it again to filter by priority)"
            )
        kept = int(np.count_nonzero(live & (priority >= mp)))
        if kept == 0:
            raise ParameterError(
                f"min_priority: none of the {int(np.count_nonzero(live)):,} tasks running at t = {seconds(t)} s "
                f"has priority {mp} or more; lower it or choose another time"
            )
        spec["min_priority"] = mp
    where = f" (priority >= {mp})" if mp is not None else ""
    return spec, f"trace {trace.name!r}{where} on {cname}"[:200]


def _check_scenario(choice: SourceChoice, t: float) -> tuple[dict[str, Any], str]:
    sc = check_scenario(choice.scenario)
    if len(sc["schedulers"]) != 1 or len(sc["seeds"]) != 1:
        raise ParameterError("a packing scenario runs one scheduler under one seed")
    if sc["hours"] is not None and t > sc["hours"] * 3600:
        raise ParameterError(
            f"snapshot time must be in [0, {seconds(sc['hours'] * 3600)}] s (the scenario's window), got {seconds(t)}"
        )
    names = labels_of(sc)
    label = (
        f"{sc['schedulers'][0]} on {names['workload']} / {names['cluster']} "
        f"(load {sc['load']:g}, seed {sc['seeds'][0]})"
    )
    return {"scenario": sc}, label[:200]


def check_time(t: Any) -> float:
    try:
        x = float(t)
    except (TypeError, ValueError):
        raise ParameterError(f"snapshot time must be a number of seconds, got {t!r}") from None
    if not (np.isfinite(x) and x >= 0):
        raise ParameterError(f"snapshot time must be a non-negative number of seconds, got {t!r}")
    return x


def check_source(choice: SourceChoice, t: float) -> tuple[dict[str, Any], str]:
    """``(source_spec, label)`` of a valid choice; ParameterError naming what is wrong (empty snapshot included)."""
    if choice.kind == PackingSource.RUN and choice.run is not None:
        return _check_run(choice.run, t)
    if choice.kind == PackingSource.TRACE and choice.trace is not None:
        return _check_trace(choice, t)
    if choice.kind == PackingSource.SCENARIO and choice.scenario is not None:
        return _check_scenario(choice, t)
    raise ParameterError(f"source must be one of {', '.join(PackingSource.values)} with what it needs")


def create_analysis(
    owner: User,
    choice: SourceChoice,
    *,
    time_s: Any,
    spec: Mapping[str, Any],
    name: str = "",
    team: Team | None = None,
    visibility: str = Visibility.PRIVATE,
) -> PackingAnalysis:
    """Check everything, store the analysis and queue it (after the commit); nothing is stored on an error.

    The caller checked that ``owner`` may see the run (or owns the uploads).
    """
    t = check_time(time_s)
    # simcore refuses unknown scheduler_params keys by name (as an experiment's scenario does); the
    # platform adds the bounds it puts on an experiment's scheduler parameters.
    aspec = AnalysisSpec.from_dict(spec)
    for scheduler, params in aspec.scheduler_params.items():
        check_web_scheduler_params(scheduler, params)
    if choice.kind == PackingSource.TRACE and aspec.placed_by == AS_IS:
        raise ParameterError("a trace records no placements: place its snapshot with an ordering or a scheduler")
    if choice.kind != PackingSource.TRACE and choice.min_priority is not None:
        raise ParameterError("min_priority applies to a trace's snapshot (runs and scenarios record no priorities)")
    shared = sharing_fields(owner, team, visibility)
    source_spec, label = check_source(choice, t)
    with transaction.atomic():
        a = PackingAnalysis.objects.create(
            **shared,
            name=name,
            source=choice.kind,
            run=choice.run,
            trace_upload=choice.trace,
            cluster_upload=choice.cluster_upload
            if choice.kind == PackingSource.TRACE
            else _scenario_cluster_upload(choice),
            source_spec=source_spec,
            label=label,
            time_s=t,
            spec=aspec.to_dict(),
        )
        transaction.on_commit(lambda: setattr(a, "queued", work.enqueue_analyses([a.pk])))
    return a


def _scenario_cluster_upload(choice: SourceChoice) -> ClusterUpload | None:
    return choice.cluster_upload if choice.kind == PackingSource.SCENARIO else None


def cancel_analysis(a: PackingAnalysis) -> bool:
    """Cancel a pending or running analysis; a running one stops at once (its heartbeat sees it)."""
    if not a.is_active:
        return False
    return a.transition(Status.CANCELLED, finished_at=timezone.now())


def progress_payload(a: PackingAnalysis) -> dict[str, Any]:
    """What the page's poller reads: status, progress, the snapshot's size once built, and an ETA."""
    a.refresh_from_db(fields=["status", "fraction", "stage", "error", "queued_at", "snapshot_size"])
    wait = waiting.notes([(a.status, a.queued_at)], "long")[0]
    return {
        "id": a.pk,
        "status": a.status,
        "fraction": a.fraction,
        "stage": a.stage,
        "error": a.error,
        "waiting": wait,
        "size": reading.snapshot_size_text(a.snapshot_size),
        "eta": eta_of(a),
    }


def eta_of(a: PackingAnalysis, now: float | None = None) -> str:
    """'about N min left' while the techniques run ('' before, or too early to tell)."""
    if a.status != Status.RUNNING:
        return ""
    return reading.eta(a.fraction, a.snapshot_size.get("analysing_since"), time.time() if now is None else now)


# ---------------------------------------------------------------------------- the snapshot


@contextlib.contextmanager
def _cluster_file(scenario: Mapping[str, Any], upload: ClusterUpload | None) -> Iterator[dict[str, Path]]:
    """A scenario's uploaded cluster file in a private temp folder, by its scenario file name."""
    if upload is None:
        yield {}
        return
    with tempfile.TemporaryDirectory(prefix="simcore-packing-") as tmp:
        name = scenario_file_names(upload, None)["cluster"]
        path = Path(tmp) / name
        path.write_bytes(upload.content())
        yield {name: path}


def _run_snapshot(a: PackingAnalysis) -> Snapshot:
    run = a.run
    if run is None:
        raise ParameterError("the run this analysis reads was deleted")
    exp = Experiment.objects.select_related("cluster_upload", "trace_upload").get(pk=run.experiment_id)
    run.experiment = exp
    scenario = scenario_for(run)  # a sweep's cell: the scenario at its point (its load, cluster, ...)
    with materialised_files(exp) as files:
        cluster = build_cluster(scenario, files)
        wl = build_workload(scenario, cluster, run.seed, files)
        # A snapshot needs every job's record; a run that kept a sample or none is simulated again below.
        if (run.records or {}).get("kept", "all") == "all":
            try:
                return from_record_chunks(_same_workload(run_job_chunks(run), wl.submit), wl.request, cluster, a.time_s)
            except _OtherWorkload:
                pass
        # This code version builds another workload from the scenario: simulate the run again.
        out = run_scenario(scenario, run.scheduler, run.seed, files)
    snap = from_result(out.result, out.workload, out.cluster, a.time_s)
    why = (
        "the stored records do not match this code version's workload"
        if (run.records or {}).get("kept", "all") == "all"
        else "the run kept only some per-job records"
    )
    return snap.with_placement(snap.placement, {"note": f"simulated again: {why}"})


class _OtherWorkload(Exception):
    """The stored records are not of the workload this code version builds from the scenario."""


def _same_workload(chunks: Iterator[dict[str, np.ndarray]], submit: np.ndarray) -> Iterator[dict[str, np.ndarray]]:
    """The run's stored chunks while their submit times are the rebuilt workload's; _OtherWorkload at the first
    that differs (another code version generated the run)."""
    for cols in chunks:
        n = len(cols["job"])
        lo = int(cols["job"][0]) if n else 0
        if lo + n > len(submit) or not np.array_equal(cols["submit_s"], submit[lo : lo + n]):
            raise _OtherWorkload
        yield cols


def snapshot_of(a: PackingAnalysis) -> Snapshot:
    """Rebuild the analysis' snapshot from its source (on a worker)."""
    spec = a.source_spec
    if a.source == PackingSource.RUN:
        return _run_snapshot(a)
    if a.source == PackingSource.TRACE:
        trace = a.trace_upload
        assert trace is not None
        cluster = _trace_cluster_object(trace, spec["cluster"])
        wl, priority = _trace_workload(trace, cluster)
        return from_trace(wl, cluster, a.time_s, priority=priority, min_priority=spec.get("min_priority"))
    sc = spec["scenario"]
    with _cluster_file(sc, a.cluster_upload) as files:
        out = run_scenario(sc, sc["schedulers"][0], sc["seeds"][0], files)
    return from_result(out.result, out.workload, out.cluster, a.time_s)


# ---------------------------------------------------------------------------- the worker


class _Reporter:
    """simcore.packing progress -> the row (at most every PROGRESS_EVERY_S); raises Cancelled once it left running."""

    def __init__(self, pk: int, attempt: int) -> None:
        self.pk = pk
        self.attempt = attempt
        self.last = 0.0

    def __call__(self, stage: str, fraction: float) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and fraction < 1.0:
            return
        self.last = now
        try:
            alive = _mine(self.pk, self.attempt).update(
                fraction=fraction, stage=stage[:100], heartbeat_at=timezone.now()
            )
        except outages.DATABASE_ERRORS as e:  # a blip: analyse on, the next write (or the outcome's) retries
            log.warning("progress of packing analysis %s not written: %s", self.pk, e)
            connection.close()
            return
        if not alive:
            raise Cancelled(f"packing analysis {self.pk} was cancelled")


def _mine(pk: int, attempt: int) -> QuerySet[PackingAnalysis]:
    """The analysis while this worker's attempt still holds it (cancelled, lost or taken over: empty)."""
    return PackingAnalysis.objects.filter(pk=pk, status=Status.RUNNING, attempt=attempt)


def _status(pk: int) -> str:
    return PackingAnalysis.objects.filter(pk=pk).values_list("status", flat=True).first() or "missing"


def _fail(a: PackingAnalysis, message: str) -> str:
    a.transition(Status.FAILED, guard=Q(attempt=a.attempt), error=message[:2000], finished_at=timezone.now())
    return _status(a.pk)


def execute_analysis(pk: int, worker: str = "", give_back: int | None = None) -> str:
    """Claim a pending analysis, build its snapshot, run the techniques, store the results; the final status.

    The claim takes the next attempt number and every later write requires it,
    as for runs (:mod:`dashboard.common.recovery`): an analysis lost with its worker is
    queued again, and a worker declared lost stores nothing. A database outage
    raises and the task is retried, giving back ``give_back`` (:mod:`dashboard.common.outages`).
    """
    outages.give_back(PackingAnalysis, pk, give_back, Status.RUNNING, Status.PENDING, fraction=0.0, stage="")
    a = PackingAnalysis.objects.select_related("run", "trace_upload", "cluster_upload").filter(pk=pk).first()
    if a is None or a.status != Status.PENDING:
        return a.status if a else "missing"
    now = timezone.now()
    if not a.transition(
        Status.RUNNING,
        guard=Q(attempt=a.attempt),
        attempt=a.attempt + 1,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        code_version=code_version()[:100],
        stage="building the snapshot",
    ):
        return "claimed elsewhere"
    log.info("packing analysis %s attempt %s claimed by %s", pk, a.attempt, worker)
    try:
        with (
            outages.interrupted_as(a.attempt),
            Heartbeat(
                _mine(pk, a.attempt), stamp=beats.target(PackingAnalysis, pk, status=Status.RUNNING, attempt=a.attempt)
            ),
        ):
            return _analyse(a)
    except Cancelled:  # raised by the heartbeat outside the analysis' own handler
        return _status(pk)


def _analyse(a: PackingAnalysis) -> str:
    try:
        snap = snapshot_of(a)
        # Shown while it runs (the page's size and ETA): what is being analysed, and since when.
        _mine(a.pk, a.attempt).update(
            snapshot_size={
                "tasks": snap.n_tasks,
                "machines": snap.n_machines,
                "pending": snap.n_pending,
                "analysing_since": time.time(),
            }
        )
        _Reporter(a.pk, a.attempt)("analysing", 0.0)
        results = analyse(snap, AnalysisSpec.from_dict(a.spec), progress=_Reporter(a.pk, a.attempt))
    except Cancelled:
        return _status(a.pk)
    except SimcoreError as e:
        return _fail(a, str(e))
    except MemoryError:
        return _fail(a, "the analysis needed more memory than the worker has")
    except outages.OUTAGE_ERRORS:  # not the analysis' fault: the task is retried (dashboard.common.outages)
        raise
    except Exception as e:  # a bug: log the traceback for us, show the user one line
        log.exception("packing analysis %s failed", a.pk)
        return _fail(a, f"internal error ({type(e).__name__}): {e}")
    with transaction.atomic():
        if not a.transition(
            Status.FINISHED,
            guard=Q(attempt=a.attempt),
            finished_at=timezone.now(),
            fraction=1.0,
            stage="done",
            results=clean_json(results),
        ):
            return _status(a.pk)
    return Status.FINISHED
