"""simcore.scalecheck: the warnings a scale too small to show anything gets, before a run and after."""

from __future__ import annotations

from typing import Any

import pytest

from simcore import scalecheck
from simcore.reproductions import get
from simcore.scalecheck import Expectation, expect_scenario, warnings_after, warnings_before
from simcore.sweep.scenario import scenario_of


def _fig11(**scale: Any) -> dict[str, Any]:
    return scenario_of(get("lotes-fig11").sweep(scale))


def test_it_warns_that_a_few_jobs_cannot_separate_the_schedulers() -> None:
    (w,) = warnings_before(Expectation(jobs=2, window_s=36.0, mean_duration_s=1.0, offered={"cpu": 0.7}))
    assert w.startswith("About 2 jobs a run: too few")


def test_it_warns_that_a_window_short_against_the_jobs_leaves_the_cluster_filling() -> None:
    # Figure 11 at 5 machines per configuration and 2 hours: jobs of half an hour, the "48% cpu".
    e = expect_scenario(_fig11(machines_per_config=5, hours=2.0, seeds=1))
    assert 2500 < e.jobs < 3200 and e.window_s == 7200.0
    assert 1600 < e.mean_duration_s < 1900  # u_k hours, 0.5 h on average over instances
    (w,) = warnings_before(e)
    assert "arrive over only 2 h" in w and "Use at least 4.9 h" in w


def test_a_one_minute_figure_11_gets_both_warnings() -> None:
    e = expect_scenario(_fig11(machines_per_config=1, hours=0.01, seeds=1))
    assert e.jobs < 10
    assert [w.split(" ")[0] for w in warnings_before(e)] == ["About", "Jobs"]


def test_the_figure_11_quick_scale_gets_no_warning() -> None:
    e = expect_scenario(_fig11())
    assert e.jobs > 100_000 and e.window_s == 25 * 3600.0
    assert warnings_before(e) == []


def test_it_counts_the_jobs_of_a_long_window_from_a_short_draw() -> None:
    sc = _fig11(machines_per_config=5, hours=10.0, seeds=1)
    whole, drawn = expect_scenario(sc, check_hours=10.0), expect_scenario(sc, check_hours=2.0)
    assert drawn.jobs == pytest.approx(whole.jobs, rel=0.1)
    assert drawn.window_s == whole.window_s == 36_000.0


def test_it_warns_of_a_load_too_light_for_a_queue() -> None:
    (w,) = warnings_before(Expectation(jobs=50_000, window_s=3600.0, mean_duration_s=60.0, offered={"cpu": 0.1}))
    assert "only 10% of the cluster's cpu" in w


def _summary(**kw: Any) -> dict[str, Any]:
    base = {
        "jobs": 60_000,
        "hours": 25.0,
        "running_at_end": 1000,
        "max_queue_len": 40,
        "p99_response_s": 12.0,
        "load": 0.97,
        "utilization": {"cpu": 0.65, "mem": 0.84},
    }
    return base | kw


def test_runs_where_queues_formed_get_no_warning() -> None:
    assert warnings_after([_summary(), _summary(max_queue_len=0, p99_response_s=0.0)]) == []


def test_it_says_when_no_job_waited_in_any_run() -> None:
    (w,) = warnings_after([_summary(max_queue_len=0, p99_response_s=0.0)] * 3)
    assert w.startswith("No job waited in any run")


def test_it_says_when_every_percentile_is_zero() -> None:
    # The former default experiment: Greedy 0 s, LoTES 0.074 s, Tetris 0.081 s, every percentile 0.
    (w,) = warnings_after([_summary(max_queue_len=q, p99_response_s=0.0) for q in (1, 9, 10)])
    assert "at least 99 jobs in 100 started as they arrived" in w


def test_it_reads_a_filling_cluster_from_the_jobs_still_running_at_the_end() -> None:
    # Figure 11 at 5 machines per configuration and 2 hours, seed 0, Phi 0.009 (measured): 3,124 jobs,
    # 741 still running at the end, 49% cpu.
    run = _summary(jobs=3124, hours=2.0, running_at_end=741, utilization={"cpu": 0.492, "mem": 0.632})
    (w,) = warnings_after([run])
    assert w.startswith("24% of a run's jobs were still running when its 2 h window closed")
    # Poisson arrivals, exponential durations: (D/T)(1 - e^-T/D) = 741 / 3124 gives D = 29 min, the jobs' mean.
    assert "about 28.9 min" in w and "49% cpu, 63% mem busy at load 0.97" in w and "Use at least 4.9 h" in w


def test_it_gives_no_duration_when_nearly_every_job_was_still_running() -> None:
    (*_, w) = warnings_after([_summary(jobs=58, hours=0.2, running_at_end=57)])
    assert w.startswith("98% of a run's jobs were still running") and "Use many times the hours" in w


def test_it_names_the_smallest_run() -> None:
    (w,) = warnings_after([_summary(), _summary(jobs=3, running_at_end=0)])
    assert w.startswith("Runs had as few as 3 jobs")


def test_a_summary_without_the_keys_is_not_judged() -> None:
    assert warnings_after([{"scheduler": "greedy"}, {}]) == []
    assert scalecheck.MIN_JOBS == 1000  # the docs quote it
