"""A sweep as a stored scenario (simcore.sweep.scenario): points, each point's own scenario, and equal numbers.

The dashboard runs a cell through ``run_scenario(cell_scenario(...))``;
``simcore sweep`` runs it through ``api.run(Sweep.spec(...))``. They must
give the same numbers: that is what "the same numbers from simcore sweep"
on a reproduction page promises.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from simcore import api, archive
from simcore.cli import main
from simcore.core.errors import ParameterError
from simcore.scenario import run_scenario, validate_scenario
from simcore.sweep import Sweep
from simcore.sweep.grammar import Axis, parse_axes
from simcore.sweep.scenario import cell_scenario, cells, point_key, points, scenario_of, sweep_of

TIMING = ("wall_s", "jobs_per_s", "compile_s")


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in TIMING}


def small_plan(**changes: Any) -> Sweep:
    args: dict[str, Any] = {
        "cluster": "google-balanced",
        "workload": "lotes-phi",
        "schedulers": ["lotes", "greedy"],
        "seeds": [0, 1],
        "axes": parse_axes(["phi=0:0.006:0.006"], "google-balanced", "lotes-phi", ["lotes", "greedy"]),
        "load": 1.0,
        "hours": 3.0,
        "params": {"machines_per_config": 1, "load_basis": "assignment"},
    }
    args.update(changes)
    return Sweep(**args)


def test_points_are_the_product_of_the_axes_first_axis_slowest() -> None:
    sc = scenario_of(small_plan(axes=[Axis("phi", (0.0, 0.003)), Axis("load", (0.5, 0.9))]))
    assert points(sc) == [
        {"phi": 0.0, "load": 0.5},
        {"phi": 0.0, "load": 0.9},
        {"phi": 0.003, "load": 0.5},
        {"phi": 0.003, "load": 0.9},
    ]
    assert len(cells(sc)) == 4 * 2 * 2
    assert point_key({}) == "" and point_key({"phi": 0.003}) == '[["phi",0.003]]'


def test_a_cell_scenario_puts_each_value_where_simcore_sweep_puts_it() -> None:
    axes = [Axis("phi", (0.0, 0.006)), Axis("load", (0.5,)), Axis("work_weight", (2.0,))]
    sc = scenario_of(small_plan(schedulers=["lotes", "tetris", "greedy"], axes=axes))
    cell = cell_scenario(sc, {"phi": 0.006, "load": 0.5, "work_weight": 2.0})
    assert "axes" not in cell
    assert cell["workload"]["params"]["phi"] == 0.006 and cell["load"] == 0.5
    assert cell["workload"]["params"]["load_basis"] == "assignment"  # the fixed ones stay
    assert cell["scheduler_params"]["lotes"]["max_bins"] == 500000  # defaults filled in
    assert cell["scheduler_params"]["tetris"]["work_weight"] == 2.0
    assert cell["scheduler_params"]["greedy"] == {}  # only tetris takes it


def test_varying_the_cluster_keeps_the_fixed_parameters_the_new_cluster_takes() -> None:
    plan = Sweep(
        cluster="ncbi-heterogeneous",
        workload="ncbi-blast",
        schedulers=["fcfs"],
        seeds=[0],
        axes=[Axis("cluster", ("ncbi-heterogeneous", "ncbi-homogeneous"))],
        params={"sized_for": "reduced", "machine_type": "type5"},
    )
    sc = scenario_of(plan)
    het, hom = (cell_scenario(sc, p)["cluster"] for p in points(sc))
    assert het["preset"] == "ncbi-heterogeneous" and het["params"]["sized_for"] == "reduced"
    assert "machine_type" not in het["params"]
    assert hom["preset"] == "ncbi-homogeneous" and hom["params"]["machine_type"] == "type5"


def test_a_stored_scenario_prints_back_as_the_same_command_line() -> None:
    plan = small_plan()
    assert sweep_of(scenario_of(plan)).command_line() == plan.command_line()
    assert plan.command_line() == (
        "simcore sweep --cluster google-balanced --workload lotes-phi --load 1.0 --hours 3.0 "
        "--machines-per-config 1 --load-basis assignment --schedulers lotes,greedy --seeds 0-1 --vary phi=0.0,0.006"
    )


def test_a_parameter_both_fixed_and_varied_is_refused_but_a_default_is_not_fixed() -> None:
    sc = scenario_of(small_plan())
    assert "phi" not in sc["workload"]["params"]  # the default the validation filled in gives way to the axis
    bad = {**sc, "workload": {"preset": "lotes-phi", "params": {"phi": 0.003}}}
    with pytest.raises(ParameterError, match="--phi is both fixed and varied"):
        validate_scenario(bad)
    assert validate_scenario(sc) == sc  # validation is idempotent on a stored sweep


def test_a_preset_axis_on_an_uploaded_file_is_refused() -> None:
    sc = {
        "cluster": {"file": "c.json"},
        "workload": {"preset": "google-like"},
        "schedulers": ["greedy"],
        "seeds": [0],
        "axes": [{"name": "cluster", "values": ["google-2011"]}],
    }
    with pytest.raises(ParameterError, match="the scenario's cluster is a file, not a preset"):
        validate_scenario(sc)


def test_every_cell_gives_the_numbers_simcore_sweep_prints(capsys: pytest.CaptureFixture[str]) -> None:
    plan = small_plan()
    sc = scenario_of(plan)
    code = main(plan.command_line().split()[1:])
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert code == 0 and len(lines) == len(cells(sc)) == 8
    for (point, scheduler, seed), line in zip(cells(sc), lines, strict=True):
        web = run_scenario(cell_scenario(sc, point), scheduler, seed).summary
        lib = api.run(plan.spec(point, scheduler, seed)).summary
        assert line["point"] == point and line["scheduler"] == scheduler and line["seed"] == seed
        assert untimed(web) == untimed(lib) == untimed({k: v for k, v in line.items() if k != "point"})
    assert any(line["mean_response_s"] > 0 for line in lines)  # not only zeros


def test_a_sweep_archive_reruns_cell_by_cell(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    plan = small_plan(schedulers=["greedy"], seeds=[0])
    sc = scenario_of(plan)
    runs = []
    for point, scheduler, seed in cells(sc):
        out = run_scenario(cell_scenario(sc, point), scheduler, seed)
        runs.append(
            archive.ArchivedRun(
                scheduler=scheduler,
                seed=seed,
                point=point,
                summary=out.summary,
                jobs=archive.pack_jobs(out.jobs_columns()),
            )
        )
    path = tmp_path / "sweep.zip"
    archive.write_archive(path, sc, {}, runs)
    back = archive.read_archive(path)
    assert [(r.point, r.point_index) for r in back.runs] == [({"phi": 0.0}, 0), ({"phi": 0.006}, 1)]
    assert main(["rerun", str(path)]) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert [(x["point"], x["matches_archive"]) for x in lines] == [({"phi": 0.0}, True), ({"phi": 0.006}, True)]
