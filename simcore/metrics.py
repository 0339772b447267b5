"""Metrics of a finished simulation: summary numbers and the series the pages plot.

Response time follows the LoTES paper: the time from a job's arrival to its
start (its wait). Completion time is arrival to finish, run time start to
finish. Summary statistics of response time are over the jobs that started;
jobs still queued at the end are counted separately (``queued_at_end``), so
an unstable scheduler cannot look good by leaving jobs unstarted: its
``stable`` verdict is false and ``completed < jobs``. Utilisation and the
stability verdict are measured from the first arrival (``measured_from_s``),
never from time 0, so an empty stretch before the first job cannot make a
cluster look idle and stable; a drained run that left any job unfinished is
never stable.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.engine import SimResult
from simcore.model import FloatArray

DAY_S = 86_400.0

#: Probability points of the stored response-time CDF.
CDF_POINTS = 501

#: Wait values (s) at which the stored complementary CDF is evaluated: ten points a decade from
#: 1 ms to 10^9 s (longer than any trace we accept), the same for every run so that runs of
#: different seeds average point by point. The tail where schedulers differ (the last 1-10%
#: of jobs) keeps its resolution, unlike the probability-spaced CDF above (steps of 0.2%).
CCDF_GRID_S: FloatArray = np.round(np.logspace(-3, 9, 121), 12)


def _stats(x: FloatArray, prefix: str) -> dict[str, float | None]:
    if len(x) == 0:
        return {
            f"mean_{prefix}_s": None,
            f"p50_{prefix}_s": None,
            f"p90_{prefix}_s": None,
            f"p99_{prefix}_s": None,
            f"max_{prefix}_s": None,
        }
    p50, p90, p99 = np.percentile(x, [50, 90, 99]).tolist()
    return {
        f"mean_{prefix}_s": float(x.mean()),
        f"p50_{prefix}_s": float(p50),
        f"p90_{prefix}_s": float(p90),
        f"p99_{prefix}_s": float(p99),
        f"max_{prefix}_s": float(x.max()),
    }


def response_times(res: SimResult) -> FloatArray:
    """Waits (s) of the jobs that started, in job order."""
    m = res.started_mask
    return np.maximum(res.start[m] - res.submit[m], 0.0)


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


def summary(res: SimResult) -> dict[str, Any]:
    """The summary numbers of a run (the CLI's JSON keys)."""
    started = res.started_mask
    completed = res.completed_mask
    resp = response_times(res)
    comp = res.finish[completed] - res.submit[completed]
    run = res.finish[completed] - res.start[completed]
    arrived = int(res.extra.get("arrived", res.n_jobs))
    out: dict[str, Any] = {
        "jobs": arrived,
        "started": int(started.sum()),
        "completed": int(completed.sum()),
        "queued_at_end": int(arrived - started.sum()),
        "running_at_end": int(started.sum() - completed.sum()),
    }
    out.update(_stats(resp, "response"))
    out["mean_completion_s"] = float(comp.mean()) if len(comp) else None
    out["p99_completion_s"] = float(np.percentile(comp, 99)) if len(comp) else None
    out["mean_run_s"] = float(run.mean()) if len(run) else None
    out["max_queue_len"] = int(res.sample_queue.max()) if len(res.sample_queue) else 0
    out["utilization"] = {r: float(res.sample_util[:, i].mean()) for i, r in enumerate(res.resources)}
    stable = bool(is_stable(res.sample_t, res.sample_queue.astype(np.float64)))
    if res.extra.get("drained") and int(completed.sum()) < arrived:
        # Draining runs until every job finished: one left over means the queue never emptied.
        stable = False
    out["stable"] = stable
    # The samples (utilisation, queue) span this window, from the first arrival (issue 17).
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


def per_class(res: SimResult, class_names: list[str] | None = None) -> list[dict[str, Any]]:
    """Mean wait, run and completion per job class (the profile study's Figures 12-13)."""
    out = []
    completed = res.completed_mask
    for k in np.unique(res.job_class):
        m = completed & (res.job_class == k)
        if not m.any():
            continue
        wait = res.start[m] - res.submit[m]
        run = res.finish[m] - res.start[m]
        name = class_names[k] if class_names is not None and 0 <= k < len(class_names) else str(int(k))
        out.append(
            {
                "class": name,
                "jobs": int(m.sum()),
                "mean_response_s": float(wait.mean()),
                "mean_run_s": float(run.mean()),
                "mean_completion_s": float((wait + run).mean()),
            }
        )
    return out


def series(res: SimResult) -> dict[str, Any]:
    """Everything the result pages plot, small enough to store as JSON."""
    resp = np.sort(response_times(res))
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
