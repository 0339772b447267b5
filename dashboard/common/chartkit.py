"""Building blocks of the chart builders: pure functions, no Django, no Plotly import.

:mod:`dashboard.experiments.charts` (and any other page that draws series) composes these:

- :func:`aggregate_seeds` -- runs of one group (a scheduler, over seeds) on one
  grid: a mean line and a min-max band; :func:`mean_band_traces` draws them;
- :func:`downsample_extremes` -- a long series cut to what a chart can show,
  keeping every bucket's minimum and maximum, so spikes survive;
- :func:`legend` and :func:`base_layout` -- a legend in its own column right of
  the plot, so it never overlaps an axis title whatever the number of entries;
- :func:`log_ticks` -- every tick of a log axis labelled with its value;
- :func:`hover` -- hover labels with names and units;
- :func:`compact` -- numbers rounded for the page, NaN as null.

Figure dicts may carry ``layout.meta``: ``controls`` (choices the page shows
as ``<select>`` elements above the chart; ``static/dashboard/app.js`` applies
the chosen option's ``update`` with ``Plotly.update`` or its ``smooth_h``
window) and ``notes`` (sentences shown under the chart).
"""

from __future__ import annotations

import math
import warnings
import zlib
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

Figure = dict[str, Any]
FloatArray = NDArray[np.float64]

#: A colour per group (scheduler), in order, so a scheduler has one colour on every chart of a page.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
#: Past ten groups the colours repeat with another dash.
DASHES = ("solid", "dash", "dot", "dashdot")

#: Points per aggregated line (mean, band edges) and per single-seed line: a chart about
#: 1,000 px wide shows no more (two points per bucket: its minimum and maximum).
LINE_POINTS = 600
SEED_POINTS = 400
#: Longest legend label; the full name is in the hover label.
LEGEND_CHARS = 48


#: One colour per scheduler on every chart of every page (experiments, compare, sweeps, reproductions, packing):
#: LoTES is blue wherever it is drawn (issue 28). A scheduler not listed here (a user's plugin) takes one of
#: :data:`OTHER_COLOURS` by its name, so it keeps that colour too.
SCHEDULER_COLOURS: dict[str, str] = {
    "lotes": "#1f77b4",
    "greedy": "#d62728",
    "tetris": "#2ca02c",
    "fcfs": "#ff7f0e",
    "mris": "#9467bd",
    "affinity": "#8c564b",
    "greedy1": "#e377c2",
    "greedy2": "#7f7f7f",
    "greedy3": "#bcbd22",
    "staged": "#17becf",
}
#: Colours of schedulers not in :data:`SCHEDULER_COLOURS` and of lines that are no scheduler (packing
#: orderings): none of them is a listed scheduler's colour.
OTHER_COLOURS = ("#393b79", "#637939", "#8c6d31", "#843c39", "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1")


def colour(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


def scheduler_colour(name: str) -> str:
    """The scheduler's colour on every chart; an unlisted name's is fixed by its name (a CRC, not ``hash()``,
    which changes between processes)."""
    if name in SCHEDULER_COLOURS:
        return SCHEDULER_COLOURS[name]
    return OTHER_COLOURS[zlib.crc32(name.encode()) % len(OTHER_COLOURS)]


def other_colour(i: int) -> str:
    """The ``i``-th colour of a line that is no scheduler (never a scheduler's colour)."""
    return OTHER_COLOURS[i % len(OTHER_COLOURS)]


def variant_dash(i: int) -> str:
    """The dash of the ``i``-th line of one colour (one scheduler drawn at several points or experiments)."""
    return DASHES[i % len(DASHES)]


def dash(i: int) -> str:
    return DASHES[(i // len(PALETTE)) % len(DASHES)]


def band_fill(hex_colour: str, alpha: float = 0.18) -> str:
    """The colour of a group's min-max band: its line colour, translucent."""
    r, g, b = (int(hex_colour[i : i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


# ---------------------------------------------------------------------------- numbers


def compact(values: Sequence[float] | FloatArray, digits: int = 4) -> list[float | None]:
    """``values`` rounded to ``digits`` significant digits (short JSON); NaN and infinities become null."""
    out: list[float | None] = []
    for v in np.asarray(values, dtype=np.float64).tolist():
        out.append(float(f"{v:.{digits}g}") if math.isfinite(v) else None)
    return out


def fixed(values: Sequence[float] | FloatArray, decimals: int) -> list[float | None]:
    """``values`` rounded to ``decimals`` decimal places; NaN and infinities become null."""
    a = np.round(np.asarray(values, dtype=np.float64), decimals)
    return [v if math.isfinite(v) else None for v in a.tolist()]


def uniform_step(t: Sequence[float] | FloatArray) -> tuple[float, float] | None:
    """``(x0, dx)`` when ``t`` is evenly spaced (a trace can then omit its x array), else None."""
    a = np.asarray(t, dtype=np.float64)
    if len(a) < 2:
        return (float(a[0]), 1.0) if len(a) == 1 else None
    d = np.diff(a)
    if d[0] > 0 and np.allclose(d, d[0], rtol=1e-9, atol=0.0):
        return float(a[0]), float((a[-1] - a[0]) / (len(a) - 1))
    return None


# ---------------------------------------------------------------------------- seeds and downsampling


def common_grid(curves: Sequence[tuple[Sequence[float], Sequence[float]]]) -> tuple[FloatArray, list[FloatArray]]:
    """Curves ``(t, y)`` on one time grid: their own when they share it, else an even grid over all of them.

    Runs of one experiment share their sampling grid unless they drained to
    different ends; then each curve is interpolated linearly onto the common
    grid and is NaN (no value) outside its own time range.
    """
    ts = [np.asarray(t, dtype=np.float64) for t, _ in curves]
    ys = [np.asarray(y, dtype=np.float64) for _, y in curves]
    if not ts:
        return np.zeros(0), []
    if all(len(t) == len(ts[0]) and np.array_equal(t, ts[0]) for t in ts):
        return ts[0], ys
    nonempty = [t for t in ts if len(t)]
    if not nonempty:
        return np.zeros(0), [np.zeros(0) for _ in ys]
    lo = min(float(t[0]) for t in nonempty)
    hi = max(float(t[-1]) for t in nonempty)
    grid = np.linspace(lo, hi, max(len(t) for t in ts))
    return grid, [
        # A run without this series (a resource its cluster lacks) has times but no values: no curve.
        np.interp(grid, t, y, left=np.nan, right=np.nan) if len(t) and len(t) == len(y) else grid * np.nan
        for t, y in zip(ts, ys, strict=True)
    ]


def aggregate_seeds(ys: Sequence[FloatArray]) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Point-by-point mean, minimum and maximum over the seeds' curves (NaN where no seed has a value).

    The curves must share their grid (see :func:`common_grid`); shorter ones
    are padded with NaN. With one seed the three are that seed's curve.
    """
    if not ys:
        empty = np.zeros(0)
        return empty, empty, empty
    n = max(len(y) for y in ys)
    stack = np.full((len(ys), n), np.nan)
    for i, y in enumerate(ys):
        stack[i, : len(y)] = y
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", category=RuntimeWarning)  # all-NaN columns stay NaN
        return np.nanmean(stack, axis=0), np.nanmin(stack, axis=0), np.nanmax(stack, axis=0)


def downsample_extremes(y: FloatArray, max_points: int) -> tuple[FloatArray, float, float]:
    """``y`` cut to at most ``max_points`` points keeping each bucket's minimum and maximum.

    Returns ``(y2, i0, di)``: point ``k`` of ``y2`` stands at index
    ``i0 + k * di`` of ``y`` (fractional), so an evenly sampled series stays
    evenly spaced and a trace needs no x array. The samples are cut into
    ``max_points // 2`` buckets of equal length; each gives its minimum and its
    maximum in time order, so peaks and troughs survive exactly. A point's
    position is exact to within one bucket (a few pixels on a chart). Buckets
    with no value give NaN. Short series come back as they are.
    """
    y = np.asarray(y, dtype=np.float64)
    n = len(y)
    if n <= max_points or max_points < 2:
        return y, 0.0, 1.0
    buckets = max_points // 2
    size = -(-n // buckets)
    buckets = -(-n // size)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = y
    rows = padded.reshape(buckets, size)
    empty = np.all(np.isnan(rows), axis=1)
    safe = np.where(np.isnan(rows), 0.0, rows)
    imin = np.argmin(np.where(np.isnan(rows), np.inf, safe), axis=1)
    imax = np.argmax(np.where(np.isnan(rows), -np.inf, safe), axis=1)
    first, second = np.minimum(imin, imax), np.maximum(imin, imax)
    idx = np.arange(buckets)
    out = np.empty(2 * buckets)
    out[0::2] = rows[idx, first]
    out[1::2] = rows[idx, second]
    out[0::2][empty] = np.nan
    out[1::2][empty] = np.nan
    return out, 0.0, (n - 1) / (2 * buckets - 1)


def mean_band_traces(
    name: str,
    index: int,
    x: Sequence[float],
    ys: Sequence[Sequence[float]],
    template: str,
    *,
    digits: int = 4,
) -> list[dict[str, Any]]:
    """A group's seeds as a mean line over a min-max band: [lower edge, upper edge (filled), mean].

    For any page that plots one value per x and seed (a sweep's metric against
    a parameter, say): ``ys`` holds one curve per seed on the points ``x``;
    ``index`` picks the group's colour; ``template`` is the mean's hover text
    (Plotly %{x} and %{y} fields). With one seed, the band is that seed's line.
    """
    mean, lo, hi = aggregate_seeds([np.asarray(y, dtype=np.float64) for y in ys])
    c = colour(index)
    common = {"type": "scatter", "mode": "lines", "name": short(name), "legendgroup": name, "x": list(x)}
    edge = {**common, "hoverinfo": "skip", "showlegend": False, "line": {"width": 0, "color": c}}
    return [
        {**edge, "y": compact(lo, digits)},
        {**edge, "y": compact(hi, digits), "fill": "tonexty", "fillcolor": band_fill(c)},
        {
            **common,
            "y": compact(mean, digits),
            "line": {"color": c, "width": 2, "dash": dash(index)},
            "hovertemplate": hover(f"{name}, mean of {len(ys)} seed{'s' if len(ys) != 1 else ''}", template),
        },
    ]


# ---------------------------------------------------------------------------- layout


def short(label: str, limit: int = LEGEND_CHARS) -> str:
    return label if len(label) <= limit else label[: limit - 1] + "\u2026"


def legend() -> dict[str, Any]:
    """A vertical legend in its own column right of the plot area.

    Plotly widens the right margin to fit it and scrolls it when it is taller
    than the figure, so it never reaches the x-axis title (below the plot), the
    y-axis title (left of it) or the title (above it), at any number of
    entries. Clicking an entry hides its whole group (a scheduler's mean, band
    and seeds).
    """
    return {
        "orientation": "v",
        "x": 1.02,
        "xanchor": "left",
        "y": 1.0,
        "yanchor": "top",
        "font": {"size": 12},
        "groupclick": "togglegroup",
        "tracegroupgap": 4,
    }


def base_layout(title: str, *, height: int = 420, **extra: Any) -> dict[str, Any]:
    """Title top left, legend on the right, margins that grow to fit tick labels and titles."""
    layout: dict[str, Any] = {
        "title": {"text": title, "x": 0.0, "xanchor": "left", "xref": "paper", "font": {"size": 16}},
        "legend": legend(),
        "margin": {"l": 70, "r": 20, "t": 50, "b": 60, "autoexpand": True},
        "height": height,
        "hovermode": "closest",
        "hoverlabel": {"namelength": -1},
    }
    layout.update(extra)
    return layout


def xy_layout(
    title: str, xaxis: dict[str, Any], yaxis: dict[str, Any], *, height: int = 380, **extra: Any
) -> dict[str, Any]:
    """:func:`base_layout` with two axes that grow to fit their tick labels and titles (the other pages' charts)."""
    return base_layout(
        title, height=height, xaxis={"automargin": True, **xaxis}, yaxis={"automargin": True, **yaxis}, **extra
    )


def axis(title: str, **extra: Any) -> dict[str, Any]:
    return {"title": {"text": title}, "automargin": True, **extra}


def log_ticks(lo: float, hi: float, unit: str = "") -> tuple[list[float], list[str]]:
    """Tick values and labels for a log axis from ``lo`` to ``hi`` (both > 0), every label written out.

    1-2-3-4-5-6-8 within one decade, 1-2-5 in each decade up to four decades,
    else one tick a decade (every other one past ten decades). Labels read like
    ``0.05 s``, ``2 s``, ``1,000 s``, never Plotly's bare minor digits.
    """
    if not (lo > 0 and hi > 0) or hi < lo:
        return [], []
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    decades = b - a
    steps: tuple[float, ...] = (1.0, 2.0, 5.0) if decades <= 4 else (1.0,)
    if decades <= 1:
        steps = (1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0)
    every = 2 if decades > 10 else 1
    vals: list[float] = []
    for e in range(a, b + 1):
        if (e - a) % every:
            continue
        for s in steps:
            v = float(f"{s * 10.0**e:.12g}")
            if lo / 1.0001 <= v <= hi * 1.0001:
                vals.append(v)
    return vals, [number(v) + (f" {unit}" if unit else "") for v in vals]


def number(v: float) -> str:
    """A tick or note value: thousands separators, no trailing zeros, small values in full (0.001)."""
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 1:
        return f"{v:.3g}"
    places = 2 - math.floor(math.log10(abs(v)))  # three significant digits, written out (0.00001, not 1e-05)
    return f"{v:.{places}f}".rstrip("0").rstrip(".")


def hover(who: str, what: str) -> str:
    """A hover template: the run or group in bold, then what the point says (Plotly %{...} fields allowed)."""
    return f"<b>{_escape(who)}</b><br>{what}<extra></extra>"


def _escape(text: str) -> str:
    # Plotly renders hover text as a subset of HTML: user-given names must not become markup,
    # and a literal '%{' would be read as a template field.
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("%{", "%\u200b{")
