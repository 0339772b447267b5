"""Runs too big for a worker's memory: it leaves them for a worker with more, and the page says so.

A worker with SIMCORE_WORKER_MEMORY_MB set estimates a run's peak memory before claiming it
(simcore.memory, from the cell's jobs and machines). Above its limit it does not claim the run, which would
only get its process killed by the kernel; it *declines* it:

- the run stays ``pending``, with the estimate (``needs_mb``) and who declined it (``declined``);
- its message goes to the own queue of a live worker with enough memory (each worker consumes
  ``<node name>.dq2``, CELERY_WORKER_DIRECT; dashboard.common.workers publishes who is alive with which
  limit), recorded in ``sent_to``; never back to the shared queue, where the same small worker could take it
  again and again;
- when no live worker has enough, nothing is sent: the run waits, and the page says how much it needs and
  which workers there are. The periodic repair (:func:`route_waiting`, every few seconds on every worker)
  sends it once one with enough is alive, and sends it elsewhere if the one it was sent to is gone.

A declined run is out of the shared queue's repair (dashboard.experiments.work's pending rows exclude it):
that repair would send it back to the shared queue. With the limit unset on every worker nothing here runs,
and runs are queued, claimed and repaired as before.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Count
from django.utils import timezone

from dashboard.common import queueing, waiting, workers
from dashboard.common.models import Status
from dashboard.experiments.models import Run
from dashboard.experiments.services import scenario_for
from simcore import memory
from simcore.core.errors import SimcoreError

log = logging.getLogger(__name__)

TASK = "dashboard.run_simulation"


def estimate_mb(run: Run) -> int:
    """The run's estimated peak memory (MiB): its cell's jobs and machines (uploads' counts from their metadata)."""
    exp = run.experiment
    jobs = exp.trace_upload.info.get("jobs") if exp.trace_upload is not None else None
    machines = exp.cluster_upload.info.get("machines") if exp.cluster_upload is not None else None
    size = memory.cell_size(scenario_for(run), run.seed, jobs=jobs, machines=machines)
    return memory.estimate_mb(size.jobs, size.machines, run.scheduler)


def too_big(run_id: int, worker: str) -> bool:
    """Whether this worker (SIMCORE_WORKER_MEMORY_MB) leaves pending run ``run_id`` for one with more memory.

    Called before the claim. False at once when the limit is unset (0) or the run is not pending; else the
    run's estimate is compared with the limit (computed once: a declined run keeps it), and a run above it is
    declined (:func:`decline`).
    """
    limit = int(settings.SIMCORE_WORKER_MEMORY_MB)
    if not limit:
        return False
    run = (
        Run.objects.select_related("experiment", "experiment__cluster_upload", "experiment__trace_upload")
        .filter(pk=run_id, status=Status.PENDING)
        .first()
    )
    if run is None:
        return False
    try:
        needs = run.needs_mb if run.needs_mb is not None else estimate_mb(run)
    except SimcoreError as e:  # a scenario the run itself will fail on, with this message: let it
        log.info("run %s: no memory estimate (%s)", run.pk, e)
        return False
    if needs <= limit:
        return False
    decline(run, worker, limit, needs)
    return True


def decline(run: Run, worker: str, limit_mb: int, needs_mb: int, now: datetime | None = None) -> None:
    """Record that ``worker`` (limit ``limit_mb``) declined pending ``run`` needing ``needs_mb``, and send it on."""
    now = now or timezone.now()
    entry = {"worker": worker[:200], "limit_mb": limit_mb, "at": now.isoformat()}
    if not Run.objects.filter(pk=run.pk, status=Status.PENDING).update(
        needs_mb=needs_mb, declined=[*run.declined, entry][-20:], sent_to=""
    ):
        return  # cancelled (or claimed from another message) meanwhile: nothing to send
    log.info("run %s needs about %s MB, over this worker's %s MB: left for a bigger worker", run.pk, needs_mb, limit_mb)
    _send(run.pk, needs_mb, "", now)


def _choose(needs_mb: int, live: list[workers.Live], load: dict[str, int]) -> workers.Live | None:
    """The live worker with enough memory that has the fewest declined runs sent to it (then by name)."""
    able = [w for w in live if w.fits(needs_mb)]
    return min(able, key=lambda w: (load.get(w.name, 0), w.name)) if able else None


def _send(run_id: int, needs_mb: int, sent_to: str, now: datetime) -> str:
    """Send run ``run_id`` to a live worker with enough memory unless ``sent_to`` is one; the worker it is with."""
    live = workers.live(queueing.short_queue(), now)
    by_name = {w.name: w for w in live}
    if sent_to in by_name and by_name[sent_to].fits(needs_mb):
        # With a live worker that can take it: its message waits in that worker's queue (the worker is busy).
        # Sent again after SIMCORE_REQUEUE_AFTER_S, in case a broker restart lost it (a duplicate is harmless:
        # one claim wins), as dashboard.common.queueing does for the shared queue.
        if not _queued_before(run_id, now):
            return sent_to
        queueing.send_to_worker(TASK, run_id, sent_to)
        Run.objects.filter(pk=run_id, status=Status.PENDING).update(queued_at=now)
        return sent_to
    target = _choose(needs_mb, live, _sent_counts())
    name = target.name if target is not None else ""
    if target is not None and not queueing.send_to_worker(TASK, run_id, target.name):
        name = ""  # the broker is down: the next repair pass sends it
    if not name and not sent_to:
        return ""  # still no worker with enough: it waits, nothing to write
    Run.objects.filter(pk=run_id, status=Status.PENDING).update(
        sent_to=name[:200], **({"queued_at": now} if name else {})
    )
    return name


def _queued_before(run_id: int, now: datetime) -> bool:
    cutoff = now - timedelta(seconds=settings.SIMCORE_REQUEUE_AFTER_S)
    return Run.objects.filter(pk=run_id, queued_at__lt=cutoff).exists()


def _sent_counts() -> dict[str, int]:
    rows = Run.objects.filter(status=Status.PENDING, needs_mb__isnull=False).exclude(sent_to="")
    return {r["sent_to"]: r["n"] for r in rows.values("sent_to").annotate(n=Count("id"))}


#: Most declined runs looked at in one repair pass.
PER_PASS = 1000


def route_waiting(now: datetime | None = None) -> dict[str, Any]:
    """Repair step: send each declined pending run to a live worker with enough memory, unless it is with one.

    Cheap when nothing waits (one indexed query); a run whose worker is still alive keeps its message.
    """
    now = now or timezone.now()
    sent: list[int] = []
    for pk, needs, sent_to in Run.objects.filter(status=Status.PENDING, needs_mb__isnull=False).values_list(
        "pk", "needs_mb", "sent_to"
    )[:PER_PASS]:
        name = _send(pk, int(needs or 0), sent_to, now)
        if name and name != sent_to:
            sent.append(pk)
    return {"runs_sent_for_memory": sent}


def note(needs_mb: int | None, sent_to: str, live: list[workers.Live] | None = None) -> str:
    """The page's words for a pending run declined for memory; empty for any other run.

    ``live``: the live workers of the short queue (read once per page; read here when not given).
    """
    if needs_mb is None:
        return ""
    live = workers.live(queueing.short_queue()) if live is None else live
    need = memory.megabytes_text(needs_mb)
    by_name = {w.name: w for w in live}
    if sent_to in by_name:
        w = by_name[sent_to]
        has = f"{w.memory_mb:,} MB" if w.memory_mb else "no memory limit"
        return f"needs about {need} of memory: sent to worker {w.name} ({has}), which starts it once it is free"
    if live:
        limits = ", ".join(f"{w.memory_mb:,} MB" if w.memory_mb else "no limit" for w in live)
        here = f"workers here: {limits}"
    else:
        here = "no worker is running"
    return (
        f"needs about {need} of memory; waiting for a worker with at least that much ({here}; "
        "setting SIMCORE_WORKER_MEMORY_MB, /docs/how-to/deploy-workers/)"
    )


def waiting_notes(rows: list[tuple[str, datetime | None, int | None, str]]) -> list[str]:
    """The ``waiting`` words of each ``(status, queued_at, needs_mb, sent_to)`` of one page's runs: a pending run
    declined for memory gets :func:`note`, any other the queue's (dashboard.common.waiting)."""
    queue_notes = waiting.notes(((status, queued_at) for status, queued_at, _, _ in rows), "short")
    declined = [status == Status.PENDING and needs is not None for status, _, needs, _ in rows]
    live = workers.live(queueing.short_queue()) if any(declined) else []
    return [
        note(needs, sent_to, live) if is_declined else queue_note
        for (_, _, needs, sent_to), is_declined, queue_note in zip(rows, declined, queue_notes, strict=True)
    ]


#: Most sweep points the form's check estimates (each draws a short workload: a fraction of a second).
FORM_POINTS = 20


def form_note(scenario: dict[str, Any], cluster_upload: Any = None, trace_upload: Any = None) -> str:
    """The new-experiment form's words on memory (its "Check the scale"): the largest run's estimated peak.

    Every point of a sweep up to :data:`FORM_POINTS` (the largest is what a worker must hold), under the
    scenario's first seed; empty when it cannot be told (a scenario the run itself will refuse).
    """
    from simcore.sweep import scenario as sweep_scenario

    jobs = trace_upload.info.get("jobs") if trace_upload is not None else None
    machines = cluster_upload.info.get("machines") if cluster_upload is not None else None
    points = sweep_scenario.points(scenario)
    try:
        peak = 0
        for point in points[:FORM_POINTS]:
            cell = sweep_scenario.cell_scenario(scenario, point) if point else scenario
            size = memory.cell_size(cell, int(cell["seeds"][0]), jobs=jobs, machines=machines)
            peak = max(peak, *(memory.estimate_mb(size.jobs, size.machines, s) for s in cell["schedulers"]))
    except (SimcoreError, ValueError):
        return ""
    if len(points) == 1:
        which = "each run"
    else:
        which = "its largest cell" if len(points) <= FORM_POINTS else f"the largest of its first {FORM_POINTS} points"
    limits = sorted(w.memory_mb for w in workers.live(queueing.short_queue()))
    here = ""
    if any(limits):  # say which workers can take it only where limits are set (SIMCORE_WORKER_MEMORY_MB)
        each = ", ".join(f"{mb:,} MB" if mb else "no limit" for mb in limits)
        here = f" (workers here: {each}; setting SIMCORE_WORKER_MEMORY_MB)"
    return f"Memory: {which} needs about {memory.megabytes_text(peak)} at its peak in a worker{here}."
