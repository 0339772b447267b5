"""Capacity plan pages: short views over dashboard.capacity.services, with experiments' access rules.

A plan is reached by id (signed-in users who can see it) or by its public link
``/shared/capacity/<token>/`` (anyone, read-only); both render the same page,
whose links are relative to ``base``.
"""

from __future__ import annotations

import shlex
from functools import partial
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.capacity import charts as capacity_charts
from dashboard.capacity import downloads as capacity_downloads
from dashboard.capacity import files
from dashboard.capacity.access import get_plan_for_user, get_shared_plan, visible_plans
from dashboard.capacity.forms import CapacityForm, initial_from_plan
from dashboard.capacity.models import CapacityPlan
from dashboard.capacity.services import cancel_plan, create_plan, phase_text, progress_payload
from dashboard.common import access, labels, pages, sharing
from dashboard.common.sharing import share_panel

PAGE_SIZE = 25


plan_list = pages.list_page(visible_plans, "dashboard/capacity_list.html", PAGE_SIZE)


def _new_plan(request: HttpRequest, *, source: CapacityPlan | None = None, source_url: str = "") -> HttpResponse:
    initial = initial_from_plan(source, f"{source.title} (fork)"[:200]) if source is not None else None
    form = CapacityForm(request.POST or None, owner=access.signed_in(request), initial=initial, source=source)
    if request.method == "POST" and form.is_valid():
        start = partial(
            create_plan,
            access.signed_in(request),
            form.spec,
            name=form.cleaned_data["name"],
            team=form.cleaned_data.get("team"),
            visibility=form.cleaned_data["visibility"],
            forked_from=source,
            cluster_upload=form.cluster_upload,
            trace_upload=form.trace_upload,
        )
        if (done := pages.started(request, form, start)) is not None:
            return done
    return render(
        request,
        "dashboard/capacity_new.html",
        {"form": form, "source": source, "source_url": source_url},
        status=400 if form.errors else 200,
    )


@login_required
def plan_new(request: HttpRequest) -> HttpResponse:
    return _new_plan(request)


plan_fork, shared_plan_fork = pages.fork_pages(
    get_plan_for_user, get_shared_plan, "capacity-detail", "shared-capacity-detail", _new_plan
)


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


plan_detail, shared_plan_detail = pages.detail_pages(
    get_plan_for_user, get_shared_plan, "capacity-detail", "shared-capacity-detail", _detail
)
plan_progress, shared_plan_progress = pages.json_pages(get_plan_for_user, get_shared_plan, progress_payload)
plan_cancel = pages.cancel_page(get_plan_for_user, cancel_plan, "the plan was cancelled")
plan_share, plan_new_link, plan_revoke_link = sharing.page_actions(get_plan_for_user)
plan_download, shared_plan_download = pages.download_pages(
    get_plan_for_user, get_shared_plan, capacity_downloads.plan_file
)
