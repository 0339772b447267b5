"""Celery tasks: thin adapters from an id to dashboard.services / dashboard.imports."""

from __future__ import annotations

import logging
from typing import Any

from celery import Task, shared_task
from celery.signals import worker_ready
from django.conf import settings

from dashboard import imports
from dashboard.outages import retry_on_outage
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


# Every task is bound and goes through retry_on_outage: a database or broker outage retries it with
# backoff (dashboard.outages) instead of acknowledging it as done. ``give_back`` is set only by such a
# retry: the attempt the outage interrupted, handed back before claiming again.


@shared_task(bind=True, name="dashboard.run_simulation", ignore_result=True, time_limit=hard_time_limit_s())
def run_simulation(self: Task, run_id: int, give_back: int | None = None) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see execute_run)."""
    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: execute_run(run_id, worker=worker, give_back=give))


@shared_task(bind=True, name="dashboard.import_trace", ignore_result=True, time_limit=hard_time_limit_s())
def import_trace(self: Task, upload_id: int, give_back: int | None = None) -> str:
    """Claim trace upload ``upload_id``, convert it (simcore.traces.importer), store it (see imports.execute_import)."""
    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: imports.execute_import(upload_id, worker=worker, give_back=give))


@shared_task(bind=True, name="dashboard.run_packing_analysis", ignore_result=True)
def run_packing_analysis(self: Task, analysis_id: int, give_back: int | None = None) -> str:
    """Claim packing analysis ``analysis_id``, run simcore.packing on its snapshot, store the results."""
    from dashboard.services.packing import execute_analysis

    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: execute_analysis(analysis_id, worker=worker, give_back=give))


@shared_task(bind=True, name="dashboard.evaluate_policy", ignore_result=True)
def evaluate_policy(self: Task, evaluation_id: int, give_back: int | None = None) -> str:
    """Claim one policy of a design-space search, simulate it, store it, move the search on (see execute_evaluation)."""
    worker = self.request.hostname or ""
    # An interrupted evaluation is not given back: the searches' repair queues it again once its heartbeat is stale.
    return retry_on_outage(self, lambda _give: search_execution.execute_evaluation(evaluation_id, worker=worker))


@shared_task(bind=True, name="dashboard.advance_search", ignore_result=True)
def advance_search(self: Task, search_id: int, give_back: int | None = None) -> str:
    """Move a design-space search on as far as its stored evaluations allow (see search_coordinator.advance)."""
    return retry_on_outage(self, lambda _give: search_coordinator.advance(search_id))


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
