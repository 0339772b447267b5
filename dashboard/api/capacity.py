"""API views of capacity plans: thin adapters over dashboard.common.access and dashboard.capacity.services."""

from __future__ import annotations

from typing import Any, cast

from rest_framework.exceptions import ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from dashboard.api import capacity_serializers as s
from dashboard.api import owned
from dashboard.api.views import _team
from dashboard.capacity import downloads as capacity_downloads
from dashboard.capacity import files
from dashboard.capacity.access import get_plan_for_user, visible_plans
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import cancel_plan, check_request, create_plan, field_of, progress_payload
from dashboard.common import access
from dashboard.traces.models import ClusterUpload, TraceUpload, Upload
from dashboard.traces.uploads import upload_specs
from simcore.core.errors import SimcoreError


def _where(message: str) -> dict[str, Any]:
    """A simcore message as a validation error under the request field it names."""
    name = field_of(message)
    if name == "workload":
        return {"scenario": {"workload": [message]}}
    if name is not None:
        return {name: [message]}
    for part in ("cluster", "workload"):
        if message.startswith(part) or f"{part} preset" in message or f"{part} '" in message:
            return {"scenario": {part: [message]}}
    if message.startswith("load") or message.startswith("hours"):
        return {"scenario": {message.split(" ", 1)[0]: [message]}}
    return {"non_field_errors": [message]}


def _uploads(
    request: Request, scenario: dict[str, Any], source: CapacityPlan | None
) -> tuple[dict[str, Any], ClusterUpload | None, TraceUpload | None]:
    """The scenario with its uploads resolved, as experiments' API resolves them: the caller's, or ``source``'s."""
    allowed = dict(zip(("cluster", "workload"), files.uploads_of(source), strict=True)) if source else {}
    picked: dict[str, Upload | None] = {"cluster": None, "workload": None}
    sc = dict(scenario)
    for part, model in (("cluster", ClusterUpload), ("workload", TraceUpload)):
        given = dict(sc[part])
        if "upload" not in given:
            continue
        up: Upload | None = (
            model.objects.filter(pk=given["upload"], owner=access.signed_in(request)).defer("content_gz").first()
        )
        other = allowed.get(part)
        if up is None and other is not None and other.pk == given["upload"]:
            up = other
        if up is None:
            raise ValidationError({"scenario": {part: {"upload": [f"no {part} upload {given['upload']} of yours"]}}})
        if isinstance(up, TraceUpload) and not up.is_ready:
            why = f"trace upload {up.pk} is {up.status}; only a ready trace can be used"
            raise ValidationError({"scenario": {part: {"upload": [why]}}})
        picked[part] = up
    cu = cast(ClusterUpload | None, picked["cluster"])
    tu = cast(TraceUpload | None, picked["workload"])
    sc.update(upload_specs(cu, tu))
    return sc, cu, tu


def _start(request: Request, data: dict[str, Any], source: CapacityPlan | None = None) -> Response:
    ser = s.PlanCreateSerializer(data=data)
    ser.is_valid(raise_exception=True)
    d = ser.validated_data
    scenario, cu, tu = _uploads(request, dict(d["scenario"]), source)
    scenario = {**scenario, "schedulers": d["schedulers"], "seeds": d["seeds"]}
    if tu is not None and "load" not in cast(dict[str, Any], data.get("scenario") or {}):
        scenario["load"] = None  # a trace is replayed as recorded unless a rate is given
    try:
        spec, _ = check_request(
            scenario,
            target=d["target"],
            resize=d["resize"],
            max_machines=d["max_machines"],
            curve_points=d["curve_points"],
            cluster_upload=cu,
            trace_upload=tu,
        )
    except SimcoreError as e:
        raise ValidationError(_where(str(e))) from None
    plan = create_plan(
        access.signed_in(request),
        spec,
        name=d["name"],
        team=_team(request, d["team"]),
        visibility=d["visibility"],
        forked_from=source,
        cluster_upload=cu,
        trace_upload=tu,
    )
    return owned.created(request, s.PlanSerializer, plan)


def _request_of(plan: CapacityPlan) -> dict[str, Any]:
    """A plan as a creation request (uploads by id): the base of a fork."""
    spec = plan.spec
    scenario: dict[str, Any] = {
        "cluster": {"preset": spec["cluster"], "params": spec.get("cluster_params") or {}},
        "workload": {"preset": spec["workload"], "params": spec.get("workload_params") or {}},
        "load": spec.get("load") if spec.get("load") is not None else 0.9,
        "hours": spec.get("hours"),
    }
    if plan.cluster_upload_id:
        scenario["cluster"] = {"upload": plan.cluster_upload_id}
    if plan.trace_upload_id:
        scenario["workload"] = {"upload": plan.trace_upload_id}
        if spec.get("load") is None:
            del scenario["load"]
    return {
        "scenario": scenario,
        "schedulers": list(spec["schedulers"]),
        "seeds": list(spec["seeds"]),
        "target": spec["target"],
        "resize": spec.get("resize") or "all",
        "max_machines": spec.get("max_machines"),
        "curve_points": spec.get("curve_points") or 0,
    }


ROOM = owned.Room(
    serializer=s.PlanSerializer,
    create_serializer=s.PlanCreateSerializer,
    fork_serializer=s.PlanForkSerializer,
    progress_serializer=s.PlanProgressSerializer,
    results_serializer=s.PlanResultsSerializer,
    visible=visible_plans,
    get=get_plan_for_user,
    start=_start,
    request_of=_request_of,
    cancel=cancel_plan,
    progress=progress_payload,
    results=capacity_downloads.plan_body,
    download=capacity_downloads.plan_file,
    download_kinds=tuple(capacity_downloads.PLAN_KINDS),
)


class PlanList(owned.List):
    room = ROOM
    summaries = {
        "get": "Capacity plans you can see",
        "post": "Make a capacity plan: per scheduler, the smallest cluster that meets a target",
    }


class PlanDetail(owned.Detail):
    room = ROOM
    summaries = {"get": "One capacity plan with its progress", "patch": owned.PATCH_SUMMARY}


class PlanCancel(owned.Cancel):
    room = ROOM
    summaries = {"post": "Cancel a pending or running capacity plan"}


class PlanFork(owned.Fork):
    room = ROOM
    summaries = {"post": "Copy a capacity plan you can see into your space, optionally changed, and make it"}


class PlanProgress(owned.Progress):
    room = ROOM
    summaries = {"get": "Status, round, probes done and the bounds of a capacity plan"}


class PlanResults(owned.Results):
    room = ROOM
    summaries = {"get": "The plan: per scheduler the machines, saving, verifying probes and the curve"}


class PlanDownload(owned.Download):
    room = ROOM
    summaries = {"get": "Download a capacity plan's probes (CSV, Parquet) or the plan (JSON)"}
