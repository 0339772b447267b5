"""Chart builders of design-space searches: pure functions from the elite per generation to Plotly figure dicts.

Input rows are :func:`simcore.dse.explore.report.elite_rows` (one per finished
generation: ``generation``, ``policy``, one column per stage, ``fitness``,
``trt``, ``jms``, ``njsl``, ``jwt``...). Templates only hand the dicts to
``Plotly.newPlot``; the search page's poller swaps them in as generations finish.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from simcore.dse.staged.policy import STAGES

Figure = dict[str, Any]
Row = Mapping[str, Any]

#: What each metric is called on the axes (section 2.3).
METRIC_TITLES: dict[str, str] = {
    "trt": "task response time (s)",
    "jms": "job makespan (s)",
    "njsl": "normalised job-schedule length",
    "jwt": "job waiting time (s)",
}
#: Two alternating fills, so consecutive policies of one stage stay apart (Figures 5-6 draw bars per period).
SEGMENT_COLOURS = ("#c6dbef", "#fdd0a2")
CHANGE_COLOUR = "#d62728"


def generation_tick(gens: Sequence[int]) -> int:
    """Whole generations between ticks: about a dozen ticks, never a half generation."""
    return max(1, math.ceil((max(gens) + 1 if gens else 1) / 12))


def stage_segments(rows: Sequence[Row], stage: str) -> list[tuple[int, int, str]]:
    """(first generation, last generation, policy) per period in which ``stage``'s policy stayed the same."""
    out: list[tuple[int, int, str]] = []
    for r in rows:
        g, text = int(r["generation"]), str(r[stage])
        if out and out[-1][2] == text and out[-1][1] == g - 1:
            out[-1] = (out[-1][0], g, text)
        else:
            out.append((g, g, text))
    return out


def elite_changes(rows: Sequence[Row]) -> list[int]:
    """Generations whose elite differs from the previous generation's."""
    return [int(b["generation"]) for a, b in zip(rows, rows[1:], strict=False) if a["policy"] != b["policy"]]


def _stage_lane(rows: Sequence[Row], stage: str) -> dict[str, Any]:
    """One stage's lane: a bar per period of an unchanged policy, the policy written inside."""
    segs = stage_segments(rows, stage)
    return {
        "type": "bar",
        "orientation": "h",
        "name": stage,
        "y": [stage] * len(segs),
        "base": [a - 0.5 for a, _, _ in segs],
        "x": [b - a + 1 for a, b, _ in segs],
        "text": [t for _, _, t in segs],
        "textposition": "inside",
        "insidetextanchor": "middle",
        "hovertext": [f"{stage}={t}<br>generations {a}-{b}" for a, b, t in segs],
        "hoverinfo": "text",
        "marker": {
            "color": [SEGMENT_COLOURS[i % 2] for i in range(len(segs))],
            "line": {"color": "#555", "width": 1},
        },
        "showlegend": False,
        "xaxis": "x",
        "yaxis": "y2",
    }


def _change_lines(rows: Sequence[Row]) -> list[dict[str, Any]]:
    """A red dashed line before each generation whose elite changed."""
    return [
        {
            "type": "line",
            "xref": "x",
            "yref": "paper",
            "x0": g - 0.5,
            "x1": g - 0.5,
            "y0": 0,
            "y1": 1,
            "line": {"color": CHANGE_COLOUR, "width": 1, "dash": "dash"},
        }
        for g in elite_changes(rows)
    ]


def elite_timeline(rows: Sequence[Row], metric: str) -> Figure:
    """The elite's fitness per generation over the policy of each stage as a timeline (Figures 5-6).

    Top: the fitness (a step line). Bottom: one lane per stage, one bar per
    period of an unchanged policy with the policy written inside. Red dashed
    lines mark the generations where the elite changed.
    """
    gens = [int(r["generation"]) for r in rows]
    fitness = {
        "type": "scatter",
        "mode": "lines+markers",
        "name": f"elite {metric.upper()}",
        "x": gens,
        "y": [r["fitness"] for r in rows],
        "line": {"shape": "hv", "color": "#1f77b4"},
        "marker": {"size": 5},
        "xaxis": "x",
        "yaxis": "y",
        "hovertemplate": "generation %{x}<br>fitness %{y:.6g}<extra></extra>",
    }
    return {
        "data": [fitness, *(_stage_lane(rows, stage) for stage in STAGES)],
        "layout": {
            "title": {"text": f"Elite fitness ({METRIC_TITLES.get(metric, metric)}) and policy per stage"},
            "xaxis": {
                "title": {"text": "generation"},
                "anchor": "y2",
                "range": [-0.5, (max(gens) if gens else 0) + 0.5],
            },
            "yaxis": {"title": {"text": f"elite {metric.upper()}"}, "domain": [0.62, 1.0]},
            "yaxis2": {
                "domain": [0.0, 0.55],
                "categoryorder": "array",
                "categoryarray": list(reversed(STAGES)),
                "fixedrange": True,
            },
            "barmode": "overlay",
            "bargap": 0.15,
            "shapes": _change_lines(rows),
            "showlegend": False,
            "margin": {"l": 70, "r": 20, "t": 50, "b": 50},
            "height": 560,
        },
    }


def elite_metrics(rows: Sequence[Row], metric: str) -> Figure:
    """The four metrics of the elite per generation, the optimised one highlighted (Figure 8)."""
    gens = [int(r["generation"]) for r in rows]
    names = list(METRIC_TITLES)
    n = len(names)
    gap = 0.06
    height = (1.0 - gap * (n - 1)) / n
    data = []
    layout: dict[str, Any] = {
        "title": {"text": "The elite's four metrics per generation (the search optimises one)"},
        "showlegend": False,
        "margin": {"l": 70, "r": 20, "t": 60, "b": 50},
        "height": 640,
        "annotations": [],
    }
    for i, name in enumerate(names):
        axis = "" if i == 0 else str(i + 1)
        top = 1.0 - i * (height + gap)
        chosen = name == metric
        data.append(
            {
                "type": "scatter",
                "mode": "lines+markers",
                "name": name.upper(),
                "x": gens,
                "y": [r[name] for r in rows],
                "line": {"shape": "hv", "color": CHANGE_COLOUR if chosen else "#7f7f7f", "width": 3 if chosen else 1.5},
                "marker": {"size": 4},
                "xaxis": f"x{axis}",
                "yaxis": f"y{axis}",
                "hovertemplate": f"generation %{{x}}<br>{name.upper()} %{{y:.6g}}<extra></extra>",
            }
        )
        layout[f"yaxis{axis}"] = {"domain": [max(0.0, top - height), top], "title": {"text": name.upper()}}
        layout[f"xaxis{axis}"] = {
            "anchor": f"y{axis}",
            "dtick": generation_tick(gens),
            "showticklabels": i == n - 1,
            **({"matches": "x"} if i else {}),
            **({"title": {"text": "generation"}} if i == n - 1 else {}),
        }
        layout["annotations"].append(
            {
                "text": f"{METRIC_TITLES[name]}{' (optimised)' if chosen else ''}",
                "xref": "paper",
                "yref": "paper",
                "x": 0.0,
                "y": top,
                "xanchor": "left",
                "yanchor": "bottom",
                "showarrow": False,
                "font": {"size": 12, "color": CHANGE_COLOUR if chosen else "#333"},
            }
        )
    return {"data": data, "layout": layout}


def search_charts(rows: Sequence[Row], metric: str) -> dict[str, Figure]:
    """The search page's charts, by element id."""
    return {"chart-elite": elite_timeline(rows, metric), "chart-metrics": elite_metrics(rows, metric)}
