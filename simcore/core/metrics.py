"""Metrics of a finished simulation: summary numbers and the series the pages plot.

Response time follows the LoTES paper: the time from a job's arrival to its
start (its wait). Completion time is arrival to finish, run time start to
finish. Summary statistics of response time are over the jobs that started;
jobs still queued at the end are counted separately (``queued_at_end``), and
``mean_response_lower_s`` bounds the mean wait of every job that arrived from
below by counting those as waiting until the run's end, so an unstable scheduler cannot
look good by leaving jobs unstarted: its ``stable`` verdict is false and
``completed < jobs``.

Utilisation (per resource), the mean queue length, the mean running count and
the maximum queue length are exact: integrals over the per-job records
(:mod:`simcore.core.timeavg`), over the window from ``window_start_s`` (the first
arrival) to ``window_end_s`` (the run's end: the horizon, or the last event of a drained run), so
an empty stretch before the first job cannot make a cluster look idle. The
series (``queue``, ``utilization``) are ``samples`` evenly spaced samples of
the state from the first arrival (``measured_from_s``) to the horizon, for
charts and the stability verdict only; a drained run that left any job
unfinished is never stable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.core.engine import SimResult
from simcore.core.model import FloatArray
from simcore.core.timeavg import TimeAverages, time_averages

DAY_S = 86_400.0

#: Probability points of the stored response-time CDF.
CDF_POINTS = 501

#: Wait values (s) at which the stored complementary CDF is evaluated: ten points a decade from
#: 1 ms to 10^9 s (longer than any trace we accept), the same for every run so that runs of
#: different seeds average point by point. The tail where schedulers differ (the last 1-10%
#: of jobs) keeps its resolution, unlike the probability-spaced CDF above (steps of 0.2%).
CCDF_GRID_S: FloatArray = np.round(np.logspace(-3, 9, 121), 12)


def _stats(x: FloatArray, prefix: str, sorted_x: FloatArray | None = None) -> dict[str, float | None]:
    """Mean (over ``x`` in its own order), percentiles and maximum; ``sorted_x``: ``x`` sorted, if at hand.

    Percentiles and the maximum are order statistics, the same from the sorted copy (numpy finds
    them faster there); the mean is summed in job order, so it keeps its float rounding.
    """
    if len(x) == 0:
        return {
            f"mean_{prefix}_s": None,
            f"p50_{prefix}_s": None,
            f"p90_{prefix}_s": None,
            f"p99_{prefix}_s": None,
            f"max_{prefix}_s": None,
        }
    ordered = x if sorted_x is None else sorted_x
    p50, p90, p99 = np.percentile(ordered, [50, 90, 99]).tolist()
    return {
        f"mean_{prefix}_s": float(x.mean()),
        f"p50_{prefix}_s": float(p50),
        f"p90_{prefix}_s": float(p90),
        f"p99_{prefix}_s": float(p99),
        f"max_{prefix}_s": float(x.max() if sorted_x is None else sorted_x[-1]),
    }


def response_times(res: SimResult) -> FloatArray:
    """Waits (s) of the jobs that started, in job order."""
    m = res.started_mask
    return np.maximum(res.start[m] - res.submit[m], 0.0)


class Waits:
    """A run's response times, computed once for :func:`summary` and :func:`series` (33 million jobs
    at paper scale: each pass over them costs seconds): in job order and sorted."""

    def __init__(self, res: SimResult) -> None:
        self.in_order = response_times(res)
        self.sorted = np.sort(self.in_order)


def is_stable(sample_t: FloatArray, queue: FloatArray) -> bool:
    """Stability verdict: False when the queue is still growing at the end.

    A least-squares line is fitted to the queue length over the last half of
    the run. The queue is judged to be growing when the line's rise over that
    half exceeds both ten jobs and three times the spread of the samples
    around the line, and the last quarter's mean exceeds the third quarter's.
    A stable queue fluctuates around a level (its rise is small next to its
    spread); an unstable one (Greedy at load 0.97 in the LoTES paper) climbs
    steadily, so its rise dwarfs the noise. Short runs can be misjudged either
    way: the verdict is a hint, the queue-length series is the evidence.
    """
    n = len(queue)
    if n < 8:
        return True
    half = np.asarray(queue[n // 2 :], dtype=np.float64)
    t = np.asarray(sample_t[n // 2 :], dtype=np.float64)
    if np.ptp(t) <= 0:
        return True
    slope, intercept = np.polyfit(t, half, 1)
    rise = slope * np.ptp(t)
    spread = float(np.std(half - (slope * t + intercept)))
    q3, q4 = np.array_split(half, 2)
    return not (rise > 10 and rise > 3 * spread and q4.mean() > q3.mean())


def ccdf(sorted_waits: FloatArray) -> dict[str, Any]:
    """Fraction of started jobs that waited longer than each wait of :data:`CCDF_GRID_S` (s).

    ``sorted_waits``: the waits of the started jobs, ascending. The grid stops
    at the first point no job waited longer than (every later fraction is 0).
    ``zero_waits`` counts the jobs that started the moment they arrived, which
    a log axis cannot draw; ``started`` is the denominator.
    """
    n = len(sorted_waits)
    if n == 0:
        return {"response_s": [], "longer": [], "zero_waits": 0, "started": 0}
    longer = (n - np.searchsorted(sorted_waits, CCDF_GRID_S, side="right")) / n
    end = int(np.argmax(longer == 0)) + 1 if longer[-1] == 0 else len(longer)
    return {
        "response_s": CCDF_GRID_S[:end].tolist(),
        "longer": longer[:end].tolist(),
        "zero_waits": int(np.searchsorted(sorted_waits, 0.0, side="right")),
        "started": n,
    }


def summary(res: SimResult, waits: Waits | None = None) -> dict[str, Any]:
    """The summary numbers of a run (the CLI's JSON keys); ``waits``: its :class:`Waits`, if at hand."""
    completed = res.completed_mask
    n_started = int(np.count_nonzero(res.started_mask))
    n_completed = int(np.count_nonzero(completed))
    if waits is None:
        resp, resp_sorted = response_times(res), None
    else:
        resp, resp_sorted = waits.in_order, waits.sorted
    comp = res.finish[completed] - res.submit[completed]
    run = res.finish[completed] - res.start[completed]
    arrived = int(res.extra.get("arrived", res.n_jobs))
    out: dict[str, Any] = {
        "jobs": arrived,
        "started": n_started,
        "completed": n_completed,
        "queued_at_end": int(arrived - n_started),
        "running_at_end": int(n_started - n_completed),
    }
    out.update(_stats(resp, "response", resp_sorted))
    out["mean_completion_s"] = float(comp.mean()) if len(comp) else None
    out["p99_completion_s"] = float(np.percentile(comp, 99)) if len(comp) else None
    out["mean_run_s"] = float(run.mean()) if len(run) else None
    out["mean_response_lower_s"] = mean_wait_lower(res, arrived)
    out.update(exact_time_averages(res).as_summary())
    out["samples"] = len(res.sample_t)
    stable = bool(is_stable(res.sample_t, res.sample_queue.astype(np.float64)))
    if res.extra.get("drained") and n_completed < arrived:
        # Draining runs until every job finished: one left over means the queue never emptied.
        stable = False
    out["stable"] = stable
    # The sampled series (charts, the stability verdict) start at the first arrival too (issue 17).
    out["measured_from_s"] = float(res.sample_t[0]) if len(res.sample_t) else 0.0
    out["simulated_s"] = float(res.end_s)
    out["wall_s"] = float(res.wall_s)
    out["jobs_per_s"] = float(arrived / res.wall_s) if res.wall_s > 0 else None
    # Which loop ran (compiled kernel or the Python reference), its first-call time, and why not compiled.
    out["engine"] = str(res.extra.get("engine", "python"))
    compile_s = res.extra.get("compile_s")
    out["compile_s"] = None if compile_s is None else float(compile_s)
    out["engine_note"] = str(res.extra.get("engine_note", ""))
    return out


def window(res: SimResult) -> tuple[float, float]:
    """The measured window of the exact statistics: the first arrival to the run's end (see :mod:`.timeavg`)."""
    arrived = int(res.extra.get("arrived", res.n_jobs))
    lo = float(res.submit[0]) if arrived else 0.0
    return lo, max(lo, float(res.end_s))


def exact_time_averages(res: SimResult) -> TimeAverages:
    """Utilisation, mean queue length, mean running count and maximum queue length of ``res``, exact
    (integrals over its jobs, :mod:`simcore.core.timeavg`) over :func:`window`.

    A run of the compiled engine gets them from :mod:`simcore.compiled.timeavg`: the same values, to
    the bit, in a compiled pass (the specification's numpy took about 10% of a fast compiled run's time).
    """
    if res.request is None or res.total_capacity is None:
        raise ValueError("this SimResult has no requests or capacities: the exact time averages need both")
    n = int(res.extra.get("arrived", res.n_jobs))
    fn = time_averages
    if res.extra.get("engine") == "compiled":  # numba is there: the run's kernel was compiled with it
        from simcore.compiled.timeavg import time_averages as fn
    return fn(
        res.submit[:n],
        res.start[:n],
        res.finish[:n],
        res.request[:n],
        res.total_capacity,
        res.resources,
        window(res),
        None if res.release is None else res.release[:n],
    )


def mean_wait_lower(res: SimResult, arrived: int) -> float | None:
    """Mean wait (s) over every job that arrived, those that never started counted as waiting until the run's
    end. They wait at least that long, so the mean wait of every arrived job is at least this (a lower bound,
    which ``mean_response_s``, over the started jobs only, is not: the jobs it leaves out wait longest)."""
    if arrived == 0:
        return None
    start = res.start[:arrived]
    until = np.where(np.isnan(start), float(res.end_s), start)
    return float(np.maximum(until - res.submit[:arrived], 0.0).mean())


def _completed_by_class(res: SimResult) -> list[tuple[int, Any]]:
    """(class, indices of its completed jobs in job order) for every class with a completed job, ascending.

    The classes are small non-negative integers (presets, traces' k-means classes): a stable sort of
    the classes of completed jobs groups them in one pass (numpy sorts 16-bit keys by radix), each
    group in job order, so every per-class sum below adds the values in the order a mask would take
    them. Other classes fall back to one mask per class.
    """
    completed = np.flatnonzero(res.completed_mask)
    jc = res.job_class[completed]
    if len(jc) == 0:
        return []
    lo, hi = int(jc.min()), int(jc.max())
    if lo < 0 or hi >= 1 << 16:
        return [(int(k), completed[jc == k]) for k in np.unique(jc)]
    order = np.argsort(jc.astype(np.uint16), kind="stable")
    counts = np.bincount(jc, minlength=hi + 1)
    out = []
    a = 0
    for k in np.flatnonzero(counts):
        b = a + int(counts[k])
        out.append((int(k), completed[order[a:b]]))
        a = b
    return out


def per_class(res: SimResult, class_names: list[str] | None = None) -> list[dict[str, Any]]:
    """Mean wait, run and completion per job class (the profile study's Figures 12-13)."""
    out = []
    for k, m in _completed_by_class(res):
        wait = res.start[m] - res.submit[m]
        run = res.finish[m] - res.start[m]
        name = class_names[k] if class_names is not None and 0 <= k < len(class_names) else str(int(k))
        out.append(
            {
                "class": name,
                "jobs": len(m),
                "mean_response_s": float(wait.mean()),
                "mean_run_s": float(run.mean()),
                "mean_completion_s": float((wait + run).mean()),
            }
        )
    return out


def series(res: SimResult, waits: Waits | None = None) -> dict[str, Any]:
    """Everything the result pages plot, small enough to store as JSON; ``waits``: the run's :class:`Waits`."""
    resp = waits.sorted if waits is not None else np.sort(response_times(res))
    p = np.linspace(0.0, 1.0, CDF_POINTS)
    cdf_x = np.quantile(resp, p).tolist() if len(resp) else []
    started = res.started_mask
    day = np.floor(res.start[started] / DAY_S).astype(np.int64)
    wait = res.start[started] - res.submit[started]
    per_day: dict[str, list[Any]] = {"day": [], "mean_response_s": [], "jobs": []}
    if len(day):
        counts = np.bincount(day)
        sums = np.bincount(day, weights=wait)
        nz = np.flatnonzero(counts)
        per_day = {
            "day": nz.tolist(),
            "mean_response_s": (sums[nz] / counts[nz]).tolist(),
            "jobs": counts[nz].tolist(),
        }
    util = {r: res.sample_util[:, i].tolist() for i, r in enumerate(res.resources)}
    return {
        "cdf": {"p": p.tolist() if len(resp) else [], "response_s": cdf_x},
        "ccdf": ccdf(resp),
        "per_day": per_day,
        "queue": {
            "t_s": res.sample_t.tolist(),
            "queued": res.sample_queue.tolist(),
            "running": res.sample_running.tolist(),
        },
        "utilization": {"t_s": res.sample_t.tolist(), **util},
    }
