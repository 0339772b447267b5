"""A run's ETA leaves its kernel's compile time out (issue 28), and the warm-up's choices of what to compile."""

from __future__ import annotations

import pytest

from simcore.api import resolve_cluster, resolve_workload
from simcore.cli import warm
from simcore.core.engine import Progress, Simulation
from simcore.core.seeding import scheduler_rng
from simcore.schedulers import SCHEDULERS, create, register


def progress(now: float, wall_s: float, compile_s: float = 0.0) -> Progress:
    return Progress(now, 100.0, arrived=0, started=0, completed=0, jobs=0, wall_s=wall_s, compile_s=compile_s)


def test_the_eta_is_the_pace_after_compiling() -> None:
    # 25% of the horizon simulated in 50 s of which 40 s compiling: 10 s per quarter, 30 s left.
    assert progress(25.0, 50.0, 40.0).eta_s == pytest.approx(30.0)
    # the old arithmetic, which counted the compile: 50 * 0.75 / 0.25 = 150 s
    assert progress(25.0, 50.0).eta_s == pytest.approx(150.0)
    assert progress(0.0, 5.0, 5.0).eta_s is None  # nothing simulated yet: no pace to go by
    assert progress(100.0, 50.0, 40.0).eta_s == 0.0
    assert progress(50.0, 3.0, 3.5).eta_s == 0.0  # clocks a hair apart never give a negative ETA


def test_a_compiled_runs_progress_reports_its_compile_time() -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 20})
    wl = resolve_workload("google-like", cluster, 0, 0.9, 2.0)
    seen: list[Progress] = []
    sim = Simulation(cluster, wl, create("greedy"), scheduler_rng(0), progress=seen.append, progress_every_s=0.0)
    sim.run()
    assert sim.engine_used == "compiled" and sim.compile_s is not None
    last = seen[-1]
    assert last.compile_s == sim.compile_s and 0.0 < last.compile_s <= last.wall_s
    mid = [p for p in seen if 0.0 < p.fraction < 1.0]
    assert mid, "reported between chunks"
    p = mid[0]
    assert p.eta_s == pytest.approx((p.wall_s - p.compile_s) * (1 - p.fraction) / p.fraction)


def test_the_python_engine_reports_no_compile_time() -> None:
    cluster = resolve_cluster("google-balanced", {"machines_per_config": 1})
    wl = resolve_workload("google-like", cluster, 0, 0.9, 0.05)
    seen: list[Progress] = []
    Simulation(cluster, wl, create("greedy"), scheduler_rng(0), progress=seen.append, engine="python").run()
    assert seen and all(p.compile_s == 0.0 for p in seen)


def test_the_warm_up_compiles_the_likeliest_schedulers_first_and_refuses_unknown_ones() -> None:
    order = warm.schedulers_to_warm()
    assert order[:5] == ["greedy", "lotes", "tetris", "fcfs", "mris"]
    assert {"affinity", "greedy1", "staged"} <= set(order) and len(order) == len(set(order))
    assert warm.schedulers_to_warm(["tetris", "greedy", "tetris"]) == ["tetris", "greedy"]
    with pytest.raises(SystemExit, match="unknown scheduler.*nope"):
        warm.schedulers_to_warm(["nope"])


def test_warming_a_scheduler_without_a_kernel_says_python_and_warms_nothing() -> None:
    # Every built-in scheduler has a kernel now (staged too): a scheduler of the user's, written in Python only.
    from tests.simcore.test_cli import TEST_SCHEDULER, FirstFit

    SCHEDULERS.names()  # the built-in ones first
    register(TEST_SCHEDULER)(FirstFit)
    lines: list[str] = []
    try:
        (w,) = warm.warm([TEST_SCHEDULER], say=lines.append)
    finally:
        SCHEDULERS._items.pop(TEST_SCHEDULER, None)
    assert (w.scheduler, w.engine, w.compile_s) == (TEST_SCHEDULER, "python", None)
    assert lines == []  # nothing was compiled, nothing to announce
