"""The staged scheduler's benchmark scenario: the section 4.1.3 cluster, the DAG workload, and bench's plan."""

from __future__ import annotations

import numpy as np

from simcore.bench.runs import BenchOptions, child, plan_specs
from simcore.bench.staged import POLICIES, bench_cluster, bench_workload
from simcore.dse.staged.policy import format_policy, parse_policy


def test_the_cluster_is_half_4_cores_at_4_1_ghz_and_half_2_cores_at_3_5_ghz() -> None:
    c = bench_cluster(100)
    assert c.counts.tolist() == [50, 50]
    assert c.capacity[:, 0].tolist() == [4.0, 2.0]
    assert c.speed is not None and c.speed.tolist() == [4.1, 3.5]


def test_the_dag_workload_has_the_tasks_asked_for_and_parents_in_the_layer_before() -> None:
    wl = bench_workload(bench_cluster(), tasks=500, kind="dag", seed=3)
    g = wl.graph
    assert g is not None and g.n_tasks == 500 and g.n_edges > 0
    child_of = np.repeat(np.arange(g.n_tasks), g.n_parents)
    assert (wl.submit[g.parents] == wl.submit[child_of]).all()  # a task's submission is its job's


def test_the_bench_workload_arrives_at_the_load_asked_for() -> None:
    # Offered work (cores x work on the fastest machine) per second over the speed-weighted capacity.
    c = bench_cluster()
    wl = bench_workload(c, tasks=20_000, load=0.9, kind="bag", seed=1)
    capacity = 50 * 4 + 50 * 2 * 3.5 / 4.1
    offered = float((wl.request[:, 0] * wl.work).sum()) / float(wl.submit[-1])
    assert abs(offered / capacity - 0.9) < 0.05


def test_bench_plans_one_drained_run_per_policy_in_the_staged_scenario() -> None:
    specs = plan_specs(BenchOptions(schedulers="staged,greedy", scenarios="staged"))
    staged = [s for s in specs if s["scenario"] == "staged"]
    assert [s["label"] for s in staged] == [f"staged#{i}" for i in range(1, len(POLICIES) + 1)]
    assert [s["scheduler_params"]["policy"] for s in staged] == list(POLICIES)
    assert all(s["scheduler"] == "staged" and s["drain"] and s["tasks"] == 10_000 for s in staged)
    assert all(format_policy(parse_policy(p)) == p for p in POLICIES)


def test_a_staged_bench_run_schedules_every_task() -> None:
    spec = plan_specs(BenchOptions(schedulers="staged", scenarios="staged", staged_tasks=300, staged_machines=6))
    out = child([s for s in spec if s["scenario"] == "staged"][1])
    assert out["status"] == "ok" and out["label"] == "staged#2"
    assert out["jobs"] == 300 and out["completed"] == 300 and out["machines"] == 6
