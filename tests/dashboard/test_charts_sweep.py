"""Sweep chart builders (dashboard.experiments.sweep_charts): pure functions from aggregated rows to Plotly figures."""

from __future__ import annotations

import pytest

from dashboard.experiments.sweep_charts import MIN_LOG, metric_chart, metric_table, stacked_chart, stacked_table
from simcore.sweep.report import Row


def row(point, scheduler, mean, lo=None, hi=None, unstable=0, runs=5):
    return Row(point, scheduler, runs, mean, mean, mean, unstable, n=runs, ci_low=lo, ci_high=hi)


ROWS = [
    row({"phi": 0.0}, "lotes", 0.07, 0.05, 0.09),
    row({"phi": 0.0}, "tetris", 0.0, 0.0, 0.0),
    row({"phi": 0.015}, "lotes", 0.68, 0.2, 1.16, unstable=1),
    row({"phi": 0.015}, "tetris", 0.05, -0.01, 0.11),
]


def test_one_line_per_scheduler_over_the_axis_with_asymmetric_error_bars() -> None:
    fig = metric_chart(ROWS, "mean_response_s", axis="phi")
    assert [t["name"] for t in fig["data"]] == ["lotes", "tetris"]
    lotes = fig["data"][0]
    assert lotes["x"] == [0.0, 0.015] and lotes["y"] == [0.07, 0.68]
    assert lotes["error_y"]["array"] == pytest.approx([0.02, 0.48])
    assert lotes["error_y"]["arrayminus"] == pytest.approx([0.02, 0.48])
    assert fig["layout"]["xaxis"]["title"]["text"] == "\u03a6 (phi: spread of the class mean requests)"


def test_unstable_cells_are_crosses_and_say_how_many_runs() -> None:
    lotes = metric_chart(ROWS, "mean_response_s", axis="phi")["data"][0]
    assert lotes["marker"]["symbol"] == ["circle", "x"]
    assert "1 of 5 runs unstable" in lotes["text"][1] and "unstable" not in lotes["text"][0]


def test_a_log_axis_draws_zero_at_its_floor_and_clips_bars_there() -> None:
    fig = metric_chart(ROWS, "mean_response_s", axis="phi", log_y=True)
    assert fig["layout"]["yaxis"]["type"] == "log"
    tetris = fig["data"][1]
    assert tetris["y"] == [MIN_LOG, 0.05]
    assert tetris["error_y"]["arrayminus"] == pytest.approx([0.0, 0.05 - MIN_LOG])  # never below the floor
    assert "values under 0.001 drawn at it" in fig["layout"]["annotations"][0]["text"]


def test_without_an_axis_it_is_one_bar_per_scheduler() -> None:
    fig = metric_chart([row({}, "greedy", 3.0, 1.0, 5.0), row({}, "fcfs", 1.0)], "max_queue_len", axis=None)
    assert [t["type"] for t in fig["data"]] == ["bar", "bar"] and [t["x"] for t in fig["data"]] == [
        ["greedy"],
        ["fcfs"],
    ]
    assert fig["data"][1]["error_y"]["array"] == [None]  # one seed: no interval


def test_a_second_axis_splits_the_lines() -> None:
    rows = [row({"phi": 0.0, "load": 0.9}, "lotes", 1.0), row({"phi": 0.0, "load": 0.95}, "lotes", 2.0)]
    assert [t["name"] for t in metric_chart(rows, "m", axis="phi")["data"]] == ["lotes (load=0.9)", "lotes (load=0.95)"]


def test_stacked_bars_are_wait_plus_run_per_scheduler_and_cluster() -> None:
    het = {"cluster": "ncbi-heterogeneous"}
    waits = [row(het, "fcfs", 10.0), row(het, "greedy2", 4.0)]
    completions = [row(het, "fcfs", 110.0, 100.0, 120.0), row(het, "greedy2", 84.0)]
    fig = stacked_chart(waits, completions)
    wait, run = fig["data"]
    assert fig["layout"]["barmode"] == "stack" and fig["layout"]["xaxis"]["type"] == "multicategory"
    assert wait["x"] == [["cluster=ncbi-heterogeneous"] * 2, ["fcfs", "greedy2"]]
    assert wait["y"] == [10.0, 4.0] and run["y"] == [100.0, 80.0]
    assert run["error_y"]["array"] == [10.0, None]
    (a, b) = stacked_table(waits, completions)
    assert (a["mean_wait_s"], a["mean_run_s"], a["mean_completion_s"]) == (10.0, 100.0, 110.0)
    assert b["point.cluster"] == "ncbi-heterogeneous" and b["scheduler"] == "greedy2"


def test_the_metric_table_is_the_chart_data_flat() -> None:
    t = metric_table(ROWS[:1], "mean_response_s")
    assert t == [
        {
            "point.phi": 0.0,
            "scheduler": "lotes",
            "metric": "mean_response_s",
            "runs": 5,
            "n": 5,
            "mean": 0.07,
            "sd": None,
            "ci95_low": 0.05,
            "ci95_high": 0.09,
            "min": 0.07,
            "max": 0.07,
            "unstable": 0,
            "ci95_clipped": False,
        }
    ]


# ---------------------------------------------------------------------------- issue 28: labels, colours, floors


def test_an_interval_below_zero_is_drawn_from_zero_for_a_metric_that_cannot_be_negative() -> None:
    # tetris at phi 0.015: mean 0.05, t-interval [-0.01, 0.11]; a wait cannot be negative.
    fig = metric_chart(ROWS, "mean_response_s", axis="phi")
    tetris = fig["data"][1]
    assert tetris["error_y"]["arrayminus"] == pytest.approx([0.0, 0.05])  # down to 0, not to -0.01
    assert tetris["error_y"]["array"] == pytest.approx([0.0, 0.06])
    assert fig["layout"]["yaxis"]["rangemode"] == "nonnegative"
    assert "cut at 0 where the t-interval reaches below it" in fig["layout"]["annotations"][0]["text"]
    assert "(t-interval; drawn from 0)" in tetris["text"][1]


def test_the_downloaded_chart_data_keeps_the_t_interval_and_says_it_was_clipped() -> None:
    (rec,) = metric_table(ROWS[3:], "mean_response_s")
    assert (rec["ci95_low"], rec["ci95_clipped"]) == (-0.01, True)


def test_a_metric_that_can_be_negative_keeps_its_interval_below_zero() -> None:
    fig = metric_chart([row({"phi": 0.0}, "lotes", 0.05, -0.01, 0.11)], "some_difference", axis="phi")
    assert fig["data"][0]["error_y"]["arrayminus"] == pytest.approx([0.06])
    assert fig["layout"]["yaxis"]["rangemode"] == "tozero"


def test_the_chart_names_the_metric_and_its_unit_never_its_key() -> None:
    fig = metric_chart(ROWS, "mean_response_s", axis="phi")
    assert fig["layout"]["yaxis"]["title"]["text"] == "Mean wait until start (s)"
    assert (
        fig["layout"]["title"]["text"]
        == "Mean wait until start against \u03a6 (phi: spread of the class mean requests)"
    )
    assert "mean_response_s" not in str(fig["layout"]) and "mean_response_s" not in fig["data"][0]["text"][0]
    assert "Mean wait until start 0.07 s over 5 seeds" in fig["data"][0]["text"][0]


def test_a_scheduler_has_its_own_colour_whatever_the_order_of_the_lines() -> None:
    from dashboard.common.chartkit import scheduler_colour

    one = metric_chart(ROWS, "mean_response_s", axis="phi")["data"]
    other = metric_chart(ROWS[::-1], "mean_response_s", axis="phi")["data"]
    colours = {t["name"]: t["line"]["color"] for t in one}
    assert colours == {t["name"]: t["line"]["color"] for t in other}
    assert colours == {"lotes": scheduler_colour("lotes"), "tetris": scheduler_colour("tetris")}
    assert colours["lotes"] != colours["tetris"]


def test_lines_of_one_scheduler_at_other_points_share_its_colour_and_differ_by_dash() -> None:
    rows = [row({"phi": 0.0, "load": 0.9}, "lotes", 1.0), row({"phi": 0.0, "load": 0.95}, "lotes", 2.0)]
    a, b = metric_chart(rows, "mean_response_s", axis="phi")["data"]
    assert a["line"]["color"] == b["line"]["color"] and a["line"]["dash"] != b["line"]["dash"]
