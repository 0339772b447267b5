"""Packing analyses as background work: how they are queued, which queue they wait in, how a lost one recovers.

Registered with common's queueing, waiting and repair (dashboard.common); the app config imports this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from dashboard.common import queueing, repair, waiting
from dashboard.common.models import Status, stale_heartbeat
from dashboard.common.recovery import Recovered, exhausted_message, lost_attempt, max_attempts
from dashboard.common.recovery import guard as recovery_guard
from dashboard.packing.models import RERUN_ANALYSIS, PackingAnalysis

ANALYSES = queueing.register(
    queueing.Work(
        kind="analyses",
        task="dashboard.run_packing_analysis",
        model=PackingAnalysis,
        pending=Status.PENDING,
        pending_rows=lambda: PackingAnalysis.objects.filter(status=Status.PENDING),
    )
)
waiting.register("long", PackingAnalysis, Status.PENDING, Status.RUNNING)


def enqueue_analyses(ids: list[int]) -> bool:
    """Queue packing analyses; False (and nothing raised) when the broker cannot be reached."""
    return queueing.enqueue(ANALYSES.kind, ids)


def recover_lost_analyses(now: datetime | None = None) -> Recovered:
    """As :func:`recover_lost_runs` for packing analyses (no time limit applies to them)."""
    now = now or timezone.now()
    done = Recovered()
    for a in PackingAnalysis.objects.defer("results").filter(stale_heartbeat(now), status=Status.RUNNING):
        history = [*a.lost_attempts, lost_attempt(a, now)]
        guard = recovery_guard(a, now)
        if a.attempt < max_attempts():
            if a.transition(
                Status.PENDING,
                guard=guard,
                lost_attempts=history,
                worker="",
                started_at=None,
                heartbeat_at=None,
                queued_at=None,
                fraction=0.0,
                stage="",
            ):
                done.retried.append(a.pk)
        elif a.transition(
            Status.FAILED,
            guard=guard,
            lost_attempts=history,
            finished_at=now,
            error=exhausted_message(history, now, RERUN_ANALYSIS),
        ):
            done.failed.append(a.pk)
    return done


def _repair() -> dict[str, Any]:
    analyses = recover_lost_analyses()
    enqueue_analyses(analyses.retried)
    return {"analyses_retried": analyses.retried, "analyses_failed": analyses.failed}


repair.register(repair.LOST_WORK, _repair)
