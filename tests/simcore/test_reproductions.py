"""Paper reproductions (simcore.reproductions): the grids they build, the paper's values, the docstring lines."""

from __future__ import annotations

import shlex

import pytest

from simcore.cli import build_parser, sweep_plan
from simcore.core.errors import SimcoreError
from simcore.reproductions import REPRODUCTIONS, compare, get, paper_difference, relative_text
from simcore.sweep.report import Row
from simcore.sweep.scenario import cells, scenario_of, sweep_of


@pytest.mark.parametrize("name", list(REPRODUCTIONS))
def test_every_reproduction_prints_the_command_line_of_its_own_grid(name: str) -> None:
    rep = get(name)
    sc = scenario_of(rep.sweep())  # validated like any stored scenario
    args = build_parser().parse_args(shlex.split(rep.command())[1:])
    assert scenario_of(sweep_plan(args)) == sc
    assert scenario_of(sweep_of(sc)) == sc  # and a stored one prints back to the same grid
    assert set(sc["schedulers"]) >= {v.scheduler for v in rep.values}


def test_figure_11_at_paper_scale_is_the_papers_grid() -> None:
    plan = get("lotes-fig11").sweep({"machines_per_config": 1000, "hours": 100, "seeds": 5})
    assert plan.cluster == "google-balanced" and plan.workload == "lotes-phi"
    assert plan.load == 0.97 and plan.params["load_basis"] == "assignment" and plan.hours == 100
    assert plan.params["machines_per_config"] == 1000 and "request_cv" not in plan.params  # the paper's 0.5
    assert [ax.values for ax in plan.axes] == [(0.0, 0.003, 0.006, 0.009, 0.012, 0.015)]
    assert plan.schedulers == ["lotes", "tetris", "greedy"] and plan.seeds == [0, 1, 2, 3, 4]
    assert len(cells(scenario_of(plan))) == 6 * 3 * 5


def test_the_other_phi_finding_is_one_knob_away() -> None:
    plan = get("lotes-fig11").sweep({"request_cv": 0.0})
    assert plan.params["request_cv"] == 0.0


def test_omega_figures_quick_scale_reads_the_rates_as_omega_over_u_and_the_text_is_one_knob_away() -> None:
    plan = get("lotes-fig12").sweep()
    assert plan.params["mu_form"] == "omega_over_u" and plan.params["machines_per_config"] == 5 and plan.hours == 50
    assert "mu_form" not in get("lotes-fig12").sweep({"mu_form": "u_times_omega"}).params  # the workload's default
    assert "mu_form" not in get("lotes-fig11").sweep().params


def test_omega_figures_keep_the_phi_instance_and_differ_in_load() -> None:
    f12, f13 = get("lotes-fig12").sweep(), get("lotes-fig13").sweep()
    assert (f12.load, f13.load) == (0.90, 0.95)
    for plan in (f12, f13):
        assert plan.workload == "lotes-omega" and plan.params["phi"] == 0.006 and plan.params["class_seed"] == 0
        assert plan.axes[0].name == "omega"


def test_profile_figures_vary_the_cluster_over_ten_traces_at_the_papers_scale() -> None:
    for name, workload, sized in (
        ("profile-fig12", "ncbi-blast", "full"),
        ("profile-fig13", "ncbi-blast-reduced", "reduced"),
    ):
        assert get(name).sweep().seeds == [0, 1, 2]  # the quick scale: three traces
        plan = get(name).sweep({"seeds": 10})
        assert plan.workload == workload and plan.params == {"sized_for": sized}
        assert plan.axes[0].values == ("ncbi-heterogeneous", "ncbi-homogeneous") and plan.seeds == list(range(10))
        assert plan.schedulers == ["fcfs", "affinity", "greedy1", "greedy2", "greedy3"]


def test_a_bad_scale_names_the_knob() -> None:
    with pytest.raises(
        SimcoreError, match="reproduction 'lotes-fig11' parameter 'machines_per_config' must be at least 1"
    ):
        get("lotes-fig11").scale_values({"machines_per_config": 0})
    with pytest.raises(SimcoreError, match="unknown reproduction 'fig99'"):
        get("fig99")


def test_relative_values_are_computed_against_the_baseline_at_the_same_point() -> None:
    het, hom = {"cluster": "ncbi-heterogeneous"}, {"cluster": "ncbi-homogeneous"}
    rows = [
        Row(het, "fcfs", 10, 200.0, 190.0, 210.0, 0, n=10),
        Row(het, "affinity", 10, 226.0, 220.0, 230.0, 0, n=10),
        Row(hom, "fcfs", 10, 100.0, 90.0, 110.0, 0, n=10),
        Row(hom, "affinity", 10, 97.0, 95.0, 99.0, 1, n=10),
    ]
    got = {(c.point["cluster"], c.scheduler): c for c in compare(get("profile-fig12"), rows)}
    assert got[("ncbi-heterogeneous", "affinity")].ours_relative == pytest.approx(13.0)  # (226 - 200) / 200
    assert got[("ncbi-heterogeneous", "affinity")].paper_relative == 13.0
    assert got[("ncbi-homogeneous", "affinity")].ours_relative == pytest.approx(-3.0)
    assert got[("ncbi-homogeneous", "affinity")].paper_relative == 9.8
    assert relative_text(-3.0) == "-3.0%" and relative_text(0.01) == "~0%" and relative_text(None) == "-"


def test_a_whole_figure_statement_gets_one_line_with_our_mean_at_each_point() -> None:
    rows = [Row({"phi": 0.0}, "lotes", 5, 0.07, 0.0, 0.1, 0), Row({"phi": 0.015}, "lotes", 5, 0.68, 0.5, 0.9, 2)]
    (line,) = [c for c in compare(get("lotes-fig11"), rows) if c.scheduler == "lotes"]
    assert line.ours == "phi=0.0: 0.07; phi=0.015: 0.68" and line.ours_unstable == 2 and line.ours_runs == 10


@pytest.mark.parametrize(
    "scheduler", ["lotes", "tetris", "greedy", "fcfs", "affinity", "greedy1", "greedy2", "greedy3"]
)
def test_every_scheduler_of_a_reproduction_says_where_it_differs(scheduler: str) -> None:
    line = paper_difference(scheduler)
    assert line and "\n" not in line and "``" not in line


def test_the_lotes_line_names_both_phi_findings() -> None:
    line = paper_difference("lotes") or ""
    assert "CV 0.5" in line and "request_cv=0" in line


def test_a_difference_that_names_figure_11_is_said_on_figure_11_only() -> None:
    fig10, fig11 = REPRODUCTIONS["lotes-fig10"], REPRODUCTIONS["lotes-fig11"]
    line = paper_difference("lotes")
    assert line is not None and "Figure 11" in line
    assert fig11.difference("lotes") == line and fig10.difference("lotes") is None
    # "Figures 11-13" is a range: Greedy's line belongs on Figure 12's page and not on Figure 10's.
    assert REPRODUCTIONS["lotes-fig12"].difference("greedy") == paper_difference("greedy")
    assert fig10.difference("greedy") is None


def test_every_reproduction_label_names_its_paper_and_no_two_are_alike() -> None:
    labels = [r.label for r in REPRODUCTIONS.values()]
    assert len(set(labels)) == len(labels)
    assert REPRODUCTIONS["lotes-fig12"].label == "LoTES Figure 12"
    assert REPRODUCTIONS["profile-fig12"].label == "Profile-driven scheduling Figure 12"
