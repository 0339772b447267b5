"""The fitness of a policy: censored metrics, the penalty for unfinished work, cache keys, simulations."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from simcore import api
from simcore.core.taskgraph import TaskGraph
from simcore.dse.explore.fitness import (
    PENALTY_FACTOR,
    Evaluation,
    cache_key,
    censored_means,
    evaluate,
    scenario_fingerprint,
)
from simcore.dse.explore.pool import LocalEvaluator, build

# Job 0: task 1 after task 0; job 1: task 2 alone (submitted at 5).
GRAPH = TaskGraph.from_parent_lists([0, 0, 1], [[], [0], []])
SUBMIT = np.array([0.0, 0.0, 5.0])
START = np.array([0.0, 2.0, 6.0])
FINISH = np.array([2.0, 5.0, 8.0])
SHORTEST = np.array([2.0, 3.0, 2.0])


def test_with_everything_finished_the_means_are_the_papers_metrics() -> None:
    m = censored_means(GRAPH, SUBMIT, START, FINISH, SHORTEST, end=8.0)
    # TRT (2, 5, 3); JMS (5, 3); JWT (0, 1); NJSL (5 / (2 + 3), 3 / 2).
    assert m == pytest.approx({"trt": 10 / 3, "jms": 4.0, "jwt": 0.5, "njsl": 1.25})


def test_an_unfinished_task_counts_as_completing_at_the_end() -> None:
    start, finish = START.copy(), FINISH.copy()
    start[1] = finish[1] = np.nan
    m = censored_means(GRAPH, SUBMIT, start, finish, SHORTEST, end=20.0)
    # Task 1 "completes" at 20: TRT (2, 20, 3), job 0's makespan 20, NJSL 20 / 5.
    assert m == pytest.approx({"trt": 25 / 3, "jms": 11.5, "jwt": 0.5, "njsl": (4.0 + 1.5) / 2})


def test_a_job_that_never_started_waits_until_the_end() -> None:
    start, finish = START.copy(), FINISH.copy()
    start[2] = finish[2] = np.nan
    m = censored_means(GRAPH, SUBMIT, start, finish, SHORTEST, end=20.0)
    assert m["jwt"] == pytest.approx((0.0 + 15.0) / 2)


def test_njsl_leaves_out_jobs_without_a_critical_path() -> None:
    m = censored_means(GRAPH, SUBMIT, START, FINISH, np.array([2.0, 3.0, 0.0]), end=8.0)
    assert m["njsl"] == pytest.approx(1.0)


def test_a_run_that_leaves_tasks_unfinished_scores_ten_times_its_metric() -> None:
    done = Evaluation("p", trt=7.0, jms=1.0, njsl=1.0, jwt=1.0, tasks=3, jobs=2, unfinished=0, simulated_s=9.0)
    broken = Evaluation("p", trt=7.0, jms=1.0, njsl=1.0, jwt=1.0, tasks=3, jobs=2, unfinished=1, simulated_s=9.0)
    assert done.fitness("trt") == 7.0
    assert broken.fitness("trt") == 7.0 * PENALTY_FACTOR == 70.0
    assert Evaluation.from_dict(broken.to_dict()) == broken


SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
    "workload": {"preset": "workflows-short-long", "params": {}},
    "load": 0.9,
    "hours": 0.25,
}


def test_the_cache_key_names_policy_scenario_seed_and_version() -> None:
    fp = scenario_fingerprint(SCENARIO)
    base = cache_key("J1=Interactive", fp, 0, "1.0")
    other_fp = scenario_fingerprint({**SCENARIO, "load": 0.8})
    assert len({base, cache_key("J1=Batch(60)", fp, 0, "1.0"), cache_key("J1=Interactive", other_fp, 0, "1.0")}) == 3
    assert base != cache_key("J1=Interactive", fp, 1, "1.0") and base != cache_key("J1=Interactive", fp, 0, "1.1")
    assert base == cache_key("J1=Interactive", scenario_fingerprint(dict(SCENARIO)), 0, "1.0")


def test_a_file_is_identified_by_its_bytes_not_its_name() -> None:
    a = {**SCENARIO, "workload": {"file": "trace_a.json"}}
    b = {**SCENARIO, "workload": {"file": "trace_b.json"}}
    assert scenario_fingerprint(a, {"trace_a.json": "abc"}) == scenario_fingerprint(b, {"trace_b.json": "abc"})
    assert scenario_fingerprint(a, {"trace_a.json": "abc"}) != scenario_fingerprint(a, {"trace_a.json": "abd"})


POLICY = "J1=Interactive J2=Always J3=Submission-Time(asc) T1=Always T2=Task-Duration(asc) R5=First-Fit"


def test_an_evaluation_gives_the_numbers_of_simcore_run() -> None:
    cluster, workload = build(SCENARIO, 4)
    ev = evaluate(cluster, workload, POLICY, 4)
    run = api.run_objects(cluster, workload, "staged", 4, scheduler_params={"policy": POLICY}, drain=True)
    assert ev.unfinished == 0 and ev.tasks == workload.n_jobs == run.summary["completed"]
    assert ev.trt == pytest.approx(run.summary["mean_trt_s"], rel=1e-12)
    assert ev.jms == pytest.approx(run.summary["mean_jms_s"], rel=1e-12)
    assert ev.jwt == pytest.approx(run.summary["mean_jwt_s"], rel=1e-12)


def test_shortest_task_first_beats_first_come_on_the_crafted_workload() -> None:
    # Two hours at full load on 8 machines: queues build behind the long tasks.
    cluster, workload = build({**SCENARIO, "load": 1.0, "hours": 2.0}, 4)
    spt = evaluate(cluster, workload, POLICY, 4)
    fifo = evaluate(cluster, workload, POLICY.replace("Task-Duration(asc)", "Submission-Time(asc)"), 4)
    assert spt.trt < 0.8 * fifo.trt


def test_evaluations_do_not_depend_on_how_many_processes_ran_them() -> None:
    policies = [POLICY, POLICY.replace("First-Fit", "Best-Fit"), POLICY.replace("(asc)", "(desc)")]
    one = LocalEvaluator(SCENARIO, 2)(policies)
    with LocalEvaluator(SCENARIO, 2, workers=2) as pool:
        two = pool(policies)
    strip = {"wall_s": 0.0, "cpu_s": 0.0}
    assert {p: {**e.to_dict(), **strip} for p, e in one.items()} == {
        p: {**e.to_dict(), **strip} for p, e in two.items()
    }
