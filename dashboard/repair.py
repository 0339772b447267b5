"""The one periodic repair: work lost by dead workers, and pending work whose message never arrived.

Every ``repair_every_s()`` seconds (a third of ``SIMCORE_WORKER_TIMEOUT_S``,
at most a minute) each worker's main process:

- queues again, or after SIMCORE_RUN_MAX_ATTEMPTS attempts marks failed, the
  running runs and trace imports whose heartbeat is older than the timeout:
  their worker died (:mod:`dashboard.recovery`);
- marks failed the running packing analyses whose heartbeat is older than the
  timeout (:func:`dashboard.packing_models.fail_lost_analyses`): re-run one by starting it again;
- queues again the pending work that was never queued (the broker was down)
  or was queued long ago (:func:`dashboard.queueing.requeue_stale`): its
  message may have been lost with a broker restart.
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
    from dashboard.packing_models import fail_lost_analyses
    from dashboard.queueing import enqueue_import, enqueue_runs, requeue_stale
    from dashboard.recovery import recover_lost_imports, recover_lost_runs
    from dashboard.services.search_coordinator import repair_searches

    try:
        runs, imports = recover_lost_runs(), recover_lost_imports()
        analyses = fail_lost_analyses()
        # Sent before requeue_stale looks: a lost attempt queued again here is not sent twice.
        # When the broker is down they stay unqueued, and a later pass sends them.
        enqueue_runs(runs.retried)
        for pk in imports.retried:
            enqueue_import(pk)
        return {
            "runs_retried": runs.retried,
            "runs_failed": runs.failed,
            "imports_retried": imports.retried,
            "imports_failed": imports.failed,
            "lost_analyses": analyses,
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
    keys = ("runs_retried", "runs_failed", "imports_retried", "imports_failed", "lost_analyses")
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
