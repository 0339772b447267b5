"""Sweep chart builders: pure functions from aggregated rows to Plotly figure dicts, and the rows behind them.

Input rows are :class:`simcore.sweep.report.Row` (mean, 95% t-interval, min,
max and unstable count of a metric per point and scheduler), the numbers
``simcore sweep --table`` prints. Every figure has a table of its data
(:func:`metric_table`, :func:`stacked_table`) that the page offers as CSV and
Parquet, so a chart's numbers can always be checked.

* :func:`metric_chart`: the metric against the first axis, one line per
  scheduler (and per value of any further axis), 95% error bars, a log axis
  on request (LoTES Figure 11), cells where some seed was unstable drawn as
  crosses with the count in the hover text. Without axes: one bar per scheduler.
* :func:`stacked_chart`: the profile study's Figures 12-13, mean wait and mean
  run time (completion minus wait) stacked per scheduler, one group per point.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from dashboard.common import labels
from dashboard.common.chartkit import scheduler_colour, variant_dash
from dashboard.common.chartkit import xy_layout as _layout
from simcore.sweep.report import Row

Figure = dict[str, Any]

#: Means at or below zero are drawn here on a log axis (no job waited: a log axis has no zero).
MIN_LOG = 1e-3
UNSTABLE_SYMBOL = "x"
STABLE_SYMBOL = "circle"
WAIT_COLOUR = "#ff7f0e"
RUN_COLOUR = "#1f77b4"


def _label(point: dict[str, Any], skip: str | None = None) -> str:
    return ", ".join(f"{k}={v}" for k, v in point.items() if k != skip)


def _series_key(row: Row, x_name: str | None) -> str:
    rest = _label(row.point, x_name)
    return f"{row.scheduler} ({rest})" if rest else row.scheduler


def clipped(row: Row, metric: str) -> bool:
    """Whether the row's 95% t-interval reaches below 0 for a metric that cannot (drawn and shown from 0)."""
    return row.ci_low is not None and row.ci_low < 0 and labels.nonnegative(metric)


def _hover(row: Row, metric: str) -> str:
    ci = "" if row.ci_low is None else f"<br>95% CI [{row.ci_low:.4g}, {row.ci_high:.4g}]"
    if clipped(row, metric):
        ci += " (t-interval; drawn from 0)"
    rng = "" if row.min is None else f"<br>min {row.min:.4g}, max {row.max:.4g}"
    unstable = f"<br><b>{row.unstable} of {row.runs} runs unstable</b>" if row.unstable else ""
    mean = "-" if row.mean is None else f"{row.mean:.4g}"
    lab = labels.label(metric)
    unit = f" {lab.unit}" if lab.unit else ""
    return f"{row.scheduler} {_label(row.point)}<br>{lab.name} {mean}{unit} over {row.n} seeds{ci}{rng}{unstable}"


def metric_chart(rows: Sequence[Row], metric: str, *, axis: str | None, log_y: bool = False, title: str = "") -> Figure:
    """The metric against ``axis`` (the sweep's first axis; None: bars per scheduler), one trace per line.

    A line's colour is its scheduler's (:func:`dashboard.common.chartkit.scheduler_colour`); lines of one
    scheduler at other values of further axes differ by their dash. For a metric that is never negative
    (:func:`dashboard.common.labels.nonnegative`) the error bars stop at 0 where the t-interval reaches below it.
    """
    lines: dict[str, list[Row]] = {}
    for r in rows:
        if r.mean is not None:
            lines.setdefault(_series_key(r, axis) if axis else r.scheduler, []).append(r)
    data = []
    floor = MIN_LOG if log_y else (0.0 if labels.nonnegative(metric) else None)
    seen: dict[str, int] = {}
    for name, rs in lines.items():
        sched = rs[0].scheduler
        variant = seen[sched] = seen.get(sched, -1) + 1
        y: list[float] = []
        up: list[float | None] = []
        down: list[float | None] = []
        for r in rs:
            mean = float(r.mean or 0.0)
            yv = max(mean, floor) if floor is not None else mean
            y.append(yv)
            up.append(None if r.ci_high is None else max(r.ci_high - yv, 0.0))
            low = None if r.ci_low is None else (max(r.ci_low, floor) if floor is not None else r.ci_low)
            down.append(None if low is None else max(yv - low, 0.0))
        colour = scheduler_colour(sched)
        trace: dict[str, Any] = {
            "type": "scatter" if axis else "bar",
            "name": name,
            "x": [r.point.get(axis) for r in rs] if axis else [name],
            "y": y,
            "error_y": {"type": "data", "array": up, "arrayminus": down, "visible": True, "symmetric": False},
            "text": [_hover(r, metric) for r in rs],
            "hoverinfo": "text",
            "customdata": [r.unstable for r in rs],
        }
        if axis:
            trace["mode"] = "lines+markers"
            trace["line"] = {"color": colour, "dash": variant_dash(variant)}
            trace["marker"] = {
                "color": colour,
                "size": [12 if r.unstable else 8 for r in rs],
                "symbol": [UNSTABLE_SYMBOL if r.unstable else STABLE_SYMBOL for r in rs],
            }
        else:
            trace["marker"] = {
                "color": colour,
                "line": {"color": "#000", "width": [3 if r.unstable else 0 for r in rs]},
            }
        data.append(trace)
    notes = ["bars: 95% CI over seeds"]
    if not log_y and any(clipped(r, metric) for r in rows):
        notes.append("cut at 0 where the t-interval reaches below it")
    if log_y:
        notes.append(f"log axis: values under {MIN_LOG:g} drawn at it")
    if any(r.unstable for r in rows):
        notes.append("x: some seeds unstable (queue still growing)")
    x_axis: dict[str, Any] = {"title": {"text": labels.title(axis) if axis else "scheduler"}}
    if axis and rows and not all(isinstance(r.point.get(axis), (int, float)) for r in rows):
        x_axis["type"] = "category"
    what = labels.name(metric)
    default_title = f"{what} against {labels.name(axis)}" if axis else f"{what} per scheduler"
    return {
        "data": data,
        "layout": _layout(
            title or default_title,
            x_axis,
            {
                "title": {"text": labels.title(metric)},
                **({"type": "log"} if log_y else {"rangemode": "nonnegative" if floor == 0.0 else "tozero"}),
            },
            annotations=[
                {
                    "text": "; ".join(notes),
                    "xref": "paper",
                    "yref": "paper",
                    "x": 1,
                    "y": 1.08,
                    "xanchor": "right",
                    "showarrow": False,
                    "font": {"size": 11},
                }
            ],
        ),
    }


def _cell(rows: Sequence[Row]) -> dict[tuple[str, str], Row]:
    return {(_label(r.point), r.scheduler): r for r in rows}


def stacked_chart(waits: Sequence[Row], completions: Sequence[Row], *, title: str = "") -> Figure:
    """Mean wait and mean run time (completion - wait) stacked per scheduler, grouped by point (Figures 12-13).

    ``waits`` aggregates ``mean_response_s`` (the wait until start), ``completions`` ``mean_completion_s``; the
    error bar is the completion's 95% interval, from 0 at the lowest.
    """
    wait_of = _cell(waits)
    groups, schedulers, wait_y, run_y, err_up, err_down, text = [], [], [], [], [], [], []
    for c in completions:
        w = wait_of.get((_label(c.point), c.scheduler))
        if c.mean is None or w is None or w.mean is None:
            continue
        groups.append(_label(c.point) or "all")
        schedulers.append(c.scheduler)
        wait_y.append(w.mean)
        run_y.append(c.mean - w.mean)
        err_up.append(None if c.ci_high is None else c.ci_high - c.mean)
        # A completion time is never negative: the bar stops at 0 where the t-interval reaches below it.
        err_down.append(None if c.ci_low is None else c.mean - max(c.ci_low, 0.0))
        text.append(
            f"{c.scheduler} {_label(c.point)}: completion {c.mean:.4g} s = wait until start {w.mean:.4g} + run "
            f"{c.mean - w.mean:.4g} over {c.n} seeds"
        )
    x = [groups, schedulers]
    data = [
        {
            "type": "bar",
            "name": "wait until start",
            "x": x,
            "y": wait_y,
            "marker": {"color": WAIT_COLOUR},
            "text": text,
            "hoverinfo": "text",
        },
        {
            "type": "bar",
            "name": "run",
            "x": x,
            "y": run_y,
            "marker": {"color": RUN_COLOUR},
            "error_y": {"type": "data", "array": err_up, "arrayminus": err_down, "visible": True, "symmetric": False},
            "text": text,
            "hoverinfo": "text",
        },
    ]
    return {
        "data": data,
        "layout": _layout(
            title or "Average job completion time: wait until start + run",
            {"title": {"text": "cluster / scheduler"}, "type": "multicategory"},
            {"title": {"text": "mean completion time (s), 95% CI of the total"}, "rangemode": "tozero"},
            barmode="stack",
        ),
    }


# -- the data behind the charts --------------------------------------------------------------------------------


def metric_table(rows: Sequence[Row], metric: str) -> list[dict[str, Any]]:
    """One flat record per point and scheduler: the point's values, then the statistics of ``metric``."""
    out = []
    for r in rows:
        rec: dict[str, Any] = {f"point.{k}": v for k, v in r.point.items()}
        rec.update(
            {
                "scheduler": r.scheduler,
                "metric": metric,
                "runs": r.runs,
                "n": r.n,
                "mean": r.mean,
                "sd": r.sd,
                "ci95_low": r.ci_low,
                "ci95_high": r.ci_high,
                "min": r.min,
                "max": r.max,
                "unstable": r.unstable,
                # ci95_low is the t-interval's own bound; True: it is below 0 and the page draws it from 0.
                "ci95_clipped": clipped(r, metric),
            }
        )
        out.append(rec)
    return out


def stacked_table(waits: Sequence[Row], completions: Sequence[Row]) -> list[dict[str, Any]]:
    """The stacked chart's numbers: per point and scheduler, mean wait, run and completion with the intervals."""
    wait_of = _cell(waits)
    out = []
    for c in completions:
        w = wait_of.get((_label(c.point), c.scheduler))
        rec: dict[str, Any] = {f"point.{k}": v for k, v in c.point.items()}
        wait = None if w is None else w.mean
        rec.update(
            {
                "scheduler": c.scheduler,
                "runs": c.runs,
                "n": c.n,
                "mean_wait_s": wait,
                "mean_run_s": None if wait is None or c.mean is None else c.mean - wait,
                "mean_completion_s": c.mean,
                "completion_ci95_low": c.ci_low,
                "completion_ci95_high": c.ci_high,
                "wait_ci95_low": None if w is None else w.ci_low,
                "wait_ci95_high": None if w is None else w.ci_high,
                "unstable": c.unstable,
            }
        )
        out.append(rec)
    return out
