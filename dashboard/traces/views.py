"""The uploads page: cluster files and traces, a trace import's progress, cancelling it, deleting an upload."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dashboard.common import access, queueing, waiting
from dashboard.experiments.models import Experiment
from dashboard.traces import imports
from dashboard.traces.access import get_upload_for_user
from dashboard.traces.forms import upload_form
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import UPLOAD_KINDS, create_upload, delete_upload
from simcore.core.errors import SimcoreError


@login_required
def uploads(request: HttpRequest) -> HttpResponse:
    forms_ = {kind: upload_form(kind, prefix=kind) for kind in UPLOAD_KINDS}
    status = 200
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in forms_:
            return HttpResponse("unknown upload kind", status=400)
        form = upload_form(kind, request.POST, request.FILES, prefix=kind)
        forms_[kind] = form
        if form.is_valid():
            try:
                up = create_upload(kind, access.signed_in(request), form.cleaned_data["name"], **form.upload_args())
            except SimcoreError as e:
                form.add_error(form.field_for(str(e)), str(e))
            else:
                if getattr(up, "queued", True) is False:
                    messages.warning(request, f"stored {up}; {queueing.QUEUE_DOWN}")
                elif isinstance(up, TraceUpload) and not up.is_ready:
                    messages.success(request, f"stored {up}; it is being imported (progress below)")
                else:
                    messages.success(request, f"stored {up}")
                return redirect("uploads")
        status = 400
    traces = list(
        TraceUpload.objects.filter(owner=access.signed_in(request)).defer("content_gz").select_related("cluster_upload")
    )
    for t, wait in zip(traces, waiting.notes(((t.status, t.queued_at) for t in traces), "long"), strict=True):
        t.waiting = wait  # type: ignore[attr-defined]
    ctx = {
        "forms": forms_,
        "kinds": UPLOAD_KINDS,
        "clusters": ClusterUpload.objects.filter(owner=access.signed_in(request)).defer("content_gz"),
        "traces": traces,
        "active": any(t.is_active for t in traces),
    }
    return render(request, "dashboard/uploads.html", ctx, status=status)


@require_safe
@login_required
def trace_import_detail(request: HttpRequest, pk: int) -> HttpResponse:
    up = get_upload_for_user(request.user, "trace", pk)
    used = Experiment.objects.filter(trace_upload=up).count()
    return render(request, "dashboard/trace_import.html", {"up": up, "used": used})


@require_safe
@login_required
def trace_import_progress(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(imports.progress_payload(get_upload_for_user(request.user, "trace", pk)))


@login_required
@require_POST
def trace_import_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    up = get_upload_for_user(request.user, "trace", pk)
    if imports.cancel_import(up):
        messages.info(request, f"cancelled the import of {up}")
    return redirect("uploads")


@login_required
@require_POST
def upload_delete(request: HttpRequest, kind: str, pk: int) -> HttpResponse:
    up = get_upload_for_user(request.user, kind, pk)
    try:
        delete_upload(up)
    except SimcoreError as e:
        messages.error(request, str(e))
    else:
        messages.success(request, f"deleted {up}")
    return redirect("uploads")
