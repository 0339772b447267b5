"""Design-space evaluations as background work: how they are queued, which queue they wait in, and the
searches' own repair (evaluations whose worker died, coordinator passes lost with a worker).

Registered with common's queueing, waiting and repair (dashboard.common); the app config imports this module.
"""

from __future__ import annotations

from typing import Any

from dashboard.common import queueing, repair, waiting
from dashboard.common.models import Status
from dashboard.searches.models import EvalStatus, SearchEvaluation

EVALUATIONS = queueing.register(
    queueing.Work(
        kind="evaluations",
        task="dashboard.evaluate_policy",
        model=SearchEvaluation,
        pending=EvalStatus.PENDING,
        pending_rows=lambda: SearchEvaluation.objects.filter(
            status=EvalStatus.PENDING, search__status__in=(Status.PENDING, Status.RUNNING)
        ),
        # Evaluations never queued or queued long ago are the searches' own repair's (repair_searches).
        slow_rule=False,
    )
)
waiting.register("short", SearchEvaluation, EvalStatus.PENDING, EvalStatus.RUNNING)

#: The Celery name of a coordinator pass (dashboard.searches.tasks.advance_search).
ADVANCE_TASK = "dashboard.advance_search"


def enqueue_evaluations(evaluation_ids: list[int]) -> bool:
    """Queue one task per design-space evaluation; False (and nothing raised) when the broker cannot be reached."""
    return queueing.enqueue(EVALUATIONS.kind, evaluation_ids)


def enqueue_advance(search_id: int) -> bool:
    """Queue a coordinator pass of a search (when nothing else would trigger one); False when the broker is down."""
    return queueing.send(ADVANCE_TASK, [search_id])


def _repair() -> dict[str, Any]:
    from dashboard.searches.coordinator import repair_searches  # the coordinator queues through this module

    return {"searches": repair_searches()}


repair.register(repair.AFTER_REQUEUE, _repair)
