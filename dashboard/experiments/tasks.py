"""The experiments' Celery task: a thin adapter from a run's id to dashboard.experiments.execution."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.common.limits import hard_time_limit_s
from dashboard.common.outages import retry_on_outage
from dashboard.experiments.execution import execute_run

# Every task is bound and goes through retry_on_outage: a database or broker outage retries it with
# backoff (dashboard.common.outages) instead of acknowledging it as done. ``give_back`` is set only by such a
# retry: the attempt the outage interrupted, handed back before claiming again. The task's name is fixed
# (``name=``): queued messages and dashboard.celery's routes (LONG_TASKS) know it, whatever module holds it.


@shared_task(bind=True, name="dashboard.run_simulation", ignore_result=True, time_limit=hard_time_limit_s())
def run_simulation(self: Task, run_id: int, give_back: int | None = None) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see execute_run)."""
    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: execute_run(run_id, worker=worker, give_back=give))
