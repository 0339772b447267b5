"""What pending work waits for: "waiting for a worker: 3 tasks ahead of this one".

Work goes to one of two queues (dashboard.celery): short work (experiment runs,
sweep cells, search evaluations) and long work (packing analyses, trace
imports). A page whose work has waited for a worker longer than
:data:`WAIT_NOTE_AFTER_S` says so, and says how much is ahead of it: the work
of the same queue that is running, and the pending work queued before it.
Nothing ahead and still waiting means no worker takes that queue, which the
note says too (a deployment that started a worker for one queue only).

Counted from the database, not the broker: the broker's queue has no order a
page can ask about, and it cannot say which message is whose. Rows queued in
one call share one ``queued_at`` (``dashboard.common.queueing``), so a page costs a
count per model and distinct ``queued_at``, never a list of the backlog.
Reads only: nothing here writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db.models import Model
from django.utils import timezone

#: Work pending longer than this (seconds since it was queued) gets a note on its page.
WAIT_NOTE_AFTER_S = 5.0

Queue = Literal["short", "long"]

#: The models whose rows are the tasks of each queue, with their pending and running states (:func:`register`).
_MODELS: dict[Queue, list[tuple[type[Model], str, str]]] = {"short": [], "long": []}


def register(queue: Queue, model: type[Model], pending: str, running: str) -> None:
    """Count ``model``'s rows in ``pending`` and ``running`` as the work of ``queue`` (each feature's ``work``)."""
    entry = (model, pending, running)
    if entry not in _MODELS[queue]:
        _MODELS[queue].append(entry)


_NAMES: dict[Queue, str] = {
    "short": "experiment runs, sweep cells and search evaluations",
    "long": "packing analyses and trace imports",
}


@dataclass(frozen=True)
class Ahead:
    """The work ahead of one pending task in its queue."""

    running: int
    queued_before: int

    @property
    def total(self) -> int:
        return self.running + self.queued_before


class Backlog:
    """Counts of one queue's work, cached per ``queued_at`` for the rows of one page."""

    def __init__(self, queue: Queue) -> None:
        self.queue = queue
        self._running: int | None = None
        self._before: dict[datetime, int] = {}

    def running(self) -> int:
        if self._running is None:
            self._running = sum(
                model._default_manager.filter(status=run).count() for model, _, run in _MODELS[self.queue]
            )
        return self._running

    def queued_before(self, queued_at: datetime) -> int:
        if queued_at not in self._before:
            self._before[queued_at] = sum(
                model._default_manager.filter(status=pending, queued_at__lt=queued_at).count()
                for model, pending, _ in _MODELS[self.queue]
            )
        return self._before[queued_at]

    def ahead_of(self, queued_at: datetime) -> Ahead:
        return Ahead(running=self.running(), queued_before=self.queued_before(queued_at))


def _tasks(n: int) -> str:
    return f"{n} task{'' if n == 1 else 's'}"


def note(status: str, queued_at: datetime | None, backlog: Backlog, now: datetime | None = None) -> str:
    """The page's note for a task in ``status`` queued at ``queued_at``; empty unless it has waited a while.

    Work never queued (the broker was down when it was saved) is the
    queueing module's message on the page already, and gets none here.
    """
    if status != "pending" or queued_at is None:
        return ""
    now = now or timezone.now()
    if (now - queued_at).total_seconds() < WAIT_NOTE_AFTER_S:
        return ""
    ahead = backlog.ahead_of(queued_at)
    if ahead.total == 0:
        return (
            "waiting for a worker: nothing is ahead of this one, so no worker seems to take the "
            f"{backlog.queue} queue ({_NAMES[backlog.queue]}); start one (/docs/how-to/deploy-workers/)"
        )
    parts = []
    if ahead.running:
        parts.append(f"{ahead.running} running")
    if ahead.queued_before:
        parts.append(f"{ahead.queued_before} queued before it")
    return f"waiting for a worker: {_tasks(ahead.total)} ahead of this one ({', '.join(parts)})"


def notes(rows: Iterable[tuple[str, datetime | None]], queue: Queue, now: datetime | None = None) -> list[str]:
    """:func:`note` for each ``(status, queued_at)`` of one page, sharing one :class:`Backlog`."""
    backlog = Backlog(queue)
    now = now or timezone.now()
    return [note(status, queued_at, backlog, now) for status, queued_at in rows]
