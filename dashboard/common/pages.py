"""The pages every piece of owned work has, written once: its page, its progress JSON, its downloads and its fork
form, each by id (signed-in users who can see it) and by public link (anyone, read-only); the list; the owner's
cancel button; and the start of new work from a valid form (:func:`started`).

Experiments, searches, capacity plans and packing analyses repeated these views word for word; a feature now
makes them from its lookups and services, as :func:`dashboard.common.sharing.page_actions` makes the sharing
actions::

    plan_detail, shared_plan_detail = pages.detail_pages(
        get_plan_for_user, get_shared_plan, "capacity-detail", "shared-capacity-detail", _detail
    )

The feature keeps what is its own: what its page and form show, what its progress and files are.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from dashboard.common import queueing
from dashboard.common.models import Status
from dashboard.common.sharing import Lookup
from simcore.core.errors import SimcoreError

#: A feature's lookup by public link: ``token -> row`` (404 once the link is revoked).
SharedLookup = Callable[[str], Any]
#: A page of a row by id and the same page by public link.
Pair = tuple[Callable[..., HttpResponseBase], Callable[..., HttpResponseBase]]


def started(
    request: HttpRequest,
    form: forms.Form,
    start: Callable[[], Any],
    field_of: Callable[[str], str | None] = lambda message: None,
) -> HttpResponse | None:
    """Start the work a valid form asks for: the redirect to its page, saying so when it could not be queued yet
    (the broker is down; the repair queues it later); or None, simcore's refusal added to the form (under the
    field ``field_of(message)`` names, else the whole form's)."""
    try:
        row = start()
    except SimcoreError as e:
        form.add_error(field_of(str(e)), str(e))
        return None
    if getattr(row, "queued", True) is False:
        messages.warning(request, queueing.QUEUE_DOWN)
    return redirect(row)


def detail_pages(
    get: Lookup,
    get_shared: SharedLookup,
    route: str,
    shared_route: str,
    render: Callable[..., HttpResponse],
) -> Pair:
    """A row's page by id and by public link: ``render(request, row, base, shared=...)``, whose links are
    relative to ``base`` (the page's own address: ``route`` or ``shared_route``)."""

    @require_safe
    @login_required
    def detail(request: HttpRequest, pk: int) -> HttpResponse:
        row = get(request.user, pk, "view")
        return render(request, row, reverse(route, args=[pk]), shared=False)

    @require_safe
    def shared_detail(request: HttpRequest, token: str) -> HttpResponse:
        row = get_shared(token)
        return render(request, row, reverse(shared_route, args=[token]), shared=True)

    return detail, shared_detail


def fork_pages(
    get: Lookup, get_shared: SharedLookup, route: str, shared_route: str, new: Callable[..., HttpResponse]
) -> Pair:
    """The fork form of a row by id and by public link: ``new(request, source=row, source_url=...)``, the
    feature's form for new work started from ``row`` (``source_url``: the page it was forked from)."""

    @login_required
    def fork(request: HttpRequest, pk: int) -> HttpResponse:
        source = get(request.user, pk, "view")
        return new(request, source=source, source_url=reverse(route, args=[pk]))

    @login_required
    def shared_fork(request: HttpRequest, token: str) -> HttpResponse:
        source = get_shared(token)
        return new(request, source=source, source_url=reverse(shared_route, args=[token]))

    return fork, shared_fork


def list_page(visible: Callable[[Any], QuerySet[Any]], template: str, per_page: int) -> Callable[..., HttpResponse]:
    """The list of the rows a user can see, ``per_page`` a page, filtered by ``?status=``."""

    @require_safe
    @login_required
    def rows(request: HttpRequest) -> HttpResponse:
        qs = visible(request.user).select_related("owner", "team")
        status = request.GET.get("status", "").strip()
        if status:
            qs = qs.filter(status=status)
        page = Paginator(qs, per_page).get_page(request.GET.get("page"))
        return render(request, template, {"page": page, "status": status, "statuses": Status.values})

    return rows


def json_pages(get: Lookup, get_shared: SharedLookup, payload: Callable[[Any], dict[str, Any]]) -> Pair:
    """A row's ``payload`` as JSON (what its page polls) by id and by public link."""

    @require_safe
    @login_required
    def private(request: HttpRequest, pk: int) -> JsonResponse:
        return JsonResponse(payload(get(request.user, pk, "view")))

    @require_safe
    def shared(request: HttpRequest, token: str) -> JsonResponse:
        return JsonResponse(payload(get_shared(token)))

    return private, shared


def download_pages(get: Lookup, get_shared: SharedLookup, file: Callable[[Any, str], HttpResponseBase]) -> Pair:
    """A row's download ``kind`` (``file(row, kind)``, 404 for an unknown kind) by id and by public link."""

    @require_safe
    @login_required
    def private(request: HttpRequest, pk: int, kind: str) -> HttpResponseBase:
        return file(get(request.user, pk, "view"), kind)

    @require_safe
    def shared(request: HttpRequest, token: str, kind: str) -> HttpResponseBase:
        return file(get_shared(token), kind)

    return private, shared


def cancel_page(get: Lookup, cancel: Callable[[Any], bool], done: str) -> Callable[..., HttpResponse]:
    """The cancel button's POST: ``cancel(row)``, then back to the row's page, saying ``done`` if it cancelled."""

    @login_required
    @require_POST
    def cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
        row = get(request.user, pk, "cancel")
        if cancel(row):
            messages.info(request, done)
        return redirect(row)

    return cancel_view
