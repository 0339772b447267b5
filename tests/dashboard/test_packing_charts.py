"""Packing chart builders: pure functions from stored results to Plotly figures (no HTTP, no database)."""

from __future__ import annotations

import numpy as np
import pytest

from dashboard.packing import charts as packing_charts
from simcore.packing import Snapshot
from simcore.packing.analysis import AnalysisSpec, analyse

RES = ("cpu", "mem")


@pytest.fixture(scope="module")
def results() -> dict:
    rng = np.random.default_rng(2)
    snap = Snapshot(RES, rng.choice([0.5, 1.0], (16, 2)), rng.uniform(0, 0.3, (60, 2)), np.full(60, -1), np.arange(60))
    spec = AnalysisSpec(
        placed_by="sum",
        units=(0.05, 0.3),
        factors=(1.0, 1.5),
        taus=(0.0, 0.01),
        trials=3,
        orderings=("arrival", "mem"),
        schedulers=("greedy",),
    )
    return analyse(snap, spec)


def test_every_technique_has_its_chart(results: dict) -> None:
    assert set(packing_charts.all_charts(results)) == {
        "chart-holes",
        "chart-inflation-pending",
        "chart-inflation-utilisation",
        "chart-compaction",
        "chart-compare-horizontal",
        "chart-compare-vertical",
        "chart-compare-holes",
        "chart-compare-compaction",
    }


def test_only_the_techniques_that_ran_have_charts(results: dict) -> None:
    assert set(packing_charts.all_charts({"compaction": results["compaction"]})) == {"chart-compaction"}


def test_error_bars_span_the_range_over_trials(results: dict) -> None:
    fig = packing_charts.compaction(results)
    (trace,) = fig["data"]
    band = results["compaction"]["fraction"]
    assert trace["y"] == pytest.approx([100 * p for p in band["p"]])
    assert trace["error_y"]["array"] == pytest.approx(
        [100 * (h - p) for h, p in zip(band["hi"], band["p"], strict=True)]
    )
    assert trace["error_y"]["arrayminus"] == pytest.approx(
        [100 * (p - lo) for p, lo in zip(band["p"], band["lo"], strict=True)]
    )
    assert trace["x"] == [0.0, 1.0]  # tau in percent


def test_hole_filling_draws_one_line_per_resource_plus_the_level_before(results: dict) -> None:
    fig = packing_charts.holes(results)
    names = [t["name"] for t in fig["data"]]
    assert names == ["cpu", "mem", "cpu before hole filling", "mem before hole filling"]
    assert fig["data"][0]["x"] == [5.0, 30.0]  # U in percent of the median machine


def test_figure_four_has_one_line_per_policy_under_each_technique(results: dict) -> None:
    for fig in (
        packing_charts.compare_inflation(results, "horizontal"),
        packing_charts.compare_inflation(results, "vertical"),
        packing_charts.compare_compaction(results),
    ):
        assert [t["name"] for t in fig["data"]] == ["arrival (ordering)", "mem (ordering)", "greedy (scheduler)"]
    holes = packing_charts.compare_holes(results)
    assert len(holes["data"]) == 3 * 2  # policies x resources


def test_inflation_charts_show_the_four_schemes(results: dict) -> None:
    fig = packing_charts.inflation_pending(results)
    assert [t["name"] for t in fig["data"]] == [
        "horizontal, all jobs",
        "horizontal, conforming jobs",
        "vertical, all jobs",
        "vertical, conforming jobs",
    ]
    assert len(packing_charts.inflation_utilisation(results)["data"]) == 4 * 2
