"""Capacity plan pages: short views over dashboard.capacity.services, with experiments' access rules.

A plan is reached by id (signed-in users who can see it) or by its public link
``/shared/capacity/<token>/`` (anyone, read-only); both render the same page,
whose links are relative to ``base``.
"""

from __future__ import annotations

import shlex
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from dashboard.capacity import charts as capacity_charts
from dashboard.capacity import downloads as capacity_downloads
from dashboard.capacity import files
from dashboard.capacity.access import get_plan_for_user, get_shared_plan, visible_plans
from dashboard.capacity.forms import CapacityForm, initial_from_plan
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import cancel_plan, create_plan, phase_text, progress_payload
from dashboard.common import access, labels, queueing, sharing
from dashboard.common.models import Status
from dashboard.common.sharing import share_panel
from simcore.core.errors import SimcoreError

PAGE_SIZE = 25


@require_safe
@login_required
def plan_list(request: HttpRequest) -> HttpResponse:
    qs = visible_plans(request.user).select_related("owner", "team")
    status = request.GET.get("status", "").strip()
    if status:
        qs = qs.filter(status=status)
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "dashboard/capacity_list.html", {"page": page, "status": status, "statuses": Status.values})


def _new_plan(request: HttpRequest, *, source: CapacityPlan | None = None, source_url: str = "") -> HttpResponse:
    initial = initial_from_plan(source, f"{source.title} (fork)"[:200]) if source is not None else None
    form = CapacityForm(request.POST or None, owner=access.signed_in(request), initial=initial, source=source)
    if request.method == "POST" and form.is_valid():
        try:
            plan = create_plan(
                access.signed_in(request),
                form.spec,
                name=form.cleaned_data["name"],
                team=form.cleaned_data.get("team"),
                visibility=form.cleaned_data["visibility"],
                forked_from=source,
                cluster_upload=form.cluster_upload,
                trace_upload=form.trace_upload,
            )
        except SimcoreError as e:
            form.add_error(None, str(e))
        else:
            if getattr(plan, "queued", True) is False:
                messages.warning(request, queueing.QUEUE_DOWN)
            return redirect(plan)
    return render(
        request,
        "dashboard/capacity_new.html",
        {"form": form, "source": source, "source_url": source_url},
        status=400 if form.errors else 200,
    )


@login_required
def plan_new(request: HttpRequest) -> HttpResponse:
    return _new_plan(request)


@login_required
def plan_fork(request: HttpRequest, pk: int) -> HttpResponse:
    source = get_plan_for_user(request.user, pk)
    return _new_plan(request, source=source, source_url=reverse("capacity-detail", args=[pk]))


@login_required
def shared_plan_fork(request: HttpRequest, token: str) -> HttpResponse:
    source = get_shared_plan(token)
    return _new_plan(request, source=source, source_url=reverse("shared-capacity-detail", args=[token]))


def capacity_command(plan: CapacityPlan) -> str:
    """The ``simcore capacity`` command that makes the same plan (an upload by the name of the file its owner sent)."""
    spec = plan.spec
    cu, tu = files.uploads_of(plan)
    words = ["simcore", "capacity", "--cluster", shlex.quote(cu.filename) if cu is not None else spec["cluster"]]
    for k, v in (spec.get("cluster_params") or {}).items():
        words += [f"--{k.replace('_', '-')}", str(v)]
    words += ["--workload", shlex.quote(tu.filename) if tu is not None else spec["workload"]]
    for k, v in (spec.get("workload_params") or {}).items():
        words += [f"--{k.replace('_', '-')}", str(v)]
    if spec.get("load") is not None:
        words += ["--load", f"{spec['load']:g}"]
    if spec.get("hours") is not None:
        words += ["--hours", f"{spec['hours']:g}"]
    words += ["--schedulers", ",".join(spec["schedulers"]), "--seeds", ",".join(str(s) for s in spec["seeds"])]
    words += ["--target", f"'{spec['target']}'"]
    if (spec.get("resize") or "all") != "all":
        words += ["--resize", spec["resize"]]
    if spec.get("max_machines") is not None:
        words += ["--max-machines", str(spec["max_machines"])]
    if spec.get("curve_points"):
        words += ["--curve-points", str(spec["curve_points"])]
    return " ".join(words)


def _detail(request: HttpRequest, plan: CapacityPlan, base: str, *, shared: bool) -> HttpResponse:
    is_owner = not shared and plan.owner_id == request.user.pk
    result: dict[str, Any] = plan.result or {}
    ctx = {
        "plan": plan,
        "base": base,
        "shared": shared,
        "progress": progress_payload(plan),
        "phase": phase_text(plan),
        "command": capacity_command(plan),
        "result": result,
        "entries": result.get("plans", []),
        "statistic_title": labels.title(str(result.get("statistic") or "")),
        "charts": capacity_charts.plan_charts(plan.result) or None,
        "can_cancel": not shared and plan.is_active and access.can(request.user, plan, "cancel"),
        **share_panel(request, plan, "shared-capacity-detail", is_owner=is_owner),
    }
    return render(request, "dashboard/capacity_detail.html", ctx)


@require_safe
@login_required
def plan_detail(request: HttpRequest, pk: int) -> HttpResponse:
    plan = get_plan_for_user(request.user, pk)
    return _detail(request, plan, reverse("capacity-detail", args=[pk]), shared=False)


@require_safe
def shared_plan_detail(request: HttpRequest, token: str) -> HttpResponse:
    plan = get_shared_plan(token)
    return _detail(request, plan, reverse("shared-capacity-detail", args=[token]), shared=True)


@require_safe
@login_required
def plan_progress(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(progress_payload(get_plan_for_user(request.user, pk)))


@require_safe
def shared_plan_progress(request: HttpRequest, token: str) -> JsonResponse:
    return JsonResponse(progress_payload(get_shared_plan(token)))


@login_required
@require_POST
def plan_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    plan = get_plan_for_user(request.user, pk, "cancel")
    if cancel_plan(plan):
        messages.info(request, "the plan was cancelled")
    return redirect(plan)


plan_share, plan_new_link, plan_revoke_link = sharing.page_actions(get_plan_for_user)


@require_safe
@login_required
def plan_download(request: HttpRequest, pk: int, kind: str) -> HttpResponseBase:
    return capacity_downloads.plan_file(get_plan_for_user(request.user, pk), kind)


@require_safe
def shared_plan_download(request: HttpRequest, token: str, kind: str) -> HttpResponseBase:
    return capacity_downloads.plan_file(get_shared_plan(token), kind)
