"""The packing analyses' Celery task: a thin adapter from an analysis' id to dashboard.packing.services."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.common.outages import retry_on_outage
from dashboard.packing.services import execute_analysis

# Every task is bound and goes through retry_on_outage: a database or broker outage retries it with
# backoff (dashboard.common.outages) instead of acknowledging it as done. ``give_back`` is set only by such a
# retry: the attempt the outage interrupted, handed back before claiming again. The task's name is fixed
# (``name=``): queued messages and dashboard.celery's routes (LONG_TASKS) know it, whatever module holds it.


@shared_task(bind=True, name="dashboard.run_packing_analysis", ignore_result=True)
def run_packing_analysis(self: Task, analysis_id: int, give_back: int | None = None) -> str:
    """Claim packing analysis ``analysis_id``, run simcore.packing on its snapshot, store the results."""
    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: execute_analysis(analysis_id, worker=worker, give_back=give))
