"""Capacity plans on the platform: checking a request, storing it, cancelling it, reading it.

The plan itself is :mod:`simcore.planning`; the platform only moves its state
between the database and that package's pure steps, so a plan run here gives
the answers ``simcore capacity`` gives for the same spec:

- :func:`create_plan` (here) stores a plan and its round 0 (the bounds) and queues it;
- :func:`~dashboard.capacity.execution.execute_probe` (a worker) claims one probe,
  runs :func:`simcore.planning.probe` (or :func:`simcore.planning.prepare` for round 0),
  stores the result and calls the coordinator;
- :func:`~dashboard.capacity.coordinator.advance` (the coordinator) issues the next
  round (:func:`simcore.planning.next_requests`) once every probe of the current one is
  stored, and the plan (:func:`simcore.planning.finish`) once none is left.
"""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from dashboard.capacity import files, work
from dashboard.capacity.models import CapacityPlan, CapacityProbe, PlanPhase, ProbeStatus
from dashboard.common import waiting
from dashboard.common.models import ACTIVE, Status, Team, Visibility, move
from dashboard.common.rows import sharing_fields
from dashboard.common.units import STEPPED_TRANSITIONS
from dashboard.traces.models import ClusterUpload, TraceUpload
from simcore.core.errors import ParameterError, SimcoreError
from simcore.planning import PlanSpec, ProbeResult
from simcore.planning.plan import check_plan
from simcore.version import code_version

#: Plan transitions (dashboard.common.models.move). running -> running is a round: the coordinator's row lock
#: makes each happen once.
TRANSITIONS = STEPPED_TRANSITIONS

#: The command line's option names in simcore's messages, as the form's and the API's fields are called.
_FIELD_OF_OPTION = {
    "--max-machines": "max_machines",
    "--target": "target",
    "--resize": "resize",
    "--curve-points": "curve_points",
    "--schedulers": "schedulers",
    "--seeds": "seeds",
}
#: The fields a plan's request has besides the scenario's, in the order a message is matched against them.
PLAN_FIELDS = ("max_machines", "target", "resize", "curve_points", "schedulers", "seeds")


def web_message(message: str) -> str:
    """simcore's message with the command line's option names replaced by the fields' (``--target`` -> ``target``)."""
    for option, name in _FIELD_OF_OPTION.items():
        message = message.replace(option, name)
    return message


def field_of(message: str) -> str | None:
    """The request field a (web) message is about, else None."""
    if "statistic" in message and "target" in message:
        return "target"
    for name in PLAN_FIELDS:
        if message.startswith(name):
            return name
    if "smallest resize" in message or re.match(r"\d[\d,]* machines is below", message):
        return "max_machines"
    if message.startswith("trace ") and "requests resources" in message:  # experiments' check_resources
        return "workload"
    return None


def check_request(
    scenario: dict[str, Any],
    *,
    target: str,
    resize: str = "all",
    max_machines: int | None = None,
    curve_points: int = 0,
    cluster_upload: ClusterUpload | None = None,
    trace_upload: TraceUpload | None = None,
) -> tuple[PlanSpec, dict[str, Any]]:
    """A plan's request from the web, checked: the scenario's platform bounds and simcore's plan checks.

    ``scenario`` has ``cluster`` and ``workload`` (presets with ``params``; for an upload, the
    entries :func:`dashboard.traces.uploads.upload_specs` makes, with the upload given here; the
    caller checked the owner may use it), ``load``, ``hours``, ``schedulers`` and ``seeds``. Returns
    the spec (uploads by their scenario file names) and the checked scenario; every problem is a
    ParameterError naming the field (``target``, ``max_machines``, ``schedulers``, ``cluster``, ...).
    """
    from dashboard.experiments.services import check_resources, check_scenario

    uploads = {"cluster": cluster_upload, "workload": trace_upload}
    for part in ("cluster", "workload"):
        given = scenario.get(part) or {}
        if ("preset" in given) == (uploads[part] is not None):
            raise ParameterError(f"{part}: give a preset or an upload")
    load = scenario.get("load")
    workload = dict(scenario["workload"])
    workload.pop("classes", None)  # a plan replays the trace as recorded; the class table is the experiments'
    full = {
        "cluster": scenario["cluster"],
        "workload": workload,
        # A trace's load is its replay rate, None: as recorded (1, which simcore's scenario checks want a number for).
        "load": 1.0 if load is None and trace_upload is not None else load,
        "hours": scenario.get("hours"),
        "drain": False,
        "schedulers": list(scenario.get("schedulers") or []),
        "scheduler_params": {},
        "seeds": list(scenario.get("seeds") or []),
    }
    if not full["schedulers"]:
        raise ParameterError("schedulers: choose at least one scheduler")
    sc = check_scenario(full)  # unknown presets, schedulers, parameters; the platform's load and hours bounds
    check_resources(sc, cluster_upload, trace_upload)
    spec = PlanSpec(
        cluster=sc["cluster"].get("preset") or sc["cluster"]["file"],
        workload=sc["workload"].get("preset") or sc["workload"]["file"],
        schedulers=list(sc["schedulers"]),
        target=str(target).strip(),
        seeds=[int(s) for s in sc["seeds"]],
        resize=str(resize or "all").strip(),
        load=load if trace_upload is not None else sc["load"],
        hours=sc["hours"],
        max_machines=max_machines,
        curve_points=int(curve_points or 0),
        cluster_params=dict(sc["cluster"].get("params") or {}),
        workload_params=dict(sc["workload"].get("params") or {}),
    )
    # The cluster upload on this host's disk (the check builds the cluster; the trace is read by the workers).
    local, shown = files.runnable(spec, cluster_upload, None, workload=False)
    try:
        check_plan(local)
    except SimcoreError as e:
        raise ParameterError(web_message(files.without_paths(str(e), shown))) from None
    return spec, sc


def create_plan(
    owner: User,
    spec: PlanSpec,
    *,
    name: str = "",
    team: Team | None = None,
    visibility: str = Visibility.PRIVATE,
    forked_from: CapacityPlan | None = None,
    cluster_upload: ClusterUpload | None = None,
    trace_upload: TraceUpload | None = None,
) -> CapacityPlan:
    """Store a checked plan (:func:`check_request`) and its round 0 (the bounds); queue it after the commit."""
    shared = sharing_fields(owner, team, visibility)
    with transaction.atomic():
        plan = CapacityPlan.objects.create(
            name=name,
            **shared,
            forked_from=forked_from,
            spec=spec.to_dict(),
            cluster_upload=cluster_upload,
            trace_upload=trace_upload,
            cluster_label=(cluster_upload.name if cluster_upload is not None else spec.cluster)[:200],
            workload_label=(trace_upload.name if trace_upload is not None else spec.workload)[:200],
            target=spec.target[:200],
            code_version=code_version()[:100],
        )
        probe = CapacityProbe.objects.create(plan=plan, round=0, machines=0, seed=0, schedulers=[])
        transaction.on_commit(lambda: setattr(plan, "queued", work.enqueue_probes([probe.pk])))
    return plan


def spec_of(plan: CapacityPlan) -> PlanSpec:
    return PlanSpec.from_dict(dict(plan.spec))


def cancel_plan(plan: CapacityPlan) -> bool:
    """Cancel a pending or running plan; its running probes stop at their worker's next heartbeat."""
    if not plan.is_active:
        return False
    won = move(CapacityPlan, plan.pk, plan.status, Status.CANCELLED, TRANSITIONS, finished_at=timezone.now())
    if won:
        CapacityProbe.objects.filter(plan=plan, status=ProbeStatus.PENDING).update(status=ProbeStatus.CANCELLED)
        plan.status = Status.CANCELLED
    return won


def fail_plan(plan_id: int, message: str) -> bool:
    status = CapacityPlan.objects.filter(pk=plan_id).values_list("status", flat=True).first()
    if status not in ACTIVE:
        return False
    won = move(
        CapacityPlan, plan_id, status, Status.FAILED, TRANSITIONS, error=message[:2000], finished_at=timezone.now()
    )
    if won:
        CapacityProbe.objects.filter(plan_id=plan_id, status=ProbeStatus.PENDING).update(status=ProbeStatus.CANCELLED)
    return won


# ---------------------------------------------------------------------------- reading


def probe_results(plan: CapacityPlan) -> list[ProbeResult]:
    """Every stored probe result of the plan (the bounds of round 0 excluded), in the order they were issued."""
    rows = CapacityProbe.objects.filter(plan=plan, round__gt=0, status=ProbeStatus.DONE).order_by("round", "id")
    return [ProbeResult.from_dict(r) for r in rows.values_list("result", flat=True) if r]


def progress_payload(plan: CapacityPlan) -> dict[str, Any]:
    """What the plan page's poller reads: status, phase, round, probes done of the round and of the plan, bounds."""
    plan.refresh_from_db()
    rows = list(
        CapacityProbe.objects.filter(plan=plan).values_list("round", "status", "queued_at").order_by("round", "id")
    )
    current = [(st, q) for r, st, q in rows if r == plan.round]
    done_round = sum(1 for st, _ in current if st == ProbeStatus.DONE)
    probes_done = sum(1 for r, st, _ in rows if r > 0 and st == ProbeStatus.DONE)
    running = any(st == ProbeStatus.RUNNING for st, _ in current)
    queued = [q for st, q in current if st == ProbeStatus.PENDING and q is not None]
    wait = "" if running or not queued else waiting.notes([("pending", min(queued))], "short")[0]
    b = plan.bounds or {}
    bounds = (
        {
            "given": b.get("given"),
            "floor": b.get("floor"),
            "ceiling": b.get("ceiling"),
            "compaction": (b.get("compaction") or {}).get("machines"),
            "lambda_star": (b.get("lambda_star") or {}).get("machines"),
        }
        if b
        else None
    )
    return {
        "id": plan.pk,
        "status": plan.status,
        "phase": plan.phase,
        "round": plan.search_round,
        "probes_done": probes_done,
        "round_done": done_round,
        "round_total": len(current),
        "wanted": plan.wanted,
        "bounds": bounds,
        "answers": {p["scheduler"]: p["machines"] for p in (plan.result or {}).get("plans", [])},
        "note": plan.note,
        "error": plan.error,
        "waiting": wait,
    }


def phase_text(plan: CapacityPlan) -> str:
    """One line of where the plan stands, for the page."""
    if plan.phase == PlanPhase.BOUNDS:
        return "computing the bounds (compaction of a snapshot, lambda*)"
    if plan.phase == PlanPhase.SEARCH:
        return f"round {plan.search_round}: {plan.wanted}"
    if plan.phase == PlanPhase.CURVE:
        return f"the curve's extra sizes: {plan.wanted}"
    return "done"
