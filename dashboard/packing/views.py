"""Packing analysis pages: short views on dashboard.common.access (who sees what) and dashboard.packing.services.

An analysis is reached by id (signed-in users who can see it) or by its
public link ``/packing/shared/<token>/`` (anyone, read-only); both render the
same page with links relative to ``base``.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dashboard.common import access, pages, sharing, waiting
from dashboard.common.converters import row_id
from dashboard.common.models import Status
from dashboard.common.sharing import share_panel
from dashboard.experiments.access import get_run_for_user
from dashboard.packing import charts as packing_charts
from dashboard.packing import downloads as packing_downloads
from dashboard.packing import reading
from dashboard.packing import services as svc
from dashboard.packing.access import get_analysis_for_user, get_shared_analysis, visible_analyses
from dashboard.packing.forms import PackingForm, initial_from
from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.traces.access import get_upload_for_user
from simcore.packing.analysis import series_tables

PAGE_SIZE = 25


@require_safe
@login_required
def packing_list(request: HttpRequest) -> HttpResponse:
    qs = visible_analyses(request.user).select_related("owner", "team").defer("results")
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    return render(request, "dashboard/packing_list.html", {"page": page})


@login_required
def packing_new(request: HttpRequest) -> HttpResponse:
    user = access.signed_in(request)
    initial: dict[str, Any] = {}
    # A number too long to be a row id is not found, like <id:> addresses (never an overflow in the driver).
    given = {k: request.GET.get(k, "") for k in ("from", "run", "trace")}
    ids = {k: row_id(v) for k, v in given.items()}
    if any(v.isdigit() and ids[k] is None for k, v in given.items()):
        raise Http404("no such analysis, run or trace")
    if (source := ids["from"]) is not None:
        initial = initial_from(get_analysis_for_user(user, source))
    elif (run_id := ids["run"]) is not None:
        run = get_run_for_user(user, run_id)
        initial = {"source": PackingSource.RUN, "run": str(run.pk)}
    elif (trace_id := ids["trace"]) is not None:
        trace = get_upload_for_user(user, "trace", trace_id)
        initial = {"source": PackingSource.TRACE, "trace": str(trace.pk), "placed_by": "arrival"}
    form = PackingForm(request.POST or None, owner=user, initial=initial or None)
    if request.method == "POST" and form.is_valid():
        # choice() and spec() run inside started(): what they raise is reported as create_analysis's is.
        def start() -> PackingAnalysis:
            return svc.create_analysis(
                user,
                form.choice(),
                time_s=form.cleaned_data["time_s"],
                spec=form.spec(),
                name=form.cleaned_data["name"],
                team=form.cleaned_data.get("team"),
                visibility=form.cleaned_data.get("visibility") or "private",
            )

        if (done := pages.started(request, form, start, form.field_for)) is not None:
            return done
    return render(request, "dashboard/packing_new.html", {"form": form}, status=400 if form.errors else 200)


def _detail(request: HttpRequest, a: PackingAnalysis, base: str, *, shared: bool) -> HttpResponse:
    is_owner = not shared and a.owner_id == request.user.pk
    results = a.results if a.status == Status.FINISHED else None
    tables = series_tables(results) if results else {}
    ctx = {
        "a": a,
        "waiting": waiting.notes([(a.status, a.queued_at)], "long")[0],
        "base": base,
        "shared": shared,
        "results": results,
        "charts": packing_charts.all_charts(results) if results else None,
        "tables": list(tables),
        "compare_rows": _compare_rows(results) if results and "compare" in results else [],
        "size": reading.snapshot_size_text(a.snapshot_size),
        "eta": svc.eta_of(a),
        "fit_warning": reading.fit_warning(results) if results else "",
        "knees": reading.knees(results) if results else [],
        "can_cancel": not shared and access.can(request.user, a, "cancel"),
        **share_panel(request, a, "packing-shared-detail", is_owner=is_owner),
    }
    return render(request, "dashboard/packing_detail.html", ctx)


def _compare_rows(results: dict[str, Any]) -> list[dict[str, Any]]:
    """Figure 4's numbers for the table under the charts: one row per policy."""
    cmp_ = results["compare"]
    rows = []
    for p in cmp_["policies"]:
        r = cmp_["results"][p["name"]]
        rows.append(
            {
                "name": p["name"],
                "kind": p["kind"],
                "pending": r["pending"],
                "utilisation": r["utilisation"],
                "horizontal_knee": reading.knee_text(r["horizontal"], cmp_["factor"]),
                "vertical_knee": reading.knee_text(r["vertical"], cmp_["factor"]),
                "compaction": list(zip(cmp_["tau"], r["compaction"]["fraction"]["p"], strict=True)),
            }
        )
    return rows


packing_detail, packing_shared_detail = pages.detail_pages(
    get_analysis_for_user, get_shared_analysis, "packing-detail", "packing-shared-detail", _detail
)
packing_progress, packing_shared_progress = pages.json_pages(
    get_analysis_for_user, get_shared_analysis, svc.progress_payload
)
packing_cancel = pages.cancel_page(get_analysis_for_user, svc.cancel_analysis, "the analysis was cancelled")
packing_share, _, _ = sharing.page_actions(get_analysis_for_user)
packing_download, packing_shared_download = pages.download_pages(
    get_analysis_for_user, get_shared_analysis, packing_downloads.analysis_file
)
