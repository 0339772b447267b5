"""A service target on a run's exact statistics: ``p99_wait_s<=60``, ``mean_wait_s<=0.1``, ``unstarted_fraction<=0``.

A wait is the time from a job's arrival to its start (the summary's
"response"). The planner's wait statistics are over **every job that
arrived**, a job never started counted as waiting until the run's end (it
waits at least that long). A shrunken cluster that leaves jobs unstarted so
cannot pass a target on the jobs that did start; the summary's ``*_response_s``
keys, over started jobs only, can be asked for by name when that is what is
meant.

Statistics (all exact, from the per-job records; smaller is better, so a target
is an upper bound, ``<=`` or ``<``):

=======================  ===================================================================
``mean_wait_s``          mean wait of every arrived job: the summary's ``mean_response_lower_s``
``pNN_wait_s``           the NN-th percentile (0 < NN <= 100, e.g. ``p99``, ``p99.9``) of the
                         same waits (numpy's linear interpolation, as the summary's percentiles)
``max_wait_s``           the longest of them
``unstarted_fraction``   jobs never started over jobs arrived (``queued_at_end / jobs``)
``mean_response_s``,     the summary's keys of the same name: over the jobs that started only
``p50/p90/p99/max_response_s``
=======================  ===================================================================
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from simcore.core.engine import SimResult
from simcore.core.errors import ParameterError

#: Statistics by name (the percentiles ``pNN_wait_s`` are parsed, not listed).
FIXED_STATISTICS: dict[str, str] = {
    "mean_wait_s": "mean wait of every arrived job (never-started jobs wait until the run's end), s",
    "max_wait_s": "longest wait of every arrived job, s",
    "unstarted_fraction": "fraction of the arrived jobs never started",
    "mean_response_s": "mean wait of the jobs that started (the summary's key), s",
    "p50_response_s": "median wait of the jobs that started, s",
    "p90_response_s": "90th percentile wait of the jobs that started, s",
    "p99_response_s": "99th percentile wait of the jobs that started, s",
    "max_response_s": "longest wait of the jobs that started, s",
}
#: Aliases accepted for the fraction of jobs never started.
ALIASES = {"never_started_fraction": "unstarted_fraction", "unstarted": "unstarted_fraction"}

_TARGET = re.compile(r"^\s*([A-Za-z0-9_.]+)\s*(<=|<|>=|>|==|=)\s*([^\s].*?)\s*$")
_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)_(wait|response)_s$")


@dataclass(frozen=True)
class Target:
    """``statistic op bound``: met when the statistic's value is ``<=`` (or ``<``) ``bound``."""

    statistic: str
    op: str
    bound: float

    def text(self) -> str:
        return f"{self.statistic}{self.op}{self.bound:g}"

    def met(self, value: float | None) -> bool:
        """Whether ``value`` meets the target; None (no job to measure) never does."""
        if value is None or math.isnan(value):
            return False
        return value < self.bound if self.op == "<" else value <= self.bound

    def value(self, res: SimResult) -> float | None:
        """The statistic of a finished run (None when no job arrived, or none started for ``*_response_s``)."""
        return statistic_value(self.statistic, res)


def parse_target(text: str) -> Target:
    """``'p99_wait_s<=60'`` as a :class:`Target`; a clear :class:`ParameterError` for anything else."""
    m = _TARGET.match(text or "")
    if m is None:
        raise ParameterError(
            f"--target {text!r}: expected STATISTIC<=VALUE, e.g. 'p99_wait_s<=60' or 'mean_wait_s<=0.1'"
        )
    name, op, raw = m.group(1), m.group(2), m.group(3)
    name = ALIASES.get(name, name)
    check_statistic(name)
    if op not in ("<=", "<"):
        raise ParameterError(
            f"--target {text!r}: a target is an upper bound (smaller waits are better): use <= or <, not {op}"
        )
    try:
        bound = float(raw)
    except ValueError:
        raise ParameterError(f"--target {text!r}: the bound {raw!r} is not a number") from None
    if not math.isfinite(bound) or bound < 0:
        raise ParameterError(f"--target {text!r}: the bound must be a finite number >= 0, got {raw}")
    if name == "unstarted_fraction" and bound > 1:
        raise ParameterError(f"--target {text!r}: a fraction of jobs is at most 1")
    return Target(name, op, bound)


def check_statistic(name: str) -> None:
    """Refuse an unknown statistic, listing the valid ones."""
    if name in FIXED_STATISTICS:
        return
    m = _PERCENTILE.match(name)
    if m is not None and m.group(2) == "wait":
        q = float(m.group(1))
        if 0 < q <= 100:
            return
        raise ParameterError(f"unknown statistic {name!r}: a percentile must be in (0, 100]")
    valid = ", ".join([*sorted(FIXED_STATISTICS), "pNN_wait_s (NN in (0, 100], e.g. p99_wait_s, p99.9_wait_s)"])
    raise ParameterError(f"unknown statistic {name!r} in --target; valid statistics: {valid}")


def all_waits(res: SimResult) -> np.ndarray:
    """Waits (s) of every arrived job in job order; a job never started waits until the run's end."""
    n = int(res.extra.get("arrived", res.n_jobs))
    start = res.start[:n]
    until = np.where(np.isnan(start), float(res.end_s), start)
    return np.maximum(until - res.submit[:n], 0.0)


def statistic_value(name: str, res: SimResult) -> float | None:
    """The value of statistic ``name`` (see the module's table) for a finished run."""
    name = ALIASES.get(name, name)
    n = int(res.extra.get("arrived", res.n_jobs))
    if n == 0:
        return None
    if name == "unstarted_fraction":
        return float(np.count_nonzero(np.isnan(res.start[:n]))) / n
    if name.endswith("_response_s"):
        started = ~np.isnan(res.start[:n])
        w = np.maximum(res.start[:n][started] - res.submit[:n][started], 0.0)
    else:
        w = all_waits(res)
    if len(w) == 0:
        return None
    if name.startswith("mean_"):
        return float(w.mean())
    if name.startswith("max_"):
        return float(w.max())
    m = _PERCENTILE.match(name)
    if m is None:  # pragma: no cover - check_statistic refuses it first
        raise ParameterError(f"unknown statistic {name!r}")
    return float(np.percentile(w, float(m.group(1))))
