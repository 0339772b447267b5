"""Short views on top of dashboard.services (healthchecks' habit: lookup helpers, no domain logic).

Access: every page needs a signed-in user. Experiments and their results are
readable by every signed-in user of the instance (a research group's shared
platform: the list filters by owner, the compare page overlays colleagues'
runs); only the owner may cancel. Uploaded files are private to their owner.
"""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseForbidden, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from dashboard import charts, downloads, services
from dashboard.forms import ExperimentForm, UploadForm
from dashboard.models import ClusterUpload, Experiment, Run, Status, TraceUpload
from simcore.errors import SimcoreError
from simcore.schedulers import SCHEDULERS
from simcore.version import code_version

PAGE_SIZE = 25


def version_context(request: HttpRequest) -> dict[str, Any]:
    return {"code_version": code_version()}


def _get_experiment(request: HttpRequest, pk: int, *, write: bool = False) -> Experiment:
    exp = get_object_or_404(Experiment.objects.select_related("owner", "cluster_upload", "trace_upload")
                            .defer("cluster_upload__content_gz", "trace_upload__content_gz"), pk=pk)
    if write and exp.owner_id != request.user.pk:
        raise PermissionError
    return exp


def _get_run(request: HttpRequest, pk: int, *, write: bool = False) -> Run:
    run = get_object_or_404(Run.objects.select_related("experiment", "result"), pk=pk)
    if write and run.experiment.owner_id != request.user.pk:
        raise PermissionError
    return run


# ---------------------------------------------------------------------------- experiments


def _filtered(request: HttpRequest) -> tuple[QuerySet[Experiment], dict[str, str]]:
    f = {k: request.GET.get(k, "").strip() for k in ("owner", "status", "cluster", "workload", "scheduler")}
    qs = Experiment.objects.select_related("owner")
    if f["owner"] == "me":
        qs = qs.filter(owner=request.user)
    elif f["owner"]:
        qs = qs.filter(owner__username=f["owner"])
    if f["status"]:
        qs = qs.filter(status=f["status"])
    if f["cluster"]:
        qs = qs.filter(cluster_label=f["cluster"])
    if f["workload"]:
        qs = qs.filter(workload_label=f["workload"])
    if f["scheduler"]:
        qs = qs.filter(runs__scheduler=f["scheduler"]).distinct()
    return qs, f


@login_required
def experiment_list(request: HttpRequest) -> HttpResponse:
    qs, filters = _filtered(request)
    page = Paginator(qs, PAGE_SIZE).get_page(request.GET.get("page"))
    query = "&".join(f"{k}={v}" for k, v in filters.items() if v)
    ctx = {
        "page": page, "filters": filters, "query": query, "statuses": Status.values,
        "owners": get_user_model().objects.filter(experiments__isnull=False).distinct()
        .order_by("username").values_list("username", flat=True),
        "clusters": Experiment.objects.order_by().values_list("cluster_label", flat=True).distinct(),
        "workloads": Experiment.objects.order_by().values_list("workload_label", flat=True).distinct(),
        "schedulers": sorted(set(SCHEDULERS.names()) | set(Run.objects.order_by().values_list(
            "scheduler", flat=True).distinct())),
    }
    return render(request, "dashboard/experiment_list.html", ctx)


@login_required
def experiment_new(request: HttpRequest) -> HttpResponse:
    form = ExperimentForm(request.POST or None, owner=request.user)
    if request.method == "POST" and form.is_valid():
        exp = services.create_experiment(request.user, form.scenario, name=form.cleaned_data["name"],
                                         cluster_upload=form.cluster_upload, trace_upload=form.trace_upload)
        return redirect(exp)
    return render(request, "dashboard/experiment_new.html", {"form": form}, status=400 if form.errors else 200)


@login_required
def experiment_detail(request: HttpRequest, pk: int) -> HttpResponse:
    exp = _get_experiment(request, pk)
    runs = services.runs_with_results(exp)
    done = [r for r in runs if r.status == Status.FINISHED]
    ctx = {
        "experiment": exp, "runs": runs, "finished": done,
        "charts": charts.all_charts(services.labelled_series(runs)) if done else None,
        "offline": [r for r in done if r.result.offline],
        "versions": sorted({r.code_version for r in runs if r.code_version}),
        "active": any(r.is_active for r in runs), "can_edit": exp.owner_id == request.user.pk,
    }
    return render(request, "dashboard/experiment_detail.html", ctx)


@login_required
def experiment_progress(request: HttpRequest, pk: int) -> JsonResponse:
    return JsonResponse(services.progress_payload(_get_experiment(request, pk)))


@login_required
@require_POST
def experiment_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        exp = _get_experiment(request, pk, write=True)
    except PermissionError:
        return HttpResponseForbidden("only the experiment's owner can cancel it")
    n = services.cancel_experiment(exp)
    messages.info(request, f"cancelled {n} run(s)")
    return redirect(exp)


@login_required
@require_POST
def run_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    try:
        run = _get_run(request, pk, write=True)
    except PermissionError:
        return HttpResponseForbidden("only the experiment's owner can cancel its runs")
    if services.cancel_run(run):
        messages.info(request, f"cancelled {run}")
    return redirect(run.experiment)


# ---------------------------------------------------------------------------- downloads

DOWNLOADS = ("jobs.csv", "jobs.parquet", "summary.json", "summary.csv", "series.json", "series.csv")


def _download(runs: list[Run], kind: str, stem: str, with_run: bool,
              scenario: dict[str, Any] | None = None) -> HttpResponse:
    if kind == "jobs.csv":
        return downloads.jobs_csv(runs, f"{stem}-jobs.csv", with_run)
    if kind == "jobs.parquet":
        return downloads.jobs_parquet(runs, f"{stem}-jobs.parquet", with_run)
    if kind == "summary.json":
        return downloads.summary_json(runs, f"{stem}-summary.json", scenario)
    if kind == "summary.csv":
        return downloads.summary_csv(runs, f"{stem}-summary.csv")
    if kind == "series.json":
        return downloads.series_json(runs, f"{stem}-series.json")
    if kind == "series.csv":
        return downloads.series_csv(runs, f"{stem}-series.csv")
    raise Http404(f"unknown download {kind!r}")


@login_required
def experiment_download(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    exp = _get_experiment(request, pk)
    if kind == "archive.zip":
        return downloads.experiment_archive(exp, f"experiment-{exp.pk}.zip")
    return _download(services.runs_with_results(exp), kind, f"experiment-{exp.pk}", True, exp.scenario)


@login_required
def run_download(request: HttpRequest, pk: int, kind: str) -> HttpResponse:
    run = _get_run(request, pk)
    return _download([run], kind, f"run-{run.pk}-{run.scheduler}-seed{run.seed}", False)


# ---------------------------------------------------------------------------- compare


@login_required
def compare(request: HttpRequest) -> HttpResponse:
    ids = [int(x) for x in request.GET.getlist("run") if x.isdigit()][:20]
    chosen = list(Run.objects.filter(pk__in=ids, status=Status.FINISHED).select_related("result", "experiment"))
    chosen.sort(key=lambda r: ids.index(r.pk))
    series = [(f"#{r.experiment_id} {r.experiment.title}: {r.scheduler} s{r.seed}", r.result.series) for r in chosen]
    candidates = (Run.objects.filter(status=Status.FINISHED).select_related("experiment", "experiment__owner")
                  .order_by("-experiment__created", "experiment_id", "seed", "id"))
    exp_filter = request.GET.get("experiment", "").strip()
    if exp_filter.isdigit():
        candidates = candidates.filter(experiment_id=int(exp_filter))
    ctx = {"chosen": chosen, "charts": charts.all_charts(series) if series else None,
           "candidates": candidates[:200], "ids": set(ids), "experiment_filter": exp_filter}
    return render(request, "dashboard/compare.html", ctx)


# ---------------------------------------------------------------------------- uploads


@login_required
def uploads(request: HttpRequest) -> HttpResponse:
    forms_ = {"cluster": UploadForm(prefix="cluster"), "trace": UploadForm(prefix="trace")}
    status = 200
    if request.method == "POST":
        kind = request.POST.get("kind", "")
        if kind not in forms_:
            return HttpResponse("unknown upload kind", status=400)
        form = UploadForm(request.POST, request.FILES, prefix=kind)
        forms_[kind] = form
        if form.is_valid():
            f = form.cleaned_data["file"]
            try:
                create = services.create_cluster_upload if kind == "cluster" else services.create_trace_upload
                up = create(request.user, form.cleaned_data["name"], f.name, f.read())
            except SimcoreError as e:
                form.add_error("file", str(e))
            else:
                messages.success(request, f"stored {up}")
                return redirect("uploads")
        status = 400
    ctx = {"forms": forms_,
           "clusters": ClusterUpload.objects.filter(owner=request.user).defer("content_gz"),
           "traces": TraceUpload.objects.filter(owner=request.user).defer("content_gz")}
    return render(request, "dashboard/uploads.html", ctx, status=status)
