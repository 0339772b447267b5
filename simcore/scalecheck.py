"""Will this scale show anything? Plain-language warnings before a run (from its workload) and after (from summaries).

A run too small for the schedulers to differ gives a table of zeros that
looks like a finding. Three things make it so, and each has a check here:

* too few jobs: means and percentiles over a few dozen jobs are noise;
* a window short against the jobs' durations: the cluster is still filling
  for much of it, so it is far less busy than the load asked for and no
  queue forms (LoTES Figure 11 at 2 hours: 48% cpu at "load 0.97", as jobs
  run half an hour on average);
* no queue: when (almost) every job starts at once, every scheduler's wait
  is zero whatever its policy.

Before a run, :func:`expect` reads a generated workload (its job count,
window, durations and requests: no simulation) and :func:`warnings_before`
words what it finds. After, :func:`warnings_after` reads the runs'
summaries (``simcore run``'s JSON). The thresholds are module constants,
named for what they guard; pure computation, no I/O.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.core.model import Cluster, Workload, shortest_durations

#: Fewer jobs a run than this and the schedulers' means and percentiles are mostly noise.
MIN_JOBS = 1000
#: The arrival window should be at least this many mean job durations: the cluster fills in about one
#: mean duration, and the statistics count from the first arrival.
WARMUP_DURATIONS = 10.0
#: Below this share of the busiest resource offered by the jobs, no queue can be expected.
MIN_OFFERED = 0.3
#: Above this share of a run's jobs still running at the end, the share no longer tells how long they run.
NEARLY_ALL = 0.95
#: Jobs sampled for mean durations when the runtime model has no cheap vector form (the profile study's).
DURATION_SAMPLE = 2000
#: :func:`expect_scenario` draws at most this many hours of arrivals and scales the count to the window.
CHECK_HOURS = 2.0


@dataclass(frozen=True)
class Expectation:
    """What a run's workload promises before it runs.

    ``mean_duration_s``: the jobs' mean processing time on their fastest configuration (s), a lower bound of
    what they will run; ``offered``: per resource, the work the jobs bring (request x that time, over the
    window) as a fraction of the cluster's capacity, also a lower bound.
    """

    jobs: int
    window_s: float
    mean_duration_s: float
    offered: dict[str, float]
    load: float | None = None


def expect(cluster: Cluster, workload: Workload, load: float | None = None) -> Expectation:
    """The job count, window, mean duration (s) and offered utilisation of ``workload`` on ``cluster``."""
    n = workload.n_jobs
    window = float(workload.horizon_s) or (float(workload.submit[-1]) if n else 0.0)
    if n == 0:
        return Expectation(0, window, 0.0, {r: 0.0 for r in cluster.resources}, load)
    runtime = workload.runtime_model(cluster)
    if hasattr(runtime, "shortest") or n <= DURATION_SAMPLE:
        durations = shortest_durations(runtime, n, cluster.n_configs)
        requests = workload.request
    else:
        # Evenly spaced jobs: the model answers one job at a time, and a sample tells the mean.
        pick = np.linspace(0, n - 1, DURATION_SAMPLE).astype(np.int64)
        sampled = shortest_durations(_Subset(runtime, pick), len(pick), cluster.n_configs)
        durations, requests = sampled, workload.request[pick]
        requests = requests * (n / len(pick))  # the sample stands for every job
    finite = np.isfinite(durations)
    mean_d = float(durations[finite].mean()) if finite.any() else math.inf
    work = (requests[finite] * durations[finite][:, None]).sum(axis=0)
    capacity = np.asarray(cluster.total_capacity(), dtype=np.float64)
    offered = {
        r: float(work[i] / (capacity[i] * window)) if capacity[i] > 0 and window > 0 else 0.0
        for i, r in enumerate(cluster.resources)
    }
    return Expectation(n, window, mean_d, offered, load)


def expect_scenario(scenario: Mapping[str, Any], check_hours: float = CHECK_HOURS) -> Expectation:
    """:func:`expect` for a validated scenario's first cell under its first seed (presets only, no files).

    The workload is drawn over at most ``check_hours`` hours (a month of google-like on Table 1's cluster
    would be a hundred million jobs to count): the job count is scaled to the whole window, the offered
    utilisation is a rate and needs no scaling, and the window is the scenario's. A ParameterError of the
    workload (no job at all in a short window) reaches the caller.
    """
    from simcore.presets import WORKLOADS
    from simcore.scenario import build_cluster, build_workload
    from simcore.sweep import scenario as sweep_scenario

    cell = dict(sweep_scenario.cell_scenario(scenario, sweep_scenario.points(scenario)[0]))
    name = cell["workload"]["preset"]
    hours = cell.get("hours") or WORKLOADS.get(name).default_hours
    cell["hours"] = min(hours, check_hours)
    cluster = build_cluster(cell)
    e = expect(cluster, build_workload(cell, cluster, int(cell["seeds"][0])), cell.get("load"))
    scale = hours / cell["hours"]
    return Expectation(round(e.jobs * scale), hours * 3600.0, e.mean_duration_s, e.offered, e.load)


class _Subset:
    """A runtime model seen through a subset of its jobs (job i of the subset is ``pick[i]``)."""

    def __init__(self, runtime: Any, pick: np.ndarray[Any, Any]) -> None:
        self._runtime, self._pick = runtime, pick.tolist()

    def duration(self, job: int, config: int, last_class: int) -> float:
        return float(self._runtime.duration(self._pick[job], config, last_class))


def _time(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.3g} h"
    if seconds >= 60:
        return f"{seconds / 60:.3g} min"
    return f"{seconds:.3g} s"


def _hours_for(seconds: float) -> str:
    return f"{math.ceil(seconds / 3600 * 10) / 10:g} h"


def warnings_before(e: Expectation) -> list[str]:
    """Plain-language warnings about a run with expectation ``e``; empty when its scale can show a difference."""
    out = []
    if e.jobs < MIN_JOBS:
        out.append(
            f"About {e.jobs} jobs a run: too few for the schedulers' means and percentiles to differ by more "
            f"than chance (at least {MIN_JOBS:,} is a start). Raise the hours or the machines."
        )
    if e.mean_duration_s > 0 and e.window_s < WARMUP_DURATIONS * e.mean_duration_s:
        out.append(
            f"Jobs run {_time(e.mean_duration_s)} on average but arrive over only {_time(e.window_s)}: the "
            "cluster is still filling for much of the window, so it stays far less busy than the load asked and "
            f"hardly any queue forms. Use at least {_hours_for(WARMUP_DURATIONS * e.mean_duration_s)}."
        )
    if e.offered and e.jobs:
        busiest, share = max(e.offered.items(), key=lambda kv: kv[1])
        if share < MIN_OFFERED:
            out.append(
                f"The jobs bring only {share:.0%} of the cluster's {busiest} over the window: no queue is to be "
                "expected, and every scheduler will start every job at once. Raise the load."
            )
    return out


def _num(s: Mapping[str, Any], key: str) -> float | None:
    v = s.get(key)
    return float(v) if isinstance(v, int | float) and math.isfinite(v) else None


def _still_running(x: float) -> float:
    """The share of a window's jobs still running at its end, for mean duration / window = ``x``.

    Poisson arrivals over a window T and exponential durations of mean D (the section 5.4 presets' own;
    a fair guess elsewhere): a job that arrived at t is still running at T with probability e^-(T-t)/D,
    so the share is (D/T)(1 - e^-T/D), which tends to D/T (Little's law) when T >> D.
    """
    return x * -math.expm1(-1.0 / x) if x > 0 else 0.0


def _duration_ratio(share: float) -> float:
    """Mean duration / window from the share of jobs still running at the window's end (inverts
    :func:`_still_running`, increasing from 0 to 1; bisection on a log scale)."""
    low, high = 1e-6, 1e6
    for _ in range(100):
        mid = math.sqrt(low * high)
        low, high = (mid, high) if _still_running(mid) < share else (low, mid)
    return math.sqrt(low * high)


def warnings_after(summaries: Iterable[Mapping[str, Any]]) -> list[str]:
    """Plain-language warnings from finished runs' summaries; empty when the runs could show a difference.

    Reads ``jobs``, ``hours``, ``max_queue_len``, ``p99_response_s``, ``running_at_end``, ``load`` and
    ``utilization``; a summary without a key is not judged on it.
    """
    runs: Sequence[Mapping[str, Any]] = [s for s in summaries if s]
    if not runs:
        return []
    out = []
    jobs = [int(s["jobs"]) for s in runs if isinstance(s.get("jobs"), int)]
    if jobs and min(jobs) < MIN_JOBS:
        out.append(
            f"Runs had as few as {min(jobs)} jobs: too few for the schedulers' means and percentiles to differ "
            "by more than chance. Raise the hours or the machines."
        )
    queues = [_num(s, "max_queue_len") for s in runs]
    p99 = [_num(s, "p99_response_s") for s in runs]
    if queues and all(q == 0 for q in queues):
        out.append(
            "No job waited in any run: every job started as it arrived, so every scheduler's wait is zero "
            "whatever its policy. Raise the load, or the hours if the cluster had no time to fill."
        )
    elif p99 and all(p == 0 for p in p99):
        out.append(
            "In every run at least 99 jobs in 100 started as they arrived: the schedulers' mean waits differ by "
            "a handful of jobs and every percentile is zero. Raise the load to see them differ."
        )
    # Jobs still running when the window closes tell the jobs' duration: the completed jobs' mean run time
    # would understate it (the long ones are those that did not complete).
    filling = []
    for s in runs:
        running, n, hours = _num(s, "running_at_end"), _num(s, "jobs"), _num(s, "hours")
        if running is not None and n and hours and running / n > _still_running(1.0 / WARMUP_DURATIONS):
            filling.append((running / n, _duration_ratio(running / n) * hours * 3600, s))
    if filling:
        share, duration, s = max(filling, key=lambda t: t[0])
        util = s.get("utilization") or {}
        busy = ", ".join(f"{v:.0%} {k}" for k, v in util.items() if isinstance(v, int | float))
        load = _num(s, "load")
        so = f", so it was only {busy} busy" + (f" at load {load:g}" if load is not None else "") if busy else ""
        if share >= NEARLY_ALL:  # the share no longer tells the duration: only that it dwarfs the window
            out.append(
                f"{share:.0%} of a run's jobs were still running when its {s['hours']:g} h window closed: the "
                f"jobs run far longer than the window and the cluster never filled{so}. Use many times the hours."
            )
        else:
            out.append(
                f"{share:.0%} of a run's jobs were still running when its {s['hours']:g} h window closed: jobs "
                f"run about {_time(duration)} and the cluster spent much of the window filling{so}. "
                f"Use at least {_hours_for(WARMUP_DURATIONS * duration)}."
            )
    return out


__all__ = ["Expectation", "expect", "expect_scenario", "warnings_after", "warnings_before"]
