"""Capacity probes as background work: how they are queued, which queue they wait in, and the plans' own repair
(probes whose worker died, coordinator passes lost with a worker).

Registered with common's queueing, waiting and repair (dashboard.common); the app config imports this module.
"""

from __future__ import annotations

from typing import Any

from dashboard.capacity.models import CapacityProbe, ProbeStatus
from dashboard.common import queueing, repair, waiting
from dashboard.common.models import ACTIVE

PROBES = queueing.register(
    queueing.Work(
        kind="capacity probes",
        task="dashboard.capacity_probe",
        model=CapacityProbe,
        pending=ProbeStatus.PENDING,
        pending_rows=lambda: CapacityProbe.objects.filter(status=ProbeStatus.PENDING, plan__status__in=ACTIVE),
        # Probes never queued or queued long ago are the plans' own repair's (repair_plans).
        slow_rule=False,
    )
)
# A probe is a simulation run at one size (seconds on a small plan): the short queue, as search evaluations.
waiting.register("short", CapacityProbe, ProbeStatus.PENDING, ProbeStatus.RUNNING)


def enqueue_probes(probe_ids: list[int]) -> bool:
    """Queue one task per probe; False (and nothing raised) when the broker cannot be reached."""
    return queueing.enqueue(PROBES.kind, probe_ids)


def _repair() -> dict[str, Any]:
    from dashboard.capacity.coordinator import repair_plans  # the coordinator queues through this module

    return {"capacity": repair_plans()}


repair.register(repair.AFTER_REQUEUE, _repair)
