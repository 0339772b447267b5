"""The one periodic repair: work lost by dead workers, and pending work whose message never arrived.

Every ``repair_every_s()`` seconds (a third of ``SIMCORE_WORKER_TIMEOUT_S``,
at most 15 s) each worker's main process:

- queues again, or after SIMCORE_RUN_MAX_ATTEMPTS attempts marks failed, the
  running runs and trace imports whose heartbeat is older than the timeout:
  their worker died (:mod:`dashboard.recovery`);
- the same for packing analyses (:func:`dashboard.recovery.recover_lost_analyses`);
- queues again the pending work that was never queued (the broker was down)
  or whose message was lost with a broker restart (:func:`dashboard.queueing.requeue_stale`:
  noticed within a minute).
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


#: Longest time between two passes: a broker restarted empty is noticed within this plus
#: dashboard.queueing.LOST_MESSAGE_GRACE_S (well within a minute).
MAX_REPAIR_EVERY_S = 15.0


def repair_every_s() -> float:
    return float(min(MAX_REPAIR_EVERY_S, max(0.5, settings.SIMCORE_WORKER_TIMEOUT_S / 3)))


def repair_once() -> dict[str, Any]:
    """One pass; returns what it changed. Never raises for a database or broker problem."""
    from dashboard.queueing import enqueue_analyses, enqueue_import, enqueue_runs, requeue_stale
    from dashboard.recovery import recover_lost_analyses, recover_lost_imports, recover_lost_runs
    from dashboard.services.search_coordinator import repair_searches

    try:
        runs, imports = recover_lost_runs(), recover_lost_imports()
        analyses = recover_lost_analyses()
        # Sent before requeue_stale looks: a lost attempt queued again here is not sent twice.
        # When the broker is down they stay unqueued, and a later pass sends them.
        enqueue_runs(runs.retried)
        for pk in imports.retried:
            enqueue_import(pk)
        enqueue_analyses(analyses.retried)
        return {
            "runs_retried": runs.retried,
            "runs_failed": runs.failed,
            "imports_retried": imports.retried,
            "imports_failed": imports.failed,
            "analyses_retried": analyses.retried,
            "analyses_failed": analyses.failed,
            "requeued": requeue_stale(),
            "searches": repair_searches(),
        }
    except DatabaseError as e:  # a busy or briefly unreachable database: the next pass retries
        log.warning("periodic repair failed: %s", e)
        return {}
    finally:
        connections.close_all()  # this thread's connections only


def changed(done: dict[str, Any]) -> bool:
    """Whether a pass found lost work or lost messages (worth a line in the worker's log)."""
    keys = ("runs_retried", "runs_failed", "imports_retried", "imports_failed", "analyses_retried", "analyses_failed")
    lost = any(done.get(k) for k in keys)
    return lost or any((done.get("requeued") or {}).values()) or any((done.get("searches") or {}).values())


def start_repair_thread() -> threading.Thread:
    """Run :func:`repair_once` every :func:`repair_every_s` seconds for the life of this process."""

    def loop() -> None:
        stop = threading.Event()
        while not stop.wait(repair_every_s()):
            done = repair_once()
            if changed(done):
                log.info("periodic repair: %s", done)

    t = threading.Thread(target=loop, name="simcore-repair", daemon=True)
    t.start()
    return t
