"""Experiment pages: short views over this room's services (healthchecks' habit: lookups, no domain logic).

Every lookup goes through :mod:`dashboard.common.access` (who sees and changes
what). An experiment is reached either by id (signed-in users who can see it)
or by its public link ``/shared/<token>/`` (anyone, read-only); both render
the same page, whose links are relative to ``base`` so a link visitor never
sees an id-based URL they could not open.
"""

from __future__ import annotations

from collections import Counter
from functools import partial
from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import Count, Q, QuerySet
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from dashboard.common import access, labels, pages, sharing
from dashboard.common.converters import row_id
from dashboard.common.models import Status
from dashboard.common.sharing import share_panel
from dashboard.experiments import charts, downloads, lotes_view, memory, scale, sweep_views
from dashboard.experiments.access import (
    get_experiment_for_user,
    get_run_for_user,
    get_shared_experiment,
    visible_experiments,
    visible_runs,
)
from dashboard.experiments.aggregates import experiment_charts
from dashboard.experiments.cache import is_cached
from dashboard.experiments.forms import ExperimentForm, initial_from_scenario
from dashboard.experiments.jobs import records_kept
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.results import (
    chart_runs,
    engines_used,
    progress_payload,
    runs_with_results,
    what_was_simulated,
)
from dashboard.experiments.services import cancel_experiment, cancel_run, create_experiment
from dashboard.experiments.sweep_results import is_sweep_page
from simcore import records
from simcore.schedulers import SCHEDULERS
from simcore.version import code_version

PAGE_SIZE = 25
#: Most runs one compare page overlays.
MAX_COMPARED = 20


def version_context(request: HttpRequest) -> dict[str, Any]:
    return {"code_version": code_version()}


@require_safe
def favicon(request: HttpRequest) -> HttpResponse:
    """Browsers ask for /favicon.ico whatever the page says: send them to the static file."""
    return redirect(static("dashboard/favicon.ico"))


# ---------------------------------------------------------------------------- experiments


def _filtered(request: HttpRequest) -> tuple[QuerySet[Experiment], dict[str, str], list[str]]:
    """The visible experiments matching the filters, the filters, and what was ignored (said on the page)."""
    f = {k: request.GET.get(k, "").strip() for k in ("owner", "team", "status", "cluster", "workload", "scheduler")}
    ignored = []
    qs = visible_experiments(request.user).select_related("owner", "team")
    if f["owner"] == "me":
        qs = qs.filter(owner=access.signed_in(request))
    elif f["owner"]:
        qs = qs.filter(owner__username=f["owner"])
    if (team_id := row_id(f["team"])) is not None:
        qs = qs.filter(team_id=team_id)
    elif f["team"]:
        ignored.append(f"team={f['team']!r} is not a team number: showing every team")
        f["team"] = ""
    if f["status"] in Status.values:
        qs = qs.filter(status=f["status"])
    elif f["status"]:
        ignored.append(f"status={f['status']!r} is not a status ({', '.join(Status.values)}): showing every status")
        f["status"] = ""
    if f["cluster"]:
        qs = qs.filter(cluster_label=f["cluster"])
    if f["workload"]:
        qs = qs.filter(workload_label=f["workload"])
    if f["scheduler"]:
        qs = qs.filter(runs__scheduler=f["scheduler"]).distinct()
    return qs, f, ignored


@require_safe
@login_required
def experiment_list(request: HttpRequest) -> HttpResponse:
    qs, filters, ignored = _filtered(request)
    page_arg = request.GET.get("page", "")
    if page_arg and not page_arg.isdigit() and page_arg != "last":
        ignored.append(f"page={page_arg!r} is not a page number: showing the first page")
    page = Paginator(qs, PAGE_SIZE).get_page(page_arg)
    # "finished, 1 of 36 cells cancelled": the page's experiments' cancelled and total runs in one query.
    counts = {
        row["experiment"]: row
        for row in Run.objects.filter(experiment__in=[e.pk for e in page])
        .values("experiment")
        .annotate(n=Count("id"), cancelled=Count("id", filter=Q(status=Status.CANCELLED)))
        .order_by()
    }
    for e in page:
        c = counts.get(e.pk, {"n": 0, "cancelled": 0})
        e.shown_status = e.status_text(c["cancelled"], c["n"])  # type: ignore[attr-defined]
    query = "&".join(f"{k}={v}" for k, v in filters.items() if v)
    visible = visible_experiments(request.user).order_by()
    ctx = {
        "page": page,
        "ignored": ignored,
        "filters": filters,
        "query": query,
        "statuses": Status.values,
        "owners": get_user_model()
        .objects.filter(experiments__in=visible)
        .distinct()
        .order_by("username")
        .values_list("username", flat=True),
        "teams": access.teams_of(request.user),
        "clusters": visible.values_list("cluster_label", flat=True).distinct(),
        "workloads": visible.values_list("workload_label", flat=True).distinct(),
        "schedulers": sorted(
            set(SCHEDULERS.names())
            | set(Run.objects.filter(experiment__in=visible).order_by().values_list("scheduler", flat=True).distinct())
        ),
    }
    return render(request, "dashboard/experiment_list.html", ctx)


def _new_experiment(
    request: HttpRequest,
    *,
    source: Experiment | None = None,
    source_url: str = "",
    initial: dict[str, Any] | None = None,
) -> HttpResponse:
    """The new-experiment form (a fork when ``source`` is given), and its submission."""
    form = ExperimentForm(request.POST or None, owner=access.signed_in(request), source=source, initial=initial)
    checked: list[str] | None = None
    memory_note = ""
    check = request.method == "POST" and "check" in request.POST
    if check and form.is_valid():
        # "Check the scale": the form again with what the scale can show, nothing created.
        checked = scale.before(form.scenario)
        memory_note = memory.form_note(form.scenario, form.cluster_upload, form.trace_upload)
    elif request.method == "POST" and form.is_valid():
        start = partial(
            create_experiment,
            access.signed_in(request),
            form.scenario,
            name=form.cleaned_data["name"],
            cluster_upload=form.cluster_upload,
            trace_upload=form.trace_upload,
            team=form.cleaned_data.get("team"),
            visibility=form.cleaned_data["visibility"],
            forked_from=source,
            reuse=bool(form.cleaned_data.get("reuse")),
        )
        if (done := pages.started(request, form, start)) is not None:
            return done
    return render(
        request,
        "dashboard/experiment_new.html",
        {
            "form": form,
            "source": source,
            "source_url": source_url,
            "scale_check": checked or [],
            "scale_checked": checked is not None,
            "scale_unread": check and form.is_valid() and checked is None,
            "memory_note": memory_note,
        },
        status=400 if form.errors else 200,
    )


@login_required
def experiment_new(request: HttpRequest) -> HttpResponse:
    # ?workload=upload:7&cluster=upload:8 preselects an imported trace and its machines (links on the uploads page).
    initial: dict[str, Any] = {
        k: request.GET[k] for k in ("cluster", "workload") if request.GET.get(k, "").startswith("upload:")
    }
    if "workload" in initial:
        initial["load"] = 1.0  # a trace's load is its replay rate: as recorded unless the reader changes it
    return _new_experiment(request, initial=initial or None)


def _fork(request: HttpRequest, source: Experiment, source_url: str) -> HttpResponse:
    name = f"{source.title} (fork)"[:200]
    initial = initial_from_scenario(source.scenario, source.cluster_upload, source.trace_upload, name)
    return _new_experiment(request, source=source, source_url=source_url, initial=initial)


experiment_fork, shared_fork = pages.fork_pages(
    get_experiment_for_user, get_shared_experiment, "experiment-detail", "shared-detail", _fork
)


def _detail(request: HttpRequest, exp: Experiment, base: str, *, shared: bool) -> HttpResponse:
    runs = runs_with_results(exp, page=True)
    waits = memory.waiting_notes([(r.status, r.queued_at, r.needs_mb, r.sent_to) for r in runs])
    for r, wait in zip(runs, waits, strict=True):
        r.waiting = wait  # type: ignore[attr-defined]
        r.dl_prefix = f"{base}runs/{r.pk}/download/"  # type: ignore[attr-defined]
        r.point_label = ", ".join(f"{k}={v}" for k, v in (r.point or {}).items())  # type: ignore[attr-defined]
    done = [r for r in runs if r.status == Status.FINISHED]
    is_owner = not shared and exp.owner_id == request.user.pk
    simulated = what_was_simulated(exp, done)
    sweep = sweep_views.detail_context(request, exp, base, runs, owner=is_owner) if is_sweep_page(exp) else None
    ctx = {
        "sweep": sweep,
        "columns_url": f"{labels.DEFINITIONS_PATH}#downloads",
        "status_text": exp.status_text(sum(1 for r in runs if r.status == Status.CANCELLED), len(runs)),
        "scale_warnings": scale.after(done),
        "cached": sum(1 for r in runs if is_cached(r)),
        "experiment": exp,
        "runs": runs,
        "finished": done,
        "base": base,
        "shared": shared,
        "simulated": simulated,
        # A grid's runs differ by point too: its own charts (experiments.sweep_charts) replace the per-run ones,
        # and its LoTES cells' plans are in summary.json, not thirty sections of the page.
        "charts": experiment_charts(exp, done) if done and not exp.scenario.get("axes") else None,
        "offline": [
            {
                "run": r,
                "plan": lotes_view.plan_view(r.result.offline, r.result.summary.get("lambda_star"))
                if r.result.offline.get("configs")
                else None,
            }
            for r in done
            if r.result.offline
        ]
        if not exp.scenario.get("axes")
        else [],
        "engines": engines_used(exp, done),
        "records_asked": exp.scenario.get("job_records", records.DEFAULT),
        "records_kept": records_kept(done),
        "versions": sorted({r.code_version for r in runs if r.code_version}),
        # One version for every finished run: said once in the header, not in every row.
        "one_version": len({r.code_version for r in done}) == 1,
        "active": any(r.is_active for r in runs),
        "can_cancel": not shared and access.can(request.user, exp, "cancel"),
        **share_panel(request, exp, "shared-detail", is_owner=is_owner),
    }
    return render(request, "dashboard/experiment_detail.html", ctx)


experiment_detail, shared_detail = pages.detail_pages(
    get_experiment_for_user, get_shared_experiment, "experiment-detail", "shared-detail", _detail
)
experiment_progress, shared_progress = pages.json_pages(
    get_experiment_for_user, get_shared_experiment, progress_payload
)


@login_required
@require_POST
def experiment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_experiment_for_user(request.user, pk, "cancel")
    n = cancel_experiment(exp)
    messages.info(request, f"cancelled {n} run(s)")
    return redirect(exp)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request.user, pk, "cancel")
    if cancel_run(run):
        messages.info(request, f"cancelled {run}")
    return redirect(run.experiment)


# ---------------------------------------------------------------------------- sharing

experiment_share, experiment_new_link, experiment_revoke_link = sharing.page_actions(get_experiment_for_user)


# ---------------------------------------------------------------------------- downloads


@require_safe
@login_required
def experiment_download(request: HttpRequest, pk: int, kind: str) -> HttpResponseBase:
    return downloads.experiment_file(get_experiment_for_user(request.user, pk), kind)


@require_safe
@login_required
def run_download(request: HttpRequest, pk: int, run: int, kind: str) -> HttpResponseBase:
    exp = get_experiment_for_user(request.user, pk)
    return downloads.run_file(get_run_for_user(request.user, run, experiment=exp), kind)


@require_safe
def shared_download(request: HttpRequest, token: str, kind: str) -> HttpResponseBase:
    return downloads.experiment_file(get_shared_experiment(token), kind)


@require_safe
def shared_run_download(request: HttpRequest, token: str, run: int, kind: str) -> HttpResponseBase:
    exp = get_shared_experiment(token)
    return downloads.run_file(get_run_for_user(None, run, experiment=exp), kind)


# ---------------------------------------------------------------------------- compare


@require_safe
@login_required
def compare(request: HttpRequest) -> HttpResponse:
    ignored = []
    ids: list[int] = []
    for x in request.GET.getlist("run"):
        if not x.isdigit() or len(x) > 18:
            ignored.append(f"run={x!r} is not a run number")
        elif int(x) not in ids:
            ids.append(int(x))
    if len(ids) > MAX_COMPARED:
        ignored.append(f"at most {MAX_COMPARED} runs are compared at once: runs {ids[MAX_COMPARED:]} were left out")
        ids = ids[:MAX_COMPARED]
    runs = visible_runs(request.user).filter(status=Status.FINISHED)
    chosen = list(runs.filter(pk__in=ids).select_related("result", "experiment"))
    chosen.sort(key=lambda r: ids.index(r.pk))
    missing = sorted(set(ids) - {r.pk for r in chosen})
    if missing:
        ignored.append(
            f"run{'s' if len(missing) > 1 else ''} {', '.join(map(str, missing))}: no finished run of that number "
            "that you can see"
        )
    for r in chosen:
        r.dl_prefix = reverse("run-download", args=[r.experiment_id, r.pk, "x"])[:-1]  # type: ignore[attr-defined]
    candidates = runs.select_related("experiment", "experiment__owner").order_by(
        "-experiment__created", "experiment_id", "seed", "id"
    )
    exp_filter = request.GET.get("experiment", "").strip()
    if exp_filter.isdigit() and len(exp_filter) <= 18:
        candidates = candidates.filter(experiment_id=int(exp_filter))
    elif exp_filter:
        ignored.append(f"experiment={exp_filter!r} is not an experiment number: listing runs of every experiment")
        exp_filter = ""
    # Runs of one experiment and scheduler are that scheduler's seeds: the charts aggregate them
    # (a lone seed is named in the label).
    # A sweep's cells of one scheduler at different points are no seeds of each other: the point is in the group.
    seeds_of = Counter((r.experiment_id, r.point_key, r.scheduler) for r in chosen)

    def group(r: Run) -> str:
        lone = seeds_of[(r.experiment_id, r.point_key, r.scheduler)] == 1
        where = ", ".join(f"{k}={v}" for k, v in (r.point or {}).items())
        return f"#{r.experiment_id} {r.scheduler}" + (f" at {where}" if where else "") + (f" s{r.seed}" if lone else "")

    chart_input = chart_runs(chosen, group=group)
    ctx = {
        "chosen": chosen,
        "ignored": ignored,
        "charts": charts.all_charts(chart_input) if chart_input else None,
        "candidates": candidates[:200],
        "ids": set(ids),
        "experiment_filter": exp_filter,
    }
    return render(request, "dashboard/compare.html", ctx)
