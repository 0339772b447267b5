"""The one periodic repair: work lost by dead workers, and pending work whose message never arrived.

Every ``repair_every_s()`` seconds (a third of ``SIMCORE_WORKER_TIMEOUT_S``,
at most 15 s) each worker's main process:

- queues again, or after SIMCORE_RUN_MAX_ATTEMPTS attempts marks failed, the
  running runs, trace imports and packing analyses whose heartbeat is older than the timeout:
  their worker died (:mod:`dashboard.common.recovery`; each feature's ``work`` module);
- queues again the pending work that was never queued (the broker was down)
  or whose message was lost with a broker restart (:func:`dashboard.common.queueing.requeue_stale`:
  noticed within a minute).
- puts back in the queue the design-space evaluations whose worker died, and
  moves on the searches whose current step is complete but whose coordinator
  pass was lost with a worker (:func:`dashboard.searches.coordinator.repair_searches`).

The features register their steps (:func:`register`) from their ``work`` modules, which the app config
imports: this module imports no feature.

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
from collections.abc import Callable
from typing import Any, Literal

from django.conf import settings
from django.db import DatabaseError, connections

log = logging.getLogger(__name__)


#: Longest time between two passes: a broker restarted empty is noticed within this plus
#: dashboard.common.queueing.LOST_MESSAGE_GRACE_S (well within a minute).
MAX_REPAIR_EVERY_S = 15.0


def repair_every_s() -> float:
    return float(min(MAX_REPAIR_EVERY_S, max(0.5, settings.SIMCORE_WORKER_TIMEOUT_S / 3)))


#: When a step runs: lost work first (what it queues again is not sent twice by requeue_stale), then
#: requeue_stale, then the steps that look at what is queued (the searches' repair).
Stage = Literal["lost work", "after requeue"]
LOST_WORK: Stage = "lost work"
AFTER_REQUEUE: Stage = "after requeue"

Step = Callable[[], dict[str, Any]]
_STEPS: dict[Stage, list[Step]] = {LOST_WORK: [], AFTER_REQUEUE: []}


def register(stage: Stage, step: Step) -> None:
    """Run ``step`` at ``stage`` of every pass; its dict is merged into the pass's report."""
    if step not in _STEPS[stage]:
        _STEPS[stage].append(step)


def repair_once() -> dict[str, Any]:
    """One pass; returns what it changed. Never raises for a database or broker problem."""
    from dashboard.common.queueing import requeue_stale

    try:
        done: dict[str, Any] = {}
        for step in _STEPS[LOST_WORK]:
            done.update(step())
        done["requeued"] = requeue_stale()
        for step in _STEPS[AFTER_REQUEUE]:
            done.update(step())
        return done
    except DatabaseError as e:  # a busy or briefly unreachable database: the next pass retries
        log.warning("periodic repair failed: %s", e)
        return {}
    finally:
        connections.close_all()  # this thread's connections only


def changed(done: dict[str, Any]) -> bool:
    """Whether a pass found lost work or lost messages (worth a line in the worker's log)."""
    lost = any(v for k, v in done.items() if k.endswith(("_retried", "_failed")))
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


def start_repair(**_: Any) -> None:
    """At worker start-up, repair at once (a restarted machine's runs, say), then every few seconds.

    Connected to Celery's ``worker_ready`` by dashboard.tasks. The stale-heartbeat rule
    (dashboard.common.recovery) leaves the work of live workers alone and queues lost work again
    (or fails it once its attempts are used up); pending work whose message was never sent or was
    lost is queued again (dashboard.common.queueing).
    """
    done = repair_once()
    log.info(
        "start-up check for work lost by dead workers: runs queued again %s, failed %s; "
        "trace imports queued again %s, failed %s; requeued %s",
        done.get("runs_retried", []),
        done.get("runs_failed", []),
        done.get("imports_retried", []),
        done.get("imports_failed", []),
        done.get("requeued"),
    )
    start_repair_thread()
