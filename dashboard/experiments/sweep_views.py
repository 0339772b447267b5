"""Sweep pages: the sweep section of an experiment page, its live data, chart data downloads, extend, retry,
and the paper reproductions page. Short views over the experiments room's services (sweeps, sweep_results)."""

from __future__ import annotations

import csv
import io
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from dashboard.common import access, labels, queueing
from dashboard.experiments import scale, sweeps
from dashboard.experiments import sweep_charts as charts_sweep
from dashboard.experiments.access import get_experiment_for_user, get_run_for_user, get_shared_experiment
from dashboard.experiments.downloads import described
from dashboard.experiments.forms import ExtendForm, ReproductionForm
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.services import create_experiment, reproduction_scenario
from dashboard.experiments.sweep_results import SweepResults, payload, results
from simcore import reproductions
from simcore.core.errors import SimcoreError
from simcore.reproductions import relative_text
from simcore.sweep import scenario as sweep_scenario

#: The chart data a sweep offers for download: (chart, format).
DATA_KINDS = ("metric.csv", "metric.parquet", "stacked.csv", "stacked.parquet")


def figures(res: SweepResults) -> dict[str, Any]:
    """The sweep's charts by element id (pure builders in dashboard.experiments.sweep_charts)."""
    figs = {
        "chart-sweep": charts_sweep.metric_chart(
            res.rows,
            res.metric,
            axis=res.axis if res.chart != "bars" else None,
            log_y=res.log_y,
            title=(f"{res.reproduction.figure}: " if res.reproduction else "")
            + labels.name(res.metric)
            + (f" against {labels.name(res.axis)}" if res.axis and res.chart != "bars" else " per scheduler"),
        )
    }
    if res.chart == "stacked":
        figs["chart-stacked"] = charts_sweep.stacked_chart(
            res.waits,
            res.completions,
            title=f"{res.reproduction.figure}: average job completion time, wait until start + run"
            if res.reproduction
            else "",
        )
    return figs


def _options(request: HttpRequest) -> tuple[str | None, bool | None]:
    metric = request.GET.get("metric", "").strip() or None
    log = request.GET.get("log")
    return metric, (None if log is None else log == "1")


def _results(request: HttpRequest, exp: Experiment) -> SweepResults:
    metric, log = _options(request)
    try:
        return results(exp, metric, log)
    except SimcoreError as e:
        raise Http404(str(e)) from None


def detail_context(request: HttpRequest, exp: Experiment, base: str, runs: list[Run], *, owner: bool) -> dict[str, Any]:
    """The sweep section's context for the experiment page (views._detail adds it under ``sweep``); ``runs``:
    the experiment's, in grid order with their summaries (the page's own)."""
    metric, log = _options(request)
    error = ""
    try:
        res = results(exp, metric, log, runs)
    except SimcoreError as e:  # a page only reads: the problem is shown on it, not stored as a message
        error = str(e)
        res = results(exp, None, log, runs)
    comparisons = [
        {
            "scheduler": c.scheduler,
            "point": sweep_scenario.point_label(c.point),
            "paper": c.paper,
            "paper_relative": relative_text(c.paper_relative) if c.paper_relative is not None else "",
            "ours": c.ours,
            "ours_relative": relative_text(c.ours_relative) if c.ours_relative is not None else "",
            "unstable": c.ours_unstable,
            "runs": c.ours_runs,
        }
        for c in res.comparisons
    ]
    query = f"?metric={res.metric}&log={'1' if res.log_y else '0'}"
    return {
        "res": res,
        "metric_error": error,
        "figures": figures(res),
        "live": {"url": f"{base}sweep.json{query}", "active": any(r.is_active for r in res.runs)},
        "query": query,
        "scale_text": ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in res.scale.items()),
        "comparisons": comparisons,
        "points": [sweep_scenario.point_label(r.point) for r in res.rows],
        "extend_form": ExtendForm() if owner else None,
        "can_retry": owner,
        "cells_of": {r.pk: sweep_scenario.point_label(r.point or {}) for r in res.runs},
        "table": [(r, charts_sweep.clipped(r, res.metric)) for r in res.rows],
        "columns_url": f"{labels.DEFINITIONS_PATH}#downloads",
    }


@require_safe
@login_required
def sweep_json(request: HttpRequest, pk: int) -> JsonResponse:
    res = _results(request, get_experiment_for_user(request.user, pk))
    return JsonResponse({**payload(res), "figures": figures(res)})


@require_safe
def shared_sweep_json(request: HttpRequest, token: str) -> JsonResponse:
    res = _results(request, get_shared_experiment(token))
    return JsonResponse({**payload(res), "figures": figures(res)})


def records(res: SweepResults, chart: str) -> list[dict[str, Any]]:
    if chart == "stacked":
        if res.chart != "stacked":
            raise Http404("this sweep has no stacked wait/run chart")
        return charts_sweep.stacked_table(res.waits, res.completions)
    return charts_sweep.metric_table(res.rows, res.metric)


def table_file(rows: list[dict[str, Any]], fmt: str, stem: str) -> HttpResponse | FileResponse:
    """A chart's data as CSV or Parquet (columns: every key, in first-seen order)."""
    columns: list[str] = []
    for r in rows:
        columns += [k for k in r if k not in columns]
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=columns or ["scheduler"], lineterminator="\n", restval="")
        w.writeheader()
        w.writerows([{k: "" if v is None else v for k, v in r.items()} for r in rows])
        resp = HttpResponse(buf.getvalue(), content_type="text/csv")
        resp["Content-Disposition"] = f'attachment; filename="{stem}.csv"'
        return described(resp)
    table = pa.Table.from_pylist(rows) if rows else pa.table({"scheduler": pa.array([], pa.string())})
    tmp = tempfile.TemporaryFile()
    pq.write_table(table, tmp)
    tmp.seek(0)
    return described(
        FileResponse(tmp, as_attachment=True, filename=f"{stem}.parquet", content_type="application/vnd.apache.parquet")
    )


def data_file(request: HttpRequest, exp: Experiment, kind: str) -> HttpResponse | FileResponse:
    if kind not in DATA_KINDS:
        raise Http404(f"unknown download {kind!r}; valid: {', '.join(DATA_KINDS)}")
    chart, _, fmt = kind.partition(".")
    res = _results(request, exp)
    stem = f"experiment-{exp.pk}-{chart if chart == 'stacked' else res.metric}"
    return table_file(records(res, chart), fmt, stem)


@require_safe
@login_required
def sweep_data(request: HttpRequest, pk: int, kind: str) -> HttpResponse | FileResponse:
    return data_file(request, get_experiment_for_user(request.user, pk), kind)


@require_safe
def shared_sweep_data(request: HttpRequest, token: str, kind: str) -> HttpResponse | FileResponse:
    return data_file(request, get_shared_experiment(token), kind)


@login_required
@require_POST
def experiment_extend(request: HttpRequest, pk: int) -> HttpResponse:
    exp = get_experiment_for_user(request.user, pk, "change")
    form = ExtendForm(request.POST)
    if form.is_valid():
        try:
            done = sweeps.extend(exp, seeds=form.cleaned_data["seeds"], vary=form.cleaned_data["vary"])
        except SimcoreError as e:
            messages.error(request, str(e))
        else:
            messages.success(
                request,
                f"added {done['cells']} cell(s): {done['queued']} queued, {done['cached']} from the result cache; "
                "the cells it had are kept",
            )
    else:
        messages.error(request, "; ".join(str(e) for errs in form.errors.values() for e in errs))
    return redirect(exp)


@login_required
@require_POST
def run_retry(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_run_for_user(request.user, pk, "change")
    try:
        new = sweeps.retry(run)
    except SimcoreError as e:
        messages.error(request, str(e))
    else:
        messages.info(request, f"retrying {new}")
    return redirect(run.experiment)


# ---------------------------------------------------------------------------- reproductions


@login_required
def reproduce(request: HttpRequest) -> HttpResponse:
    """The papers' figures, each a form of its scale knobs; submitting one starts its experiment."""
    forms_ = {name: ReproductionForm(rep) for name, rep in reproductions.REPRODUCTIONS.items()}
    checks: dict[str, list[str]] = {}
    status = 200
    if request.method == "POST":
        name = request.POST.get("reproduction", "")
        if name not in forms_:
            return HttpResponse("unknown reproduction", status=400)
        rep = reproductions.REPRODUCTIONS[name]
        form = ReproductionForm(rep, request.POST)
        forms_[name] = form
        if form.is_valid():
            try:
                scenario = reproduction_scenario(rep, form.scale, form.cleaned_data["job_records"])
                if "check" in request.POST:  # "Check the scale": the page again with what it can show
                    checks[name] = scale.before(scenario) or []  # reproductions are presets: always read
                    return _reproduce_page(request, forms_, checks, 200)
                exp = create_experiment(
                    access.signed_in(request),
                    scenario,
                    name=f"{rep.figure} ({rep.paper.split(':')[0].split(' (')[0]}) reproduction"[:200],
                    reproduction={"name": rep.name, "scale": form.scale},
                    reuse=True,
                )
            except SimcoreError as e:
                form.add_error(None, str(e))
            else:
                if getattr(exp, "queued", True) is False:
                    messages.warning(request, queueing.QUEUE_DOWN)
                return redirect(exp)
        status = 400
    return _reproduce_page(request, forms_, checks, status)


def _reproduce_page(
    request: HttpRequest, forms_: dict[str, ReproductionForm], checks: dict[str, list[str]], status: int
) -> HttpResponse:
    items = [
        {
            "rep": rep,
            "form": forms_[name],
            "command": rep.command(),
            "checked": name in checks,
            "warnings": checks.get(name, []),
        }
        for name, rep in reproductions.REPRODUCTIONS.items()
    ]
    return render(request, "dashboard/reproduce.html", {"items": items}, status=status)
