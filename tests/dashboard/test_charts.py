"""Chart builders are pure functions: series dicts in, Plotly figure dicts out."""

from __future__ import annotations

from dashboard import charts

S1 = {
    "cdf": {"p": [0.0, 0.5, 1.0], "response_s": [0.0, 2.0, 40.0]},
    "per_day": {"day": [0, 1], "mean_response_s": [3.0, 0.0], "jobs": [10, 5]},
    "queue": {"t_s": [0.0, 3600.0, 7200.0], "queued": [0, 4, 1], "running": [0, 2, 2]},
    "utilization": {"t_s": [0.0, 3600.0, 7200.0], "cpu": [0.0, 0.5, 0.25], "mem": [0.0, 0.4, 0.2]},
}
S2 = {**S1, "cdf": {"p": [0.0, 1.0], "response_s": [1.0, 9.0]}}


def test_the_cdf_has_one_trace_per_run_on_a_log_axis_with_zero_waits_at_the_floor():
    fig = charts.response_cdf([("greedy", S1), ("lotes", S2)])
    assert [t["name"] for t in fig["data"]] == ["greedy", "lotes"]
    assert fig["layout"]["xaxis"]["type"] == "log"
    assert fig["data"][0]["x"] == [charts.MIN_LOG_S, 2.0, 40.0]
    assert fig["data"][0]["y"] == [0.0, 0.5, 1.0]
    assert fig["data"][0]["line"]["color"] != fig["data"][1]["line"]["color"]


def test_per_day_bars_are_grouped_with_days_counted_from_one():
    fig = charts.per_day_mean([("greedy", S1), ("lotes", S2)])
    assert fig["layout"]["barmode"] == "group" and fig["layout"]["yaxis"]["type"] == "log"
    assert fig["data"][0]["x"] == [1, 2] and fig["data"][0]["y"] == [3.0, charts.MIN_LOG_S]


def test_queue_and_utilisation_use_hours_and_one_trace_per_resource():
    q = charts.queue_length([("greedy", S1)])
    assert q["data"][0]["x"] == [0.0, 1.0, 2.0] and q["data"][0]["y"] == [0, 4, 1]
    u = charts.utilisation([("greedy", S1), ("lotes", S2)])
    assert [t["name"] for t in u["data"]] == ["greedy cpu", "greedy mem", "lotes cpu", "lotes mem"]
    assert u["data"][1]["line"]["dash"] != u["data"][0]["line"]["dash"]


def test_empty_series_give_empty_traces():
    empty = {
        "cdf": {"p": [], "response_s": []},
        "per_day": {"day": [], "mean_response_s": [], "jobs": []},
        "queue": {"t_s": [], "queued": [], "running": []},
        "utilization": {"t_s": []},
    }
    figs = charts.all_charts([("x", empty)])
    assert figs["chart-cdf"]["data"][0]["x"] == [] and figs["chart-util"]["data"] == []
