"""Chart builders: pure functions from result series to Plotly figure dicts.

Templates only hand these dicts to ``Plotly.newPlot``. Each takes a list of
``(label, series)`` pairs, ``series`` being what :func:`simcore.metrics.series`
returns (as stored in RunResult.series), and draws one trace per pair (per
resource for utilisation).
"""

from __future__ import annotations

from typing import Any

Series = dict[str, Any]
Figure = dict[str, Any]

#: Waits below this many seconds are drawn at it: a log axis has no zero, and
#: most jobs of a lightly loaded cluster start at once (LoTES Figure 9 does the same).
MIN_LOG_S = 1e-3

#: A colour per scheduler, in order, so the same scheduler has one colour on every chart of a page.
PALETTE = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf")
DASHES = ("solid", "dot", "dash", "longdash", "dashdot")


def _layout(title: str, xaxis: dict[str, Any], yaxis: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "xaxis": xaxis,
        "yaxis": yaxis,
        "legend": {"orientation": "h", "y": -0.2},
        "margin": {"l": 60, "r": 20, "t": 50, "b": 60},
        "height": 380,
        **extra,
    }


def _hours(t_s: list[float]) -> list[float]:
    return [t / 3600.0 for t in t_s]


def response_cdf(runs: list[tuple[str, Series]]) -> Figure:
    """Response-time CDF of every run overlaid, log time axis (LoTES paper, Figure 9)."""
    data = []
    for i, (label, s) in enumerate(runs):
        cdf = s.get("cdf") or {}
        x = [max(float(v), MIN_LOG_S) for v in cdf.get("response_s", []) if v is not None]
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": x,
                "y": cdf.get("p", [])[: len(x)],
                "line": {"color": PALETTE[i % len(PALETTE)], "shape": "hv"},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            "Response time CDF",
            {"title": {"text": f"response time (s, log; waits under {MIN_LOG_S:g} s drawn at it)"}, "type": "log"},
            {"title": {"text": "fraction of jobs"}, "range": [0, 1.02]},
        ),
    }


def per_day_mean(runs: list[tuple[str, Series]]) -> Figure:
    """Mean response time per day, one bar per run side by side, log axis (LoTES paper, Figure 8)."""
    data = []
    for i, (label, s) in enumerate(runs):
        pd = s.get("per_day") or {}
        y = [max(float(v), MIN_LOG_S) if v is not None else None for v in pd.get("mean_response_s", [])]
        data.append(
            {
                "type": "bar",
                "name": label,
                "x": [int(d) + 1 for d in pd.get("day", [])],
                "y": y,
                "marker": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            "Mean response time per day",
            {"title": {"text": "day"}, "dtick": 1},
            {"title": {"text": "mean response time (s, log)"}, "type": "log"},
            barmode="group",
        ),
    }


def queue_length(runs: list[tuple[str, Series]]) -> Figure:
    """Jobs waiting in the queue over time (LoTES paper, Figure 10)."""
    data = []
    for i, (label, s) in enumerate(runs):
        q = s.get("queue") or {}
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": label,
                "x": _hours(q.get("t_s", [])),
                "y": q.get("queued", []),
                "line": {"color": PALETTE[i % len(PALETTE)]},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            "Jobs in queue", {"title": {"text": "time (h)"}}, {"title": {"text": "queued jobs"}, "rangemode": "tozero"}
        ),
    }


def utilisation(runs: list[tuple[str, Series]]) -> Figure:
    """Used fraction of each resource over time; colour per run, dash style per resource."""
    data = []
    for i, (label, s) in enumerate(runs):
        u = s.get("utilization") or {}
        resources = [k for k in u if k != "t_s"]
        for j, r in enumerate(resources):
            data.append(
                {
                    "type": "scatter",
                    "mode": "lines",
                    "name": f"{label} {r}",
                    "legendgroup": label,
                    "x": _hours(u.get("t_s", [])),
                    "y": u[r],
                    "line": {"color": PALETTE[i % len(PALETTE)], "dash": DASHES[j % len(DASHES)]},
                }
            )
    return {
        "data": data,
        "layout": _layout(
            "Utilisation",
            {"title": {"text": "time (h)"}},
            {"title": {"text": "used fraction of capacity"}, "range": [0, 1.02]},
        ),
    }


def all_charts(runs: list[tuple[str, Series]]) -> dict[str, Figure]:
    """The experiment page's four charts, by element id."""
    return {
        "chart-cdf": response_cdf(runs),
        "chart-per-day": per_day_mean(runs),
        "chart-queue": queue_length(runs),
        "chart-util": utilisation(runs),
    }
