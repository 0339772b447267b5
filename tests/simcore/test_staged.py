"""The ``staged`` scheduler: every atom of Tables 1-3 by hand, the composition of Table 4, and invariants.

Each atom test builds a tiny cluster and workload where the atom's decision
shows in start times or machines, and computes the schedule by hand (the
comments walk through it). Atoms that draw random numbers are computed from
the generator's stream: the scheduler draws uniforms in batches of
``DRAW_BATCH`` from the generator it is given, in the order the comments say.
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simcore.cli import main as cli_main
from simcore.core.engine import SimResult, simulate
from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, RateRuntime, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.dse.staged.cycle import DRAW_BATCH
from simcore.dse.staged.policy import DEFAULT_TEXT, format_policy, random_policy
from simcore.presets import coerce_params
from simcore.schedulers import SCHEDULERS, create
from tests.simcore.test_engine import check_invariants, scenarios
from tests.simcore.test_taskgraph import dag_scenarios

#: (job, submit time s, cores, work s, parents)
Task = tuple[int, float, float, float, list[int]]


def machines(cores: list[float], speed: list[float] | None = None) -> Cluster:
    """One machine per configuration, numbered in the order given."""
    k = len(cores)
    return Cluster(
        "m",
        ("cpu",),
        tuple(f"m{i}" for i in range(k)),
        np.ones(k, dtype=np.int64),
        np.array(cores, dtype=np.float64)[:, None],
        speed=None if speed is None else np.array(speed, dtype=np.float64),
    )


def workload(tasks: list[Task]) -> Workload:
    n = len(tasks)
    return Workload(
        "t",
        ("cpu",),
        np.array([t[1] for t in tasks]),
        np.array([[t[2]] for t in tasks]),
        np.array([t[3] for t in tasks]),
        np.zeros(n, dtype=np.int64),
        horizon_s=1000.0,
        graph=TaskGraph.from_parent_lists([t[0] for t in tasks], [t[4] for t in tasks]),
    )


def run(policy: str, cluster: Cluster, wl: Workload, seed: int | np.random.Generator = 0) -> SimResult:
    """The specification's run (``engine="python"``), after checking that the kernel's is the same.

    The hand-computed expectations below are the specification's behaviour; the kernel must give the very
    same schedule (its own harness: ``test_staged_kernel.py``).
    """
    kernel_seed = copy.deepcopy(seed)  # a Generator is consumed by a run: each engine gets the same state
    spec = simulate(cluster, wl, create("staged", policy=policy), seed=seed, drain=True, engine="python")
    kern = simulate(cluster, wl, create("staged", policy=policy), seed=kernel_seed, drain=True)
    assert kern.extra["engine"] == "compiled" and spec.extra["engine"] == "python"
    np.testing.assert_array_equal(kern.start, spec.start)
    np.testing.assert_array_equal(kern.machine, spec.machine)
    return spec


def starts(policy: str, cluster: Cluster, wl: Workload, seed: int | np.random.Generator = 0) -> list[float]:
    return [float(x) for x in run(policy, cluster, wl, seed).start]


def draws(seed: int) -> list[float]:
    """The uniforms the scheduler draws from ``default_rng(seed)``, in order."""
    return [float(x) for x in np.random.default_rng(seed).random(DRAW_BATCH)]


#: A blocker (job 0, 10 s) then three one-task jobs at 1, 2 and 3 s, 1 s each: with one core,
#: they all wait until 10 and then run in the order the policy gives them.
AFTER_BLOCKER = [(0, 0.0, 1.0, 10.0, []), (1, 1.0, 1.0, 1.0, []), (2, 2.0, 1.0, 1.0, []), (3, 3.0, 1.0, 1.0, [])]


# -- J1: when a cycle runs ----------------------------------------------------------------------------------


def test_interactive_runs_one_cycle_after_all_events_of_the_instant() -> None:
    # Both tasks arrive at 0; the cycle sees both, so the shorter (task 1) goes first on the one core.
    wl = workload([(0, 0.0, 1.0, 5.0, []), (1, 0.0, 1.0, 1.0, [])])
    assert starts("J1=Interactive T2=Task-Duration(asc)", machines([1]), wl) == [1.0, 0.0]


def test_batch_runs_cycles_at_the_next_multiple_of_the_quantum() -> None:
    # Task 0 arrives at 0: the next slot strictly after 0 is 10. Task 1 arrives at 12, task 0 finishes
    # at 14: both ask for the slot at 20.
    wl = workload([(0, 0.0, 1.0, 4.0, []), (1, 12.0, 1.0, 1.0, [])])
    assert starts("J1=Batch(10)", machines([1]), wl) == [10.0, 20.0]


def test_random_runs_the_cycle_after_a_whole_number_of_milliseconds_below_200() -> None:
    # The first request (task 0 at 0) draws the delay; task 1 arrives within it and shares the cycle.
    seed = next(s for s in range(100) if int(draws(s)[0] * 200) >= 1)
    delay = int(draws(seed)[0] * 200) / 1000.0
    wl = workload([(0, 0.0, 1.0, 1.0, []), (1, 0.0005, 1.0, 1.0, [])])
    assert 0.001 <= delay < 0.2
    assert starts("J1=Random", machines([2]), wl, np.random.default_rng(seed)) == [delay, delay]


# -- J2: which incoming jobs are admitted -------------------------------------------------------------------


def test_always_admits_every_job_at_once() -> None:
    wl = workload([(0, 0.0, 1.0, 5.0, []), (1, 1.0, 1.0, 5.0, [])])
    assert starts("J2=Always", machines([2]), wl) == [0.0, 1.0]


def test_j2_limit_load_holds_jobs_while_active_tasks_per_machine_reach_t() -> None:
    # Two 4-core machines. Job 0's five tasks make the load 5/2; job 1 (at 1) waits while the load is
    # not below 2: 4/2 at t=2 is not, 3/2 at t=4 is, so job 1 starts at 4 although cores were free at 1.
    wl = workload([(0, 0.0, 1.0, w, []) for w in (2.0, 4.0, 6.0, 8.0, 10.0)] + [(1, 1.0, 1.0, 1.0, [])])
    assert starts("J2=Limit-Load(2)", machines([4, 4]), wl)[5] == 4.0


def test_j2_limit_active_keeps_at_most_n_jobs_active() -> None:
    # Limit-Active(1): job 1 waits for job 0 to finish at 5, though the second core is free.
    wl = workload([(0, 0.0, 1.0, 5.0, []), (1, 1.0, 1.0, 1.0, [])])
    assert starts("J2=Limit-Active(1)", machines([2]), wl) == [0.0, 5.0]


def test_j2_random_admits_with_probability_p_and_always_when_no_job_is_active() -> None:
    # Job 0 draws d0 but is admitted anyway (no active job). Job 1 (at 1) draws d1: admitted at 1 if
    # d1 <= 0.5, else denied and admitted at 10, when job 0 finished and nothing is active.
    wl = workload([(0, 0.0, 1.0, 10.0, []), (1, 1.0, 1.0, 1.0, [])])
    seen = set()
    for seed in range(12):
        expected = 1.0 if draws(seed)[1] <= 0.5 else 10.0
        assert starts("J2=Random(0.5)", machines([2]), wl, np.random.default_rng(seed))[1] == expected
        seen.add(expected)
    assert seen == {1.0, 10.0}


# -- J3: the order of the active jobs (the T1 pass goes through them in it) ----------------------------------
# T1=Limit-Active(1) lets one task in at a time, so the jobs waiting behind the blocker run in J3 order.


def test_j3_submission_time_desc_serves_the_latest_job_first() -> None:
    assert starts("J3=Submission-Time(desc) T1=Limit-Active(1)", machines([1]), workload(AFTER_BLOCKER)) == [
        0.0,
        12.0,
        11.0,
        10.0,
    ]


def test_j3_job_size_asc_serves_the_job_with_fewest_tasks_first() -> None:
    # Job 1 has 3 tasks (1-3), job 2 one (4), job 3 two (5-6): after the blocker, 2 then 3 then 1.
    wl = workload(
        [(0, 0.0, 1.0, 10.0, [])]
        + [(1, 1.0, 1.0, 1.0, [])] * 3
        + [(2, 2.0, 1.0, 1.0, [])]
        + [(3, 3.0, 1.0, 1.0, [])] * 2
    )
    assert starts("J3=Job-Size(asc) T1=Limit-Active(1)", machines([1]), wl) == [0, 13, 14, 15, 10, 11, 12]


def test_j3_job_duration_is_the_critical_path_not_the_sum_of_durations() -> None:
    # Job 1: three parallel 1 s tasks (critical path 1, sum 3); job 2: one 2 s task (both 2).
    # By critical path job 1 goes first; OpenDC's sum would put job 2 first.
    wl = workload([(0, 0.0, 1.0, 10.0, [])] + [(1, 1.0, 1.0, 1.0, [])] * 3 + [(2, 2.0, 1.0, 2.0, [])])
    assert starts("J3=Job-Duration(asc) T1=Limit-Active(1)", machines([1]), wl) == [0, 10, 11, 12, 13]


def test_j3_random_orders_jobs_by_a_number_drawn_at_their_arrival() -> None:
    # Jobs 0-3 draw d0..d3 as they arrive; jobs 1-3 then run from 10 in the order of d1, d2, d3.
    seed = 3
    d = draws(seed)[1:4]
    rank = np.argsort(np.argsort(d))
    got = starts("J3=Random T1=Limit-Active(1)", machines([1]), workload(AFTER_BLOCKER), np.random.default_rng(seed))
    assert got[1:] == [10.0 + r for r in rank.tolist()]
    assert sorted(got[1:]) == [10.0, 11.0, 12.0]


# -- T1: which incoming tasks enter the queue -----------------------------------------------------------------


def test_t1_always_queues_every_task() -> None:
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 3)
    assert starts("T1=Always", machines([1, 1, 1]), wl) == [0.0, 0.0, 0.0]


def test_t1_limit_load_holds_tasks_while_active_tasks_per_machine_reach_t() -> None:
    # Four machines, Limit-Load(0.5): admitted while active/4 < 0.5, so two at a time.
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 4)
    assert starts("T1=Limit-Load(0.5)", machines([1, 1, 1, 1]), wl) == [0.0, 0.0, 5.0, 5.0]


def test_t1_limit_active_keeps_at_most_n_tasks_active() -> None:
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 5)
    assert starts("T1=Limit-Active(3)", machines([1, 1, 1, 1]), wl) == [0.0, 0.0, 0.0, 5.0, 5.0]


def test_t1_limit_job_keeps_at_most_n_tasks_of_a_job_active() -> None:
    # One task per job at a time (OpenDC's `<=` would let two run): job 0 (tasks 0-2), job 1 (3-4).
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 3 + [(1, 0.0, 1.0, 5.0, [])] * 2)
    assert starts("T1=Limit-Job(1)", machines([1, 1, 1, 1]), wl) == [0.0, 5.0, 10.0, 0.0, 5.0]


def test_t1_job_balance_admits_while_the_job_stays_within_t_of_the_mean() -> None:
    # Job 0 (tasks 0-3), job 1 (4-5), four machines, t=1.5. At 0: task 0 is admitted ((0+1)/1 <= 1.5),
    # task 1 is not ((1+1)/max(1/2, 1) = 2); task 4 is, task 5 is not. At 5: tasks 1 and 5 alike.
    # At 10 job 1 is done: task 2 is admitted, task 3 is not ((1+1)/max(1/1, 1) = 2); it runs at 15.
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 4 + [(1, 0.0, 1.0, 5.0, [])] * 2)
    assert starts("T1=Job-Balance(1.5)", machines([1, 1, 1, 1]), wl) == [0, 5, 10, 15, 0, 5]


def test_t1_random_admits_with_probability_p_and_always_when_nothing_is_active() -> None:
    # Task 0 draws d0 and is admitted (nothing active); task 1 draws d1: admitted at 0 if d1 <= 0.5,
    # else it waits for the next cycle, at 3 when task 0 finished, and is admitted (nothing active).
    wl = workload([(0, 0.0, 1.0, 3.0, []), (0, 0.0, 1.0, 1.0, [])])
    seen = set()
    for seed in range(12):
        expected = 0.0 if draws(seed)[1] <= 0.5 else 3.0
        assert starts("T1=Random(0.5)", machines([1, 1]), wl, np.random.default_rng(seed))[1] == expected
        seen.add(expected)
    assert seen == {0.0, 3.0}


# -- T2: the order of the task queue --------------------------------------------------------------------------


def test_t2_submission_time_desc_starts_the_latest_task_first() -> None:
    assert starts("T2=Submission-Time(desc)", machines([1]), workload(AFTER_BLOCKER)) == [0.0, 12.0, 11.0, 10.0]


def test_t2_task_duration_asc_starts_the_shortest_task_first() -> None:
    wl = workload([(0, 0.0, 1.0, 10.0, []), (1, 1.0, 1.0, 3.0, []), (2, 2.0, 1.0, 1.0, []), (3, 3.0, 1.0, 2.0, [])])
    assert starts("T2=Task-Duration(asc)", machines([1]), wl) == [0.0, 13.0, 10.0, 11.0]


def test_t2_task_duration_history_orders_by_the_mean_duration_of_finished_tasks_of_the_job() -> None:
    # Job 0: chain 0 (1 s) -> 1 (1 s); job 1: chain 2 (4 s) -> 3 (1 s). Descending, no history counts as
    # longest: 0 and 2 tie (no history), 0 goes first by number. At 1, task 1 enters with history 1 s and
    # task 2 (no history) goes first; at 5, task 3 enters with history 4 s and goes before task 1.
    wl = workload([(0, 0.0, 1.0, 1.0, []), (0, 0.0, 1.0, 1.0, [0]), (1, 0.0, 1.0, 4.0, []), (1, 0.0, 1.0, 1.0, [2])])
    assert starts("T2=Task-Duration-History(desc)", machines([1]), wl) == [0.0, 6.0, 1.0, 5.0]


def test_t2_task_dependencies_asc_starts_the_task_with_fewer_parents_first() -> None:
    # Roots 0 and 1 run together; at 1, task 3 (one parent) goes before task 2 (two parents).
    # Each child takes both cores, so they run one after the other.
    wl = workload([(0, 0.0, 1.0, 1.0, []), (0, 0.0, 1.0, 1.0, []), (0, 0.0, 2.0, 1.0, [0, 1]), (0, 0.0, 2.0, 1.0, [0])])
    assert starts("T2=Task-Dependencies(asc)", machines([2]), wl) == [0.0, 0.0, 2.0, 1.0]


def test_t2_task_dependents_desc_starts_the_task_with_more_children_first() -> None:
    # Roots 0 (two children), 1 (none), 2 (one child); every task takes both cores for 1 s.
    wl = workload(
        [(0, 0.0, 2.0, 1.0, []), (0, 0.0, 2.0, 1.0, []), (0, 0.0, 2.0, 1.0, [])]
        + [(0, 0.0, 2.0, 1.0, [0]), (0, 0.0, 2.0, 1.0, [0]), (0, 0.0, 2.0, 1.0, [2])]
    )
    assert starts("T2=Task-Dependents(desc)", machines([2]), wl) == [0.0, 2.0, 1.0, 3.0, 4.0, 5.0]


def test_t2_active_per_job_asc_interleaves_jobs() -> None:
    # Job 0 (tasks 0-2) and job 1 (3-4) enter together; each task's key is the number of its job's
    # tasks already active: 0, 1, 2 and 0, 1. Ascending: 0, 3, 1, 4, 2.
    wl = workload([(0, 0.0, 1.0, 1.0, [])] * 3 + [(1, 0.0, 1.0, 1.0, [])] * 2)
    assert starts("T2=Active-Per-Job(asc)", machines([1]), wl) == [0.0, 2.0, 4.0, 1.0, 3.0]


def test_t2_job_completion_asc_starts_tasks_of_less_completed_jobs_first() -> None:
    # Job 0: chain 0 -> 1; job 1: tasks 2 and 3. At 1, task 1 enters with its job half done and waits
    # behind tasks 2 and 3 (their job 0% done).
    wl = workload([(0, 0.0, 1.0, 1.0, []), (0, 0.0, 1.0, 1.0, [0]), (1, 0.0, 1.0, 1.0, []), (1, 0.0, 1.0, 1.0, [])])
    assert starts("T2=Job-Completion(asc)", machines([1]), wl) == [0.0, 3.0, 1.0, 2.0]


def test_t2_random_orders_tasks_by_a_number_drawn_as_they_enter_the_queue() -> None:
    seed = 11
    d = draws(seed)[:4]
    rank = np.argsort(np.argsort(d)).astype(float).tolist()
    wl = workload([(0, 0.0, 1.0, 1.0, [])] * 4)
    assert starts("T2=Random", machines([1]), wl, np.random.default_rng(seed)) == rank


# -- R5: the machine a task goes to ---------------------------------------------------------------------------


def one_task(cores: float, work: float = 1.0, count: int = 1) -> Workload:
    return workload([(0, 0.0, cores, work, [])] * count)


def test_r5_first_fit_takes_the_lowest_numbered_machine_where_it_fits() -> None:
    assert run("R5=First-Fit", machines([1, 4, 2]), one_task(2)).machine.tolist() == [1]


def test_r5_best_fit_takes_the_machine_with_fewest_free_cores() -> None:
    # Free cores 4, 2, 3: the first 2-core task goes to machine 1 (2 free), the second to machine 2 (3).
    assert run("R5=Best-Fit", machines([4, 2, 3]), one_task(2, count=2)).machine.tolist() == [1, 2]


def test_r5_worst_fit_takes_the_machine_with_most_free_cores_and_the_lowest_number_on_a_tie() -> None:
    # Free 2, 4, 3: machine 1; then 2, 3, 3: the tie goes to machine 1.
    assert run("R5=Worst-Fit", machines([2, 4, 3]), one_task(1, count=2)).machine.tolist() == [1, 1]


def test_r5_expensive_takes_the_fastest_machine_and_runs_at_its_speed() -> None:
    # Speeds 1, 3, 2: machine 1, then machine 2 (machine 1's core is taken); 6 s of work takes 6 s
    # on the fastest and 9 s at two thirds of its speed.
    res = run("R5=Expensive", machines([1, 1, 1], speed=[1, 3, 2]), one_task(1, work=6.0, count=2))
    assert res.machine.tolist() == [1, 2]
    assert res.finish.tolist() == [6.0, 9.0]


def test_r5_cheap_takes_the_slowest_machine_and_the_lowest_number_on_a_tie() -> None:
    assert run("R5=Cheap", machines([1, 1, 1], speed=[2, 1, 1]), one_task(1, count=2)).machine.tolist() == [1, 2]


def test_r5_expensive_without_speeds_is_first_fit() -> None:
    assert run("R5=Expensive", machines([1, 1, 1]), one_task(1, count=2)).machine.tolist() == [0, 1]


def test_r5_random_draws_a_fitting_machine_for_each_task() -> None:
    # Task 0 takes candidate floor(d0 * 3) of machines 0-2; task 1 floor(d1 * 2) of the two left.
    seed = 4
    d = draws(seed)
    first = int(d[0] * 3)
    left = [m for m in range(3) if m != first]
    expected = [first, left[int(d[1] * 2)]]
    res = run("R5=Random", machines([1, 1, 1]), one_task(1, count=2), np.random.default_rng(seed))
    assert res.machine.tolist() == expected


# -- composition (Table 4), one test per composable stage ---------------------------------------------------


def test_j2_composition_admits_a_job_only_if_both_atoms_admit_it() -> None:
    # Three 1-core machines, 10 s tasks. Job 0 (two tasks) at 0, jobs 1, 2, 3 (one task) at 1, 2, 3.
    # Limit-Active(2) alone would admit job 1 at 1 (one job active); Limit-Load(0.5) refuses it (load
    # 2/3), so it waits for 10. At 10 jobs 1 and 2 are admitted (load 0, then one job active); job 3
    # is refused by Limit-Active(2) (two jobs active), which Limit-Load alone would have admitted, and
    # waits until 20.
    wl = workload(
        [(0, 0.0, 1.0, 10.0, [])] * 2 + [(1, 1.0, 1.0, 10.0, []), (2, 2.0, 1.0, 10.0, []), (3, 3.0, 1.0, 10.0, [])]
    )
    cluster = machines([1, 1, 1])
    assert starts("J2=Limit-Active(2).Limit-Load(0.5)", cluster, wl) == [0.0, 0.0, 10.0, 10.0, 20.0]
    assert starts("J2=Limit-Active(2)", cluster, wl)[2] == 1.0
    assert starts("J2=Limit-Load(0.5)", cluster, wl)[4] == 10.0


def test_j3_composition_breaks_ties_of_the_first_atom_with_the_second() -> None:
    # After the blocker: jobs 1 (1 task, at 1), 2 (2 tasks, at 2), 3 (1 task, at 3). By size, 1 and 3
    # tie; the latest first breaks it: 3, 1, then 2.
    wl = workload(
        [(0, 0.0, 1.0, 10.0, []), (1, 1.0, 1.0, 1.0, []), (2, 2.0, 1.0, 1.0, []), (2, 2.0, 1.0, 1.0, [])]
        + [(3, 3.0, 1.0, 1.0, [])]
    )
    policy = "J3=Job-Size(asc).Submission-Time(desc) T1=Limit-Active(1)"
    assert starts(policy, machines([1]), wl) == [0.0, 11.0, 12.0, 13.0, 10.0]


def test_t1_composition_admits_a_task_only_if_both_atoms_admit_it() -> None:
    # Four machines, 5 s tasks; job 0 (tasks 0-2), job 1 (3-4), job 2 (5-6). Limit-Job(1) alone would
    # run one task of each job at 0; Limit-Active(2) alone tasks 0 and 1. Together: 0 and 3 at 0,
    # 1 and 4 at 5, 2 and 5 at 10, 6 at 15.
    wl = workload([(0, 0.0, 1.0, 5.0, [])] * 3 + [(1, 0.0, 1.0, 5.0, [])] * 2 + [(2, 0.0, 1.0, 5.0, [])] * 2)
    got = starts("T1=Limit-Job(1).Limit-Active(2)", machines([1, 1, 1, 1]), wl)
    assert got == [0.0, 5.0, 10.0, 0.0, 5.0, 10.0, 15.0]


def test_t2_composition_breaks_ties_of_the_first_atom_with_the_second() -> None:
    # After the blocker: job 1 at 1 with tasks of 3, 1 and 2 s, job 2 at 2 with a 0.5 s task.
    # Submission first, then duration: 2, 3, 1 (job 1 by duration), then job 2's task 4.
    wl = workload(
        [(0, 0.0, 1.0, 10.0, []), (1, 1.0, 1.0, 3.0, []), (1, 1.0, 1.0, 1.0, []), (1, 1.0, 1.0, 2.0, [])]
        + [(2, 2.0, 1.0, 0.5, [])]
    )
    policy = "T2=Submission-Time(asc).Task-Duration(asc)"
    assert starts(policy, machines([1]), wl) == [0.0, 13.0, 10.0, 11.0, 16.0]


def test_r5_composition_matches_by_the_first_atom_then_the_second() -> None:
    # Machine 0: 2 cores, speed 1; machines 1 and 2: speed 2 with 4 and 3 cores.
    cluster = machines([2, 4, 3], speed=[1, 2, 2])
    assert run("R5=Expensive.Best-Fit", cluster, one_task(1)).machine.tolist() == [2]
    assert run("R5=Best-Fit.Expensive", cluster, one_task(1)).machine.tolist() == [0]


# -- the default policy, a task that can never run ------------------------------------------------------------


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(scenarios(), st.integers(0, 50))
def test_the_default_policy_is_fcfs_on_the_lowest_numbered_fitting_machine(
    scn: tuple[Cluster, Workload], seed: int
) -> None:
    # On one-task jobs the default (FIFO by submission, first fit, head-of-line blocking) decides as
    # fcfs with pick=lowest-index, event by event; multi-resource requests and rates of 0 included.
    cluster, wl = scn
    a = simulate(cluster, wl, create("staged"), seed=seed, drain=True)
    b = simulate(cluster, wl, create("fcfs", pick="lowest-index"), seed=seed, drain=True)
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.machine, b.machine)


def test_a_task_that_can_run_nowhere_is_dropped_and_does_not_block_the_queue() -> None:
    # Task 0 needs 2 cores, which only configuration 0 has, and its rate there is 0; task 1 runs.
    cluster = Cluster("m", ("cpu",), ("big", "small"), np.array([1, 1]), np.array([[2.0], [1.0]]))
    wl = workload([(0, 0.0, 2.0, 1.0, []), (1, 0.0, 1.0, 1.0, [])])
    wl.runtime = RateRuntime(wl.work, np.array([0, 1]), np.array([[0.0, 1.0], [1.0, 1.0]]))
    sched = create("staged")
    res = simulate(cluster, wl, sched, seed=0, drain=True)
    assert np.isnan(res.start[0]) and res.start[1] == 0.0 and res.machine[1] == 0
    assert sched.run.unrunnable == 1  # type: ignore[attr-defined]


# -- invariants over the whole space ---------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(dag_scenarios(), st.integers(0, 2**32 - 1))
def test_random_policies_respect_capacity_and_precedence_and_finish_every_task(
    scn: tuple[Cluster, Workload], policy_seed: int
) -> None:
    # No policy of the space starves a drained run: with nothing active every admission atom admits.
    cluster, wl = scn
    policy = format_policy(random_policy(np.random.default_rng(policy_seed)))
    res = simulate(cluster, wl, create("staged", policy=policy), seed=policy_seed % 97, drain=True)
    check_invariants(cluster, wl, res, policy, drain=True)
    g = wl.graph
    assert g is not None
    assert not np.isnan(res.finish).any(), policy
    child = np.repeat(np.arange(g.n_tasks), g.n_parents)
    assert (res.start[child] >= res.finish[g.parents]).all(), policy


#: Policies with every source of randomness (J1 delay, J2 and T1 draws, J3, T2 and R5 random choices).
RANDOM_POLICY = "J1=Random J2=Random(0.5) J3=Random T1=Random(0.3) T2=Random R5=Random"


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None)
@given(dag_scenarios(), st.integers(0, 1000))
def test_the_same_seed_gives_the_same_schedule(scn: tuple[Cluster, Workload], seed: int) -> None:
    cluster, wl = scn
    a = simulate(cluster, wl, create("staged", policy=RANDOM_POLICY), seed=seed, drain=True)
    b = simulate(cluster, wl, create("staged", policy=RANDOM_POLICY), seed=seed, drain=True)
    np.testing.assert_array_equal(a.start, b.start)
    np.testing.assert_array_equal(a.machine, b.machine)


def test_another_seed_gives_another_schedule() -> None:
    wl = workload([(0, 0.0, 1.0, 1.0, [])] * 8)
    a = run(RANDOM_POLICY, machines([1, 1, 1, 1]), wl, 1)
    b = run(RANDOM_POLICY, machines([1, 1, 1, 1]), wl, 2)
    assert not (np.array_equal(a.start, b.start) and np.array_equal(a.machine, b.machine))


@pytest.mark.parametrize(
    "policy",
    [
        RANDOM_POLICY,
        "J1=Batch(7) J2=Limit-Active(3) J3=Job-Duration(desc) T1=Job-Balance(1.5).Limit-Job(2) "
        "T2=Task-Duration-History(asc).Active-Per-Job(desc) R5=Worst-Fit.Random",
    ],
)
def test_a_reused_staged_scheduler_runs_each_scenario_as_a_fresh_one(policy: str) -> None:
    from simcore.bench.staged import bench_cluster, bench_workload

    c1, c2 = bench_cluster(6), bench_cluster(10)
    w1 = bench_workload(c1, tasks=300, load=1.1, kind="dag", seed=1)
    w2 = bench_workload(c2, tasks=400, load=0.9, kind="bag", seed=2)
    reused = create("staged", policy=policy)
    first = simulate(c1, w1, reused, 4, drain=True)
    second = simulate(c2, w2, reused, 5, drain=True)
    for got, (c, w, s) in ((first, (c1, w1, 4)), (second, (c2, w2, 5))):
        fresh = simulate(c, w, create("staged", policy=policy), s, drain=True)
        np.testing.assert_array_equal(got.start, fresh.start)
        np.testing.assert_array_equal(got.machine, fresh.machine)


# -- the policy parameter ---------------------------------------------------------------------------------------


def test_the_policy_parameter_is_stored_in_canonical_form() -> None:
    opts = coerce_params("scheduler 'staged'", SCHEDULERS.get("staged").params, {"policy": " t2=task-duration "})
    assert opts["policy"] == DEFAULT_TEXT.replace("T2=Submission-Time(asc)", "T2=Task-Duration(asc)")


def test_a_bad_policy_is_refused_at_validation_naming_the_stage_and_the_valid_atoms() -> None:
    with pytest.raises(ParameterError, match=r"scheduler 'staged' parameter 'policy': policy stage T2: unknown atom "
                       r"'Nope' for stage T2; valid atoms: Submission-Time, Task-Duration, .*Random"):  # fmt: skip
        coerce_params("scheduler 'staged'", SCHEDULERS.get("staged").params, {"policy": "T2=Nope"})


def test_the_command_line_refuses_a_bad_policy_with_exit_2_and_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["run", "--cluster", "google-balanced", "--machines-per-config", "1", "--workload", "google-like",
            "--hours", "0.001", "--scheduler", "staged", "--policy", "T2=Nope"]  # fmt: skip
    assert cli_main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "stage T2" in err and "'Nope'" in err and "valid atoms: Submission-Time" in err
