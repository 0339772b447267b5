"""`simcore sweep`: a grid of parameter values x schedulers x seeds, each an ordinary `api.run`.

Real small runs (a ten-machine cluster, minutes of simulated time): the grid's
order, that each point's values reach its run exactly as a separate `run`
would, that N worker processes give the same lines as one, and that the table
and the CSV say what the JSON lines say.
"""

from __future__ import annotations

import csv
import itertools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simcore import api
from simcore.cli import main
from simcore.core.errors import ParameterError
from simcore.sweep import Axis, Sweep, parse_seeds, seeds_text
from simcore.sweep.report import aggregate, format_table

SIMCORE = Path(sys.executable).with_name("simcore")
#: Wall-clock measurements: the only summary values allowed to differ between two runs of one spec.
TIMING_KEYS = ("wall_s", "jobs_per_s", "compile_s")

SCENARIO = (
    "--cluster",
    "google-balanced",
    "--machines-per-config",
    "1",
    "--workload",
    "lotes-phi",
    "--hours",
    "0.5",
    "--load",
    "0.95",
)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse usage errors exit 2 the standard way
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def lines(out: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in out.splitlines()]


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in TIMING_KEYS}


# -- seeds -----------------------------------------------------------------------------------------------------


def test_seeds_read_lists_and_ranges_in_the_order_given() -> None:
    assert parse_seeds("0") == [0]
    assert parse_seeds("0-4") == [0, 1, 2, 3, 4]
    assert parse_seeds(" 7, 2 ,5-6") == [7, 2, 5, 6]


def test_seeds_text_is_the_sorted_inverse() -> None:
    assert seeds_text([5, 0, 1, 2, 9, 8]) == "0-2,5,8-9"
    assert parse_seeds(seeds_text([3, 0, 1, 7])) == [0, 1, 3, 7]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("3-1", "range '3-1' goes backwards"),
        ("1,x", "'x' is not a non-negative integer"),
        ("-1", "'-1' is not a non-negative integer"),
        ("", "give at least one seed"),
        ("0-2,2", "seed 2 is listed twice"),
        ("0-99999", "range '0-99999' has 100,000 seeds; at most 50"),
    ],
)
def test_bad_seeds_are_refused_with_the_reason(text: str, says: str) -> None:
    with pytest.raises(ParameterError, match=says):
        parse_seeds(text)


# -- the grid --------------------------------------------------------------------------------------------------


def test_the_grid_is_points_then_schedulers_then_seeds_with_the_first_axis_slowest() -> None:
    sw = Sweep(
        cluster="google-balanced",
        workload="lotes-phi",
        schedulers=["lotes", "greedy"],
        seeds=[3, 1],
        axes=[Axis("phi", (0.0, 0.003, 0.006)), Axis("load", (0.5, 0.9))],
        hours=0.5,
        params={"machines_per_config": 2},
    )
    tasks = sw.tasks()
    expected = list(itertools.product((0.0, 0.003, 0.006), (0.5, 0.9), ("lotes", "greedy"), (3, 1)))
    assert len(tasks) == 3 * 2 * 2 * 2 == 24
    assert [(t.point["phi"], t.point["load"], t.scheduler, t.seed) for t in tasks] == expected
    assert [t.index for t in tasks] == list(range(24))
    t = tasks[13]  # phi 0.003, load 0.9, lotes, seed 1
    assert t.spec == api.RunSpec(
        cluster="google-balanced",
        workload="lotes-phi",
        scheduler="lotes",
        seed=1,
        load=0.9,
        hours=0.5,
        cluster_params={"machines_per_config": 2},
        workload_params={"phi": 0.003},
        scheduler_params={},
    )


def test_without_axes_the_grid_is_one_empty_point() -> None:
    sw = Sweep(cluster="google-balanced", workload="google-like", schedulers=["greedy"], seeds=[0, 1, 2])
    assert [(t.point, t.seed) for t in sw.tasks()] == [({}, 0), ({}, 1), ({}, 2)]


def test_cli_lines_come_in_grid_order(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "sweep",
        *SCENARIO,
        "--schedulers",
        "lotes,greedy",
        "--seeds",
        "0-1",
        "--vary",
        "phi=0,0.006",
        "--vary",
        "load=0.5,0.9",
    )
    assert code == 0, err
    got = [(d["point"]["phi"], d["point"]["load"], d["scheduler"], d["seed"]) for d in lines(out)]
    assert got == list(itertools.product((0.0, 0.006), (0.5, 0.9), ("lotes", "greedy"), (0, 1)))


def test_each_point_runs_exactly_as_a_separate_run(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "sweep",
        *SCENARIO,
        "--schedulers",
        "greedy",
        "--seeds",
        "2",
        "--vary",
        "phi=0,0.006",
        "--vary",
        "load=0.5,0.9",
    )
    assert code == 0, err
    by_point = {(d["point"]["phi"], d["point"]["load"]): d for d in lines(out)}
    for phi, load in ((0.0, 0.9), (0.006, 0.5)):
        alone = api.run(
            api.RunSpec(
                cluster="google-balanced",
                workload="lotes-phi",
                scheduler="greedy",
                seed=2,
                load=load,
                hours=0.5,
                cluster_params={"machines_per_config": 1},
                workload_params={"phi": phi},
            )
        ).summary
        swept = by_point[(phi, load)]
        assert swept["point"] == {"phi": phi, "load": load}
        assert untimed({k: v for k, v in swept.items() if k != "point"}) == untimed(alone)
    # Phi changes the classes, hence the LP bound; load scales the arrival rate against it.
    lam = {p: d["lambda_star"] for p, d in by_point.items()}
    assert lam[(0.0, 0.5)] == lam[(0.0, 0.9)] != lam[(0.006, 0.5)] == lam[(0.006, 0.9)]
    for (_, load), d in by_point.items():
        assert d["arrival_rate"] == pytest.approx(load * d["lambda_star"], rel=1e-12)


def test_two_workers_print_exactly_what_one_prints(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ("sweep", *SCENARIO, "--schedulers", "lotes,greedy", "--seeds", "0-2", "--vary", "phi=0,0.006")
    code1, out1, err1 = run_cli(capsys, *argv, "--progress")
    code2, out2, err2 = run_cli(capsys, *argv, "--workers", "2", "--progress")
    assert code1 == code2 == 0, err1 + err2
    assert [untimed(d) for d in lines(out2)] == [untimed(d) for d in lines(out1)]
    assert len(lines(out1)) == 12
    for err in (err1, err2):  # one line a finished run, counting up to the total
        progress = [line for line in err.splitlines() if line.startswith("[sweep]")]
        assert [p.split()[1] for p in progress] == [f"{n}/12" for n in range(1, 13)]


# -- table and CSV ---------------------------------------------------------------------------------------------


def test_aggregate_by_hand() -> None:
    runs = [
        {"scheduler": "a", "point": {"phi": 0.1}, "m": 1.0, "stable": True},
        {"scheduler": "a", "point": {"phi": 0.1}, "m": 2.0, "stable": False},
        {"scheduler": "a", "point": {"phi": 0.1}, "m": 6.0, "stable": True},
        {"scheduler": "a", "point": {"phi": 0.1}, "m": None, "stable": False},
        {"scheduler": "b", "point": {"phi": 0.1}, "m": None, "stable": True},
        {"scheduler": "a", "point": {"phi": 0.2}, "m": 4.0, "stable": True},
    ]
    rows = aggregate(runs, "m")
    assert [(r.point, r.scheduler, r.runs, r.mean, r.min, r.max, r.unstable) for r in rows] == [
        ({"phi": 0.1}, "a", 4, 3.0, 1.0, 6.0, 2),
        ({"phi": 0.1}, "b", 1, None, None, None, 0),
        ({"phi": 0.2}, "a", 1, 4.0, 4.0, 4.0, 0),
    ]
    # 95% t-interval over 1, 2, 6 by hand: s = sqrt(((1-3)^2 + (2-3)^2 + (6-3)^2) / 2) = sqrt(7),
    # t(0.975, 2 d.f.) = 4.30265 (printed tables), half width 4.30265 * sqrt(7) / sqrt(3) = 6.57241.
    a = rows[0]
    assert a.n == 3 and a.sd == pytest.approx(7**0.5)
    assert (a.ci_low, a.ci_high) == (pytest.approx(3 - 6.57241, abs=1e-5), pytest.approx(3 + 6.57241, abs=1e-5))
    assert rows[2].n == 1 and rows[2].ci_low is None and rows[2].sd is None  # one value: no interval
    text = format_table(rows, "m", [0, 1, 2, 3])
    assert text.splitlines()[0] == "m over seeds 0-3"
    assert text.splitlines()[1].split() == [
        "phi",
        "scheduler",
        "runs",
        "mean",
        "ci95_low",
        "ci95_high",
        "min",
        "max",
        "unstable",
    ]
    assert text.splitlines()[2].split() == ["0.1", "a", "4", "3", "-3.57241", "9.57241", "1", "6", "2"]
    assert text.splitlines()[3].split() == ["0.1", "b", "1", "-", "-", "-", "-", "-", "0"]


def parse_table(out: str) -> dict[tuple[str, str], list[str]]:
    rows = [line.split() for line in out.splitlines()[2:]]
    return {(r[0], r[1]): r[2:] for r in rows}


@pytest.mark.parametrize("metric", [None, "utilization.cpu"])
def test_the_table_is_mean_min_max_of_the_json_lines(capsys: pytest.CaptureFixture[str], metric: str | None) -> None:
    # Two hours at load 0.95 on ten machines: some seeds queue, so the response times are not all 0.
    argv = (
        "sweep",
        *SCENARIO[:-4],
        "--hours",
        "2",
        "--load",
        "0.95",
        "--schedulers",
        "lotes,greedy",
        "--seeds",
        "0-4",
        "--vary",
        "phi=0,0.006",
    )
    code, out, err = run_cli(capsys, *argv)
    assert code == 0, err
    runs = lines(out)
    code, table, err = run_cli(capsys, *argv, "--table", *(("--metric", metric) if metric else ()))
    assert code == 0, err
    key = metric or "mean_response_s"
    what = " (mean wait until start, s)" if key == "mean_response_s" else ""
    assert table.splitlines()[0] == f"{key}{what} over seeds 0-4"
    got = parse_table(table)
    assert len(got) == 4
    nonzero = 0
    for (phi, sched), (n, mean, _ci_low, _ci_high, lo, hi, unstable) in got.items():
        xs = [
            r[key] if "." not in key else r["utilization"]["cpu"]
            for r in runs
            if r["scheduler"] == sched and r["point"]["phi"] == float(phi)
        ]
        assert int(n) == len(xs) == 5
        assert float(mean) == pytest.approx(sum(xs) / len(xs), rel=1e-5, abs=1e-9)
        assert float(lo) == pytest.approx(min(xs), rel=1e-5, abs=1e-9)
        assert float(hi) == pytest.approx(max(xs), rel=1e-5, abs=1e-9)
        assert int(unstable) == sum(
            1 for r in runs if r["scheduler"] == sched and r["point"]["phi"] == float(phi) and not r["stable"]
        )
        nonzero += max(xs) > 0
    assert nonzero >= 2  # the comparison is not only of zeros


def test_csv_has_one_row_per_run_with_the_point_and_every_summary_key(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out_csv = tmp_path / "sweep.csv"
    code, out, err = run_cli(
        capsys,
        "sweep",
        *SCENARIO,
        "--schedulers",
        "greedy,fcfs",
        "--seeds",
        "0,1",
        "--vary",
        "phi=0,0.006",
        "--out",
        str(out_csv),
    )
    assert code == 0, err
    runs = lines(out)
    with out_csv.open() as f:
        reader = csv.DictReader(f)
        columns = reader.fieldnames or []
        rows = list(reader)
    assert len(rows) == len(runs) == 8
    assert columns[:4] == ["scheduler", "cluster", "workload", "seed"]
    assert columns[-1] == "point.phi"
    assert {"mean_response_s", "utilization.cpu", "utilization.mem", "stable", "lambda_star"} <= set(columns)
    assert "point" not in columns and "utilization" not in columns
    for row, run in zip(rows, runs, strict=True):
        assert row["scheduler"] == run["scheduler"] and int(row["seed"]) == run["seed"]
        assert float(row["point.phi"]) == run["point"]["phi"]
        assert float(row["mean_response_s"]) == run["mean_response_s"]  # written exactly
        assert float(row["utilization.cpu"]) == run["utilization"]["cpu"]
        assert row["stable"] == str(run["stable"])


# -- incompatible schedulers -----------------------------------------------------------------------------------


GOOGLE_LIKE = (
    "--cluster",
    "google-balanced",
    "--machines-per-config",
    "1",
    "--workload",
    "google-like",
    "--hours",
    "0.02",
)


def test_all_skips_schedulers_built_for_another_setting_once_each(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys, "sweep", *GOOGLE_LIKE, "--schedulers", "all", "--seeds", "0-1", "--vary", "load=0.5,0.9"
    )
    assert code == 0, err
    names = {d["scheduler"] for d in lines(out)}
    assert {"greedy", "lotes", "fcfs"} <= names and "affinity" not in names
    assert err.count("skipping affinity") == 1  # four skipped runs, one reason
    assert len(lines(out)) == 2 * 2 * len(names)


def test_an_explicit_incompatible_scheduler_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "sweep", *GOOGLE_LIKE, "--schedulers", "greedy,affinity", "--seeds", "0")
    assert code == 2
    assert "affinity, seed 0" in err and "run-time profile" in err and "Traceback" not in err


# -- errors before anything runs -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (("--vary", "omega=0.1"), "--vary omega does not apply to cluster 'google-balanced', workload 'lotes-phi'"),
        (
            ("--vary", "nope=1"),
            "parameters that do: load, hours, cluster, workload, class-seed, load-basis, machines-per-config, phi, "
            "request-cv",
        ),
        (("--vary", "phi=0,abc"), "--vary phi: expected a number, got 'abc'"),
        (("--vary", "phi=0,0.06"), "--vary phi: workload 'lotes-phi' parameter 'phi' must be at most 0.025, got 0.06"),
        (("--vary", "machines-per-config=1,2.5"), "--vary machines-per-config: expected int, got '2.5'"),
        (("--vary", "load=0.5,-1"), "--vary load: expected a positive number, got '-1'"),
        (("--vary", "phi="), "--vary phi: no values"),
        (("--vary", "phi=0,,1"), "--vary phi: empty value"),
        (("--vary", "phi"), "expected NAME=VALUE"),
        (("--vary", "phi=0,0.0"), "value '0.0' is listed twice"),
        (("--vary", "phi=0", "--vary", "phi=0.001"), "--vary phi is given twice"),
        (("--phi", "0.003", "--vary", "phi=0,0.006"), "--phi is both fixed and varied"),
        (("--phi", "0.06", "--vary", "load=0.5,0.9"), "workload 'lotes-phi' parameter 'phi' must be at most 0.025"),
        (("--vary", "seed=0,1"), "give seeds with --seeds"),
        (("--seeds", "4-2"), "--seeds: range '4-2' goes backwards"),
        (("--seeds", "0,a"), "--seeds: 'a' is not a non-negative integer"),
        (("--metric", "p99_response_s"), "--metric applies only with --table"),
        (("--out", "/no/such/dir/s.csv"), "directory '/no/such/dir' does not exist"),
    ],
)
def test_bad_input_exits_2_naming_the_problem(
    capsys: pytest.CaptureFixture[str], args: tuple[str, ...], says: str
) -> None:
    code, out, err = run_cli(capsys, "sweep", *SCENARIO, "--schedulers", "greedy", *args)
    assert code == 2
    assert says in err and out == ""
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_a_metric_that_is_not_a_number_lists_those_that_are(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "sweep", *GOOGLE_LIKE, "--schedulers", "greedy", "--table", "--metric", "stable")
    assert code == 2 and out == ""
    assert "--metric 'stable' is not a numeric summary key" in err and "mean_response_s" in err


@pytest.mark.skipif(not SIMCORE.exists(), reason="the simcore script is not installed next to python")
def test_the_script_reports_a_bad_vary_value_in_one_line() -> None:
    r = subprocess.run(
        [str(SIMCORE), "sweep", *SCENARIO, "--schedulers", "greedy", "--vary", "phi=0,x"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr == "simcore: error: --vary phi: expected a number, got 'x'\n"


def test_a_scenarios_runs_share_one_workload_and_give_what_separate_runs_give() -> None:
    """The schedulers of one point and seed run on one copy of the workload (run_group), and each summary
    is the one api.run gives for its spec alone; a failing spec fails alone."""
    from simcore.sweep.run import _groups, execute, run_group

    sw = Sweep(
        cluster="google-balanced",
        workload="lotes-phi",
        schedulers=["lotes", "tetris", "greedy"],
        seeds=[0, 1],
        axes=[Axis("phi", [0.0, 0.009])],
        load=0.95,
        hours=0.5,
        params={"machines_per_config": 1},
    )
    tasks = sw.tasks()
    groups = _groups(tasks)
    # One group per (phi, seed), in grid order, each with the three schedulers.
    assert [[tasks[i].scheduler for i in g] for g in groups] == [["lotes", "tetris", "greedy"]] * 4
    assert [(tasks[g[0]].point["phi"], tasks[g[0]].seed) for g in groups] == [
        (0.0, 0),
        (0.0, 1),
        (0.009, 0),
        (0.009, 1),
    ]
    got = [(t.index, r) for t, r in execute(tasks)]
    assert [i for i, _ in got] == list(range(len(tasks)))
    for t, (_, r) in zip(tasks, got, strict=True):
        assert r.summary is not None
        assert untimed(r.summary) == untimed(api.run(t.spec).summary)
    bad = api.RunSpec(**{**tasks[0].spec.to_dict(), "scheduler": "no-such"})
    out = run_group([tasks[0].spec, bad, tasks[1].spec])
    assert out[0].summary is not None and out[2].summary is not None
    assert out[1].summary is None and "no-such" in (out[1].error or "")


@pytest.mark.skipif(not SIMCORE.exists(), reason="the simcore script is not installed next to python")
def test_a_killed_worker_is_one_line_naming_the_likely_cause_not_a_traceback() -> None:
    """A worker killed from outside (as the kernel's OOM killer does) ends the sweep with exit 2 and one line."""
    import os
    import signal
    import time

    proc = subprocess.Popen(
        [str(SIMCORE), "sweep", *GOOGLE_LIKE[:-2], "--hours", "240", "--engine", "python"]
        + ["--schedulers", "greedy", "--seeds", "0-3", "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while not workers and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            for child in Path(f"/proc/{proc.pid}/task").glob("*/children"):
                for pid in child.read_text().split():
                    if "spawn_main" in Path(f"/proc/{pid}/cmdline").read_text().replace("\0", " "):
                        workers.append(int(pid))
        assert workers, "the sweep started no worker process"
        os.kill(workers[0], signal.SIGKILL)
        out, err = proc.communicate(timeout=120)
    finally:
        proc.kill()
    assert proc.returncode == 2, err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert err.startswith("simcore: error: a worker process of the sweep ended without a result")
    assert "lack of memory" in err and "fewer --workers" in err


def test_a_group_leaves_no_simulation_behind_for_the_cycle_collector() -> None:
    """A Simulation and its scheduler refer to each other; run_group frees them (and their arrays) itself, so a
    worker running group after group at paper scale does not keep every earlier run's arrays until Python's
    collector happens to run (a Figure 11 worker grew to 13.7 GB and was killed)."""
    import gc

    from simcore.core.engine import Simulation
    from simcore.sweep.run import run_group

    spec = api.RunSpec(
        "google-balanced", "lotes-phi", "tetris", load=0.95, hours=0.5, cluster_params={"machines_per_config": 1}
    )
    gc.collect()
    gc.disable()  # only run_group's own collection may free them
    try:
        out = run_group([spec, api.RunSpec(**{**spec.to_dict(), "scheduler": "greedy"})])
        alive = [o for o in gc.get_objects() if type(o) is Simulation]  # not isinstance: dead weak proxies raise
    finally:
        gc.enable()
    assert all(r.summary is not None for r in out)
    assert alive == []


def test_specs_share_a_scenario_exactly_when_they_build_the_same_cluster_and_workload() -> None:
    """The scenario key leaves out only what chooses how a scenario is run (scheduler, its options, draining,
    engine); every field that builds the cluster or workload separates scenarios."""
    base = api.RunSpec("google-balanced", "lotes-phi", "lotes", seed=1, load=0.95, hours=0.5)
    same = [
        {"scheduler": "greedy"},
        {"scheduler_params": {"k_sets": 2}},
        {"drain": True},
        {"engine": "python"},
        {"samples": 50},
    ]
    other = [
        {"cluster": "google-2011"},
        {"workload": "google-like"},
        {"seed": 2},
        {"load": 0.9},
        {"hours": 1.0},
        {"cluster_params": {"machines_per_config": 2}},
        {"workload_params": {"phi": 0.003}},
    ]
    key = api.scenario_key(base)
    for change in same:
        assert api.scenario_key(api.RunSpec(**{**base.to_dict(), **change})) == key, change
    for change in other:
        assert api.scenario_key(api.RunSpec(**{**base.to_dict(), **change})) != key, change
    # every RunSpec field is one or the other
    assert {f for c in same + other for f in c} == set(base.to_dict())
