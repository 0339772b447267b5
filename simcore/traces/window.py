"""Time windows over traces that record when each job ran (Alibaba, Azure): one rule for every reader.

A window ``[start, end)`` cuts a trace the way a trace cuts time (issue 17):

* by default it starts at the first arrival, so a trace (or a part of one)
  whose first event comes late is not simulated as an idle cluster first;
* jobs that started before the window and still run at its start are its
  *initial batch*: kept (``running_at_start="keep"``, arriving at the
  window's start with their remaining duration; where they ran is not
  needed) or dropped and counted (``"drop"``);
* jobs still running at the window's end are cut there (``unfinished="cut"``)
  or dropped (``"drop"``); a job with no recorded end (NaN) is still running
  at the end of the trace.

Times are then shifted so the window starts at 0. Every job that does not
survive is counted in the report by reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
from numpy.typing import NDArray

from simcore.core.errors import ParameterError
from simcore.traces.report import ImportReport

RunningAtStart = Literal["keep", "drop"]
Unfinished = Literal["cut", "drop"]

R_ENDED_BEFORE = "ended before the window's start"
R_RUNNING_AT_START = "running at the window's start (--running-at-start drop)"
R_AFTER_END = "started at or after the window's end"
R_RUNNING_AT_END = "still running at the window's end (--unfinished drop)"
K_RUNNING_AT_START = "running at the window's start: arrive at 0 with their remaining duration"
K_CUT_AT_END = "running at the window's end: duration cut there"


@dataclass(frozen=True)
class Window:
    """The jobs kept (``keep``), their arrival (s from the window's start) and duration, and the window."""

    keep: NDArray[np.bool_]
    arrival: NDArray[np.float64]
    duration: NDArray[np.float64]
    start_s: float
    end_s: float


def check_options(running_at_start: str, unfinished: str) -> None:
    """Refuse option values outside their choices (the readers' boundary)."""
    if running_at_start not in ("keep", "drop"):
        raise ParameterError(f"running_at_start must be 'keep' or 'drop', got {running_at_start!r}")
    if unfinished not in ("cut", "drop"):
        raise ParameterError(f"unfinished must be 'cut' or 'drop', got {unfinished!r}")


def cut(
    start: NDArray[np.float64],
    end: NDArray[np.float64],
    report: ImportReport,
    *,
    start_s: float | None,
    end_s: float | None,
    default_start: float,
    running_at_start: RunningAtStart = "keep",
    unfinished: Unfinished = "cut",
) -> Window:
    """Apply the window to jobs that ran over ``[start, end)`` (s; ``end`` NaN: still running at the trace end).

    ``start_s`` None: the window starts at ``default_start`` (the reader's first
    arrival). ``end_s`` None: it ends at the last start or end recorded.
    """
    check_options(running_at_start, unfinished)
    t0 = float(default_start if start_s is None else start_s)
    finite_end = end[np.isfinite(end)]
    last = max(float(start.max()) if len(start) else t0, float(finite_end.max()) if len(finite_end) else t0)
    t1 = float(end_s) if end_s is not None else max(last, t0)
    open_end = np.where(np.isnan(end), np.inf, end)
    keep = np.ones(len(start), dtype=bool)
    before = start < t0
    ended = before & (open_end <= t0)
    report.drop(R_ENDED_BEFORE, int(np.count_nonzero(ended)))
    keep &= ~ended
    running0 = keep & before
    if running_at_start == "drop":
        report.drop(R_RUNNING_AT_START, int(np.count_nonzero(running0)))
        keep &= ~running0
    else:
        report.keep_note(K_RUNNING_AT_START, int(np.count_nonzero(running0)))
    late = keep & (start >= t1) & (start > t0)
    report.drop(R_AFTER_END, int(np.count_nonzero(late)))
    keep &= ~late
    over = keep & (open_end > t1)
    if unfinished == "drop":
        report.drop(R_RUNNING_AT_END, int(np.count_nonzero(over)))
        keep &= ~over
    else:
        report.keep_note(K_CUT_AT_END, int(np.count_nonzero(over)))
    began = np.maximum(start[keep], t0)
    duration = np.minimum(open_end[keep], t1) - began
    return Window(keep, began - t0, np.maximum(duration, 0.0), t0, t1)


__all__ = ["RunningAtStart", "Unfinished", "Window", "check_options", "cut"]
