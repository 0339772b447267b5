"""Putting work on the job queue, so that no work is ever orphaned.

Runs, trace imports and packing analyses are saved first and queued after the commit. When the
broker is unreachable, queueing used to raise inside the request (a 500) and
leave the rows ``pending`` with no task, for ever. Now:

- :func:`enqueue_runs` and :func:`enqueue_import` never raise for a broker
  failure: they report it (False) and leave ``queued_at`` empty, and the page
  or API says the work starts once the queue is back;
- :func:`requeue_stale` (run by the periodic repair, and at worker start-up)
  queues again every pending run or import that was never queued, or was
  queued more than ``SIMCORE_REQUEUE_AFTER_S`` ago and whose message may be
  lost (a broker restarted with nothing on disk). A duplicate message is
  harmless: claiming is a conditional update, so only one worker ever runs
  the work. Work queued long ago is usually just waiting behind a backlog,
  though, so it is sent again only when the queue holds fewer messages than
  such work: otherwise a long backlog would gain a duplicate of every waiting
  run at every pass. A pending run never waits for ever: once the queue
  drains below the count of old pending work, that work is sent again.
"""

from __future__ import annotations

import logging
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone
from kombu.exceptions import ChannelError
from kombu.exceptions import OperationalError as KombuOperationalError

from dashboard.models import ImportStatus, PackingAnalysis, Run, Status, TraceUpload

log = logging.getLogger(__name__)

#: What a publish raises when the broker is down or unreachable.
BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuOperationalError, ConnectionError, OSError, TimeoutError)

#: Work saved less than this long ago and not queued yet is left to the request that saved it.
NEVER_QUEUED_GRACE_S = 60

#: What a user reads when the queue was unavailable.
QUEUE_DOWN = "the job queue is unavailable right now; the work is saved and starts as soon as the queue is back"


def _send(task: Any, ids: list[int]) -> bool:
    from dashboard.celery import app

    if not ids:
        return True
    try:
        # One connection for all messages, and no retries inside the request: a down broker
        # costs one refused connection, not a minute of back-off.
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.SIMCORE_BROKER_TIMEOUT_S)
            for pk in ids:
                task.apply_async((pk,), connection=conn, retry=False)
    except BROKER_ERRORS as e:
        log.warning("could not queue %s %s: %s", task.name, ids, e)
        return False
    return True


def waiting_messages() -> int | None:
    """How many messages wait in both task queues (not those workers hold); None when the broker cannot say."""
    from dashboard.celery import app, both_queues

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.SIMCORE_BROKER_TIMEOUT_S)
            total = 0
            for name in both_queues():
                try:
                    ok = conn.default_channel.queue_declare(queue=name, passive=True)
                except ChannelError:  # not there: never used, or empty (Redis drops an empty list)
                    continue
                total += int(ok.message_count)
            return total
    except BROKER_ERRORS as e:
        log.warning("could not count the waiting messages: %s", e)
        return None


def enqueue_runs(run_ids: list[int]) -> bool:
    """Queue one task per run; False (and nothing raised) when the broker cannot be reached."""
    from dashboard.tasks import run_simulation

    if not _send(run_simulation, run_ids):
        return False
    Run.objects.filter(pk__in=run_ids, status=Status.PENDING).update(queued_at=timezone.now())
    return True


def enqueue_import(upload_id: int) -> bool:
    """Queue a trace import; False (and nothing raised) when the broker cannot be reached."""
    from dashboard.tasks import import_trace

    if not _send(import_trace, [upload_id]):
        return False
    TraceUpload.objects.filter(pk=upload_id, status=ImportStatus.PENDING).update(queued_at=timezone.now())
    return True


def enqueue_analyses(ids: list[int]) -> bool:
    """Queue packing analyses; False (and nothing raised) when the broker cannot be reached."""
    from dashboard.tasks import run_packing_analysis

    if not _send(run_packing_analysis, ids):
        return False
    PackingAnalysis.objects.filter(pk__in=ids, status=Status.PENDING).update(queued_at=timezone.now())
    return True


def enqueue_evaluations(evaluation_ids: list[int]) -> bool:
    """Queue one task per design-space evaluation; False (and nothing raised) when the broker cannot be reached."""
    from dashboard.models import EvalStatus, SearchEvaluation
    from dashboard.tasks import evaluate_policy

    if not _send(evaluate_policy, evaluation_ids):
        return False
    SearchEvaluation.objects.filter(pk__in=evaluation_ids, status=EvalStatus.PENDING).update(queued_at=timezone.now())
    return True


def enqueue_advance(search_id: int) -> bool:
    """Queue a coordinator pass of a search (when nothing else would trigger one); False when the broker is down."""
    from dashboard.tasks import advance_search

    return _send(advance_search, [search_id])


def requeue_stale(now: datetime | None = None) -> dict[str, int]:
    """Queue again pending work that was never queued or whose message may be lost; returns the counts."""
    now = now or timezone.now()
    before = now - timedelta(seconds=settings.SIMCORE_REQUEUE_AFTER_S)
    # Never queued: give the request that saved it a minute to queue it itself.
    grace = now - timedelta(seconds=NEVER_QUEUED_GRACE_S)
    never_runs = Q(queued_at__isnull=True, experiment__created__lt=grace)
    never_imports = Q(queued_at__isnull=True, created__lt=grace)
    old = Q(queued_at__lt=before)
    pending_runs = Run.objects.filter(status=Status.PENDING)
    pending_imports = TraceUpload.objects.filter(status=ImportStatus.PENDING)
    if pending_runs.filter(old).exists() or pending_imports.filter(old).exists():
        n_old = pending_runs.filter(old).count() + pending_imports.filter(old).count()
        waiting = waiting_messages()
        if waiting is not None and waiting >= n_old:
            old = Q(pk__in=[])  # their messages are most likely among those waiting: no duplicates
    runs = list(pending_runs.filter(never_runs | old).order_by("id").values_list("id", flat=True)[:1000])
    imports = list(pending_imports.filter(never_imports | old).order_by("id").values_list("id", flat=True)[:100])
    analyses = list(
        PackingAnalysis.objects.filter(
            Q(queued_at__isnull=True, created__lt=grace) | Q(queued_at__lt=before), status=Status.PENDING
        )
        .order_by("id")
        .values_list("id", flat=True)[:1000]
    )
    sent_runs = len(runs) if runs and enqueue_runs(runs) else 0
    sent_imports = sum(1 for pk in imports if enqueue_import(pk))
    sent_analyses = len(analyses) if analyses and enqueue_analyses(analyses) else 0
    return {"runs": sent_runs, "imports": sent_imports, "analyses": sent_analyses}
