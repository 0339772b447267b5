"""Page aggregates: what the sweep and experiment pages show, computed once when a run finishes, not on every view.

A sweep page shows, per point and scheduler, the mean, 95% t-interval, min,
max and unstable count of a metric over the seeds; an experiment page shows
charts built from every finished run's series (about 180 kB of JSON a run).
Computing them on each view cost a 90-cell sweep page most of a second and
held a web process for all of it under load (issue 25). So the worker that
stores a run's result (dashboard.experiments.execution.store_outcome), and the
request that copies cached results into new cells, store them in the same
transaction:

* :class:`~dashboard.models.CellAggregate`: per point and scheduler, every
  metric's statistics over its finished seeds (:func:`group_stats`, the numbers
  :func:`simcore.sweep.report.aggregate` gives, which ``simcore sweep --table`` prints);
* :class:`~dashboard.models.ExperimentCharts`: an ordinary experiment's chart
  figures (:func:`dashboard.experiments.charts.all_charts`).

Each row names the finished runs it was computed from. A page uses a row only
while those are exactly the finished runs it sees, and otherwise computes that
part itself, without storing it (a read never writes): results stored before
these rows existed (the migration backfills them) or changed by a path that
does not store them still show the right numbers, only slower.

Two workers finishing runs of one experiment at once take turns on the
experiment's row lock, so the second computes over both runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, cast

from django.db.models import Model

from dashboard.common.models import Status
from dashboard.experiments.charts import CHARTS_VERSION, ChartRun, all_charts, charts_version
from dashboard.experiments.models import CellAggregate, Experiment, ExperimentCharts, Run
from simcore.core.errors import ParameterError
from simcore.sweep.report import Row, aggregate, flatten, numeric_keys

Figures = dict[str, Any]

#: The statistics of one metric in :attr:`CellAggregate.stats`, in this order.
STAT_FIELDS = ("n", "mean", "sd", "ci_low", "ci_high", "min", "max")


# -- computing ------------------------------------------------------------------------------------------------


def group_stats(summaries: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Statistics of one point and scheduler over its seeds' summaries (each with its ``point``), as stored.

    ``keys``: the numeric keys of the first summary (the page's metric menu); ``valid``: the keys
    :func:`simcore.sweep.report.check_metric` accepts in it (a number or None: a metric no job gave has no
    statistics but is no error); ``metrics``: per metric, :data:`STAT_FIELDS` of
    :func:`simcore.sweep.report.aggregate`'s row, for every key that is a number or None in each summary.
    """
    valid = [
        k
        for k, v in flatten(summaries[0]).items()
        if v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
    ]
    metrics: dict[str, list[Any]] = {}
    for k in dict.fromkeys([*valid, *(k for s in summaries[1:] for k in numeric_keys(s))]):
        try:
            (row,) = aggregate(summaries, k)
        except (KeyError, TypeError, ValueError):  # absent from a summary, or not a number there: not a metric
            continue
        metrics[k] = [getattr(row, f) for f in STAT_FIELDS]
    return {
        "runs": len(summaries),
        "unstable": sum(1 for s in summaries if s.get("stable") is False),
        "keys": numeric_keys(summaries[0]),
        "valid": valid,
        "metrics": metrics,
    }


def profile_charts(scenario: dict[str, Any]) -> bool:
    """Whether the scenario's workload has a run-time profile (the page adds the profile study's chart)."""
    from simcore.presets import workload_provides

    spec = scenario.get("workload") or {}
    provides, _ = workload_provides(spec) if spec else (frozenset(), "")
    return "profile" in provides


def build_charts(scenario: dict[str, Any], runs: Iterable[tuple[str, int, Any, Any]]) -> Figures:
    """The experiment page's figures from its finished runs' (scheduler, seed, series, summary), in page order."""
    chart_runs = [
        ChartRun(group=s, seed=seed, series=series, summary=summary, scheduler=s) for s, seed, series, summary in runs
    ]
    return all_charts(chart_runs, profile=profile_charts(scenario))


# -- storing (in the transaction that stores a result) --------------------------------------------------------


@dataclass(frozen=True)
class _Models:
    """The models this module writes: the app's, or a migration's historical ones."""

    run: Any
    cell: Any
    charts: Any


APP_MODELS = _Models(Run, CellAggregate, ExperimentCharts)


def _store_group(m: _Models, exp_id: int, point_key: str, scheduler: str) -> None:
    done = list(
        m.run.objects.filter(
            experiment_id=exp_id,
            point_key=point_key,
            scheduler=scheduler,
            status=Status.FINISHED,
            result__isnull=False,
        )
        .order_by("seed", "id")
        .values_list("id", "point", "result__summary")
    )
    if not done:
        m.cell.objects.filter(experiment_id=exp_id, point_key=point_key, scheduler=scheduler).delete()
        return
    summaries = [{**summary, "point": dict(point or {})} for _, point, summary in done]
    m.cell.objects.update_or_create(
        experiment_id=exp_id,
        point_key=point_key,
        scheduler=scheduler,
        defaults={
            "point": dict(done[0][1] or {}),
            "run_ids": sorted(pk for pk, _, _ in done),
            "stats": group_stats(summaries),
        },
    )


def _store_charts(m: _Models, exp_id: int, scenario: dict[str, Any]) -> None:
    done = list(
        m.run.objects.filter(experiment_id=exp_id, status=Status.FINISHED, result__isnull=False)
        .order_by("seed", "id")
        .values_list("id", "scheduler", "seed", "result__series", "result__summary")
    )
    figures = build_charts(scenario, [(s, seed, series, summary) for _, s, seed, series, summary in done])
    m.charts.objects.update_or_create(
        experiment_id=exp_id,
        defaults={"run_ids": sorted(pk for pk, *_ in done), "figures": json.dumps(figures, allow_nan=False)},
    )


def _has_sweep_section(exp: Model) -> bool:
    from dashboard.experiments.sweep_results import is_sweep_page

    return is_sweep_page(exp)  # type: ignore[arg-type]  # reads scenario and reproduction only


def _store(m: _Models, exp: Any, groups: Iterable[tuple[str, str]]) -> None:
    if _has_sweep_section(exp):
        for point_key, scheduler in dict.fromkeys(groups):
            _store_group(m, exp.pk, point_key, scheduler)
    if not exp.scenario.get("axes"):  # a grid's page has no per-run charts (dashboard.experiments.views._detail)
        _store_charts(m, exp.pk, exp.scenario)


def runs_finished(exp: Experiment, runs: Iterable[Run]) -> None:
    """Store the aggregates ``runs`` (just finished, or copied from the cache) change; inside their transaction.

    Locks the experiment's row first: a second worker finishing a run of it waits, then sees this one's.
    """
    Experiment.objects.select_for_update().filter(pk=exp.pk).values_list("pk", flat=True).first()
    _store(APP_MODELS, exp, [(r.point_key, r.scheduler) for r in runs])


def backfill(apps: Any, exp: Any) -> None:
    """Store every aggregate of ``exp`` (a historical model instance): the migration's backfill."""
    m = _Models(
        apps.get_model("dashboard", "Run"),
        apps.get_model("dashboard", "CellAggregate"),
        apps.get_model("dashboard", "ExperimentCharts"),
    )
    groups = m.run.objects.filter(experiment_id=exp.pk, status=Status.FINISHED).values_list("point_key", "scheduler")
    _store(m, exp, list(groups))


# -- reading (pages: no writes) -------------------------------------------------------------------------------


def _row(point: dict[str, Any], scheduler: str, stats: dict[str, Any], metric: str) -> Row:
    values = dict(zip(STAT_FIELDS, stats["metrics"].get(metric) or [0] + [None] * 6, strict=True))
    return Row(point=dict(point), scheduler=scheduler, runs=stats["runs"], unstable=stats["unstable"], **values)


@dataclass
class SweepTable:
    """A sweep's per-point-and-scheduler statistics for every metric, in grid order (the first-finished order)."""

    groups: list[tuple[dict[str, Any], str, dict[str, Any]]]
    #: Groups whose stored row did not match the finished runs and were computed for this view.
    computed: int = 0

    @property
    def metrics(self) -> list[str]:
        """The first finished cell's numeric keys (the metric menu); empty before any cell finished."""
        return [k for k in self.groups[0][2]["keys"] if k != "seed"] if self.groups else []

    def check(self, metric: str) -> None:
        """:func:`simcore.sweep.report.check_metric` against the first finished cell, from the stored keys."""
        if not self.groups:
            return
        stats = self.groups[0][2]
        if metric not in stats["valid"]:
            raise ParameterError(
                f"--metric {metric!r} is not a numeric summary key; numeric keys: {', '.join(stats['keys'])}"
            )

    def rows(self, metric: str) -> list[Row]:
        return [_row(point, scheduler, stats, metric) for point, scheduler, stats in self.groups]


def sweep_table(exp: Experiment, runs: Sequence[Run]) -> SweepTable:
    """The statistics of ``runs`` (the experiment's, in grid order, summaries loaded) from the stored rows.

    A group whose stored row was computed from other runs than the finished ones seen here (or has none)
    is computed from the loaded summaries instead.
    """
    finished: dict[tuple[str, str], list[Run]] = {}
    for r in runs:
        if r.status == Status.FINISHED and hasattr(r, "result"):
            finished.setdefault((r.point_key, r.scheduler), []).append(r)
    stored = {
        (pk, s): (ids, stats)
        for pk, s, ids, stats in exp.cell_aggregates.values_list("point_key", "scheduler", "run_ids", "stats")
    }
    out = SweepTable([])
    for (point_key, scheduler), done in finished.items():
        point = dict(done[0].point or {})
        ids, stats = stored.get((point_key, scheduler), (None, None))
        if ids != sorted(r.pk for r in done):
            done = sorted(done, key=lambda r: (r.seed, r.pk))
            stats = group_stats([{**r.result.summary, "point": dict(r.point or {})} for r in done])
            out.computed += 1
        out.groups.append((point, scheduler, stats))
    return out


def experiment_charts(exp: Experiment, done: Sequence[Run]) -> Figures:
    """The experiment page's figures for its finished runs ``done`` (seed, id order): stored, or built now."""
    done = [r for r in done if hasattr(r, "result")]
    stored = ExperimentCharts.objects.filter(experiment=exp).values_list("run_ids", "figures").first()
    if stored is not None and stored[0] == sorted(r.pk for r in done):
        figures = cast(Figures, json.loads(stored[1]))
        if charts_version(figures) == CHARTS_VERSION:  # else stored by older builders: built again for this view
            return figures
    series = dict(
        Run.objects.filter(pk__in=[r.pk for r in done]).values_list("pk", "result__series")  # only for this view
    )
    return build_charts(exp.scenario, [(r.scheduler, r.seed, series[r.pk], r.result.summary) for r in done])
