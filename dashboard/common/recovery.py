"""Work lost with its worker is run again, up to SIMCORE_RUN_MAX_ATTEMPTS times, then failed saying why.

A run or trace import still ``running`` whose heartbeat is older than
SIMCORE_WORKER_TIMEOUT_S lost its worker (SIGKILL, the OOM killer, a machine
restart). The workers' periodic repair (dashboard.common.repair) applies each
feature's recovery (``recover_lost_runs``, ``recover_lost_imports``,
``recover_lost_analyses``, in the features' ``work`` modules), built on the
helpers here:

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
(dashboard.experiments.execution.store_outcome), so a run has one result or none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from dashboard.common.models import heard_at, lost_message, stale_heartbeat


@dataclass
class Recovered:
    """What one pass did: ids queued again (to be sent by the caller) and ids failed."""

    retried: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)


def max_attempts() -> int:
    return int(settings.SIMCORE_RUN_MAX_ATTEMPTS)


def _iso(when: datetime | None) -> str | None:
    return when.isoformat() if when is not None else None


def lost_attempt(row: Any, now: datetime) -> dict[str, Any]:
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


def over_time(row: Any) -> bool:
    """The lost attempt was heard of for as long as the time limit: it was stopped for it, not lost."""
    limit = settings.SIMCORE_RUN_TIME_LIMIT_S
    if not limit or row.started_at is None or row.heartbeat_at is None:
        return False
    return (row.heartbeat_at - row.started_at).total_seconds() >= limit


def guard(row: Any, now: datetime) -> Q:
    return stale_heartbeat(now) & Q(attempt=row.attempt)
