"""Reading a sweep's results: the ``--table`` summary over seeds and the ``--out`` CSV.

Both work on the JSON-ready run summaries (with their ``"point"``), so they
say exactly what the JSON lines say. The dashboard aggregates its sweeps with
the same :func:`aggregate`, so its tables and charts say what ``simcore
sweep --table`` says.

Confidence interval: the 95% Student-t interval of the mean over seeds,
``mean +- t(0.975, n-1) * s / sqrt(n)`` with ``s`` the sample standard
deviation (``n - 1`` in the denominator); none for fewer than two values.
It treats seeds as independent replications, which they are (independent
workload and scheduler streams, :mod:`simcore.core.seeding`).
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scipy import stats

from simcore.core.errors import ParameterError
from simcore.sweep.grammar import seeds_text

#: Confidence level of the interval over seeds.
CONFIDENCE = 0.95


def lookup(summary: dict[str, Any], key: str) -> Any:
    """A summary value by key, dotted for nested values ('utilization.cpu'); KeyError if absent."""
    value: Any = summary
    for part in key.split("."):
        if not isinstance(value, dict) or part not in value:
            raise KeyError(key)
        value = value[part]
    return value


def flatten(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as dotted keys, as pandas.json_normalize names them ('point.phi', 'utilization.cpu')."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flatten(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def numeric_keys(summary: dict[str, Any]) -> list[str]:
    return [
        k
        for k, v in flatten(summary).items()
        if isinstance(v, (int, float)) and not isinstance(v, bool) and not k.startswith("point.")
    ]


def check_metric(summary: dict[str, Any], metric: str) -> None:
    """Refuse a metric that is not a number (or None) in ``summary``, listing those that are."""
    try:
        value = lookup(summary, metric)
    except KeyError:
        value = "absent"
    if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ParameterError(
            f"--metric {metric!r} is not a numeric summary key; numeric keys: {', '.join(numeric_keys(summary))}"
        )


@dataclass(frozen=True)
class Row:
    """One line of the table: a point and a scheduler over its seeds."""

    point: dict[str, Any]
    scheduler: str
    runs: int
    mean: float | None
    min: float | None
    max: float | None
    unstable: int
    #: Values the statistics are over (runs whose metric is not None).
    n: int = 0
    #: Sample standard deviation (n - 1); None below two values.
    sd: float | None = None
    #: 95% Student-t interval of the mean; None below two values.
    ci_low: float | None = None
    ci_high: float | None = None

    @property
    def ci_half(self) -> float | None:
        return None if self.ci_high is None or self.mean is None else self.ci_high - self.mean


def t_interval(xs: Sequence[float], confidence: float = CONFIDENCE) -> tuple[float | None, float | None, float | None]:
    """(sample sd, low, high) of the Student-t interval of the mean of ``xs``; Nones below two values."""
    n = len(xs)
    if n < 2:
        return None, None, None
    mean = math.fsum(xs) / n
    sd = math.sqrt(math.fsum((x - mean) ** 2 for x in xs) / (n - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1)) * sd / math.sqrt(n)
    return sd, mean - half, mean + half


def aggregate(summaries: Sequence[dict[str, Any]], metric: str) -> list[Row]:
    """Mean, 95% t-interval, min and max of ``metric`` over seeds per (point, scheduler), in first-seen order.

    Runs where the metric is None (no job completed) count in ``runs`` but not in the statistics;
    ``unstable`` counts runs whose queue kept growing (``"stable": false``).
    """
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for s in summaries:
        key = (repr(sorted(s.get("point", {}).items())), s["scheduler"])
        groups.setdefault(key, []).append(s)
    rows = []
    for runs in groups.values():
        xs = [float(v) for v in (lookup(s, metric) for s in runs) if v is not None]
        sd, lo, hi = t_interval(xs)
        rows.append(
            Row(
                point=dict(runs[0].get("point", {})),
                scheduler=runs[0]["scheduler"],
                runs=len(runs),
                mean=math.fsum(xs) / len(xs) if xs else None,
                min=min(xs) if xs else None,
                max=max(xs) if xs else None,
                unstable=sum(1 for s in runs if s.get("stable") is False),
                n=len(xs),
                sd=sd,
                ci_low=lo,
                ci_high=hi,
            )
        )
    return rows


def _num(x: float | None) -> str:
    return "-" if x is None else f"{x:.6g}"


#: A printed table's title names a response key's meaning beside it: "response" is the LoTES paper's, the wait
#: from a job's arrival to its start (the platform's pages call it "wait until start" too).
_RESPONSE_KEY = re.compile(r"(mean|p50|p90|p99|max)_response_s")


def metric_title(metric: str) -> str:
    """``mean_response_s (mean wait until start, s)``; other keys as they are."""
    m = _RESPONSE_KEY.fullmatch(metric)
    return f"{metric} ({m.group(1)} wait until start, s)" if m else metric


def format_table(rows: Sequence[Row], metric: str, seeds: Sequence[int]) -> str:
    """A plain-text table, one line per point and scheduler, columns aligned."""
    names = list(rows[0].point) if rows else []
    header = [*names, "scheduler", "runs", "mean", "ci95_low", "ci95_high", "min", "max", "unstable"]
    body = [
        [
            *(str(r.point[n]) for n in names),
            r.scheduler,
            str(r.runs),
            _num(r.mean),
            _num(r.ci_low),
            _num(r.ci_high),
            _num(r.min),
            _num(r.max),
            str(r.unstable),
        ]
        for r in rows
    ]
    widths = [max(len(line[i]) for line in [header, *body]) for i in range(len(header))]
    left = len(names) + 1  # point values and scheduler names read better left-aligned

    def fmt(line: list[str]) -> str:
        return "  ".join(
            c.ljust(w) if i < left else c.rjust(w) for i, (c, w) in enumerate(zip(line, widths, strict=True))
        ).rstrip()

    title = f"{metric_title(metric)} over seeds {seeds_text(seeds)}"
    return "\n".join([title, fmt(header), *(fmt(line) for line in body)]) + "\n"


def write_csv(path: str | Path, summaries: Sequence[dict[str, Any]]) -> None:
    """One row per run: every summary key (nested ones dotted), the point's values as ``point.NAME``."""
    flat = [flatten(s) for s in summaries]
    columns: dict[str, None] = {}
    for f in flat:
        columns.update(dict.fromkeys(f))
    with Path(path).open("w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(columns), restval="")
        w.writeheader()
        for f in flat:
            w.writerow({k: "" if v is None else v for k, v in f.items()})
