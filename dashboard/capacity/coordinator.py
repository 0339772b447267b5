"""The coordinator of capacity plans: it issues a plan's next round once every probe of its current one is stored.

It holds no state in memory: each pass reads the plan's stored probes and asks
:func:`simcore.planning.next_requests` (the pure step ``simcore capacity``'s
``make_plan`` also takes) what comes next: a round of probes, the curve's extra
sizes, or nothing, and then the plan is :func:`simcore.planning.finish`'s. A pass
holds the plan's row lock (``SELECT ... FOR UPDATE``) and a round's probes are unique
per ``(plan, round, machines, seed)``, so the last probes of a round finishing on two
workers at once, a duplicate task or the periodic repair issue the next round once.
:func:`repair_plans` is the workers' periodic repair for plans.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from dashboard.capacity import files, work
from dashboard.capacity.models import CapacityPlan, CapacityProbe, PlanPhase, ProbeStatus
from dashboard.capacity.services import fail_plan, probe_results, spec_of, web_message
from dashboard.common import units
from dashboard.common.heartbeat import clean_json
from dashboard.common.models import Status
from simcore.core.errors import SimcoreError
from simcore.planning import finish, next_requests, unreachable

#: Longest "wanted" text kept on the plan row.
WANTED_CHARS = 2000


def _wanted_text(wanted: dict[int, list[str]]) -> str:
    return ", ".join(f"{size:,} ({', '.join(names)})" for size, names in sorted(wanted.items()))[:WANTED_CHARS]


def advance(plan_id: int) -> str:
    """Move the plan on as far as its stored probes allow; safe to call at any time, from anywhere.

    Returns ``waiting`` (probes of the round are still to come), ``next`` (a round was issued),
    ``finished``, ``failed``, or the plan's status if it had ended.
    """
    queued: list[int] = []
    with transaction.atomic():
        state = _step(plan_id, queued)
    if queued:
        transaction.on_commit(lambda: work.enqueue_probes(queued))
    return state


def _step(plan_id: int, queued: list[int]) -> str:
    plan = CapacityPlan.objects.select_for_update().filter(pk=plan_id).first()
    if plan is None:
        return "missing"
    if not plan.is_active:
        return str(plan.status)
    current = list(CapacityProbe.objects.filter(plan=plan, round=plan.round))
    bad = [p for p in current if p.status in (ProbeStatus.FAILED, ProbeStatus.CANCELLED)]
    if bad:
        fail_plan(plan.pk, bad[0].error or f"probe {bad[0].pk} of round {plan.round} could not be run")
        return Status.FAILED
    if not current or any(p.status != ProbeStatus.DONE for p in current):
        return "waiting"
    now = timezone.now()
    if plan.round == 0:
        plan.bounds = current[0].result
    spec = spec_of(plan)
    results = probe_results(plan)
    shown: dict[str, str] = {}
    try:
        step = next_requests(spec, plan.bounds or {}, results)
        if step.done:
            started = plan.started_at or plan.created
            # finish builds the cluster (the answers' counts per configuration): an upload's file on this host.
            local, shown = files.runnable_spec(plan, spec)
            out = finish(local, plan.bounds or {}, results, (now - started).total_seconds())
            out["cluster"], out["workload"] = spec.cluster, spec.workload  # the stored names, not this host's paths
    except SimcoreError as e:
        fail_plan(plan.pk, web_message(files.without_paths(str(e), shown)))
        return Status.FAILED
    if step.done:
        plan.result = clean_json(out)
        plan.note = unreachable(out) or ""
        plan.status = Status.FINISHED
        plan.phase = PlanPhase.DONE
        plan.wanted = ""
        plan.finished_at = now
        plan.save(update_fields=["bounds", "result", "note", "status", "phase", "wanted", "finished_at"])
        return Status.FINISHED
    nxt = plan.round + 1
    CapacityProbe.objects.bulk_create(
        [
            CapacityProbe(plan=plan, round=nxt, machines=r.machines, seed=r.seed, schedulers=list(r.schedulers))
            for r in step.requests
        ]
    )
    queued += list(
        CapacityProbe.objects.filter(plan=plan, round=nxt, status=ProbeStatus.PENDING).values_list("id", flat=True)
    )
    plan.round = nxt
    plan.search_round = step.rounds
    plan.phase = PlanPhase.SEARCH if step.phase == "search" else PlanPhase.CURVE
    plan.wanted = _wanted_text(step.wanted)
    plan.status = Status.RUNNING
    plan.save(update_fields=["bounds", "round", "search_round", "phase", "wanted", "status"])
    return "next"


# ---------------------------------------------------------------------------- repair


#: A plan's probes as units of work (dashboard.common.units): claimed, stored and repaired as evaluations are.
UNITS = units.Units(
    unit=CapacityProbe,
    parent=CapacityPlan,
    parent_field="plan",
    unit_noun="probe",
    fail_parent=fail_plan,
    # looked up when called: tests and the repair see the current functions
    advance=lambda plan_id: advance(plan_id),
    enqueue=lambda ids: work.enqueue_probes(ids),
)


def repair_plans(now: datetime | None = None) -> dict[str, Any]:
    """Requeue probes of dead workers and never-queued ones; advance plans nobody advanced.

    A probe whose heartbeat is older than ``SIMCORE_WORKER_TIMEOUT_S`` goes back to pending and is
    queued again (a probe is a pure function of its spec, size and seed: its result is the same),
    unless it already cost SIMCORE_RUN_MAX_ATTEMPTS workers: then it fails its plan with the
    lost-worker message (:func:`dashboard.common.units.repair`).
    """
    return units.repair(UNITS, now)
