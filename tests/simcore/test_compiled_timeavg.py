"""The compiled pass of the exact statistics (simcore.compiled.timeavg) gives the specification's values
(simcore.core.timeavg.time_averages) to the bit: hand-computed cases and seeded random ones.

Bit-identical, not close: the pass only clips and subtracts (one rounding each, as numpy does) and
counts; the sums and the utilisation's product are numpy's calls on equal arrays. So every test
compares with ``==``. The runs of both engines (Little's law, the jobs.csv reconstruction) are in
test_exact_stats.py, where a compiled run's summary now comes from this pass.
"""

from __future__ import annotations

import numpy as np
import pytest

from simcore.compiled import timeavg as compiled
from simcore.core import timeavg as spec
from simcore.core.timeavg import TimeAverages, release_times

Arrays = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]


def both(
    submit: np.ndarray,
    start: np.ndarray,
    finish: np.ndarray,
    request: np.ndarray,
    cap: np.ndarray,
    window: tuple[float, float],
    release: np.ndarray | None = None,
) -> tuple[TimeAverages, TimeAverages]:
    """The specification's TimeAverages and the compiled pass's, for the same arguments."""
    resources = tuple(f"r{i}" for i in range(request.shape[1]))
    args = (submit, start, finish, request, cap, resources, window, release)
    return spec.time_averages(*args), compiled.time_averages(*args)


def test_hand_computed_case_in_the_compiled_pass() -> None:
    # One machine of 4 cpu, window [0, 8]: job 0 runs 0..4 (2 cpu), job 1 1..3 (2 cpu), job 2 is queued
    # 2..4 then runs 4..6 (4 cpu), job 3 (5 cpu) never starts: queued 3..8.
    # Queue 2 + 5 = 7 job-s -> 0.875, at most 2 (3..4); running 4 + 2 + 2 = 8 -> 1.0;
    # busy 8 + 4 + 8 = 20 cpu-s -> 20 / 32 = 0.625.
    submit = np.array([0.0, 1, 2, 3])
    start = np.array([0.0, 1, 4, np.nan])
    finish = np.array([4.0, 3, 6, np.nan])
    want, got = both(submit, start, finish, np.array([[2.0], [2], [4], [5]]), np.array([4.0]), (0.0, 8.0))
    assert (got.mean_queue_len, got.mean_running, got.utilization, got.max_queue_len) == (0.875, 1.0, {"r0": 0.625}, 2)
    assert got == want


def test_hand_computed_task_graph_in_the_compiled_pass() -> None:
    # Task 2 (t=1) waits for tasks 0 and 1 (finish 5 and 3): released at 5, starts at 7; task 3 is never
    # released. Window [0, 10], 2 cpu: queue 2 -> 0.2, max 1; running 5 + 3 + 3 = 11 -> 1.1, 11 / 20 = 0.55.
    submit = np.array([0.0, 0, 1, 1])
    finish = np.array([5.0, 3, np.nan, np.nan])
    release = release_times(submit, finish, np.array([0, 0, 0, 2, 3]), np.array([0, 1, 2]))
    start = np.array([0.0, 0, 7, np.nan])
    want, got = both(submit, start, finish, np.ones((4, 1)), np.array([2.0]), (0.0, 10.0), release)
    assert (got.mean_queue_len, got.mean_running, got.utilization, got.max_queue_len) == (0.2, 1.1, {"r0": 0.55}, 1)
    assert got == want


def test_a_burst_cleared_in_part_at_its_instant_counts_what_is_left() -> None:
    # 100 arrivals at t=1, 10 of them start at once, the rest at t=2 (starts before releases at one instant).
    submit = np.full(100, 1.0)
    start = np.where(np.arange(100) < 10, 1.0, 2.0)
    finish = start + 1.0
    want, got = both(submit, start, finish, np.ones((100, 1)), np.array([100.0]), (1.0, 3.0))
    assert got.max_queue_len == 90 and got == want


def test_no_jobs_and_an_empty_window() -> None:
    empty = np.empty(0)
    want, got = both(empty, empty, empty, np.empty((0, 2)), np.array([1.0, 1.0]), (0.0, 0.0))
    assert got == want
    assert (got.mean_queue_len, got.utilization, got.max_queue_len) == (None, {"r0": None, "r1": None}, 0)


def random_run(seed: int, n: int, every_job_started: bool, graph: bool) -> Arrays:
    """Per-job records with what a run has: arrival ties (times on a 0.5 s grid), jobs starting the moment
    they are released or at another job's arrival time, jobs never started or never finished, and for a
    task graph releases out of submit order, some never."""
    rng = np.random.default_rng(seed)
    submit = np.round(np.cumsum(rng.exponential(1.0, n)) * 2) / 2
    release = None
    queued_from = submit
    if graph:
        release = submit + np.where(rng.random(n) < 0.5, 0.0, rng.exponential(5.0, n))
        release[rng.random(n) < 0.1] = np.nan
        queued_from = release
    wait = np.where(rng.random(n) < 0.4, 0.0, np.round(rng.exponential(3.0, n) * 2) / 2)
    start = queued_from + wait
    if not every_job_started:
        start[rng.random(n) < 0.1] = np.nan
    finish = start + rng.exponential(4.0, n)
    finish[rng.random(n) < 0.1] = np.nan
    request = rng.random((n, 3))
    return submit, start, finish, request, release


@pytest.mark.parametrize("graph", [False, True], ids=["jobs", "task-graph"])
@pytest.mark.parametrize("every_job_started", [False, True], ids=["some-unstarted", "all-started"])
@pytest.mark.parametrize("seed", [1, 2])
def test_the_compiled_pass_equals_the_specification_on_random_records(
    seed: int, every_job_started: bool, graph: bool
) -> None:
    submit, start, finish, request, release = random_run(seed, 3000, every_job_started, graph)
    cap = np.array([50.0, 80.0, 0.0])  # a resource of no capacity: utilisation 0
    end = float(submit[-1])
    # The window as a run states it (first arrival to the end), and one cutting intervals at both ends.
    for window in ((float(submit[0]), end), (end / 3, 2 * end / 3)):
        want, got = both(submit, start, finish, request, cap, window, release)
        assert got.max_queue_len > 0 and got.utilization["r2"] == 0.0
        assert got == want, (seed, window)


def test_the_compiled_maximum_queue_does_not_trust_starts_to_follow_their_arrival() -> None:
    # The engine never starts a job before it arrives; the function takes any records, as the specification does.
    rng = np.random.default_rng(3)
    submit = np.sort(np.round(rng.random(500) * 100))
    start = submit + np.round(rng.normal(0.0, 5.0, 500))
    want, got = both(submit, start, start + 1.0, np.ones((500, 1)), np.array([10.0]), (0.0, 120.0))
    assert got.max_queue_len == want.max_queue_len > 0
