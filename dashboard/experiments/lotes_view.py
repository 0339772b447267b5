"""LoTES's offline plan (``RunResult.offline``) as the experiment page shows it: pure functions, no ORM.

One numbering everywhere: classes and configurations are shown by the index
``jobs.csv`` uses (its ``class`` and ``config`` columns, from 0) with their
names beside it. Only bins that machines emulate after rounding are listed as
used; an empty bin (machines kept with no planned job) and the bins the LP used
fractionally but rounding gave no machine are said in words.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

#: Bins listed per configuration; the rest are in summary.json.
MAX_BINS_SHOWN = 12


def _label(index: int, name: str) -> str:
    return f"{index} ({name})" if str(name) != str(index) else str(index)


def plan_view(offline: Mapping[str, Any], summary_lambda: float | None) -> dict[str, Any]:
    """Rows and sentences for one LoTES run's offline section."""
    classes = [str(c) for c in offline.get("classes") or []]
    index_of = {name: i for i, name in enumerate(classes)}
    source = (offline.get("class_source") or {}).get("source", "workload")
    rows = []
    for j, c in enumerate(offline.get("configs") or []):
        used, lp_only, empty = [], 0, 0
        for b in c.get("bins") or []:
            machines = int(b.get("machines") or 0)
            if machines <= 0:
                lp_only += 1
                continue
            counts = b.get("counts") or {}
            if not counts:
                empty += machines
                continue
            parts = [f"{index_of.get(str(k), k)}\u00d7{n}" for k, n in counts.items()]
            used.append({"jobs": " ".join(parts), "machines": machines})
        rows.append(
            {
                "config": _label(j, str(c.get("name", j))),
                "machines": c.get("machines"),
                "classes": ", ".join(_label(index_of.get(str(k), -1), str(k)) for k in c.get("K_used") or []),
                "n_bins": c.get("n_bins"),
                "bins": used[:MAX_BINS_SHOWN],
                "more_bins": max(0, len(used) - MAX_BINS_SHOWN),
                "empty_machines": empty,
                "lp_only_bins": lp_only,
            }
        )
    stage1 = offline.get("lambda_stage1")
    if source == "kmeans":
        cs = offline.get("class_source") or {}
        origin = (
            f"LoTES's own {cs.get('k', len(classes))} k-means classes, learnt on the first "
            f"{cs.get('window_hours', 0):g} h of the trace (section 5.3.2); jobs.csv's class column holds the "
            "workload's classes, not these"
        )
    else:
        origin = "the workload's job classes (jobs.csv's class column)"
    why = ""
    if isinstance(stage1, (int, float)) and isinstance(summary_lambda, (int, float)):
        if abs(stage1 - summary_lambda) > 1e-9 * max(1.0, abs(summary_lambda)):
            why = (
                f"It differs from the summary's \u03bb* ({summary_lambda:.4g} jobs/s) because that bound is "
                "computed for the workload's own classes (a trace without classes counts as one class of the "
                "mean job), while LoTES plans with the classes named here: different classes pack differently."
            )
        else:
            why = "It equals the summary's \u03bb*: both are computed for the same classes."
    return {
        "classes": [_label(i, n) for i, n in enumerate(classes)],
        "class_origin": origin,
        "lambda_stage1": stage1,
        "lambda_assignment_lp": offline.get("lambda_assignment_lp"),
        "lambda_rounded": offline.get("lambda_rounded"),
        "why_lambda_differs": why,
        "rows": rows,
    }
