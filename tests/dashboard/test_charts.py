"""Chart builders are pure functions: series dicts in, Plotly figure dicts out (no HTTP, no database)."""

from __future__ import annotations

import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from dashboard.common import chartkit
from dashboard.experiments import charts
from dashboard.experiments.charts import ChartRun
from simcore.core.metrics import CCDF_GRID_S, ccdf

DAY = 86_400.0


def series(waits, *, per_day=None, queue=None, cpu=None, mem=None, t=None):
    """A run's stored series (as simcore.core.metrics.series writes them) with the given numbers."""
    w = np.sort(np.asarray(waits, dtype=float))
    t = [0.0, 3600.0, 7200.0] if t is None else t
    return {
        "cdf": {"p": np.linspace(0, 1, len(w)).tolist(), "response_s": w.tolist()},
        "ccdf": ccdf(w),
        "per_day": per_day or {"day": [0], "mean_response_s": [float(w.mean())], "jobs": [len(w)]},
        "queue": {"t_s": t, "queued": queue or [0] * len(t), "running": [0] * len(t)},
        "utilization": {"t_s": t, "cpu": cpu or [0.5] * len(t), "mem": mem or [0.25] * len(t)},
    }


def run(group, seed, s, **summary):
    return ChartRun(group=group, seed=seed, series=s, summary={"hours": 2.0, **summary})


# waits: half of greedy seed 0's jobs start at once, a quarter wait 2 s, a quarter 40 s.
G0 = series([0, 0, 2, 40], queue=[0, 4, 2], cpu=[0.0, 0.5, 0.25])
G1 = series([0, 0, 0, 8], queue=[0, 2, 6], cpu=[0.2, 0.7, 0.25])
L0 = series([0, 1, 1, 1])


def test_the_response_chart_is_log_log_with_the_zero_waits_counted_in_the_legend():
    fig = charts.response_ccdf([run("greedy", 0, G0), run("lotes", 0, L0)])
    assert fig["layout"]["xaxis"]["type"] == "log" and fig["layout"]["yaxis"]["type"] == "log"
    assert [t["name"] for t in fig["data"]] == ["greedy \u00b7 50.0% waited 0 s", "lotes \u00b7 25.0% waited 0 s"]
    note = fig["layout"]["meta"]["notes"][0]
    assert "greedy: 50.0% (2 of 4 jobs)" in note and "lotes: 25.0% (1 of 4 jobs)" in note


def test_the_response_chart_plots_the_fraction_waiting_longer_with_zero_as_a_gap():
    fig = charts.response_ccdf([run("greedy", 0, G0)])
    t = fig["data"][0]
    x, y = t["x"], t["y"]
    # longer than 1 ms: 2 of 4 jobs; longer than 10 s: 1 of 4; longer than 40 s: none (null on a log axis)
    assert x[0] == 0.001 and y[0] == 0.5
    assert y[x.index(10.0)] == 0.25
    assert y[-1] is None and x[-1] == pytest.approx(CCDF_GRID_S[x.index(10.0) + 7], rel=1e-4)


def test_the_cdf_is_one_choice_away_and_complements_the_fractions():
    fig = charts.response_ccdf([run("greedy", 0, G0)])
    show = fig["layout"]["meta"]["controls"][0]
    assert [o["label"] for o in show["options"]][1].startswith("CDF")
    cdf = show["options"][1]["update"]
    assert cdf["layout"]["yaxis.type"] == "linear"
    assert cdf["data"]["y"][0][0] == 0.5 and cdf["data"]["y"][0][-1] == 1.0
    assert "at most" in cdf["data"]["hovertemplate"][0]


def test_seeds_of_a_scheduler_become_one_mean_line_and_band_with_each_seed_one_choice_away():
    fig = charts.response_ccdf([run("greedy", 0, G0), run("greedy", 1, G1), run("lotes", 0, L0)])
    roles = [(t["legendgroup"], t.get("fill"), t["visible"], t["showlegend"]) for t in fig["data"]]
    # greedy: band (lower edge, filled upper edge), mean, two hidden seeds; lotes: its single run
    assert roles == [
        ("greedy", None, True, False),
        ("greedy", "tonexty", True, False),
        ("greedy", None, True, True),
        ("greedy", None, False, False),
        ("greedy", None, False, False),
        ("lotes", None, True, True),
    ]
    seeds = next(c for c in fig["layout"]["meta"]["controls"] if c["label"] == "Seeds")
    each = seeds["options"][1]["update"]["data"]
    assert each["visible"] == [False, False, False, True, True, True]
    assert each["showlegend"] == [False, False, False, True, False, True]
    mean = fig["data"][2]
    # at 1 ms: seed 0 has 2 of 4 jobs waiting longer, seed 1 has 1 of 4 -> mean 0.375, band 0.25..0.5
    assert mean["y"][0] == 0.375 and fig["data"][0]["y"][0] == 0.25 and fig["data"][1]["y"][0] == 0.5


def test_results_stored_before_the_ccdf_are_drawn_from_their_cdf():
    old = {k: v for k, v in G0.items() if k != "ccdf"}
    fig = charts.response_ccdf([run("greedy", 0, old)])
    t = fig["data"][0]
    assert t["y"][0] == pytest.approx(1 - 1 / 3, rel=1e-3)  # the 4-point CDF's p after the last 0
    assert "not recorded" in fig["layout"]["meta"]["notes"][0]


def test_hover_labels_name_the_scheduler_and_seed_and_give_units():
    fig = charts.response_ccdf([run("greedy", 1, G0)])
    assert fig["data"][0]["hovertemplate"].startswith("<b>greedy, seed 1</b><br>")
    assert "waited longer than %{x:.3~g} s" in fig["data"][0]["hovertemplate"]
    q = charts.queue_length([run("greedy", 1, G0)])
    assert "jobs waiting" in q["data"][0]["hovertemplate"] and "%{x:.2f} h" in q["data"][0]["hovertemplate"]


def test_per_day_draws_lines_with_markers_on_a_labelled_log_axis():
    s = series([1.0], per_day={"day": [0, 1], "mean_response_s": [0.45, 0.62], "jobs": [5, 5]})
    fig = charts.per_day_mean([run("tetris", 0, s, hours=48.0)])
    t = fig["data"][0]
    assert t["type"] == "scatter" and t["mode"] == "lines+markers"
    assert t["x"] == [1, 2] and t["y"] == [0.45, 0.62]  # one scheduler: no dodge
    y = fig["layout"]["yaxis"]
    assert y["type"] == "log" and "0.5 s" in y["ticktext"] and len(y["tickvals"]) == len(y["ticktext"])


def test_a_day_with_mean_zero_sits_on_a_zero_line_under_the_log_decades():
    s = series([1.0], per_day={"day": [0, 1], "mean_response_s": [0.5, 0.0], "jobs": [5, 5]})
    fig = charts.per_day_mean([run("tetris", 0, s, hours=48.0)])
    y = fig["layout"]["yaxis"]
    zero_at = y["tickvals"][y["ticktext"].index("0 s")]
    assert fig["data"][0]["y"] == [0.5, zero_at] and zero_at < 0.1
    assert fig["data"][0]["customdata"][1][0] == "0 s"  # the hover says 0 s, not the drawing position
    assert any("0 s line" in n for n in fig["layout"]["meta"]["notes"])


def test_a_partial_day_is_flagged_on_its_tick_marker_and_in_a_note():
    s = series([1.0], per_day={"day": [0, 1], "mean_response_s": [0.5, 0.6], "jobs": [5, 5]})
    fig = charts.per_day_mean([run("tetris", 0, s, hours=25.0)])
    assert fig["layout"]["xaxis"]["ticktext"] == ["1", "2*"]
    assert fig["data"][0]["marker"]["symbol"] == ["circle", "circle-open"]
    assert any("day 2: 1.0 h" in n for n in fig["layout"]["meta"]["notes"])


def test_partial_days_follow_each_groups_own_arrival_window():
    s = series([1.0], per_day={"day": [0, 1], "mean_response_s": [0.5, 0.6], "jobs": [5, 5]})
    fig = charts.per_day_mean([run("#1 greedy", 0, s, hours=25.0), run("#2 greedy", 0, s, hours=48.0)])
    assert [t["marker"]["symbol"] for t in fig["data"]] == [["circle", "circle-open"], ["circle", "circle"]]
    assert fig["layout"]["xaxis"]["ticktext"] == ["1", "2*"]


def test_per_day_error_bars_span_the_seeds():
    a = series([1.0], per_day={"day": [0], "mean_response_s": [1.0], "jobs": [5]})
    b = series([1.0], per_day={"day": [0], "mean_response_s": [3.0], "jobs": [5]})
    fig = charts.per_day_mean([run("greedy", 0, a), run("greedy", 1, b)])
    t = fig["data"][0]
    assert t["y"] == [2.0] and t["error_y"]["array"] == [1.0] and t["error_y"]["arrayminus"] == [1.0]


def test_queue_seeds_aggregate_to_a_mean_line_and_a_min_max_band():
    fig = charts.queue_length([run("greedy", 0, G0), run("greedy", 1, G1)])
    lo, hi, mean = fig["data"][:3]
    assert lo["y"] == [0, 2, 2] and hi["y"] == [0, 4, 6] and mean["y"] == [0, 3, 4]
    assert (mean["x0"], mean["dx"]) == (0.0, 1.0)  # hours, as an even grid: no x array sent
    assert "x" not in mean


def test_utilisation_has_one_panel_per_resource_in_percent():
    fig = charts.utilisation([run("greedy", 0, G0), run("lotes", 0, L0)])
    lay = fig["layout"]
    assert lay["yaxis"]["title"]["text"] == "cpu in use (%)" and lay["yaxis2"]["title"]["text"] == "mem in use (%)"
    assert [(t["legendgroup"], t["yaxis"], t["showlegend"]) for t in fig["data"]] == [
        ("greedy", "y", True),
        ("lotes", "y", True),
        ("greedy", "y2", False),
        ("lotes", "y2", False),
    ]
    assert fig["data"][0]["y"] == [0.0, 50.0, 25.0]
    # one colour per scheduler on every panel
    assert fig["data"][0]["line"]["color"] == fig["data"][2]["line"]["color"] != fig["data"][1]["line"]["color"]


def test_long_series_are_cut_to_what_a_chart_shows_keeping_their_peaks():
    t = np.linspace(0, 10 * 3600, 2000).tolist()
    q = [1.0] * 2000
    q[1234] = 500.0
    fig = charts.queue_length([run("greedy", 0, series([0], t=t, queue=q))])
    y = fig["data"][0]["y"]
    assert len(y) <= chartkit.LINE_POINTS and max(y) == 500.0
    t0 = fig["data"][0]
    assert t0["x0"] == 0.0 and t0["x0"] + t0["dx"] * (len(y) - 1) == pytest.approx(10.0)


def test_smoothing_offers_windows_within_the_run_and_preselects_one_for_long_runs():
    t = np.linspace(0, 25 * 3600, 2000).tolist()
    fig = charts.queue_length([run("greedy", 0, series([0], t=t, queue=[1.0] * 2000))])
    smooth = next(c for c in fig["layout"]["meta"]["controls"] if c["label"].startswith("Smoothing"))
    # 2,000 samples of 25 h are drawn as about 600 points, 2.5 min apart: 5 min would smooth nothing
    assert [o["label"] for o in smooth["options"]] == ["off", "15 min", "1 h", "3 h", "6 h"]
    assert [o["label"] for o in smooth["options"] if o.get("selected")] == ["15 min"]
    assert all(t["meta"] == {"smooth": 1} for t in fig["data"])


def test_the_profile_chart_stacks_mean_run_and_wait_over_seeds_with_error_bars():
    s = series([0])
    runs_ = [
        run("fcfs", 0, s, mean_completion_s=10.0, mean_run_s=8.0),
        run("fcfs", 1, s, mean_completion_s=14.0, mean_run_s=10.0),
        run("greedy1", 0, s, mean_completion_s=9.0, mean_run_s=8.5),
        run("greedy1", 1, s, mean_completion_s=9.0, mean_run_s=8.5),
    ]
    fig = charts.completion_split(runs_)
    run_t, wait_t = fig["data"]
    assert fig["layout"]["barmode"] == "stack"
    assert run_t["y"] == [9.0, 8.5] and wait_t["y"] == [3.0, 0.5]  # run + wait = mean completion 12, 9
    assert run_t["error_y"]["array"] == [1.0, 0.0] and wait_t["error_y"]["arrayminus"] == [2.0, 0.0]
    assert fig["layout"]["xaxis"]["ticktext"] == ["fcfs", "greedy1<br>-25.0% vs fcfs"]


def test_empty_series_give_empty_charts():
    empty = {
        "cdf": {"p": [], "response_s": []},
        "ccdf": {"response_s": [], "longer": [], "zero_waits": 0, "started": 0},
        "per_day": {"day": [], "mean_response_s": [], "jobs": []},
        "queue": {"t_s": [], "queued": [], "running": []},
        "utilization": {"t_s": []},
    }
    figs = charts.all_charts([run("x", 0, empty)])
    assert figs["chart-cdf"]["data"] == [] and figs["chart-util"]["data"] == []
    assert figs["chart-per-day"]["data"] == [] and figs["chart-queue"]["data"][0]["y"] == []


@pytest.mark.parametrize("profile", [False, True])
def test_every_figure_is_valid_plotly_and_keeps_its_legend_right_of_the_plot(profile):
    runs_ = [
        run("greedy", 0, G0, mean_completion_s=3.0, mean_run_s=2.0),
        run("greedy", 1, G1, mean_completion_s=3.0, mean_run_s=2.0),
        run("lotes", 0, L0, mean_completion_s=2.0, mean_run_s=2.0),
    ]
    for name, fig in charts.all_charts(runs_, profile=profile).items():
        go.Figure(fig)  # raises on any attribute Plotly does not know
        json.dumps(fig, allow_nan=False)  # NaN is not JSON: the page's JSON.parse would fail
        assert fig["layout"]["legend"]["x"] > 1, name
        assert not any(k.startswith("_") for t in fig["data"] for k in t), name
        assert math.isfinite(fig["layout"]["height"])


def test_the_page_embeds_the_figures_as_compact_json_that_cannot_close_its_script_element():
    from dashboard.templatetags.simfmt import json_data

    html = str(json_data({"name": "</script><b>&"}, "charts-data"))
    assert html == (
        '<script id="charts-data" type="application/json">{"name":"\\u003c/script\\u003e\\u003cb\\u003e\\u0026"}'
        "</script>"
    )


# ---------------------------------------------------------------------------- issue 28


def test_a_run_shorter_than_a_day_draws_its_schedulers_around_one_day():
    # Three schedulers, one day of 2 h: the dodged markers sit within a tenth of a day of the one tick, and the
    # axis spans a whole day around it (Plotly's own range spanned only the markers: they read as three days).
    runs = [run(name, 0, series([1.0, 2.0])) for name in ("greedy", "lotes", "tetris")]
    fig = charts.per_day_mean(runs)
    xs = [x for t in fig["data"] for x in t["x"]]
    assert len(xs) == 3 and all(abs(x - 1.0) <= 0.1 for x in xs)
    assert fig["layout"]["xaxis"]["range"] == [0.5, 1.5] and fig["layout"]["xaxis"]["tickvals"] == [1]


def test_a_scheduler_has_one_colour_on_every_chart_whatever_else_is_drawn():
    alone = charts.all_charts([run("lotes", 0, L0)])
    mixed = charts.all_charts([run("greedy", 0, G0), run("tetris", 0, G1), run("lotes", 0, L0)])
    lotes = chartkit.scheduler_colour("lotes")

    def colours(figs, name):
        return {t["line"]["color"] for f in figs.values() for t in f["data"] if t.get("legendgroup") == name}

    assert colours(alone, "lotes") == colours(mixed, "lotes") == {lotes}
    assert colours(mixed, "greedy") == {chartkit.scheduler_colour("greedy")} != {lotes}


def test_the_compare_pages_groups_take_their_schedulers_colour_and_differ_by_dash():
    runs = [
        ChartRun("#1 greedy", 0, G0, {"hours": 2.0}, scheduler="greedy"),
        ChartRun("#2 greedy", 0, G1, {"hours": 2.0}, scheduler="greedy"),
    ]
    a, b = charts.queue_length(runs)["data"]
    assert a["line"]["color"] == b["line"]["color"] == chartkit.scheduler_colour("greedy")
    assert a["line"]["dash"] != b["line"]["dash"]


def test_an_unknown_scheduler_keeps_one_colour_that_no_built_in_scheduler_has():
    c = chartkit.scheduler_colour("my-plugin")
    assert c == chartkit.scheduler_colour("my-plugin") and c not in chartkit.SCHEDULER_COLOURS.values()


def test_the_wait_charts_say_wait_until_start():
    figs = charts.all_charts([run("greedy", 0, G0)])
    cdf, per_day = figs["chart-cdf"]["layout"], figs["chart-per-day"]["layout"]
    assert cdf["title"]["text"] == "Wait until start: fraction of jobs waiting longer than x"
    assert cdf["xaxis"]["title"]["text"] == "wait until start x (s, log)"
    assert per_day["title"]["text"] == "Mean wait until start per day"
    assert per_day["yaxis"]["title"]["text"].startswith("mean wait until start (s")
    assert "esponse" not in json.dumps([cdf["title"], per_day["title"], per_day["yaxis"]["title"]])
