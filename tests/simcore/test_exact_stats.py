"""The summary's exact time averages (issue 26): hand-computed cases, Little's law, the batch at time 0,
and a reconstruction from jobs.csv by an independent event sweep, in both engines."""

from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore import api
from simcore.core import metrics
from simcore.core.engine import simulate
from simcore.core.model import Cluster, Workload
from simcore.core.timeavg import release_times, time_averages
from simcore.schedulers import SCHEDULERS, create
from tests.simcore.test_engine import scenarios_for


def one_machine(cpu: float = 4.0) -> Cluster:
    return Cluster("one", ("cpu",), ("m",), np.array([1]), np.array([[cpu]]))


def workload(submit: list[float], cpu: list[float], work: list[float], horizon: float) -> Workload:
    n = len(submit)
    return Workload(
        "hand",
        ("cpu",),
        np.array(submit, dtype=float),
        np.array(cpu, dtype=float).reshape(n, 1),
        np.array(work, dtype=float),
        np.zeros(n, dtype=np.int64),
        horizon_s=horizon,
    )


def test_hand_computed_fcfs_on_one_machine() -> None:
    # One machine of 4 cpu, FCFS, horizon 8 (not drained):
    #   job 0: t=0, 2 cpu, 4 s -> runs 0..4
    #   job 1: t=1, 2 cpu, 2 s -> runs 1..3
    #   job 2: t=2, 4 cpu, 2 s -> waits for the whole machine: runs 4..6 (waits 2 s)
    #   job 3: t=3, 1 cpu, 5 s -> queued behind job 2 (strict FCFS), runs 6..11, cut at 8 (waits 3 s)
    # Window [0, 8] (first arrival to the horizon), 8 s long.
    # Queue: job 2 queued 2..4, job 3 3..6: 2 + 3 = 5 job-seconds -> 5/8 = 0.625; at most 2 (from 3 to 4).
    # Running: 4 + 2 + 2 + 2 (job 3, 6..8) = 10 -> 10/8 = 1.25.
    # Busy cpu-seconds: 2*4 + 2*2 + 4*2 + 1*2 = 22 -> 22 / (4 * 8) = 0.6875.
    wl = workload([0, 1, 2, 3], [2, 2, 4, 1], [4, 2, 2, 5], horizon=8.0)
    for engine in ("python", "compiled"):
        res = simulate(one_machine(), wl, create("fcfs"), 0, engine=engine)
        assert res.start.tolist() == [0, 1, 4, 6], engine
        s = metrics.summary(res)
        assert (s["window_start_s"], s["window_end_s"]) == (0.0, 8.0)
        assert s["mean_queue_len"] == 0.625
        assert s["mean_running"] == 1.25
        assert s["utilization"] == {"cpu": 0.6875}
        assert s["max_queue_len"] == 2
        assert s["mean_response_lower_s"] == s["mean_response_s"] == (0 + 0 + 2 + 3) / 4


def test_jobs_that_never_start_are_queued_until_the_end_and_bound_the_mean_wait() -> None:
    # Jobs 0-2 as above but job 3 asks 5 cpu (more than the machine): it never starts.
    # Window [0, 8]; queue: job 2 2..4 (2 s), job 3 3..8 (5 s) -> 7/8 = 0.875; max 2.
    # Running: 4 + 2 + 2 = 8 -> 1.0; busy 8 + 4 + 8 = 20 -> 20/32 = 0.625.
    submit = np.array([0.0, 1, 2, 3])
    start = np.array([0.0, 1, 4, np.nan])
    finish = np.array([4.0, 3, 6, np.nan])
    request = np.array([[2.0], [2], [4], [5]])
    t = time_averages(submit, start, finish, request, np.array([4.0]), ("cpu",), (0.0, 8.0))
    assert t.mean_queue_len == 0.875 and t.mean_running == 1.0
    assert t.utilization == {"cpu": 0.625} and t.max_queue_len == 2


def test_a_job_starting_the_moment_it_arrives_is_never_queued() -> None:
    # Job 1 arrives at t=2 when job 0 finishes (completions first): it starts at once. Queue 0 throughout.
    wl = workload([0, 2], [4, 4], [2, 2], horizon=10.0)
    res = simulate(one_machine(), wl, create("fcfs"), 0, drain=True)
    s = metrics.summary(res)
    assert s["max_queue_len"] == 0 and s["mean_queue_len"] == 0.0
    # Window [0, 4] (drained: the last event); busy 4*2 + 4*2 = 16 cpu-s -> 16 / (4 * 4) = 1.
    assert (s["window_start_s"], s["window_end_s"]) == (0.0, 4.0) and s["utilization"] == {"cpu": 1.0}


@pytest.mark.parametrize("name", ["fcfs", "greedy", "tetris", "mris"])
def test_a_batch_at_time_zero_is_measured_over_its_makespan(name: str) -> None:
    # Three 1-cpu jobs of 1, 2 and 3 s at t=0 on a 2-cpu machine: two start at once, the third when
    # the 1 s job finishes. Makespan 4 (1 + 3) for FCFS, or 3 + ... whichever order a scheduler takes;
    # whatever it is, utilisation = busy cpu-seconds (6) / (2 * makespan), and the queue held 1 job.
    wl = workload([0, 0, 0], [1, 1, 1], [1, 2, 3], horizon=0.0)
    out = api.run_objects(one_machine(2.0), wl, name)  # horizon 0: run as drained
    s = out.summary
    makespan = float(np.nanmax(out.result.finish))
    assert (s["window_start_s"], s["window_end_s"]) == (0.0, makespan)
    assert s["utilization"]["cpu"] > 0
    assert s["utilization"]["cpu"] == pytest.approx(6.0 / (2.0 * makespan), rel=1e-12)
    assert s["max_queue_len"] == 1


def _little(name: str, engine: str, scn: tuple[Cluster, Workload]) -> None:
    cluster, wl = scn
    out = api.run_objects(cluster, wl, name, 3, drain=True, engine=engine)
    s = out.summary
    T = s["window_end_s"] - s["window_start_s"]
    n = s["jobs"]
    if T <= 0 or s["completed"] < n:
        return  # nothing to average over, or a job no machine could take (not drained in Little's sense)
    lam = n / T
    # L = lambda W for the queue (W: the mean wait) and for the running jobs (W: the mean run time).
    assert s["mean_queue_len"] == pytest.approx(lam * s["mean_response_s"], rel=1e-9, abs=1e-12), name
    assert s["mean_running"] == pytest.approx(lam * s["mean_run_s"], rel=1e-9, abs=1e-12), name


@pytest.mark.parametrize("name", SCHEDULERS.names())
def test_littles_law_holds_on_drained_runs_of_every_scheduler(name: str) -> None:
    @settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
    @given(scenarios_for(name), st.sampled_from(["python", "compiled"]))
    def check(scn: tuple[Cluster, Workload], engine: str) -> None:
        _little(name, engine, scn)

    check()


# -- a reconstruction from jobs.csv -----------------------------------------------------------------


def sweep(rows: list[dict[str, str]], request: np.ndarray, cap: np.ndarray, lo: float, hi: float) -> dict:
    """Queue length, running count and capacity in use as step functions, integrated event by event.

    Independent of simcore.core.timeavg: events in time order, every event of an instant applied
    before the level is read (so zero-length spikes do not count), integrals summed with fsum.
    """
    events: dict[float, list[tuple[int, int, np.ndarray]]] = {}
    for i, r in enumerate(rows):
        sub, st_, fin = float(r["submit_s"]), r["start_s"], r["finish_s"]
        events.setdefault(sub, []).append((1, 0, 0 * request[i]))
        if st_:
            events.setdefault(float(st_), []).append((-1, 1, request[i]))
        if fin:
            events.setdefault(float(fin), []).append((0, -1, -request[i]))
    q = run = 0
    used = np.zeros(len(cap))
    t_prev = lo
    iq, ir, iu, qmax = [], [], [[] for _ in cap], 0
    for t in sorted(events):
        dt = t - t_prev
        iq.append(q * dt)
        ir.append(run * dt)
        for k in range(len(cap)):
            iu[k].append(used[k] * dt)
        for dq, dr, du in events[t]:
            q, run, used = q + dq, run + dr, used + du
        qmax = max(qmax, q)
        t_prev = t
    dt = hi - t_prev
    iq.append(q * dt)
    ir.append(run * dt)
    for k in range(len(cap)):
        iu[k].append(used[k] * dt)
    T = hi - lo
    return {
        "mean_queue_len": math.fsum(iq) / T,
        "mean_running": math.fsum(ir) / T,
        "utilization": [math.fsum(iu[k]) / (cap[k] * T) for k in range(len(cap))],
        "max_queue_len": qmax,
    }


@pytest.mark.parametrize("drain", [False, True])
def test_the_exact_values_equal_a_reconstruction_from_jobs_csv_in_both_engines(tmp_path: Path, drain: bool) -> None:
    spec = dict(
        cluster="google-balanced",
        workload="google-like",
        scheduler="tetris",
        hours=0.02,
        load=3.0,  # overloaded: a queue forms (12 jobs at most) and, undrained, 10 jobs never start
        drain=drain,
        cluster_params={"machines_per_config": 1},
    )
    summaries, results = {}, {}
    for engine in ("python", "compiled"):
        out = api.run(api.RunSpec(**spec, engine=engine))  # type: ignore[arg-type]
        out.write(tmp_path / engine)
        with (tmp_path / engine / "jobs.csv").open() as f:
            rows = list(csv.DictReader(f))
        s = out.summary
        lo, hi = s["window_start_s"], s["window_end_s"]
        ref = sweep(rows, out.workload.request, out.cluster.total_capacity(), lo, hi)
        assert s["max_queue_len"] == ref["max_queue_len"] > 0
        assert s["mean_queue_len"] == pytest.approx(ref["mean_queue_len"], rel=1e-9)
        assert s["mean_running"] == pytest.approx(ref["mean_running"], rel=1e-9)
        for k, r in enumerate(out.cluster.resources):
            assert s["utilization"][r] == pytest.approx(ref["utilization"][k], rel=1e-9)
        summaries[engine] = s
        results[engine] = out.result
    keys = ("window_start_s", "window_end_s", "utilization", "mean_queue_len", "mean_running", "max_queue_len")
    keys += ("mean_response_lower_s",)
    assert {k: summaries["python"][k] for k in keys} == {k: summaries["compiled"][k] for k in keys}
    if not drain:
        assert summaries["python"]["queued_at_end"] > 0
        # The unstarted jobs counted as waiting until the end (lower bound on every arrived job's mean wait).
        s, res = summaries["python"], results["python"]
        n = s["jobs"]
        waited = np.where(np.isnan(res.start[:n]), s["window_end_s"], res.start[:n]) - res.submit[:n]
        assert s["mean_response_lower_s"] == pytest.approx(float(waited.mean()), rel=1e-12)


def test_a_task_is_queued_from_its_release_not_its_submission() -> None:
    # Tasks 0 and 1 (roots, t=0), task 2 (t=1) needs both, task 3 (t=1) needs task 2.
    # Task 0 finishes at 5, task 1 at 3: task 2 is released at max(1, 5, 3) = 5; task 3 waits for task 2.
    submit = np.array([0.0, 0, 1, 1])
    ptr, parents = np.array([0, 0, 0, 2, 3]), np.array([0, 1, 2])
    finish = np.array([5.0, 3, np.nan, np.nan])
    assert release_times(submit, finish, ptr, parents).tolist()[:3] == [0.0, 0.0, 5.0]
    assert np.isnan(release_times(submit, finish, ptr, parents)[3])  # task 2 never finished
    # Task 2 starts at 7 (queued 5..7), window [0, 10], 1 cpu each of 2: queue 2/10 = 0.2, max 1.
    start = np.array([0.0, 0, 7, np.nan])
    rel = release_times(submit, finish, ptr, parents)
    t = time_averages(submit, start, finish, np.ones((4, 1)), np.array([2.0]), ("cpu",), (0.0, 10.0), rel)
    assert t.mean_queue_len == 0.2 and t.max_queue_len == 1
    # Running: 5 + 3 + 3 (task 2, 7..10) = 11 -> 1.1; 11 cpu-s / (2 * 10) = 0.55.
    assert t.mean_running == 1.1 and t.utilization == {"cpu": 0.55}
