"""The searches' Celery tasks: thin adapters to dashboard.searches.execution and .coordinator."""

from __future__ import annotations

from celery import Task, shared_task

from dashboard.common.outages import retry_on_outage
from dashboard.searches import coordinator, execution

# Every task is bound and goes through retry_on_outage: a database or broker outage retries it with
# backoff (dashboard.common.outages) instead of acknowledging it as done. ``give_back`` is set only by such a
# retry: the attempt the outage interrupted, handed back before claiming again. The task's name is fixed
# (``name=``): queued messages and dashboard.celery's routes (LONG_TASKS) know it, whatever module holds it.


@shared_task(bind=True, name="dashboard.evaluate_policy", ignore_result=True)
def evaluate_policy(self: Task, evaluation_id: int, give_back: int | None = None) -> str:
    """Claim one policy of a design-space search, simulate it, store it, move the search on (see execute_evaluation)."""
    worker = self.request.hostname or ""
    # An interrupted evaluation is not given back: the searches' repair queues it again once its heartbeat is stale.
    return retry_on_outage(self, lambda _give: execution.execute_evaluation(evaluation_id, worker=worker))


@shared_task(bind=True, name="dashboard.advance_search", ignore_result=True)
def advance_search(self: Task, search_id: int, give_back: int | None = None) -> str:
    """Move a design-space search on as far as its stored evaluations allow (see coordinator.advance)."""
    return retry_on_outage(self, lambda _give: coordinator.advance(search_id))
