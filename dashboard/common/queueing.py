"""Putting work on the job queue, so that no work is ever orphaned.

Runs, trace imports and packing analyses are saved first and queued after the commit. When the
broker is unreachable, queueing used to raise inside the request (a 500) and
leave the rows ``pending`` with no task, for ever. Now:

- :func:`enqueue` (behind each feature's ``enqueue_runs``, ``enqueue_import``...) never raises for a
  broker failure: it reports it (False) and leave ``queued_at`` empty, and the page
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
- A broker restarted empty is noticed within a minute, not after
  ``SIMCORE_REQUEUE_AFTER_S``: pending work queued more than
  :data:`LOST_MESSAGE_GRACE_S` ago whose message no worker holds (running,
  reserved, or waiting for a retry's countdown: :func:`held_work` asks them)
  is sent again when it outnumbers the messages waiting in the queues (ours,
  and every queue a live worker consumes). Work merely waiting in a backlog
  has its message among those waiting, so it gains no duplicate; when the
  workers cannot be asked, the slow rule above applies.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Model, Q, QuerySet
from django.utils import timezone
from kombu.exceptions import ChannelError
from kombu.exceptions import OperationalError as KombuOperationalError

log = logging.getLogger(__name__)

#: What a publish raises when the broker is down or unreachable.
BROKER_ERRORS: tuple[type[BaseException], ...] = (KombuOperationalError, ConnectionError, OSError, TimeoutError)

#: Work saved less than this long ago and not queued yet is left to the request that saved it.
NEVER_QUEUED_GRACE_S = 60

#: What a user reads when the queue was unavailable.
QUEUE_DOWN = "the job queue is unavailable right now; the work is saved and starts as soon as the queue is back"


def send(task: str, ids: list[int]) -> bool:
    """One message of task ``task`` (its Celery name) per id; False (and nothing raised) when the broker is down."""
    from dashboard.celery import app

    if not ids:
        return True
    try:
        # One connection for all messages, and no retries inside the request: a down broker
        # costs one refused connection, not a minute of back-off.
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.SIMCORE_BROKER_TIMEOUT_S)
            for pk in ids:
                app.send_task(task, (pk,), connection=conn, retry=False)
    except BROKER_ERRORS as e:
        log.warning("could not queue %s %s: %s", task, ids, e)
        return False
    return True


def short_queue() -> str:
    """The queue of runs and sweep cells (``dashboard.celery.short_queue``): features name it through here, since
    only common may import the Celery app (tests/dashboard/test_layout.py)."""
    from dashboard.celery import short_queue as _short

    return _short()


def send_to_worker(task: str, pk: int, worker: str) -> bool:
    """One message of task ``task`` for row ``pk`` on the own queue of worker ``worker`` (its Celery node name:
    every worker consumes ``<name>.dq2``, CELERY_WORKER_DIRECT); False (nothing raised) when the broker is down."""
    from celery.utils.nodenames import worker_direct

    from dashboard.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.SIMCORE_BROKER_TIMEOUT_S)
            app.send_task(task, (pk,), connection=conn, retry=False, queue=worker_direct(worker))
    except BROKER_ERRORS as e:
        log.warning("could not send %s %s to worker %s: %s", task, pk, worker, e)
        return False
    return True


@dataclass(frozen=True)
class Work:
    """One kind of queued work, as a feature registers it (:func:`register`)."""

    #: The key of :func:`requeue_stale`'s counts ("runs", "imports"...).
    kind: str
    #: The Celery name of the task that does it (dashboard.celery routes it by this name).
    task: str
    model: type[Model]
    #: The model's pending state: the rows that wait for a message.
    pending: str
    #: The rows :func:`requeue_stale` looks at (the pending ones, narrowed as the feature needs).
    pending_rows: Callable[[], QuerySet[Any]]
    #: The field that dates a row never queued (a run's is its experiment's ``created``).
    created: str = "created"
    #: Whether the slow rule (never queued, or queued long ago) applies; else only the fast lost-message rule.
    slow_rule: bool = True
    #: Most rows sent again in one pass.
    per_pass: int = 1000


_WORK: dict[str, Work] = {}


def register(work: Work) -> Work:
    """Make ``work`` known to :func:`enqueue` and :func:`requeue_stale` (a feature's ``work`` module does)."""
    _WORK[work.kind] = work
    return work


def enqueue(kind: str, ids: list[int]) -> bool:
    """Queue one task per row of ``kind`` and date them; False (and nothing raised) when the broker is down."""
    work = _WORK[kind]
    if not send(work.task, ids):
        return False
    work.model._default_manager.filter(pk__in=ids, status=work.pending).update(queued_at=timezone.now())
    return True


def task_queues() -> set[str]:
    """The names of the queues our tasks go to: the short queue and its long twin (dashboard.celery)."""
    from dashboard.celery import both_queues

    return set(both_queues())


def waiting_messages(queues: set[str] | None = None) -> int | None:
    """How many messages wait in ``queues`` (default: our task queues; not those workers hold); None when the
    broker cannot say."""
    from dashboard.celery import app

    try:
        with app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1, timeout=settings.SIMCORE_BROKER_TIMEOUT_S)
            total = 0
            for queue in sorted(queues or task_queues()):
                try:
                    ok = conn.default_channel.queue_declare(queue=queue, passive=True)
                except ChannelError:  # not there: never used, or empty (Redis drops an empty list)
                    continue
                total += int(ok.message_count)
            return total
    except BROKER_ERRORS as e:
        log.warning("could not count the waiting messages: %s", e)
        return None


#: Pending work queued longer ago than this, whose message no worker holds, may have lost it (seconds).
LOST_MESSAGE_GRACE_S = 20
#: How long :func:`held_work` waits for the workers' answers (seconds).
INSPECT_TIMEOUT_S = 1.0


@dataclass
class Held:
    """What the live workers hold: per task name, the ids of their messages; and every queue they consume."""

    ids: dict[str, set[int]]
    queues: set[str]


def held_work() -> Held | None:
    """What every worker on the broker holds (running, reserved, or waiting for a retry's countdown); None when
    the broker cannot be asked.

    Four broadcasts (each waits INSPECT_TIMEOUT_S for the answers). The
    queues the workers consume count too: work waiting in a queue this
    process does not route to (another worker's own queue) is waiting, not lost.
    """
    from dashboard.celery import app

    try:
        # One after the other: the broadcasts share the app's mailbox, whose replies one caller at a time collects.
        inspect = app.control.inspect(timeout=INSPECT_TIMEOUT_S)
        held_replies = [inspect.active(), inspect.reserved(), inspect.scheduled()]
        queue_reply = inspect.active_queues()
    except BROKER_ERRORS as e:
        log.warning("could not ask the workers what they hold: %s", e)
        return None
    held = Held({}, set())
    for queues in (queue_reply or {}).values():
        held.queues.update(str(q["name"]) for q in queues if q.get("name"))
    for reply in held_replies:
        for requests in (reply or {}).values():
            for entry in requests:
                req = entry.get("request", entry)  # scheduled(): {"eta": ..., "request": {...}}
                args = req.get("args")
                if isinstance(args, (list, tuple)) and args and isinstance(args[0], int):
                    held.ids.setdefault(str(req.get("name") or req.get("type")), set()).add(args[0])
    return held


def _pending_work() -> dict[str, tuple[str, QuerySet[Any]]]:
    """Per kind: the task that runs it and its pending rows (what requeue_stale looks at)."""
    return {kind: (work.task, work.pending_rows()) for kind, work in _WORK.items()}


#: Most rows of one kind sent again in one pass.
REQUEUE_BATCH = 1000


def _lost_messages(now: datetime, pending: dict[str, tuple[str, QuerySet[Any]]]) -> dict[str, list[int]] | None:
    """Per kind, pending work whose message is most likely lost (the fast rule); None when it cannot be told.

    Work queued more than LOST_MESSAGE_GRACE_S ago and held by no worker is
    sent again when it outnumbers the waiting messages; else nothing is (a backlog).
    """
    cutoff = now - timedelta(seconds=LOST_MESSAGE_GRACE_S)
    queued = {
        kind: set(rows.filter(queued_at__lt=cutoff).order_by("id").values_list("id", flat=True)[:REQUEUE_BATCH])
        for kind, (_, rows) in pending.items()
    }
    if not any(queued.values()):
        return {}
    waiting = waiting_messages()
    if waiting is None:
        return None
    if waiting >= sum(len(ids) for ids in queued.values()):
        return {}  # their messages are most likely among those waiting: no duplicates
    held = held_work()
    if held is None:
        return None
    if held.queues - task_queues():  # workers also consume other queues: count what waits there too
        waiting = waiting_messages(task_queues() | held.queues)
        if waiting is None:
            return None
    # Read again after asking: work claimed or finished meanwhile (its message taken between the count and the
    # answers) is no longer pending, and must not tip a backlog into a duplicate of every waiting message.
    unheld: dict[str, list[int]] = {}
    for kind, ids in queued.items():
        task, rows = pending[kind]
        unheld[kind] = sorted(rows.filter(pk__in=ids - held.ids.get(task, set())).values_list("id", flat=True))
    if waiting >= sum(len(ids) for ids in unheld.values()):
        return {}
    return unheld


def requeue_stale(now: datetime | None = None) -> dict[str, int]:
    """Queue again pending work that was never queued or whose message may be lost; returns the counts."""
    now = now or timezone.now()
    pending = _pending_work()
    lost = _lost_messages(now, pending)
    before = now - timedelta(seconds=settings.SIMCORE_REQUEUE_AFTER_S)
    # Never queued: give the request that saved it a minute to queue it itself.
    grace = now - timedelta(seconds=NEVER_QUEUED_GRACE_S)
    old = Q(queued_at__lt=before)
    if lost is None:  # the workers cannot be asked: the slow rule, old work when the queue holds fewer messages
        n_old = sum(rows.filter(old).count() for kind, (_, rows) in pending.items() if _WORK[kind].slow_rule)
        waiting = waiting_messages()
        if waiting is not None and waiting >= n_old:
            old = Q(pk__in=[])
    else:
        old = Q(pk__in=[])
    sent: dict[str, int] = {}
    for kind, (_, rows) in pending.items():
        work = _WORK[kind]
        never = Q(queued_at__isnull=True, **{f"{work.created}__lt": grace})
        # Work without the slow rule (evaluations) never queued or queued long ago is its feature's own repair's:
        # only the fast rule applies to it here.
        slow = never | old if work.slow_rule else Q(pk__in=[])
        ids = set(rows.filter(slow).order_by("id").values_list("id", flat=True)[:REQUEUE_BATCH])
        again = sorted(ids | set((lost or {}).get(kind, [])))[: work.per_pass]
        sent[kind] = len(again) if again and enqueue(kind, again) else 0
    if lost:
        log.warning("messages lost by the broker, sent again: %s", {k: v for k, v in lost.items() if v})
    return sent
