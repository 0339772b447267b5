"""Work lost with its worker is run again, up to SIMCORE_RUN_MAX_ATTEMPTS times, then failed saying why.

A run or trace import still ``running`` whose heartbeat is older than
SIMCORE_WORKER_TIMEOUT_S lost its worker (SIGKILL, the OOM killer, a machine
restart). The workers' periodic repair (dashboard.repair) applies
:func:`recover_lost_runs`, :func:`recover_lost_imports` and
:func:`recover_lost_analyses` (packing analyses, which have no time limit):

- while the work has been claimed fewer than SIMCORE_RUN_MAX_ATTEMPTS times,
  it goes back to ``pending`` with the lost attempt recorded in
  ``lost_attempts``, and the repair queues it again at once; any worker,
  including the dead one restarted, takes it;
- after that many attempts it is failed with a message naming every lost
  attempt (worker, when it was last heard of) and the setting;
- an attempt that was heard of for longer than SIMCORE_RUN_TIME_LIMIT_S was
  over the time limit (Celery's hard limit killed its pool process): it is
  failed with the limit's message, never retried.

The guarantee is the database's, not the broker's: every change here is one
conditional UPDATE (status still running, attempt number unchanged,
heartbeat still stale), and every write of a worker requires its own attempt
number (:class:`dashboard.models.Run`'s ``attempt``), so a worker declared lost
that wakes up later (a zombie) can store nothing, and of two task messages
for one run (a broker redelivery, the repair's re-send) only one claim wins.
Results are written in the transaction that marks the run finished
(dashboard.services.execution.store_outcome), so a run has one result or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.limits import Limits
from dashboard.models import (
    IMPORT_TRANSITIONS,
    RERUN_IMPORT,
    RERUN_RUN,
    ImportStatus,
    Run,
    Status,
    TraceImportFile,
    TraceUpload,
    heard_at,
    lost_message,
    move,
    stale_heartbeat,
)
from dashboard.packing_models import RERUN_ANALYSIS, PackingAnalysis


@dataclass
class Recovered:
    """What one pass did: ids queued again (to be sent by the caller) and ids failed."""

    retried: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def max_attempts() -> int:
    return int(settings.SIMCORE_RUN_MAX_ATTEMPTS)


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def lost_attempt(row: Run | TraceUpload | PackingAnalysis, now: datetime) -> dict[str, Any]:
    """The record of ``row``'s current attempt, lost: its number, worker, start and last heartbeat, when noticed."""
    return {
        "attempt": row.attempt,
        "worker": row.worker,
        "started_at": _iso(row.started_at),
        "last_heard_at": _iso(row.heartbeat_at),
        "noticed_at": now.isoformat(),
    }


def _when(record: dict[str, Any], now: datetime) -> str:
    heard = record.get("last_heard_at")
    return heard_at(datetime.fromisoformat(heard) if heard else None, now)


def exhausted_message(history: list[dict[str, Any]], now: datetime, advice: str) -> str:
    """What a user reads on work lost with its worker on every attempt allowed.

    One attempt (SIMCORE_RUN_MAX_ATTEMPTS=1): the lost-worker message as it
    always was. More: how many, each attempt's worker and when it was last
    heard of, and the setting that bounds them.
    """
    if len(history) == 1:
        heard = history[0].get("last_heard_at")
        return lost_message(datetime.fromisoformat(heard) if heard else None, now, advice)
    each = "; ".join(
        f"attempt {a['attempt']} on {a.get('worker') or 'an unknown worker'} lost at {_when(a, now)}" for a in history
    )
    return (
        f"the workers running this stopped without finishing {len(history)} times, the most attempts allowed "
        f"(setting SIMCORE_RUN_MAX_ATTEMPTS): {each}; {advice}"
    )


def attempts_note(attempt: int, lost: list[dict[str, Any]], now: datetime | None = None) -> str:
    """One line for the pages: which attempt this is and when the earlier ones were lost; empty if none was."""
    if not lost:
        return ""
    now = now or timezone.now()
    each = ", ".join(
        f"{a['attempt']} ({a.get('worker') or 'unknown worker'}, last heard of {_when(a, now)})" for a in lost
    )
    which = "attempts" if len(lost) > 1 else "attempt"
    return f"attempt {attempt} of {max_attempts()}; lost with their worker and run again: {which} {each}"


def _over_time(row: Run | TraceUpload | PackingAnalysis) -> bool:
    """The lost attempt was heard of for as long as the time limit: it was stopped for it, not lost."""
    limit = settings.SIMCORE_RUN_TIME_LIMIT_S
    if not limit or row.started_at is None or row.heartbeat_at is None:
        return False
    return (row.heartbeat_at - row.started_at).total_seconds() >= limit


def _guard(row: Run | TraceUpload | PackingAnalysis, now: datetime) -> Q:
    return stale_heartbeat(now) & Q(attempt=row.attempt)


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
        guard = _guard(run, now)
        if _over_time(run):
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


def recover_lost_imports(now: datetime | None = None) -> Recovered:
    """As :func:`recover_lost_runs` for trace imports; a failed import's raw files are dropped, a retried one's kept."""
    now = now or timezone.now()
    done = Recovered()
    for up in TraceUpload.objects.defer("content_gz").filter(stale_heartbeat(now), status=ImportStatus.RUNNING):
        history = [*up.lost_attempts, lost_attempt(up, now)]
        guard = _guard(up, now)
        with transaction.atomic():
            if up.attempt < max_attempts() and not _over_time(up):
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
            if _over_time(up):
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


def recover_lost_analyses(now: datetime | None = None) -> Recovered:
    """As :func:`recover_lost_runs` for packing analyses (no time limit applies to them)."""
    now = now or timezone.now()
    done = Recovered()
    for a in PackingAnalysis.objects.defer("results").filter(stale_heartbeat(now), status=Status.RUNNING):
        history = [*a.lost_attempts, lost_attempt(a, now)]
        guard = _guard(a, now)
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
