"""Celery tasks: thin adapters from an id to dashboard.services / dashboard.imports."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from dashboard import imports
from dashboard.services import search_coordinator, search_execution
from dashboard.services.execution import execute_run

log = logging.getLogger(__name__)


def hard_time_limit_s() -> float | None:
    """Celery's hard limit: a minute past SIMCORE_RUN_TIME_LIMIT_S, for a task stuck where the heartbeat cannot stop it.

    The heartbeat fails the work with the limit's message within seconds of
    the limit (dashboard.limits); this only frees a pool process whose task
    sits in one long C call.
    """
    limit = settings.SIMCORE_RUN_TIME_LIMIT_S
    return float(limit + HARD_LIMIT_GRACE_S) if limit else None


#: Seconds between the time limit and Celery's hard kill of the pool process.
HARD_LIMIT_GRACE_S = 60


@shared_task(name="dashboard.run_simulation", ignore_result=True, time_limit=hard_time_limit_s())
def run_simulation(run_id: int) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see execute_run)."""
    worker = run_simulation.request.hostname or ""
    return execute_run(run_id, worker=worker)


@shared_task(name="dashboard.import_trace", ignore_result=True, time_limit=hard_time_limit_s())
def import_trace(upload_id: int) -> str:
    """Claim trace upload ``upload_id``, convert it (simcore.traces.importer), store it (see imports.execute_import)."""
    worker = import_trace.request.hostname or ""
    return imports.execute_import(upload_id, worker=worker)


@shared_task(name="dashboard.run_packing_analysis", ignore_result=True)
def run_packing_analysis(analysis_id: int) -> str:
    """Claim packing analysis ``analysis_id``, run simcore.packing on its snapshot, store the results."""
    from dashboard.services.packing import execute_analysis

    worker = run_packing_analysis.request.hostname or ""
    return execute_analysis(analysis_id, worker=worker)


@shared_task(name="dashboard.evaluate_policy", ignore_result=True)
def evaluate_policy(evaluation_id: int) -> str:
    """Claim one policy of a design-space search, simulate it, store it, move the search on (see execute_evaluation)."""
    worker = evaluate_policy.request.hostname or ""
    return search_execution.execute_evaluation(evaluation_id, worker=worker)


@shared_task(name="dashboard.advance_search", ignore_result=True)
def advance_search(search_id: int) -> str:
    """Move a design-space search on as far as its stored evaluations allow (see search_coordinator.advance)."""
    return search_coordinator.advance(search_id)


@worker_ready.connect
def start_repair(**_: Any) -> None:
    """At worker start-up, repair at once (a restarted machine's runs, say), then every few seconds.

    The stale-heartbeat rule (dashboard.recovery) leaves the work of live
    workers alone and queues lost work again (or fails it once its attempts
    are used up); pending work whose message was never sent or was lost is
    queued again (dashboard.queueing). See :mod:`dashboard.repair`.
    """
    from dashboard.repair import repair_once, start_repair_thread

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
