"""The capacity plan's chart: a pure function from simcore.planning's plan to a Plotly figure dict.

The target statistic against cluster size, one line per scheduler (the seeds'
mean at each size probed, its seed range as error bars), the target as a
horizontal line, and each scheduler's answer marked. The template hands the dict
to ``Plotly.newPlot`` (static/dashboard/app.js), as the other pages do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from dashboard.common import labels
from dashboard.common.chartkit import axis, compact, hover, number, scheduler_colour, xy_layout
from simcore.planning import parse_target

Figure = dict[str, Any]

#: Widest size range (machines) that gets a tick per machine.
SMALL_RANGE = 12


def curve_chart(plan: Mapping[str, Any]) -> Figure:
    """The statistic against size per scheduler, the target line, the answers (``plan``: simcore.planning.finish's)."""
    target = parse_target(str(plan["target"]))
    key = str(plan["statistic"])
    stat = labels.name(key)  # in words: "99th percentile wait until start"
    data: list[dict[str, Any]] = []
    xs: list[float] = []
    for entry in plan["plans"]:
        name = str(entry["scheduler"])
        c = scheduler_colour(name)
        points = [p for p in entry["curve"] if p.get("mean") is not None]
        x = [int(p["machines"]) for p in points]
        xs += x
        mean = [float(p["mean"]) for p in points]
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name,
                "legendgroup": name,
                "x": x,
                "y": compact(mean, 6),
                "error_y": {
                    "type": "data",
                    "symmetric": False,
                    "array": compact([float(p["max"]) - m for p, m in zip(points, mean, strict=True)], 6),
                    "arrayminus": compact([m - float(p["min"]) for p, m in zip(points, mean, strict=True)], 6),
                    "color": c,
                    "thickness": 1,
                },
                "line": {"color": c, "width": 2},
                "marker": {
                    "color": c,
                    "size": 6,
                    "symbol": ["circle" if p["met"] else "circle-open" for p in points],
                },
                "hovertemplate": hover(
                    name, "%{x:,} machines<br>" + stat + " %{y:.4g} (mean of the seeds; open: not met)"
                ),
            }
        )
        answer = entry.get("machines")
        if answer is not None:
            at = next((p for p in points if int(p["machines"]) == int(answer)), None)
            if at is not None:
                data.append(
                    {
                        "type": "scatter",
                        "mode": "markers+text",
                        "name": f"{name}: {int(answer):,} machines",
                        "legendgroup": name,
                        "x": [int(answer)],
                        "y": compact([float(at["mean"])], 6),
                        "text": [f"{int(answer):,}"],
                        "textposition": "top center",
                        "marker": {"color": c, "size": 14, "symbol": "star", "line": {"color": "#000", "width": 1}},
                        "hovertemplate": hover(f"{name}: the answer", "%{x:,} machines<br>" + stat + " %{y:.4g}"),
                    }
                )
    lo, hi = (min(xs), max(xs)) if xs else (0, 1)
    data.append(
        {
            "type": "scatter",
            "mode": "lines",
            "name": f"target {target.text()}",
            "x": [lo, hi],
            "y": [target.bound, target.bound],
            "line": {"color": "#000", "width": 1.5, "dash": "dash"},
            "hovertemplate": hover("target", f"{stat} {target.op} {number(target.bound)}"),
        }
    )
    return {
        "data": data,
        "layout": xy_layout(
            f"{stat} against cluster size (target {target.text()})",
            # Whole machines: a tick per machine on a narrow range (Plotly would write 16.5 machines).
            axis("machines", tickformat=",", **({"dtick": 1} if hi - lo <= SMALL_RANGE else {})),
            axis(labels.title(key), rangemode="tozero"),
            height=460,
        ),
    }


def plan_charts(plan: Mapping[str, Any] | None) -> dict[str, Figure]:
    """The plan page's charts, by element id (none before the plan finished)."""
    return {"chart-capacity": curve_chart(plan)} if plan else {}
