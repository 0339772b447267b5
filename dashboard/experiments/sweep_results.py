"""Reading a sweep for its page and the API: grid progress, aggregates over seeds, and the paper beside ours."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from dashboard.common import labels
from dashboard.experiments import aggregates, sweeps
from dashboard.experiments.models import Experiment, Run
from simcore import reproductions
from simcore.core.errors import SimcoreError
from simcore.sweep import scenario as sweep_scenario
from simcore.sweep.grammar import Axis
from simcore.sweep.report import Row

DEFAULT_METRIC = "mean_response_s"
WAIT_METRIC = "mean_response_s"
COMPLETION_METRIC = "mean_completion_s"


@dataclass
class SweepResults:
    """Everything a sweep's page, its live updates and its API read, computed once per request."""

    experiment: Experiment
    runs: list[Run]
    axes: list[Axis]
    metric: str
    log_y: bool
    chart: str  # "line", "bars" or "stacked"
    rows: list[Row]
    progress: dict[str, Any]
    metrics: list[str]
    waits: list[Row] = field(default_factory=list)
    completions: list[Row] = field(default_factory=list)
    reproduction: reproductions.Reproduction | None = None
    scale: dict[str, Any] = field(default_factory=dict)
    comparisons: list[reproductions.Comparison] = field(default_factory=list)
    differences: dict[str, str] = field(default_factory=dict)
    command: str | None = None

    @property
    def axis(self) -> str | None:
        return self.axes[0].name if self.axes else None


def reproduction_of(exp: Experiment) -> tuple[reproductions.Reproduction | None, dict[str, Any]]:
    rep = exp.reproduction or {}
    name = rep.get("name") if isinstance(rep, dict) else None
    if not name or name not in reproductions.REPRODUCTIONS:
        return None, {}
    return reproductions.REPRODUCTIONS[name], dict(rep.get("scale") or {})


def is_sweep_page(exp: Experiment) -> bool:
    """Whether the experiment page shows the sweep section: a grid, or a paper reproduction."""
    return sweep_scenario.is_sweep(exp.scenario) or reproduction_of(exp)[0] is not None


def results(
    exp: Experiment, metric: str | None = None, log_y: bool | None = None, runs: list[Run] | None = None
) -> SweepResults:
    """The sweep's progress, aggregates of ``metric`` (default: the reproduction's, else mean response).

    The aggregates are those stored as cells finished (dashboard.experiments.aggregates); ``runs``: the
    experiment's runs in grid order with their summaries, when the caller has them already.
    """
    rep, scale = reproduction_of(exp)
    if runs is None:
        runs = sweeps.ordered_runs(exp, page=True)
    metric = metric or (rep.metric if rep else DEFAULT_METRIC)
    table = aggregates.sweep_table(exp, runs)
    table.check(metric)
    axes = sweep_scenario.axes_of(exp.scenario)
    chart = rep.chart if rep else ("line" if axes else "bars")
    out = SweepResults(
        experiment=exp,
        runs=runs,
        axes=axes,
        metric=metric,
        log_y=(rep.log_y if rep else False) if log_y is None else log_y,
        chart=chart,
        rows=table.rows(metric),
        progress=sweeps.progress(exp, runs),
        metrics=table.metrics or [metric],
        reproduction=rep,
        scale=scale,
    )
    if chart == "stacked":
        out.waits = table.rows(WAIT_METRIC)
        out.completions = table.rows(COMPLETION_METRIC)
    if rep is not None:
        base_rows = out.completions if chart == "stacked" else table.rows(rep.metric)
        out.comparisons = reproductions.compare(rep, base_rows)
        try:
            out.command = rep.command(scale)
        except SimcoreError:
            out.command = None
    else:
        try:
            out.command = sweep_scenario.sweep_of(exp.scenario).command_line(
                table=True, metric=None if metric == DEFAULT_METRIC else metric
            )
        except (SimcoreError, KeyError):
            out.command = None  # an uploaded cluster or trace: no command line names it
    if rep is not None:  # a paper reproduction says where each scheduler differs from its paper
        for s in exp.scenario["schedulers"]:
            line = rep.difference(s)
            if line:
                out.differences[s] = line
    return out


def payload(res: SweepResults) -> dict[str, Any]:
    """JSON-ready: progress, the aggregated rows and the paper comparison (the API's and the page poller's)."""

    def row(r: Row) -> dict[str, Any]:
        return {
            "point": r.point,
            "scheduler": r.scheduler,
            "runs": r.runs,
            "n": r.n,
            "mean": r.mean,
            "sd": r.sd,
            "ci95_low": r.ci_low,
            "ci95_high": r.ci_high,
            "min": r.min,
            "max": r.max,
            "unstable": r.unstable,
            # The t-interval reaches below 0 for a quantity that cannot: pages draw it from 0 (ci95_low is kept).
            "ci95_clipped": r.ci_low is not None and r.ci_low < 0 and labels.nonnegative(res.metric),
        }

    p = res.progress
    body: dict[str, Any] = {
        "status": res.experiment.status,
        "status_text": res.experiment.status_text(p["cancelled"], p["cells"]),
        "axes": [{"name": a.name, "values": list(a.values)} for a in res.axes],
        "metric": res.metric,
        "progress": res.progress,
        "rows": [row(r) for r in res.rows],
        "command": res.command,
    }
    if res.reproduction is not None:
        rep = res.reproduction
        body["reproduction"] = {
            "name": rep.name,
            "paper": rep.paper,
            "figure": rep.figure,
            "title": rep.title,
            "scale": res.scale,
            "paper_summary": rep.summary,
            "figure_only": rep.figure_only,
            "baseline": rep.baseline,
            "comparisons": [
                {
                    "scheduler": c.scheduler,
                    "point": c.point,
                    "paper": c.paper,
                    "paper_relative_pct": c.paper_relative,
                    "ours": c.ours,
                    "ours_mean": c.ours_mean,
                    "ours_relative_pct": c.ours_relative,
                    "ours_unstable": c.ours_unstable,
                    "ours_runs": c.ours_runs,
                }
                for c in res.comparisons
            ],
        }
    body["differences"] = res.differences
    return body
