"""Trace imports as background work: how they are queued, which queue they wait in, how a lost one recovers.

Registered with common's queueing, waiting and repair (dashboard.common); the app config imports this module.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from dashboard.common import queueing, repair, waiting
from dashboard.common.limits import Limits
from dashboard.common.models import move, stale_heartbeat
from dashboard.common.recovery import Recovered, exhausted_message, lost_attempt, max_attempts, over_time
from dashboard.common.recovery import guard as recovery_guard
from dashboard.traces.models import IMPORT_TRANSITIONS, RERUN_IMPORT, ImportStatus, TraceImportFile, TraceUpload

IMPORTS = queueing.register(
    queueing.Work(
        kind="imports",
        task="dashboard.import_trace",
        model=TraceUpload,
        pending=ImportStatus.PENDING,
        pending_rows=lambda: TraceUpload.objects.filter(status=ImportStatus.PENDING),
        per_pass=100,
    )
)
waiting.register("long", TraceUpload, ImportStatus.PENDING, ImportStatus.RUNNING)


def enqueue_import(upload_id: int) -> bool:
    """Queue a trace import; False (and nothing raised) when the broker cannot be reached."""
    return queueing.enqueue(IMPORTS.kind, [upload_id])


def recover_lost_imports(now: datetime | None = None) -> Recovered:
    """As :func:`recover_lost_runs` for trace imports; a failed import's raw files are dropped, a retried one's kept."""
    now = now or timezone.now()
    done = Recovered()
    for up in TraceUpload.objects.defer("content_gz").filter(stale_heartbeat(now), status=ImportStatus.RUNNING):
        history = [*up.lost_attempts, lost_attempt(up, now)]
        guard = recovery_guard(up, now)
        with transaction.atomic():
            if up.attempt < max_attempts() and not over_time(up):
                if move(
                    TraceUpload,
                    up.pk,
                    ImportStatus.RUNNING,
                    ImportStatus.PENDING,
                    IMPORT_TRANSITIONS,
                    guard=guard,
                    lost_attempts=history,
                    worker="",
                    started_at=None,
                    heartbeat_at=None,
                    queued_at=None,
                    stage="",
                    fraction=0.0,
                    rows_read=0,
                ):
                    done.retried.append(up.pk)
                continue
            outcome: dict[str, Any]
            if over_time(up):
                outcome = {"error": Limits.from_settings("import").time_message()}
            else:
                outcome = {"error": exhausted_message(history, now, RERUN_IMPORT), "lost_attempts": history}
            if move(
                TraceUpload,
                up.pk,
                ImportStatus.RUNNING,
                ImportStatus.FAILED,
                IMPORT_TRANSITIONS,
                guard=guard,
                finished_at=now,
                **outcome,
            ):
                TraceImportFile.objects.filter(upload_id=up.pk).delete()
                done.failed.append(up.pk)
    return done


def _repair() -> dict[str, Any]:
    imports = recover_lost_imports()
    queueing.enqueue(IMPORTS.kind, imports.retried)
    return {"imports_retried": imports.retried, "imports_failed": imports.failed}


repair.register(repair.LOST_WORK, _repair)
