"""The trace imports' Celery task: a thin adapter from an upload's id to dashboard.traces.imports."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.common.limits import hard_time_limit_s
from dashboard.common.outages import retry_on_outage
from dashboard.traces import imports

# Every task is bound and goes through retry_on_outage: a database or broker outage retries it with
# backoff (dashboard.common.outages) instead of acknowledging it as done. ``give_back`` is set only by such a
# retry: the attempt the outage interrupted, handed back before claiming again. The task's name is fixed
# (``name=``): queued messages and dashboard.celery's routes (LONG_TASKS) know it, whatever module holds it.


@shared_task(bind=True, name="dashboard.import_trace", ignore_result=True, time_limit=hard_time_limit_s())
def import_trace(self: Task, upload_id: int, give_back: int | None = None) -> str:
    """Claim trace upload ``upload_id``, convert it (simcore.traces.importer), store it (see imports.execute_import)."""
    worker = self.request.hostname or ""
    return retry_on_outage(self, lambda give: imports.execute_import(upload_id, worker=worker, give_back=give))
