"""Design-space search pages: short views over dashboard.searches.services, with experiments' access rules.

A search is reached by id (signed-in users who can see it) or by its public
link ``/shared/search/<token>/`` (anyone, read-only); both render the same
page, whose links are relative to ``base``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from dashboard.common import access, pages, sharing
from dashboard.common.sharing import share_panel
from dashboard.searches import charts as search_charts
from dashboard.searches import downloads as search_downloads
from dashboard.searches.access import get_search_for_user, get_shared_search, visible_searches
from dashboard.searches.forms import SearchForm, initial_from_search
from dashboard.searches.models import Search
from dashboard.searches.services import cancel_search, create_search, progress_payload, records
from simcore.dse.explore.report import elite_rows
from simcore.dse.staged.policy import STAGES

PAGE_SIZE = 25


search_list = pages.list_page(visible_searches, "dashboard/search_list.html", PAGE_SIZE)


def _new_search(request: HttpRequest, *, source: Search | None = None, source_url: str = "") -> HttpResponse:
    initial = initial_from_search(source, f"{source.title} (fork)"[:200]) if source is not None else None
    form = SearchForm(request.POST or None, owner=access.signed_in(request), source=source, initial=initial)
    if request.method == "POST" and form.is_valid():
        start = partial(
            create_search,
            access.signed_in(request),
            form.scenario,
            form.settings,
            form.simulation_seed,
            name=form.cleaned_data["name"],
            cluster_upload=form.cluster_upload,
            trace_upload=form.trace_upload,
            team=form.cleaned_data.get("team"),
            visibility=form.cleaned_data["visibility"],
            forked_from=source,
        )
        if (done := pages.started(request, form, start)) is not None:
            return done
    return render(
        request,
        "dashboard/search_new.html",
        {"form": form, "source": source, "source_url": source_url},
        status=400 if form.errors else 200,
    )


@login_required
def search_new(request: HttpRequest) -> HttpResponse:
    return _new_search(request)


search_fork, shared_search_fork = pages.fork_pages(
    get_search_for_user, get_shared_search, "search-detail", "shared-search-detail", _new_search
)


def chart_payload(search: Search) -> dict[str, Any]:
    """The charts of the finished generations (what the page draws and its poller refreshes)."""
    recs, evaluations = records(search)
    rows = list(elite_rows(recs, evaluations))
    return search_charts.search_charts(rows, search.metric) if rows else {}


def explore_command(search: Search) -> str:
    """The ``simcore explore`` command that runs the same search (uploads appear by their names)."""
    words = ["simcore", "explore"]
    for kind in ("cluster", "workload"):
        spec = search.scenario[kind]
        if "preset" in spec:
            words += [f"--{kind}", spec["preset"]]
            for k, v in (spec.get("params") or {}).items():
                words += [f"--{k.replace('_', '-')}", str(v)]
        else:
            words += [f"--{kind}", str(spec.get("name") or spec["file"])]
    words += ["--load", f"{search.scenario.get('load', 0.9):g}"]
    if search.scenario.get("hours") is not None:
        words += ["--hours", f"{search.scenario['hours']:g}"]
    words += ["--metric", search.metric, "--population", str(search.population)]
    words += [
        "--generations",
        str(search.max_generations),
        "--seed",
        str(search.seed),
        "--sim-seed",
        str(search.sim_seed),
    ]
    return " ".join(words)


def _detail(request: HttpRequest, search: Search, base: str, *, shared: bool) -> HttpResponse:
    recs, evaluations = records(search)
    elites = list(elite_rows(recs, evaluations))
    is_owner = not shared and search.owner_id == request.user.pk
    last = elites[-1] if elites else None
    ctx = {
        "search": search,
        "base": base,
        "shared": shared,
        "progress": progress_payload(search),
        "command": explore_command(search),
        "charts": search_charts.search_charts(elites, search.metric) if elites else None,
        "elite": last,
        "stages": [(s, last[s]) for s in STAGES] if last else [],
        "explanations": [r.explanation for r in recs if r.explanation is not None],
        "generations": len(recs),
        "simulations": len(evaluations),
        "can_cancel": not shared and search.is_active and access.can(request.user, search, "cancel"),
        **share_panel(request, search, "shared-search-detail", is_owner=is_owner),
    }
    return render(request, "dashboard/search_detail.html", ctx)


search_detail, shared_search_detail = pages.detail_pages(
    get_search_for_user, get_shared_search, "search-detail", "shared-search-detail", _detail
)
search_progress, shared_search_progress = pages.json_pages(get_search_for_user, get_shared_search, progress_payload)
search_charts_json, shared_search_charts_json = pages.json_pages(get_search_for_user, get_shared_search, chart_payload)
search_cancel = pages.cancel_page(get_search_for_user, cancel_search, "the search was cancelled")
search_share, search_new_link, search_revoke_link = sharing.page_actions(get_search_for_user)
search_download, shared_search_download = pages.download_pages(
    get_search_for_user, get_shared_search, search_downloads.search_file
)
