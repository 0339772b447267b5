"""The column-mapping page: send a CSV, see its head, pick a column (or a difference) per field, preview, import.

Thin: the forms check the choices, :mod:`dashboard.traces.mappings` stores
and imports, :mod:`simcore.traces.colmap` converts. Every user error is a form error
on the page (status 400), never a 500.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from dashboard.common import access, queueing
from dashboard.traces import mappings
from dashboard.traces.mapping_forms import DraftForm, MapForm
from simcore.core.errors import SimcoreError
from simcore.traces import colmap


def _initial(request: HttpRequest) -> dict[str, Any]:
    """A saved map picked with ?mapping=id fills the map text and the filter."""
    pk = request.GET.get("mapping", "")
    if not pk.isdigit() or len(pk) > 18:
        return {}
    m = mappings.get_mapping_for_user(request.user, int(pk))
    return {"column_map": m.column_map, "where": m.where, "save_as": m.name}


@login_required
def trace_map(request: HttpRequest) -> HttpResponse:
    user = access.signed_in(request)
    draft = mappings.draft_of(user)
    status = 200
    ctx: dict[str, Any] = {"saved": mappings.own_mappings(user), "draft": draft}
    if draft is None:
        form = DraftForm(request.POST or None, request.FILES or None)
        if request.method == "POST" and form.is_valid():
            f = form.cleaned_data["file"]
            try:
                mappings.create_draft(user, form.cleaned_data["name"], f.name or "", f.read())
            except SimcoreError as e:
                form.add_error("file", str(e))
            else:
                return redirect("trace-map")
        status = 400 if request.method == "POST" else 200
        return render(request, "dashboard/trace_map.html", {**ctx, "draft_form": form}, status=status)
    head = colmap.sniff(draft.head)
    mform = MapForm(head.header, request.POST or None, initial=_initial(request))
    ctx.update({"form": mform, "head": head})
    if request.method == "POST":
        if not mform.is_valid():
            return render(request, "dashboard/trace_map.html", ctx, status=400)
        opts = mform.options()
        ctx["preview"] = mappings.preview_draft(draft, opts["map"], opts["where"])
        ctx["targets"] = colmap.parse_map(opts["map"]).targets
        ctx["map_text"], ctx["where_text"] = opts["map"], opts["where"]
        if request.POST.get("action") == "import":
            try:
                if mform.cleaned_data.get("save_as"):
                    mappings.save_mapping(user, mform.cleaned_data["save_as"], opts["map"], opts["where"] or "")
                up = mappings.import_draft(draft, opts)
            except SimcoreError as e:
                mform.add_error(None, str(e))
                return render(request, "dashboard/trace_map.html", ctx, status=400)
            if getattr(up, "queued", True) is False:
                messages.warning(request, f"stored {up}; {queueing.QUEUE_DOWN}")
            else:
                messages.success(request, f"stored {up} with map {opts['map']}; it is being imported (progress below)")
            return redirect("uploads")
    return render(request, "dashboard/trace_map.html", ctx, status=status)


@login_required
@require_POST
def trace_map_discard(request: HttpRequest) -> HttpResponse:
    d = mappings.draft_of(access.signed_in(request))
    if d is not None:
        d.delete()
    return redirect("trace-map")


@login_required
@require_POST
def trace_map_delete(request: HttpRequest, pk: int) -> HttpResponse:
    m = mappings.get_mapping_for_user(request.user, pk)
    m.delete()
    messages.success(request, f"deleted the map {m.name}")
    return redirect("trace-map")
