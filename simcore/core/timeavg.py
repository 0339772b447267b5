"""Exact time averages of a finished run: utilisation, queue length and running count (issue 26).

Every quantity here is an integral over the run's per-job records, not a mean
of samples: the queue length, the running count and the capacity in use are
step functions that change only when a job is released, starts or finishes,
so their integrals are sums over jobs:

* the time some job spends queued (from its release to its start, or to the
  window's end if it never started) summed over jobs is the integral of the
  queue length;
* its time running (start to finish, or to the window's end) summed over jobs
  is the integral of the running count, and weighted by its request, the
  integral of the capacity in use.

Each interval is clipped to the measured window before it is summed.

**The window** (``window_s``; the summary's ``window_start_s`` and
``window_end_s``) runs from the first arrival to the end of the run
(:attr:`SimResult.end_s`): the horizon for a run stopped there, the last
event for a drained run. It starts at the first arrival for the reason the
samples do (issue 17: a trace in Unix time must not be diluted by an empty
stretch before its first job), and it ends at the run's end, not at the
horizon, so that a drained run is measured until its last job finished: then
every job's whole stay lies inside the window and Little's law holds exactly,
``mean_queue_len = (jobs / window) * mean wait`` (up to float rounding), and a
batch released at time 0 (a WfCommons workflow) is measured over its makespan.

**Release**: a job is queued from its arrival; a task of a task graph
(:mod:`simcore.core.taskgraph`) from the moment it is released to the scheduler,
its arrival or its last parent's finish, whichever is later (a task whose
parents did not all finish is never queued). Jobs that arrived but never
started count as queued until the window's end.

**Maximum queue length**: the largest number of jobs queued at once over a
stretch of positive length. The events of one instant count together, starts
before releases, so a job that starts the moment it arrives (or a burst that is
cleared at the instant it arrives) is never counted as queued; a burst of 100
arrivals of which 10 start at once counts as a queue of 90.

This module is the specification, and Python runs use it. Compiled runs use
:mod:`simcore.compiled.timeavg`, a compiled pass that gives the same values to
the bit (tests/simcore/test_compiled_timeavg.py) at a tenth of the cost; both
engines produce the same per-job records (start times, machines) for the same
run, so they report the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.core.model import FloatArray, IntArray

__all__ = ["TimeAverages", "release_times", "time_averages"]


@dataclass(frozen=True)
class TimeAverages:
    """Exact time averages over ``window_s``; None where the window has no length (nothing to average over)."""

    window_s: tuple[float, float]
    #: Capacity in use over total capacity, per resource, averaged over the window.
    utilization: dict[str, float | None]
    mean_queue_len: float | None
    mean_running: float | None
    max_queue_len: int

    def as_summary(self) -> dict[str, Any]:
        """The summary's keys (see :func:`simcore.core.metrics.summary`)."""
        return {
            "window_start_s": self.window_s[0],
            "window_end_s": self.window_s[1],
            "utilization": dict(self.utilization),
            "mean_queue_len": self.mean_queue_len,
            "mean_running": self.mean_running,
            "max_queue_len": self.max_queue_len,
        }


def release_times(submit: FloatArray, finish: FloatArray, parent_ptr: IntArray, parents: IntArray) -> FloatArray:
    """When each task was released to the scheduler: ``max(submit, its parents' finishes)``; NaN if a parent never
    finished. ``parent_ptr`` and ``parents`` are the task graph's CSR rows of parents."""
    release = np.array(submit, dtype=np.float64, copy=True)
    if len(parents):
        child = np.repeat(np.arange(len(submit), dtype=np.int64), np.diff(parent_ptr))
        # NaN propagates through np.maximum (on purpose: a child of an unfinished parent stays unreleased).
        with np.errstate(invalid="ignore"):
            np.maximum.at(release, child, finish[parents])
    return release


def time_averages(
    submit: FloatArray,
    start: FloatArray,
    finish: FloatArray,
    request: FloatArray,
    total_capacity: FloatArray,
    resources: tuple[str, ...],
    window: tuple[float, float],
    release: FloatArray | None = None,
) -> TimeAverages:
    """The exact statistics of the jobs given (those that arrived) over ``window`` = (start, end).

    ``start`` and ``finish`` are NaN where a job never started or finished; ``request`` is
    (jobs, resources); ``release`` (tasks of a graph) defaults to ``submit``.
    """
    lo, hi = float(window[0]), float(window[1])
    length = hi - lo
    queued_from = submit if release is None else release
    released = ~np.isnan(queued_from)
    started = ~np.isnan(start)
    # A job still queued (running) at the end stays queued (running) until the window's end.
    begin_q = np.clip(queued_from[released], lo, hi)
    end_q = np.clip(np.where(started[released], start[released], hi), lo, hi)
    begin_r = np.clip(start[started], lo, hi)
    end_r = np.clip(np.where(np.isnan(finish[started]), hi, finish[started]), lo, hi)
    run = end_r - begin_r
    if length > 0:
        mean_queue: float | None = float(np.sum(end_q - begin_q)) / length
        mean_running: float | None = float(np.sum(run)) / length
        busy = run @ request[started] if len(run) else np.zeros(len(resources))
        util: dict[str, float | None] = {
            r: float(busy[i]) / (float(total_capacity[i]) * length) if total_capacity[i] > 0 else 0.0
            for i, r in enumerate(resources)
        }
    else:
        mean_queue = mean_running = None
        util = dict.fromkeys(resources)
    return TimeAverages(
        window_s=(lo, hi),
        utilization=util,
        mean_queue_len=mean_queue,
        mean_running=mean_running,
        max_queue_len=max_queue_length(queued_from[released], start[started], release is None),
    )


def max_queue_length(released_at: FloatArray, started_at: FloatArray, already_sorted: bool) -> int:
    """The largest queue that lasts a positive time (starts before releases at one instant; module docstring).

    The queue only grows at a release, so its maximum is reached right after some release
    time t: releases up to t minus starts up to t (both counted with ``<=``, which applies
    every event of the instant t). ``already_sorted``: ``released_at`` is ascending (the
    workload's submit times), so it is not sorted again.
    """
    if len(released_at) == 0:
        return 0
    rel = released_at if already_sorted else np.sort(released_at)
    starts = np.sort(started_at)
    # Releases up to rel[i] inclusive: i + 1 at the last of each run of equal times (read only there).
    last = np.flatnonzero(rel[1:] != rel[:-1])
    last = np.append(last, len(rel) - 1)
    queued = (last + 1) - np.searchsorted(starts, rel[last], side="right")
    return max(int(queued.max()), 0)
