"""The chart building blocks (dashboard.common.chartkit): pure functions, hand-computed cases."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from dashboard.common import chartkit as kit


def test_a_short_series_is_not_downsampled():
    y = np.arange(10.0)
    out, i0, di = kit.downsample_extremes(y, 20)
    assert out.tolist() == y.tolist() and (i0, di) == (0.0, 1.0)


def test_downsampling_keeps_each_buckets_minimum_and_maximum_in_time_order():
    # 12 samples into 3 buckets of 4: [0 5 1 2] [3 -4 3 3] [9 1 1 0]
    y = np.array([0, 5, 1, 2, 3, -4, 3, 3, 9, 1, 1, 0], dtype=float)
    out, i0, di = kit.downsample_extremes(y, 6)
    assert out.tolist() == [0, 5, 3, -4, 9, 0]
    # Six points spread evenly over the twelve samples' index range 0..11.
    assert i0 == 0.0 and di == pytest.approx(11 / 5)


def test_downsampling_gives_nan_for_a_bucket_without_values():
    y = np.array([1, 2, 3, np.nan, np.nan, np.nan, 7, 8, 9], dtype=float)
    out, _, _ = kit.downsample_extremes(y, 6)  # buckets of 3: [1 2 3] [nan nan nan] [7 8 9]
    assert out[:2].tolist() == [1, 3] and np.isnan(out[2:4]).all() and out[4:].tolist() == [7, 9]


@given(
    st.lists(st.floats(-1e6, 1e6, allow_nan=False), min_size=1, max_size=400),
    st.integers(2, 60),
)
def test_downsampling_never_loses_the_extremes_or_exceeds_the_budget(values, budget):
    y = np.asarray(values)
    out, _, _ = kit.downsample_extremes(y, budget)
    assert len(out) == len(y) if len(y) <= budget else len(out) <= budget
    assert out.max() == y.max() and out.min() == y.min()


def test_seeds_aggregate_to_the_pointwise_mean_minimum_and_maximum():
    mean, lo, hi = kit.aggregate_seeds([np.array([1.0, 2.0, 3.0]), np.array([3.0, 2.0])])
    # the second seed has no third value: the third point is the first seed's alone
    assert mean.tolist() == [2.0, 2.0, 3.0]
    assert lo.tolist() == [1.0, 2.0, 3.0] and hi.tolist() == [3.0, 2.0, 3.0]


def test_curves_on_one_grid_keep_it():
    t = [0.0, 1.0, 2.0]
    grid, ys = kit.common_grid([(t, [1, 2, 3]), (t, [4, 5, 6])])
    assert grid.tolist() == t and [y.tolist() for y in ys] == [[1, 2, 3], [4, 5, 6]]


def test_curves_on_different_grids_are_interpolated_and_missing_outside_their_range():
    grid, ys = kit.common_grid([([0.0, 2.0, 4.0], [0, 2, 4]), ([0.0, 1.0, 2.0], [10, 20, 30])])
    assert grid.tolist() == [0.0, 2.0, 4.0]
    assert ys[0].tolist() == [0, 2, 4]
    assert ys[1][:2].tolist() == [10, 30] and math.isnan(ys[1][2])


def test_an_even_grid_is_recognised_and_an_uneven_one_is_not():
    assert kit.uniform_step([0.0, 1.5, 3.0, 4.5]) == (0.0, 1.5)
    assert kit.uniform_step([0.0, 1.0, 3.0]) is None


def test_compact_rounds_to_significant_digits_and_writes_null_for_nan():
    assert kit.compact([0.123456, 123456.7, float("nan"), float("inf")], 3) == [0.123, 123000.0, None, None]


def test_every_log_tick_is_labelled_with_its_value_and_unit():
    vals, text = kit.log_ticks(0.03, 40.0, "s")
    assert vals == [0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 20.0]
    assert text == ["0.05 s", "0.1 s", "0.2 s", "0.5 s", "1 s", "2 s", "5 s", "10 s", "20 s"]


def test_log_ticks_over_many_decades_are_one_a_decade_written_in_full():
    vals, text = kit.log_ticks(1e-5, 1e3)
    assert vals == [1e-5, 1e-4, 1e-3, 0.01, 0.1, 1.0, 10.0, 100.0, 1000.0]
    assert text[0] == "0.00001" and text[-1] == "1,000"


def test_the_legend_stands_in_its_own_column_right_of_the_plot():
    leg = kit.base_layout("t")["legend"]
    assert leg["orientation"] == "v" and leg["x"] > 1 and leg["xanchor"] == "left"


def test_a_hover_label_names_the_run_and_escapes_markup_in_user_names():
    tpl = kit.hover("<b>x</b> %{y}", "%{y:.1f} s")
    assert tpl.startswith("<b>&lt;b&gt;x&lt;/b&gt; %\u200b{y}</b><br>%{y:.1f} s")
    assert tpl.endswith("<extra></extra>")


def test_a_groups_seeds_become_a_band_and_a_mean_line_for_any_x():
    lo, hi, mean = kit.mean_band_traces("lotes", 1, [0.0, 0.006], [[1.0, 4.0], [3.0, 8.0]], "%{y:.2f} s")
    assert lo["y"] == [1.0, 4.0] and hi["y"] == [3.0, 8.0] and mean["y"] == [2.0, 6.0]
    assert hi["fill"] == "tonexty" and lo["showlegend"] is False and mean["line"]["color"] == kit.colour(1)
    assert mean["hovertemplate"].startswith("<b>lotes, mean of 2 seeds</b>")


def test_a_run_without_the_series_gives_no_curve_on_a_shared_grid() -> None:
    # Runs sample from their first arrival (issue 17), so grids differ; a run whose cluster lacks the
    # resource has the times but no values.
    grid, ys = kit.common_grid([([1.0, 2.0, 3.0], [1, 2, 3]), ([0.0, 1.5, 3.0], [])])
    assert grid.tolist() == [0.0, 1.5, 3.0]
    assert np.isnan(ys[1]).all()
