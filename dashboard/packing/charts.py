"""Chart builders for packing analyses: pure functions from stored results to Plotly figure dicts.

Figures 1-3 of Verma, Korupolu and Wilkes for one snapshot and Figure 4
(policies side by side under each technique). Every point carries error
bars showing the full range over trials, as the paper's figures do; where
a computation is deterministic the bar has zero length. Utilisation and
machine fractions are drawn in percent. Templates only hand these dicts to
``Plotly.newPlot`` (static/dashboard/app.js).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dashboard.common.chartkit import DASHES, PALETTE, Figure, other_colour, scheduler_colour, xy_layout

Band = Mapping[str, Any]


_layout = xy_layout


#: Figure 2's schemes in the paper's legend order, with their labels.
SCHEME_LABELS = {
    "horizontal-all": "horizontal, all jobs",
    "horizontal-conforming": "horizontal, conforming jobs",
    "vertical-all": "vertical, all jobs",
    "vertical-conforming": "vertical, conforming jobs",
}


def _scale(values: Sequence[float | None], k: float) -> list[float | None]:
    return [None if v is None else v * k for v in values]


def _trace(
    name: str, x: Sequence[float], band: Band, *, k: float = 1.0, color: str, dash: str = "solid", group: str = ""
) -> dict[str, Any]:
    """One line with asymmetric error bars from ``band`` (p, lo, hi lists), values times ``k``."""
    p, lo, hi = _scale(band["p"], k), _scale(band["lo"], k), _scale(band["hi"], k)
    return {
        "type": "scatter",
        "mode": "lines+markers",
        "name": name,
        "legendgroup": group or name,
        "x": list(x),
        "y": p,
        "line": {"color": color, "dash": dash},
        "marker": {"size": 5},
        "error_y": {
            "type": "data",
            "symmetric": False,
            "array": [None if (a is None or b is None) else a - b for a, b in zip(hi, p, strict=True)],
            "arrayminus": [None if (a is None or b is None) else a - b for a, b in zip(p, lo, strict=True)],
            "visible": True,
            "thickness": 1,
            "width": 3,
        },
    }


def _pct(x: Sequence[float]) -> list[float]:
    return [v * 100 for v in x]


def holes(results: Mapping[str, Any]) -> Figure:
    """Figure 1: utilisation after hole filling against the unit size U (% of the median machine)."""
    h = results["holes"]
    data = []
    for j, (r, b) in enumerate(h["utilisation"].items()):
        data.append(_trace(r, _pct(h["unit"]), b, k=100, color=PALETTE[j % len(PALETTE)]))
    base = (results.get("utilisation") or {}).get("utilisation") or {}
    for j, (r, b) in enumerate(base.items()):
        data.append(
            {
                "type": "scatter",
                "mode": "lines",
                "name": f"{r} before hole filling",
                "x": [min(_pct(h["unit"])), max(_pct(h["unit"]))],
                "y": [b["p"] * 100] * 2,
                "line": {"color": PALETTE[j % len(PALETTE)], "dash": "dot", "width": 1},
            }
        )
    return {
        "data": data,
        "layout": _layout(
            f"Hole filling (placed by {h.get('placed_by', '')})",
            {"title": {"text": "unit size U (% of the median machine, all resources scaled together)"}},
            {"title": {"text": "utilisation after hole filling (%)"}, "rangemode": "tozero"},
        ),
    }


def inflation_pending(results: Mapping[str, Any]) -> Figure:
    """Figure 2, top: pending tasks against the scale factor f, one line per scheme."""
    inf = results["inflation"]
    data = [
        _trace(SCHEME_LABELS.get(s, s), inf["factor"], sr["pending"], color=PALETTE[i % len(PALETTE)])
        for i, (s, sr) in enumerate(inf["schemes"].items())
    ]
    return {
        "data": data,
        "layout": _layout(
            f"Workload inflation: pending tasks (rescheduled by {inf.get('repack_with', '')})",
            {"title": {"text": "scale factor f"}},
            {"title": {"text": "pending tasks"}, "rangemode": "tozero"},
        ),
    }


def inflation_utilisation(results: Mapping[str, Any]) -> Figure:
    """Figure 2, bottom: utilisation against f; colour per scheme, dash per resource."""
    inf = results["inflation"]
    data = []
    for i, (s, sr) in enumerate(inf["schemes"].items()):
        for j, (r, b) in enumerate(sr["utilisation"].items()):
            data.append(
                _trace(
                    f"{SCHEME_LABELS.get(s, s)}: {r}",
                    inf["factor"],
                    b,
                    k=100,
                    color=PALETTE[i % len(PALETTE)],
                    dash=DASHES[j % len(DASHES)],
                    group=s,
                )
            )
    return {
        "data": data,
        "layout": _layout(
            "Workload inflation: utilisation",
            {"title": {"text": "scale factor f"}},
            {"title": {"text": "utilisation (%)"}, "rangemode": "tozero"},
        ),
    }


def compaction(results: Mapping[str, Any]) -> Figure:
    """Figure 3: compacted cluster size (90th percentile of the trials, % of machines) against tau (%)."""
    c = results["compaction"]
    data = [_trace("compacted size (p90 of trials)", _pct(c["tau"]), c["fraction"], k=100, color=PALETTE[0])]
    return {
        "data": data,
        "layout": _layout(
            f"Cluster compaction (rescheduled by {c.get('repack_with', '')})",
            {"title": {"text": "tasks allowed to go pending, tau (%)"}},
            {"title": {"text": "compacted cluster size (% of machines)"}, "rangemode": "tozero"},
        ),
    }


def _policy_label(p: Mapping[str, Any]) -> str:
    return f"{p['name']} ({p['kind']})"


def _policy_colour(i: int, p: Mapping[str, Any]) -> str:
    """A scheduler's own colour (the one it has on every chart); an ordering one that is no scheduler's."""
    return scheduler_colour(p["name"]) if p["kind"] == "scheduler" else other_colour(i)


def compare_inflation(results: Mapping[str, Any], technique: str) -> Figure:
    """Figure 4: pending tasks against f under ``horizontal`` or ``vertical`` inflation, one line per policy."""
    cmp_ = results["compare"]
    data = [
        _trace(
            _policy_label(p),
            cmp_["factor"],
            cmp_["results"][p["name"]][technique]["pending"],
            color=_policy_colour(i, p),
        )
        for i, p in enumerate(cmp_["policies"])
    ]
    which = cmp_.get(technique, "")
    return {
        "data": data,
        "layout": _layout(
            f"{technique.capitalize()} inflation ({which})",
            {"title": {"text": "scale factor f"}},
            {"title": {"text": "pending tasks"}, "rangemode": "tozero"},
        ),
    }


def compare_holes(results: Mapping[str, Any]) -> Figure:
    """Figure 4: utilisation after hole filling against U; colour per policy, dash per resource."""
    cmp_ = results["compare"]
    data = []
    for i, p in enumerate(cmp_["policies"]):
        for j, (r, b) in enumerate(cmp_["results"][p["name"]]["holes"].items()):
            data.append(
                _trace(
                    f"{_policy_label(p)}: {r}",
                    _pct(cmp_["unit"]),
                    b,
                    k=100,
                    color=_policy_colour(i, p),
                    dash=DASHES[j % len(DASHES)],
                    group=p["name"],
                )
            )
    return {
        "data": data,
        "layout": _layout(
            "Hole filling",
            {"title": {"text": "unit size U (% of the median machine)"}},
            {"title": {"text": "utilisation after hole filling (%)"}, "rangemode": "tozero"},
        ),
    }


def compare_compaction(results: Mapping[str, Any]) -> Figure:
    """Figure 4: compacted size (p90, % of machines) against tau, one line per policy."""
    cmp_ = results["compare"]
    data = [
        _trace(
            _policy_label(p),
            _pct(cmp_["tau"]),
            cmp_["results"][p["name"]]["compaction"]["fraction"],
            k=100,
            color=_policy_colour(i, p),
        )
        for i, p in enumerate(cmp_["policies"])
    ]
    return {
        "data": data,
        "layout": _layout(
            "Cluster compaction",
            {"title": {"text": "tasks allowed to go pending, tau (%)"}},
            {"title": {"text": "compacted cluster size (% of machines)"}, "rangemode": "tozero"},
        ),
    }


def all_charts(results: Mapping[str, Any]) -> dict[str, Figure]:
    """The analysis page's charts by element id, for the techniques the analysis ran."""
    out: dict[str, Figure] = {}
    if "holes" in results:
        out["chart-holes"] = holes(results)
    if "inflation" in results:
        out["chart-inflation-pending"] = inflation_pending(results)
        out["chart-inflation-utilisation"] = inflation_utilisation(results)
    if "compaction" in results:
        out["chart-compaction"] = compaction(results)
    if "compare" in results:
        out["chart-compare-horizontal"] = compare_inflation(results, "horizontal")
        out["chart-compare-vertical"] = compare_inflation(results, "vertical")
        out["chart-compare-holes"] = compare_holes(results)
        out["chart-compare-compaction"] = compare_compaction(results)
    return out
