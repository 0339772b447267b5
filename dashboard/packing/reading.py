"""How a finished analysis reads on its page: plain numbers, knees that say what they mean, and a snapshot that
does not fit its cluster said in words (issue 28).

Pure functions of the stored results (no database), used by the views and tested without HTTP.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

#: What a knee reads as when tasks already pend before any inflation (the paper's knee does not exist then).
PENDING_AT_ONE = "pending at f = 1"


def plain(value: Any, digits: int = 4) -> str:
    """A number as people write it: ``86,400``, ``142,969``, ``1.35``, ``0.0123``; never ``8.64e+04``.

    Integers (and floats that are whole) get thousands separators; other values
    ``digits`` significant digits in fixed notation. '-' for missing values.
    """
    if value is None or value == "" or isinstance(value, bool):
        return "-"
    try:
        x = float(value)
    except (TypeError, ValueError):
        return str(value)
    if not math.isfinite(x):
        return str(x)
    if x.is_integer() and abs(x) < 1e18:
        return f"{int(x):,}"
    if x == 0:
        return "0"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(x))))
    text = f"{x:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def duration(seconds: Any) -> str:
    """Seconds plainly, with hours or minutes beside when they help: ``86,400 s (24 h)``, ``90 s``."""
    if seconds is None or seconds == "":
        return "-"
    s = float(seconds)
    text = f"{plain(s)} s"
    if abs(s) >= 3600:
        return f"{text} ({plain(s / 3600, 3)} h)"
    if abs(s) >= 120:
        return f"{text} ({plain(s / 60, 3)} min)"
    return text


def _pending_at_one(series: Mapping[str, Any], factors: Sequence[float]) -> float:
    """The median pending count at f = 1 of an inflation series (0 when f = 1 was not among the factors)."""
    if not factors or factors[0] != 1.0:
        return 0.0
    return float(series["pending"]["p"][0])


def knee_text(series: Mapping[str, Any], factors: Sequence[float]) -> str:
    """A scheme's knee, or :data:`PENDING_AT_ONE` when tasks pend at f = 1 (a knee of 1 is then no knee)."""
    if _pending_at_one(series, factors) > 0:
        return PENDING_AT_ONE
    return plain(series["knee"]["p"])


def knees(results: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Figure 2's knees, one (scheme, text) per scheme."""
    inf = results.get("inflation")
    if not inf:
        return []
    return [(name, knee_text(sr, inf["factor"])) for name, sr in inf["schemes"].items()]


def fit_warning(results: Mapping[str, Any]) -> str:
    """Why the figures look as they do when the snapshot does not fit its cluster ('' when it fits).

    Tasks pending once the snapshot is placed (by ``placed_by``, or before any
    inflation, f = 1) mean the machines cannot hold the work: every knee is then
    "pending at f = 1", hole filling has no room to fill, and compaction needs
    more machines than there are (Algorithm 3 first copies the cluster).
    """
    snap = results.get("snapshot") or {}
    tasks = snap.get("tasks") or 0
    pending = 0.0
    how = ""
    util = results.get("utilisation")
    if util and util["pending"]["p"] > 0:
        pending, how = float(util["pending"]["p"]), f"placed by {util['placed_by']}"
    inf = results.get("inflation")
    if not pending and inf:
        at_one = max(_pending_at_one(sr, inf["factor"]) for sr in inf["schemes"].values())
        if at_one > 0:
            pending, how = at_one, f"repacked by {inf['repack_with']} at f = 1"
    comp = results.get("compaction")
    copies = comp.get("copies", 1) if comp else 1
    if not pending and copies <= 1:
        return ""
    head = (
        f"This snapshot does not fit its cluster: {plain(pending)} of {plain(tasks)} tasks stay pending ({how})."
        if pending
        else f"This snapshot does not fit its cluster: compaction had to copy the cluster {copies} times."
    )
    why = (
        " Every knee is therefore pending at f = 1, hole filling has little room to fill, and compaction needs "
        "more machines than the cluster has."
    )
    hint = ""
    if (snap.get("meta") or {}).get("source") == "trace" and (snap.get("meta") or {}).get("min_priority") is None:
        hint = (
            " A trace snapshot of every priority holds work its real cluster kept pending or preempted: the paper's "
            "snapshots hold production work only (minimum priority 9)."
        )
    return head + why + hint


#: Least fraction done before an ETA is shown: earlier, the rate is mostly start-up.
ETA_FROM = 0.02


def eta(fraction: float, since: float | None, now: float) -> str:
    """'about 3 min left' from the fraction done since ``since`` (Unix time the techniques started).

    Assumes the rest goes at the rate so far; progress is counted in packs, so
    it is a rough guide ('about'). '' before :data:`ETA_FROM` or without a start.
    """
    if since is None or not (ETA_FROM <= fraction < 1.0):
        return ""
    left = (now - since) * (1.0 - fraction) / fraction
    if left < 90:
        return f"about {max(1, round(left))} s left"
    if left < 5400:
        return f"about {round(left / 60)} min left"
    return f"about {plain(left / 3600, 2)} h left"


def snapshot_size_text(size: Mapping[str, Any]) -> str:
    """``56,053 tasks on 12,583 machines`` from a row's ``snapshot_size`` ('' until the snapshot is built)."""
    if not size:
        return ""
    return f"{plain(size.get('tasks'))} tasks on {plain(size.get('machines'))} machines"
