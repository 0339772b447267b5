"""The capacity plans' Celery task: a thin adapter to dashboard.capacity.execution."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.capacity import execution
from dashboard.common.outages import retry_on_outage

# Bound and through retry_on_outage, as every task (dashboard.searches.tasks says why); the name is fixed.


@shared_task(bind=True, name="dashboard.capacity_probe", ignore_result=True)
def capacity_probe(self: Task, probe_id: int, give_back: int | None = None) -> str:
    """Claim one probe of a capacity plan (or its bounds), run it, store it, move the plan on."""
    worker = self.request.hostname or ""
    # An interrupted probe is not given back: the plans' repair queues it again once its heartbeat is stale.
    return retry_on_outage(self, lambda _give: execution.execute_probe(probe_id, worker=worker))
