"""Experiment runs as background work: how they are queued, which queue they wait in, how a lost one recovers.

Registered with common's queueing, waiting and repair (dashboard.common); the app config imports this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from dashboard.common import queueing, repair, waiting
from dashboard.common.limits import Limits
from dashboard.common.models import Status, stale_heartbeat
from dashboard.common.recovery import Recovered, exhausted_message, lost_attempt, max_attempts, over_time
from dashboard.common.recovery import guard as recovery_guard
from dashboard.experiments.models import RERUN_RUN, Run

RUNS = queueing.register(
    queueing.Work(
        kind="runs",
        task="dashboard.run_simulation",
        model=Run,
        pending=Status.PENDING,
        # Not the runs a worker declined for memory: they wait for a worker with enough, not in the shared
        # queue (dashboard.experiments.memory routes them).
        pending_rows=lambda: Run.objects.filter(status=Status.PENDING, needs_mb__isnull=True),
        created="experiment__created",
    )
)
waiting.register("short", Run, Status.PENDING, Status.RUNNING)


def enqueue_runs(run_ids: list[int]) -> bool:
    """Queue one task per run; False (and nothing raised) when the broker cannot be reached."""
    return queueing.enqueue(RUNS.kind, run_ids)


def recover_lost_runs(now: datetime | None = None) -> Recovered:
    """Queue again (``retried``) or fail every running run whose worker is lost.

    Cheap when nothing is lost (one indexed SELECT). A worker that is merely
    slow and stamps or finishes first keeps its run; one that stamps or
    finishes afterwards changes nothing.
    """
    now = now or timezone.now()
    done = Recovered()
    for run in Run.objects.select_related("experiment").filter(stale_heartbeat(now), status=Status.RUNNING):
        history = [*run.lost_attempts, lost_attempt(run, now)]
        guard = recovery_guard(run, now)
        if over_time(run):
            if run.transition(
                Status.FAILED,
                guard=guard,
                finished_at=now,
                eta_s=None,
                error=Limits.from_settings("run").time_message(),
            ):
                done.failed.append(run.pk)
        elif run.attempt < max_attempts():
            if run.transition(
                Status.PENDING,
                guard=guard,
                lost_attempts=history,
                worker="",
                started_at=None,
                heartbeat_at=None,
                queued_at=None,
                fraction=0.0,
                jobs_done=0,
                eta_s=None,
            ):
                done.retried.append(run.pk)
        elif run.transition(
            Status.FAILED,
            guard=guard,
            lost_attempts=history,
            finished_at=now,
            eta_s=None,
            error=exhausted_message(history, now, RERUN_RUN),
        ):
            done.failed.append(run.pk)
    return done


def _repair() -> dict[str, Any]:
    runs = recover_lost_runs()
    # Sent before requeue_stale looks: a lost attempt queued again here is not sent twice.
    # When the broker is down they stay unqueued, and a later pass sends them.
    enqueue_runs(runs.retried)
    return {"runs_retried": runs.retried, "runs_failed": runs.failed}


def _route_for_memory() -> dict[str, Any]:
    from dashboard.experiments.memory import route_waiting

    return route_waiting()


repair.register(repair.LOST_WORK, _repair)
repair.register(repair.LOST_WORK, _route_for_memory)
