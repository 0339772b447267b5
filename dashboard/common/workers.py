"""Which workers are alive, with their memory limits: each worker publishes itself, the pages and the routing read.

A worker's main process writes its :class:`~dashboard.common.models.WorkerHost` row (node name,
SIMCORE_WORKER_MEMORY_MB, the queues it consumes) when it is ready and at every periodic repair pass
(dashboard.common.repair, every few seconds), and deletes it when it stops. A row not written for
:func:`live_after_s` is a worker gone (killed, or its machine stopped): it no longer counts.

The database rather than Celery's broadcasts: a page reads it in one query, where asking the workers
costs a second of waiting for their answers (dashboard.common.queueing.held_work), and a worker on
another host reaches it like every other shared state.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from dashboard.common import repair
from dashboard.common.models import WorkerHost

log = logging.getLogger(__name__)

#: This process's worker, once it is ready: (node name, queues); None outside a worker's main process.
_me: tuple[str, list[str]] | None = None


def live_after_s() -> float:
    """A worker not heard of for this long is gone: three repair passes (at most 45 s)."""
    return 3 * repair.repair_every_s()


def remember_me(sender: Any = None, **_: Any) -> None:
    """At worker start-up (Celery's ``worker_ready``; ``sender`` is its consumer): publish this worker."""
    global _me
    hostname = str(getattr(sender, "hostname", "") or "")
    if not hostname:
        return
    queues = [str(q.name) for q in getattr(getattr(sender, "task_consumer", None), "queues", []) or []]
    _me = (hostname, queues)
    try:
        publish()
    except DatabaseError as e:  # a busy database (or one not migrated yet): the next repair pass publishes
        log.warning("could not publish this worker: %s", e)


def publish(now: datetime | None = None) -> dict[str, Any]:
    """Write this worker's row (a repair step: every pass); nothing outside a worker."""
    if _me is None:
        return {}
    name, queues = _me
    WorkerHost.objects.update_or_create(
        node=name[:200],
        defaults={
            "memory_mb": settings.SIMCORE_WORKER_MEMORY_MB,
            "queues": ",".join(queues),
            "heard_at": now or timezone.now(),
        },
    )
    return {}


def forget_me(**_: Any) -> None:
    """At worker shutdown (Celery's ``worker_shutdown``): remove this worker's row, so no page lists it."""
    if _me is None:
        return
    try:
        WorkerHost.objects.filter(node=_me[0][:200]).delete()
    except DatabaseError as e:  # it will look gone after live_after_s anyway
        log.warning("could not remove this worker's row: %s", e)


@dataclass(frozen=True)
class Live:
    """A live worker: its node name, memory limit (0: none) and queues."""

    name: str
    memory_mb: int
    queues: tuple[str, ...]

    def fits(self, needs_mb: int) -> bool:
        """Whether one of its processes has ``needs_mb`` (a worker without a limit takes anything)."""
        return self.memory_mb == 0 or self.memory_mb >= needs_mb


def live(queue: str | None = None, now: datetime | None = None) -> list[Live]:
    """The live workers (that consume ``queue``, when given), by name."""
    now = now or timezone.now()
    rows = WorkerHost.objects.filter(heard_at__gte=now - timedelta(seconds=live_after_s()))
    out = [Live(w.node, w.memory_mb, tuple(q for q in w.queues.split(",") if q)) for w in rows]
    return [w for w in out if queue is None or queue in w.queues]


repair.register(repair.LOST_WORK, publish)
