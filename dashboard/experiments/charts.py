"""Chart builders: pure functions from result series to Plotly figure dicts.

Templates only hand these dicts to ``Plotly.newPlot`` (``static/dashboard/app.js``).
Each builder takes :class:`ChartRun` records: one finished run's stored
series (:func:`simcore.core.metrics.series`) and summary, with the ``group`` it
belongs to (a scheduler; on the compare page an experiment's scheduler).
Runs of one group differ only in their seed: the charts draw one colour per
group, the mean over its seeds as a line and the seeds' minimum and maximum
as a band (error bars on the per-day and completion charts); every single
seed is one choice away (``layout.meta.controls``, see :mod:`dashboard.common.chartkit`).

Series are cut to what a chart can show (:data:`chartkit.LINE_POINTS` points
a line, keeping every bucket's extremes) and numbers rounded, so a 10-run
page stays a few hundred kilobytes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from dashboard.common import chartkit as kit
from dashboard.common.chartkit import Figure, FloatArray

DAY_S = 86_400.0

#: Smoothing windows offered for the time series (hours, label).
SMOOTHING_H = ((5 / 60, "5 min"), (0.25, "15 min"), (1.0, "1 h"), (3.0, "3 h"), (6.0, "6 h"), (24.0, "1 day"))


@dataclass(frozen=True)
class ChartRun:
    """One finished run as the charts see it."""

    group: str
    seed: int
    series: Mapping[str, Any]
    summary: Mapping[str, Any]
    #: The run's scheduler, which picks its colour (:func:`chartkit.scheduler_colour`); "": the group's name.
    scheduler: str = ""


@dataclass
class _Group:
    name: str
    index: int
    runs: list[ChartRun]
    #: How many groups before it have its scheduler (two experiments' greedy on the compare page): its dash.
    variant: int = 0

    @property
    def scheduler(self) -> str:
        return self.runs[0].scheduler or self.name

    @property
    def colour(self) -> str:
        return kit.scheduler_colour(self.scheduler)

    @property
    def dash(self) -> str:
        return kit.variant_dash(self.variant)

    @property
    def seeds_text(self) -> str:
        n = len(self.runs)
        return f"seed {self.runs[0].seed}" if n == 1 else f"mean of {n} seeds"


def groups_of(runs: Sequence[ChartRun]) -> list[_Group]:
    """Runs grouped by ``group`` in order of first appearance; a group's colour is its scheduler's, and
    groups of one scheduler differ by their dash."""
    out: dict[str, _Group] = {}
    for r in runs:
        if r.group not in out:
            variant = sum(1 for g in out.values() if g.scheduler == (r.scheduler or r.group))
            out[r.group] = _Group(r.group, len(out), [], variant)
        out[r.group].runs.append(r)
    return list(out.values())


# ---------------------------------------------------------------------------- views: mean and band, or every seed


def _line(
    g: _Group,
    x: FloatArray | list[float] | tuple[float, float],
    y: list[float | None],
    role: str,
    template: str,
    *,
    seed: int | None = None,
    width: float = 2.0,
    **extra: Any,
) -> dict[str, Any]:
    """A line trace of group ``g``; ``x`` is an array or an even grid ``(x0, dx)``; ``role`` says when it shows."""
    who = f"{g.name}, {g.seeds_text}" if seed is None else f"{g.name}, seed {seed}"
    trace: dict[str, Any] = {
        "type": "scatter",
        "mode": "lines",
        "name": kit.short(g.name),
        "legendgroup": g.name,
        "y": y,
        "line": {"color": g.colour, "width": width, "dash": g.dash},
        "hovertemplate": kit.hover(who, template),
        "_role": role,
        **extra,
    }
    if isinstance(x, tuple):
        trace["x0"], trace["dx"] = x
    else:
        trace["x"] = kit.compact(x, 5)
    return trace


def _band(g: _Group, x: Any, lo: list[float | None], hi: list[float | None], **extra: Any) -> list[dict[str, Any]]:
    """The min-max band of group ``g``: its lower edge, then the upper edge filled down to it."""
    edge = {"width": 0, "color": g.colour}
    common = {
        "type": "scatter",
        "mode": "lines",
        "name": kit.short(g.name),
        "legendgroup": g.name,
        "hoverinfo": "skip",
        "line": edge,
        "_role": "band",
        **extra,
    }
    lo_t = {**common, "y": lo}
    hi_t = {**common, "y": hi, "fill": "tonexty", "fillcolor": kit.band_fill(g.colour)}
    for t in (lo_t, hi_t):
        if isinstance(x, tuple):
            t["x0"], t["dx"] = x
        else:
            t["x"] = kit.compact(x, 5)
    return [lo_t, hi_t]


def _finish(traces: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Visibility of every trace in the default view, and the "each seed" view control (if any group has seeds).

    Roles: ``mean`` (a group's mean over several seeds), ``band`` (its min-max),
    ``seed`` (one of its seeds), ``single`` (a group with one seed: always
    shown). A trace with ``_legend`` False never shows in the legend (the
    second panel of a figure with subplots).
    """
    has_seeds = any(t["_role"] == "seed" for t in traces)
    first_seed: set[str] = set()
    agg_vis, agg_leg, seed_vis, seed_leg = [], [], [], []
    for t in traces:
        role = t.pop("_role")
        legend_ok = t.pop("_legend", True)
        agg_vis.append(role != "seed")
        agg_leg.append(legend_ok and role in ("mean", "single"))
        seed_vis.append(role in ("seed", "single"))
        shown = legend_ok and (role == "single" or (role == "seed" and t["legendgroup"] not in first_seed))
        if legend_ok and role == "seed":
            first_seed.add(t["legendgroup"])
        seed_leg.append(shown)
        t["visible"] = agg_vis[-1]
        t["showlegend"] = agg_leg[-1]
    if not has_seeds:
        return traces, []
    control = {
        "label": "Seeds",
        "options": [
            {"label": "mean and min-max band", "update": {"data": {"visible": agg_vis, "showlegend": agg_leg}}},
            {"label": "each seed", "update": {"data": {"visible": seed_vis, "showlegend": seed_leg}}},
        ],
    }
    return traces, [control]


def _series_traces(
    g: _Group,
    curves: list[tuple[Sequence[float], Sequence[float]]],
    *,
    scale: float,
    decimals: int,
    template: str,
    seed_template: str,
    x_scale: float = 1.0 / 3600.0,
    legend: bool = True,
    axes: dict[str, str] | None = None,
) -> list[dict[str, Any]]:
    """Mean line, band and seed lines of one group's time series (queue, utilisation), downsampled."""
    grid, ys = kit.common_grid(curves)
    ys = [y * scale for y in ys]
    extra: dict[str, Any] = {"meta": {"smooth": 1}, "_legend": legend, **(axes or {})}

    def even(y: FloatArray, points: int) -> tuple[list[float | None], Any]:
        y2, i0, di = kit.downsample_extremes(y, points)
        step = kit.uniform_step(grid)
        if step is None:  # not evenly sampled: keep x (cannot happen for the engine's own series)
            return kit.fixed(y, decimals), grid * x_scale
        t0, dt = step
        return kit.fixed(y2, decimals), (round((t0 + i0 * dt) * x_scale, 9), (di * dt) * x_scale)

    if len(ys) == 1:
        y_one, x = even(ys[0], kit.LINE_POINTS)
        return [_line(g, x, y_one, "single", template, seed=g.runs[0].seed, **extra)]
    mean, lo, hi = kit.aggregate_seeds(ys)
    out: list[dict[str, Any]] = []
    y_lo, x = even(lo, kit.LINE_POINTS)
    y_hi, _ = even(hi, kit.LINE_POINTS)
    out += _band(g, x, y_lo, y_hi, **extra)
    y_mean, x = even(mean, kit.LINE_POINTS)
    out.append(_line(g, x, y_mean, "mean", template, **extra))
    for r, y_seed in zip(g.runs, ys, strict=True):
        y_s, x_s = even(y_seed, kit.SEED_POINTS)
        out.append(_line(g, x_s, y_s, "seed", seed_template, seed=r.seed, width=1.2, **extra))
    return out


def _smoothing(span_h: float, step_h: float) -> dict[str, Any] | None:
    """The smoothing control: windows longer than a few plotted points and shorter than a quarter of the run."""
    options: list[dict[str, Any]] = [{"label": "off", "smooth_h": 0}]
    for hours, label in SMOOTHING_H:
        if hours >= 4 * step_h and hours <= span_h / 4:
            options.append({"label": label, "smooth_h": hours})
    if len(options) == 1:
        return None
    # Preselected: the longest window up to 1/40 of the run (a day's run: 15 min), so a long run's
    # sample-to-sample noise does not hide its course; short runs start unsmoothed.
    default = max((o for o in options if o["smooth_h"] <= span_h / 40), key=lambda o: o["smooth_h"])
    default["selected"] = True
    return {"label": "Smoothing (moving average)", "options": options}


# ---------------------------------------------------------------------------- wait until start (response time)


def _ccdf_of(s: Mapping[str, Any]) -> tuple[list[float], list[float], int | None, int | None]:
    """(waits, fraction longer, zero waits, started) of a run.

    Results stored before the series had a CCDF get one read off their
    501-point CDF (steps of 0.2% of the jobs); their zero-wait count is then
    unknown (None).
    """
    cc = s.get("ccdf")
    if cc:
        return list(cc["response_s"]), list(cc["longer"]), int(cc["zero_waits"]), int(cc["started"])
    cdf = s.get("cdf") or {}
    q = np.asarray([v for v in cdf.get("response_s", []) if v is not None], dtype=np.float64)
    p = np.asarray(cdf.get("p", [])[: len(q)], dtype=np.float64)
    if not len(q):
        return [], [], None, None
    from simcore.core.metrics import CCDF_GRID_S

    end = int(np.searchsorted(CCDF_GRID_S, q[-1], side="left")) + 1
    grid = CCDF_GRID_S[: min(end, len(CCDF_GRID_S))]
    idx = np.searchsorted(q, grid, side="right") - 1
    longer = np.where(idx >= 0, 1.0 - p[np.maximum(idx, 0)], 1.0)
    return grid.tolist(), longer.tolist(), None, None


def _positive(a: FloatArray) -> list[float | None]:
    """Fractions for a log axis: 0 has no place there (null: the line ends)."""
    return kit.compact(np.where(a > 0, a, np.nan), 4)


def _complement(a: FloatArray) -> list[float | None]:
    return kit.compact(1.0 - a, 5)


def _zero_share(g: _Group) -> tuple[float | None, str]:
    """Share of the group's jobs that waited 0 s (pooled over seeds), and a sentence saying so."""
    zeros = started = 0
    for r in g.runs:
        _, _, z, n = _ccdf_of(r.series)
        if z is None or n is None:
            return None, f"{g.name}: not recorded for this run (stored before zero waits were counted)"
        zeros, started = zeros + z, started + n
    if not started:
        return None, f"{g.name}: no job started"
    share = zeros / started
    seeds = "" if len(g.runs) == 1 else f" over {len(g.runs)} seeds"
    return share, f"{g.name}: {share:.1%} ({zeros:,} of {started:,} jobs{seeds})"


@dataclass
class _Curves:
    """The response chart's traces with, per trace, its CDF values and both hover texts (the "Show" switch)."""

    traces: list[dict[str, Any]] = field(default_factory=list)
    cdf_y: list[list[float | None]] = field(default_factory=list)
    ccdf_tpl: list[str] = field(default_factory=list)
    cdf_tpl: list[str] = field(default_factory=list)
    max_x: float = 1e-3
    lo_y: float = 1.0

    def add(self, trace: dict[str, Any], cdf: list[float | None], cdf_tpl: str, ccdf_tpl: str | None = None) -> None:
        """``trace`` (hover: its own, or ``ccdf_tpl``) with its CDF values and their hover ``cdf_tpl``."""
        self.traces.append(trace)
        self.cdf_y.append(cdf)
        self.ccdf_tpl.append(trace["hovertemplate"] if ccdf_tpl is None else ccdf_tpl)
        self.cdf_tpl.append(cdf_tpl)


_CCDF_TPL = "%{y:.3~%} of jobs waited longer than %{x:.3~g} s"
_CDF_TPL = "%{y:.3~%} of jobs waited at most %{x:.3~g} s"


def _ccdf_group(c: _Curves, g: _Group, label: str) -> None:
    """One group's curves: its one seed, or the seeds' band, their mean and each seed."""
    curves = [_ccdf_of(r.series) for r in g.runs]
    n = max((len(cv[0]) for cv in curves), default=0)
    if n == 0:
        return
    grid = max((cv[0] for cv in curves), key=len)
    ys = [np.pad(np.asarray(cv[1], dtype=np.float64), (0, n - len(cv[1])), constant_values=0.0) for cv in curves]
    c.max_x = max(c.max_x, grid[-1])
    pos = [v for y in ys for v in y.tolist() if v > 0]
    if pos:
        c.lo_y = min(c.lo_y, min(pos))
    mean, lo, hi = kit.aggregate_seeds(ys)
    x = np.asarray(grid)
    if len(g.runs) == 1:
        t = _line(g, x, _positive(ys[0]), "single", _CCDF_TPL, seed=g.runs[0].seed, name=label)
        c.add(t, _complement(ys[0]), kit.hover(f"{g.name}, seed {g.runs[0].seed}", _CDF_TPL))
        return
    # The CDF's lower edge is 1 - the largest fraction waiting longer.
    band = _band(g, x, _positive(lo), _positive(hi), name=label)
    for t, cdf in zip(band, (_complement(hi), _complement(lo)), strict=True):
        c.add(t, cdf, "", ccdf_tpl="")  # the band's edges have no hover of their own
    t = _line(g, x, _positive(mean), "mean", _CCDF_TPL, name=label)
    c.add(t, _complement(mean), kit.hover(f"{g.name}, {g.seeds_text}", _CDF_TPL))
    for r, y in zip(g.runs, ys, strict=True):
        t = _line(g, x, _positive(y), "seed", _CCDF_TPL, seed=r.seed, width=1.2, name=label)
        c.add(t, _complement(y), kit.hover(f"{g.name}, seed {r.seed}", _CDF_TPL))


def _ccdf_switch(c: _Curves, ccdf_y: list[Any]) -> dict[str, Any]:
    """The "Show" control: the log-log fraction waiting longer, or the linear CDF."""
    yv, yt = kit.log_ticks(c.lo_y, 1.0)
    y_log = {
        "yaxis.type": "log",
        "yaxis.title.text": "fraction of jobs waiting longer (log)",
        "yaxis.tickvals": yv,
        "yaxis.ticktext": yt,
        "yaxis.autorange": True,
    }
    y_lin = {
        "yaxis.type": "linear",
        "yaxis.title.text": "fraction of jobs waiting at most x",
        "yaxis.tickvals": None,
        "yaxis.ticktext": None,
        "yaxis.autorange": False,
        "yaxis.range": [0, 1.02],
    }
    return {
        "label": "Show",
        "options": [
            {
                "label": "fraction waiting longer than x (log-log)",
                "update": {"data": {"y": ccdf_y, "hovertemplate": c.ccdf_tpl}, "layout": y_log},
            },
            {
                "label": "CDF: fraction waiting at most x",
                "update": {"data": {"y": c.cdf_y, "hovertemplate": c.cdf_tpl}, "layout": y_lin},
            },
        ],
    }


def response_ccdf(runs: Sequence[ChartRun]) -> Figure:
    """Fraction of jobs that waited longer than x, log-log (the CDF one choice away) (LoTES Figure 9).

    Most jobs of a lightly loaded cluster start on arrival; a log axis has no
    zero, so they are counted in the legend and the notes instead of being
    drawn. The curves start at 1 ms: what is left of the left edge are the jobs
    that waited between 0 and 1 ms.
    """
    groups = groups_of(runs)
    c = _Curves()
    zero_notes = []
    for g in groups:
        share, note = _zero_share(g)
        zero_notes.append(note)
        _ccdf_group(c, g, kit.short(g.name) + (f" \u00b7 {share:.1%} waited 0 s" if share is not None else ""))
    ccdf_y = [t["y"] for t in c.traces]
    traces, controls = _finish(c.traces)
    xv, xt = kit.log_ticks(1e-3, c.max_x, "s")
    yv, yt = kit.log_ticks(c.lo_y, 1.0)
    if traces:
        controls.insert(0, _ccdf_switch(c, ccdf_y))
    notes = [
        "Jobs that waited 0 s (started the moment they arrived; a log axis cannot draw them): "
        + "; ".join(zero_notes)
        + ".",
        "Wait until start: the time from a job's arrival to its start (the LoTES paper's response time); "
        "jobs that never started are not in the curves. The curves start at 1 ms.",
    ]
    return {
        "data": traces,
        "layout": kit.base_layout(
            "Wait until start: fraction of jobs waiting longer than x",
            xaxis=kit.axis("wait until start x (s, log)", type="log", tickvals=xv, ticktext=xt),
            yaxis=kit.axis(
                "fraction of jobs waiting longer (log)", type="log", tickvals=yv, ticktext=yt, exponentformat="none"
            ),
            meta={"controls": controls, "notes": notes if groups else []},
        ),
    }


# ---------------------------------------------------------------------------- per day


def _day_hours(summary: Mapping[str, Any]) -> float | None:
    h = summary.get("hours")
    return float(h) if isinstance(h, (int, float)) and h > 0 else None


@dataclass
class _Days:
    """One group's per-day means over its seeds, and the days its arrival window covers only in part."""

    group: _Group
    days: list[int]
    mean: FloatArray
    lo: FloatArray
    hi: FloatArray
    #: day -> hours of it in the arrival window
    partial: dict[int, float]


def _days_of(g: _Group) -> _Days:
    day_maps = []
    for r in g.runs:
        pd = r.series.get("per_day") or {}
        day_maps.append(
            {
                int(d): float(v)
                for d, v in zip(pd.get("day", []), pd.get("mean_response_s", []), strict=False)
                if v is not None
            }
        )
    days = sorted(set().union(*day_maps)) if day_maps else []
    # Seeds of a group share their scenario, hence their arrival window (the compare page mixes groups).
    window_h = _day_hours(g.runs[0].summary)
    partial = {}
    if window_h is not None:
        for d in days:
            covered = min(max(window_h * 3600.0 - d * DAY_S, 0.0), DAY_S)
            if covered < DAY_S - 1e-6:
                partial[d] = covered / 3600.0
    ys = [np.asarray([m.get(d, np.nan) for d in days], dtype=np.float64) for m in day_maps]
    mean, lo, hi = kit.aggregate_seeds(ys) if days else (np.zeros(0),) * 3
    return _Days(g, days, mean, lo, hi, partial)


def _per_day_trace(d: _Days, zero_at: float, n_groups: int) -> dict[str, Any]:
    """One group's line: days with markers (open when partial), seeds' range as error bars, dodged a little."""
    g, days, mean, lo, hi = d.group, d.days, d.mean, d.lo, d.hi
    # Rounded first, so that the error bars below are measured from the point as drawn.
    shown = np.asarray(kit.compact(np.where(mean > 0, mean, zero_at)), dtype=np.float64)
    lo_s, hi_s = np.where(lo > 0, lo, zero_at), np.where(hi > 0, hi, zero_at)
    custom = []
    for i, day in enumerate(days):
        rng = "" if len(g.runs) == 1 else f" (seeds: {kit.number(lo[i])} to {kit.number(hi[i])} s)"
        part = f", partial: {d.partial[day]:.1f} h of arrivals" if day in d.partial else ""
        custom.append([f"{kit.number(mean[i])} s" if mean[i] == mean[i] else "no job", rng, part, day + 1])
    tr = _line(
        g,
        np.asarray([day + 1 for day in days], dtype=np.float64),
        kit.compact(shown),
        "single",
        "day %{customdata[3]}%{customdata[2]}<br>mean wait until start %{customdata[0]}%{customdata[1]}",
        seed=g.runs[0].seed if len(g.runs) == 1 else None,
        mode="lines+markers",
        customdata=custom,
        marker={
            "color": g.colour,
            "size": 8,
            "symbol": ["circle-open" if day in d.partial else "circle" for day in days],
            "line": {"color": g.colour, "width": 2},
        },
    )
    # Schedulers side by side around their day (a dodge of a few pixels), so markers and error bars
    # of equal days do not hide each other; the tick and the hover give the day.
    dodge = round((g.index - (n_groups - 1) / 2) * min(0.06, 0.4 / max(n_groups, 1)), 4)
    tr["x"] = [day + 1 + dodge for day in days]
    if len(g.runs) > 1:
        tr["error_y"] = {
            "type": "data",
            "symmetric": False,
            # Full precision: a rounded length could reach below the 0 line, to minus infinity on a log axis.
            "array": kit.compact(hi_s - shown, 15),
            "arrayminus": kit.compact(shown - lo_s, 15),
            "color": g.colour,
            "thickness": 1.2,
            "width": 4,
        }
    tr.pop("_role", None)
    tr["showlegend"] = True
    return tr


def _zero_break(zero_at: float, floor_dec: int) -> dict[str, Any]:
    """The dotted line between the "0 s" line and the first log decade."""
    brk = math.sqrt(zero_at * 10.0**floor_dec)
    return {
        "type": "line",
        "xref": "paper",
        "x0": 0,
        "x1": 1,
        "yref": "y",
        "y0": brk,
        "y1": brk,
        "line": {"color": "#8c959f", "width": 1, "dash": "dot"},
    }


def _partial_days(per_group: list[_Days]) -> dict[int, set[str]]:
    """Per day covered only in part by some group's arrival window: the hours covered, as written."""
    out: dict[int, set[str]] = {}
    for d in per_group:
        for day, h in d.partial.items():
            out.setdefault(day, set()).add(f"{h:.1f} h")
    return out


def per_day_mean(runs: Sequence[ChartRun]) -> Figure:
    """Mean wait until start per day, lines with markers on a log axis (LoTES Figure 8).

    A job counts in the day it starts (as in the paper). A day whose mean is
    0 s (every job started on arrival) is drawn on a "0" line under the log
    decades, with a dotted break above it; a day the arrival window covers
    only in part is an open marker with an asterisk on its tick.
    """
    per_group = [_days_of(g) for g in groups_of(runs)]
    values = [v for d in per_group for v in np.concatenate([d.mean, d.lo, d.hi]).tolist() if v == v and v > 0]
    has_zero = any(np.nanmin(d.lo) <= 0 for d in per_group if len(d.days))
    if values:
        top = max(values)
        floor_dec = math.floor(math.log10(min(values)))
        zero_at = 10.0 ** (floor_dec - 1)
    else:  # every mean is 0: a linear axis
        top, floor_dec, zero_at = 1.0, 0, 0.0
    notes = ["A job counts in the day it starts; the line joins a scheduler's days."]
    traces = [_per_day_trace(d, zero_at, len(per_group)) for d in per_group if d.days]
    ticks_v, ticks_t = kit.log_ticks(10.0**floor_dec, top, "s")
    shapes = []
    if has_zero and values:
        ticks_v, ticks_t = [zero_at, *ticks_v], ["0 s", *ticks_t]
        shapes.append(_zero_break(zero_at, floor_dec))
        notes.append(
            "Days whose mean wait until start was 0 s (every job started on arrival) sit on the 0 s line under the "
            "dotted break: a log axis has no zero."
        )
    any_partial = _partial_days(per_group)
    if any_partial:
        notes.append(
            "Open markers and * on the day: the arrival window covers only part of that day ("
            + ", ".join(f"day {d + 1}: {' or '.join(sorted(h))}" for d, h in sorted(any_partial.items()))
            + "), so it saw less load."
        )
    days_sorted = sorted({day for d in per_group for day in d.days})
    x_ticks = [d + 1 for d in days_sorted]
    x_text = [f"{d + 1}*" if d in any_partial else str(d + 1) for d in days_sorted]
    y_axis = (
        kit.axis(
            "mean wait until start (s, log)",
            type="log",
            tickvals=ticks_v,
            ticktext=ticks_t,
            range=[math.log10(zero_at if has_zero else min(values)) - 0.2, math.log10(top) + 0.2],
        )
        if values
        else kit.axis("mean wait until start (s)", range=[0, 1])
    )
    if not values and any(len(d.days) for d in per_group):
        notes.append("Every job of every day started the moment it arrived (mean wait until start 0 s).")
    return {
        "data": traces,
        "layout": kit.base_layout(
            "Mean wait until start per day",
            # Half a day either side of the first and last day: a scheduler's dodge (a few hundredths of a day)
            # stays visibly around its day's tick, even for a run of one day, where Plotly's own range would
            # span only the dodged markers and spread them like three days.
            xaxis=kit.axis(
                "day (a job counts in the day it starts)",
                tickvals=x_ticks,
                ticktext=x_text,
                **({"range": [x_ticks[0] - 0.5, x_ticks[-1] + 0.5]} if x_ticks else {}),
            ),
            yaxis=y_axis,
            shapes=shapes,
            meta={"controls": [], "notes": notes if traces else []},
        ),
    }


# ---------------------------------------------------------------------------- queue and utilisation


def _step_h(runs: Sequence[ChartRun], key: str) -> tuple[float, float]:
    """(span, plotted step) in hours of the runs' ``key`` series."""
    span = step = 0.0
    for r in runs:
        t = (r.series.get(key) or {}).get("t_s") or []
        if len(t) > 1:
            span = max(span, (t[-1] - t[0]) / 3600.0)
            step = max(step, (t[-1] - t[0]) / 3600.0 / min(len(t) - 1, kit.LINE_POINTS - 1))
    return span, step


def _time_figure(
    title: str,
    runs: Sequence[ChartRun],
    key: str,
    panels: list[tuple[str, Callable[[Mapping[str, Any]], Sequence[float]], dict[str, Any]]],
) -> Figure:
    """A time-series figure: one panel per entry of ``panels`` (y title, value getter, options), stacked."""
    groups = groups_of(runs)
    traces: list[dict[str, Any]] = []
    n = len(panels)
    if n == 0:  # no resource recorded
        return {"data": [], "layout": kit.base_layout(title, meta={"controls": [], "notes": []})}
    gap = 0.08 if n > 1 else 0.0
    height_each = (1.0 - gap * (n - 1)) / n
    layout_axes: dict[str, Any] = {}
    for i, (ytitle, getter, opts) in enumerate(panels):
        ax = "" if i == 0 else str(i + 1)
        top = 1.0 - i * (height_each + gap)
        layout_axes[f"yaxis{ax}"] = kit.axis(ytitle, domain=[max(top - height_each, 0.0), top], **opts["axis"])
        layout_axes[f"xaxis{ax}"] = kit.axis(
            "time (h)" if i == n - 1 else "",
            anchor=f"y{ax}",
            showticklabels=i == n - 1,
            **({"matches": "x"} if i else {}),
        )
        for g in groups:
            curves = [((r.series.get(key) or {}).get("t_s") or [], getter(r.series.get(key) or {})) for r in g.runs]
            traces += _series_traces(
                g,
                curves,
                scale=opts["scale"],
                decimals=opts["decimals"],
                template=opts["template"],
                seed_template=opts["template"],
                legend=i == 0,
                axes={"xaxis": f"x{ax}", "yaxis": f"y{ax}"},
            )
    traces, controls = _finish(traces)
    span, step = _step_h(runs, key)
    smooth = _smoothing(span, step)
    if smooth:
        controls.append(smooth)
    notes = []
    if any(len(g.runs) > 1 for g in groups):
        notes.append(
            "Line: mean over seeds; band: the lowest and highest seed at each time. "
            "With smoothing, the band is the moving average of that minimum and maximum (it contains every "
            "smoothed seed)."
        )
    return {
        "data": traces,
        "layout": kit.base_layout(title, height=300 + 170 * n if n > 1 else 400, **layout_axes)
        | {"meta": {"controls": controls, "notes": notes}},
    }


def queue_length(runs: Sequence[ChartRun]) -> Figure:
    """Jobs waiting in the queue over time (LoTES Figure 10)."""
    return _time_figure(
        "Jobs waiting in the queue",
        runs,
        "queue",
        [
            (
                "jobs waiting",
                lambda q: q.get("queued") or [],
                {
                    "scale": 1.0,
                    "decimals": 1,
                    "template": "%{x:.2f} h: %{y:,.1f} jobs waiting",
                    "axis": {"rangemode": "tozero"},
                },
            )
        ],
    )


def utilisation(runs: Sequence[ChartRun]) -> Figure:
    """Used share of each resource over time, one panel per resource."""
    resources: list[str] = []
    for r in runs:
        for k in r.series.get("utilization") or {}:
            if k != "t_s" and k not in resources:
                resources.append(k)
    panels = []
    for res in resources:
        panels.append(
            (
                f"{res} in use (%)",
                (lambda name: lambda u: u.get(name) or [])(res),
                {
                    "scale": 100.0,
                    "decimals": 1,
                    "template": f"%{{x:.2f}} h: %{{y:.1f}}% of {res} in use",
                    "axis": {"range": [0, 102]},
                },
            )
        )
    return _time_figure("Utilisation", runs, "utilization", panels)


# ---------------------------------------------------------------------------- profile study


def _spread(a: FloatArray) -> str:
    return f" (seeds {kit.number(float(a.min()))} to {kit.number(float(a.max()))} s)" if len(a) > 1 else ""


@dataclass
class _Split:
    """One scheduler's completion split over its seeds: means, seeds' spread around them, hover texts."""

    name: str
    #: The colour of its bars: its scheduler's.
    colour: str
    run_mean: float
    wait_mean: float
    completion_mean: float
    #: (above, below) the mean: the highest and lowest seed
    run_err: tuple[float, float]
    completion_err: tuple[float, float]
    hover_run: str
    hover_wait: str


def _split_of(g: _Group) -> _Split | None:
    """``g``'s split, or None when none of its runs reports completion and run time."""
    comps, runs_ = [], []
    for r in g.runs:
        c, u = r.summary.get("mean_completion_s"), r.summary.get("mean_run_s")
        if isinstance(c, (int, float)) and isinstance(u, (int, float)):
            comps.append(float(c))
            runs_.append(float(u))
    if not comps:
        return None
    c_a, u_a = np.asarray(comps), np.asarray(runs_)
    w_a = c_a - u_a
    seeds = f"{len(comps)} seed{'s' if len(comps) > 1 else ''}"
    return _Split(
        name=g.name,
        colour=g.colour,
        run_mean=float(u_a.mean()),
        wait_mean=float(w_a.mean()),
        completion_mean=float(c_a.mean()),
        run_err=(float(u_a.max() - u_a.mean()), float(u_a.mean() - u_a.min())),
        completion_err=(float(c_a.max() - c_a.mean()), float(c_a.mean() - c_a.min())),
        hover_run=f"run {kit.number(float(u_a.mean()))} s{_spread(u_a)}, {seeds}",
        hover_wait=f"wait until start {kit.number(float(w_a.mean()))} s{_spread(w_a)}<br>completion "
        f"{kit.number(float(c_a.mean()))} s{_spread(c_a)}",
    )


def _split_bars(splits: list[_Split], multi: bool) -> list[dict[str, Any]]:
    """The two stacked bar traces: running (solid, lower) and waiting (hatched, upper), seeds' spread as error bars."""
    names = [sp.name for sp in splits]
    colours = [sp.colour for sp in splits]
    run_t: dict[str, Any] = {
        "type": "bar",
        "name": "running",
        "x": names,
        "y": kit.compact([sp.run_mean for sp in splits]),
        "marker": {"color": colours},
        "customdata": [sp.hover_run for sp in splits],
        "hovertemplate": "<b>%{x}</b><br>%{customdata}<extra></extra>",
    }
    wait_t: dict[str, Any] = {
        "type": "bar",
        "name": "waiting in the queue (wait until start)",
        "x": names,
        "y": kit.compact([sp.wait_mean for sp in splits]),
        "marker": {
            "color": [kit.band_fill(c, 0.35) for c in colours],
            "line": {"color": colours, "width": 1.5},
            "pattern": {"shape": "/", "fgcolor": colours, "size": 6},
        },
        "customdata": [sp.hover_wait for sp in splits],
        "hovertemplate": "<b>%{x}</b><br>%{customdata}<extra></extra>",
    }
    if multi:
        for t, errs in ((run_t, [sp.run_err for sp in splits]), (wait_t, [sp.completion_err for sp in splits])):
            t["error_y"] = {
                "type": "data",
                "array": kit.compact([e[0] for e in errs]),
                "arrayminus": kit.compact([e[1] for e in errs]),
                "color": "#444",
            }
    return [run_t, wait_t]


def completion_split(runs: Sequence[ChartRun], baseline: str = "fcfs") -> Figure:
    """Mean completion time split into run and wait, stacked, per scheduler over seeds (profile study,
    Figures 12-13).

    Both parts are means over the completed jobs (completion = wait + run), so
    a bar's height is the mean completion time. Bars are the mean over seeds;
    error bars span the lowest to the highest seed (of the run time on the
    lower segment, of the completion time on top). The x labels give the
    change of mean completion against ``baseline`` when it ran, as the paper
    reports it.
    """
    groups = groups_of(runs)
    splits = [sp for sp in map(_split_of, groups) if sp is not None]
    names = [sp.name for sp in splits]
    comp_mean = {sp.name: sp.completion_mean for sp in splits}
    ticktext = []
    for n in names:
        if baseline in comp_mean and n != baseline and comp_mean[baseline] > 0:
            ticktext.append(f"{kit.short(n, 24)}<br>{comp_mean[n] / comp_mean[baseline] - 1:+.1%} vs {baseline}")
        else:
            ticktext.append(kit.short(n, 24))
    multi = any(len(g.runs) > 1 for g in groups)
    notes = [
        "Bar height: mean completion time (arrival to finish) of the completed jobs, split into running "
        "(solid, lower) and waiting in the queue (hatched, upper)."
    ]
    if multi:
        notes.append(
            "Bars are means over seeds; error bars span the lowest to the highest seed: of the run time on the "
            "lower segment, of the completion time on top."
        )
    return {
        "data": _split_bars(splits, multi) if names else [],
        "layout": kit.base_layout(
            "Mean completion time: running + waiting (profile study, Figures 12-13)",
            barmode="stack",
            xaxis=kit.axis(
                f"scheduler (change of mean completion against {baseline})" if baseline in comp_mean else "scheduler",
                tickvals=names,
                ticktext=ticktext,
                type="category",
            ),
            yaxis=kit.axis("mean completion time (s)", rangemode="tozero"),
            meta={"controls": [], "notes": notes if names else []},
        ),
    }


# ---------------------------------------------------------------------------- a page's charts


#: The builders' version, in every figure's ``layout.meta.version``: figures stored by older builders
#: (dashboard.experiments.aggregates) are built again when read. 2: scheduler colours, wait-until-start labels.
CHARTS_VERSION = 2


def charts_version(figures: Mapping[str, Figure]) -> int:
    """The builders' version that made ``figures`` (0: before versions were recorded)."""
    versions = {((f.get("layout") or {}).get("meta") or {}).get("version", 0) for f in figures.values()}
    return versions.pop() if len(versions) == 1 else 0


def all_charts(runs: Sequence[ChartRun], *, profile: bool = False) -> dict[str, Figure]:
    """The charts of an experiment or compare page, by element id (the profile study's bars first)."""
    out: dict[str, Figure] = {}
    if profile:
        out["chart-completion"] = completion_split(runs)
    out["chart-cdf"] = response_ccdf(runs)
    out["chart-per-day"] = per_day_mean(runs)
    out["chart-queue"] = queue_length(runs)
    out["chart-util"] = utilisation(runs)
    for fig in out.values():
        fig["layout"].setdefault("meta", {})["version"] = CHARTS_VERSION
    return out
