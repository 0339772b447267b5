"""The one periodic repair: work lost by dead workers, and pending work whose message never arrived.

Every ``repair_every_s()`` seconds (a third of ``SIMCORE_WORKER_TIMEOUT_S``,
at most a minute) each worker's main process:

- marks failed the running runs and trace imports whose heartbeat is older
  than the timeout (:func:`dashboard.models.fail_lost_runs`,
  :func:`~dashboard.models.fail_lost_imports`): their worker died;
- queues again the pending work that was never queued (the broker was down)
  or was queued long ago (:func:`dashboard.queueing.requeue_stale`);
- puts back in the queue the design-space evaluations whose worker died, and
  moves on the searches whose current step is complete but whose coordinator
  pass was lost with a worker (:func:`dashboard.services.search_coordinator.repair_searches`).

It runs in the workers, never in a page: reads only read (STYLE.md habit 12).
A daemon thread of the worker's main process, started when the worker is
ready, so ``make run`` and the tests' real worker need no extra process (a
Celery beat would be one more process to start and keep alive). Several
workers repairing at once is safe: every change is a guarded conditional
update, and a duplicate queue message is claimed by one worker only.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connections

log = logging.getLogger(__name__)


def repair_every_s() -> float:
    return float(min(60.0, max(0.5, settings.SIMCORE_WORKER_TIMEOUT_S / 3)))


def repair_once() -> dict[str, Any]:
    """One pass; returns what it changed. Never raises for a database or broker problem."""
    from dashboard.models import fail_lost_imports, fail_lost_runs
    from dashboard.queueing import requeue_stale
    from dashboard.services.search_coordinator import repair_searches

    try:
        return {
            "lost_runs": fail_lost_runs(),
            "lost_imports": fail_lost_imports(),
            "requeued": requeue_stale(),
            "searches": repair_searches(),
        }
    except DatabaseError as e:  # a busy or briefly unreachable database: the next pass retries
        log.warning("periodic repair failed: %s", e)
        return {}
    finally:
        connections.close_all()  # this thread's connections only


def start_repair_thread() -> threading.Thread:
    """Run :func:`repair_once` every :func:`repair_every_s` seconds for the life of this process."""

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(repair_every_s()):
            done = repair_once()
            if done.get("lost_runs") or done.get("lost_imports"):
                log.info("periodic repair: %s", done)

    t = threading.Thread(target=loop, name="simcore-repair", daemon=True)
    t.start()
    return t
