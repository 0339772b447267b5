"""Celery tasks: thin adapters from an id to dashboard.services / dashboard.imports."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from dashboard import imports
from dashboard.services import search_coordinator, search_execution
from dashboard.services.execution import execute_run

log = logging.getLogger(__name__)


@shared_task(name="dashboard.run_simulation", ignore_result=True)
def run_simulation(run_id: int) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see execute_run)."""
    worker = run_simulation.request.hostname or ""
    return execute_run(run_id, worker=worker)


@shared_task(name="dashboard.import_trace", ignore_result=True)
def import_trace(upload_id: int) -> str:
    """Claim trace upload ``upload_id``, convert it with simcore.importer, store it (see imports.execute_import)."""
    worker = import_trace.request.hostname or ""
    return imports.execute_import(upload_id, worker=worker)


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

    The stale-heartbeat rule (dashboard.models.fail_lost_runs) leaves the work of
    live workers alone; pending work that was never queued is queued again
    (dashboard.queueing). See :mod:`dashboard.repair`.
    """
    from dashboard.repair import repair_once, start_repair_thread

    done = repair_once()
    runs, uploads = done.get("lost_runs", []), done.get("lost_imports", [])
    log.info(
        "start-up check for work lost by dead workers: %d run(s) %s, %d trace import(s) %s marked failed; requeued %s",
        len(runs),
        runs,
        len(uploads),
        uploads,
        done.get("requeued"),
    )
    start_repair_thread()
