"""Sweeps on the platform: cells as runs, the result cache, extending a sweep, retrying a cell, grid progress.

A sweep is an experiment whose scenario has ``axes`` (:mod:`simcore.archive`);
every cell (point x scheduler x seed) is one :class:`~dashboard.models.Run`
and one Celery task, so cells run on whichever workers are free. An ordinary
experiment is the one-point case and goes through the same code. The
aggregation over seeds is :func:`simcore.sweep.report.aggregate`, the one
``simcore sweep --table`` prints.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from dashboard.common.models import Status
from dashboard.experiments import aggregates, cache, work
from dashboard.experiments.models import Experiment, Run
from dashboard.traces.models import ClusterUpload, TraceUpload
from simcore.core.errors import ParameterError
from simcore.sweep import scenario as sweep_scenario
from simcore.sweep.grammar import parse_axes, parse_seeds
from simcore.sweep.report import Row, aggregate

Cell = tuple[dict[str, Any], str, int]


def _cell_scenarios(scenario: dict[str, Any], cells: Sequence[Cell]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for point, _, _ in cells:
        key = sweep_scenario.point_key(point)
        if key not in out:
            out[key] = sweep_scenario.cell_scenario(scenario, point) if point else scenario
    return out


def create_runs(
    exp: Experiment,
    scenario: dict[str, Any],
    cells: Sequence[Cell],
    *,
    reuse: bool = True,
) -> tuple[list[int], int]:
    """Store the runs of ``cells`` (inside the caller's transaction); returns (ids to queue, cells from the cache).

    A cell whose result is cached (:mod:`dashboard.experiments.cache`) is stored finished with a copy of it.
    """
    cu: ClusterUpload | None = exp.cluster_upload
    tu: TraceUpload | None = exp.trace_upload
    scenarios = _cell_scenarios(scenario, cells)
    runs = []
    for point, scheduler, seed in cells:
        pkey = sweep_scenario.point_key(point)
        runs.append(
            Run(
                experiment=exp,
                scheduler=scheduler,
                seed=seed,
                point=point,
                point_key=pkey,
                cache_key=cache.cell_key(scenarios[pkey], scheduler, seed, cu, tu),
            )
        )
    found = cache.sources(exp.owner, [r.cache_key for r in runs]) if reuse else {}
    for r in runs:
        if r.cache_key in found:
            cache.reuse(r, found[r.cache_key])
    Run.objects.bulk_create(runs)
    stored = {
        (r.point_key, r.scheduler, r.seed): r
        for r in exp.runs.filter(point_key__in={r.point_key for r in runs}).select_related("cached_from")
    }
    queued, copied = [], []
    for r in runs:
        row = stored[(r.point_key, r.scheduler, r.seed)]
        if r.cache_key in found:
            cache.copy_result(row, found[r.cache_key])
            copied.append(row)
        else:
            queued.append(row.pk)
    if copied:  # finished at once: the pages' aggregates now, as a worker stores them for a run it finishes
        aggregates.runs_finished(exp, copied)
    return queued, len(copied)


def _queue_after_commit(exp: Experiment, ids: list[int]) -> None:
    """The experiment's status from its runs now; the new runs' tasks once the rows are committed."""
    exp.refresh_status()

    def go() -> None:
        exp.queued = work.enqueue_runs(ids) if ids else True  # type: ignore[attr-defined]

    transaction.on_commit(go)


# -- extending a sweep, retrying a cell ------------------------------------------------------------------------


def extend(exp: Experiment, *, seeds: str = "", vary: Sequence[str] = (), reuse: bool = True) -> dict[str, int]:
    """Add seeds and axis values to an experiment; only the cells it does not have yet are created.

    ``seeds``: the seed grammar (``5-9``); ``vary``: ``NAME=VALUES`` texts of axes the sweep already has (new
    values are appended, values it has are ignored). Returns the counts of new cells, queued and cached.
    """
    from dashboard.experiments.services import check_scenario

    sc = dict(exp.scenario)
    axes = [dict(a) for a in sc.get("axes") or []]
    if not seeds.strip() and not [v for v in vary if v.strip()]:
        raise ParameterError("extend: give more seeds (e.g. 5-9) or more values of an axis (e.g. phi=0.018)")
    if seeds.strip():
        sc["seeds"] = list(sc["seeds"]) + [s for s in parse_seeds(seeds) if s not in sc["seeds"]]
    texts = [v for v in vary if v.strip()]
    if texts:
        cluster = sc["cluster"].get("preset") or "file"
        workload = sc["workload"].get("preset") or "file"
        have = {a["name"]: a for a in axes}
        # Only the new values' grid here (it bounds their expansion); check_scenario checks the whole.
        new_axes = parse_axes(
            texts, cluster, workload, sc["schedulers"], seeds=len(sc["seeds"]), max_runs=settings.SIMCORE_MAX_RUNS
        )
        for ax in new_axes:
            if ax.name not in have:
                names = ", ".join(have) or "none"
                raise ParameterError(
                    f"--vary {ax.name.replace('_', '-')}: this experiment does not vary it (its axes: {names}); "
                    "fork it to vary something else"
                )
            have[ax.name]["values"] = list(have[ax.name]["values"]) + [
                v for v in ax.values if v not in have[ax.name]["values"]
            ]
        sc["axes"] = axes
    new = check_scenario(sc)
    existing = set(exp.runs.values_list("point_key", "scheduler", "seed"))
    missing = [c for c in sweep_scenario.cells(new) if (sweep_scenario.point_key(c[0]), c[1], c[2]) not in existing]
    with transaction.atomic():
        Experiment.objects.filter(pk=exp.pk).update(scenario=new)
        exp.scenario = new
        ids, cached = create_runs(exp, new, missing, reuse=reuse)
        _queue_after_commit(exp, ids)
    return {"cells": len(missing), "queued": len(ids), "cached": cached}


RETRYABLE = (Status.FAILED, Status.CANCELLED)


def retry(run: Run) -> Run:
    """Run a failed or cancelled cell again, alone: a fresh pending run of the same cell replaces it."""
    if run.status not in RETRYABLE:
        raise ParameterError(f"only a failed or cancelled run can be retried; {run} is {run.status}")
    exp = run.experiment
    with transaction.atomic():
        # The same conditional-update rule as every transition: of two retries, one wins.
        if not Run.objects.filter(pk=run.pk, status__in=RETRYABLE).delete()[0]:
            raise ParameterError(f"{run} was retried already")
        new = Run.objects.create(
            experiment=exp,
            scheduler=run.scheduler,
            seed=run.seed,
            point=run.point,
            point_key=run.point_key,
            cache_key=run.cache_key,
        )
        _queue_after_commit(exp, [new.pk])
    return new


# -- reading a sweep -------------------------------------------------------------------------------------------


#: What a page loads of a result: not the series (about 180 kB of JSON a run), nor the per-class table.
PAGE_DEFERRED = ("result__series", "result__per_class")


def ordered_runs(exp: Experiment, *, page: bool = False) -> list[Run]:
    """The experiment's runs in grid order (points as the axes list them, schedulers, seeds), results joined.

    ``page``: a page's load, without what it does not show (:data:`PAGE_DEFERRED`) and, for a grid, the
    offline plans.
    """
    sc = exp.scenario
    point_order = {sweep_scenario.point_key(p): i for i, p in enumerate(sweep_scenario.points(sc))}
    sched_order = {s: i for i, s in enumerate(sc["schedulers"])}
    qs = exp.runs.select_related("result")
    if page:
        qs = qs.defer(*PAGE_DEFERRED, "result__offline")
    runs = list(qs)
    runs.sort(
        key=lambda r: (point_order.get(r.point_key, len(point_order)), sched_order.get(r.scheduler, 99), r.seed, r.pk)
    )
    return runs


def summaries(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """The finished runs' summaries, each with its ``point``, as ``simcore sweep`` prints them."""
    out = []
    for r in runs:
        if r.status == Status.FINISHED and hasattr(r, "result"):
            out.append({**r.result.summary, "point": dict(r.point or {})})
    return out


def aggregated(runs: Sequence[Run], metric: str) -> list[Row]:
    """Mean, 95% t-interval, min, max and unstable count per point and scheduler over the finished cells."""
    done = summaries(runs)
    return aggregate(done, metric) if done else []


def _compile_share(simulated: Sequence[Run], now: datetime) -> float:
    """The fraction of the workers' busy time so far that went to compiling kernels, 0..1.

    Busy time: each started cell's seconds from its start to its end (or now). Compile time: the
    ``compile_s`` of the finished cells (a running cell's is not known yet). A scheduler's first cell
    on a worker compiles its kernel once (3-95 s); at the pace of those cells a sweep's ETA said half
    an hour for five minutes of work (issue 28), so that share of the elapsed time is left out.
    """
    busy = sum(
        ((r.finished_at or now) - r.started_at).total_seconds()
        for r in simulated
        if r.started_at is not None and r.status in (Status.FINISHED, Status.RUNNING)
    )
    compiled = sum(
        float(r.result.summary.get("compile_s") or 0.0)
        for r in simulated
        if r.status == Status.FINISHED and hasattr(r, "result")
    )
    return min(compiled / busy, 1.0) if busy > 0 else 0.0


def progress(exp: Experiment, runs: Sequence[Run]) -> dict[str, Any]:
    """Progress of the whole grid: cells by status, from the cache, and an ETA from the pace so far.

    The pace is the simulated cells (finished ones plus the fractions of running ones) per second of
    wall time since the first cell started, so it counts every worker taking cells, less the share of
    it spent compiling kernels (:func:`_compile_share`); the ETA is the remaining work at that pace.
    Cached cells take no time and count in neither.
    """
    counts = {s: 0 for s in Status.values}
    for r in runs:
        counts[r.status] += 1
    cached = sum(1 for r in runs if cache.is_cached(r))
    simulated = [r for r in runs if not cache.is_cached(r)]
    starts = [r.started_at for r in simulated if r.started_at is not None]
    done_work = sum(1.0 for r in simulated if r.status == Status.FINISHED) + sum(
        r.fraction for r in simulated if r.status == Status.RUNNING
    )
    remaining = sum(1.0 for r in simulated if r.status == Status.PENDING) + sum(
        1.0 - r.fraction for r in simulated if r.status == Status.RUNNING
    )
    eta = None
    if starts and done_work > 0 and remaining > 0:
        now = timezone.now()
        elapsed = (now - min(starts)).total_seconds()
        if elapsed > 0:
            eta = remaining * elapsed * (1.0 - _compile_share(simulated, now)) / done_work
    total = len(runs)
    ended = counts[Status.FINISHED] + counts[Status.FAILED] + counts[Status.CANCELLED]
    return {
        "cells": total,
        "finished": counts[Status.FINISHED],
        "failed": counts[Status.FAILED],
        "cancelled": counts[Status.CANCELLED],
        "running": counts[Status.RUNNING],
        "pending": counts[Status.PENDING],
        "cached": cached,
        "fraction": (ended + sum(r.fraction for r in runs if r.status == Status.RUNNING)) / total if total else 1.0,
        "eta_s": eta if remaining > 0 else 0.0,
    }
