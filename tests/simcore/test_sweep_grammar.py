"""The one grid grammar (simcore.sweep.grammar): ranges, preset axes, and the data form of axes.

The command line, the dashboard's form and its API all read ``--vary`` texts
through these functions; tests/dashboard/test_sweeps.py checks that they
agree. Here: what the grammar itself accepts and refuses.
"""

from __future__ import annotations

import tracemalloc

import pytest

from simcore.core.errors import ParameterError
from simcore.sweep.grammar import (
    Axis,
    axes_from_values,
    axis_length,
    check_grid_size,
    parse_axes,
    parse_axis,
    parse_seeds,
)

PHI = ("google-balanced", "lotes-phi", ["lotes", "tetris"])


def test_an_arithmetic_range_includes_both_ends_without_float_drift() -> None:
    ax = parse_axis("phi=0:0.015:0.003", *PHI)
    assert ax == Axis("phi", (0.0, 0.003, 0.006, 0.009, 0.012, 0.015))


def test_a_factor_range_is_log_spaced() -> None:
    assert parse_axis("hours=1:100:x10", *PHI).values == (1.0, 10.0, 100.0)
    assert parse_axis("load=0.25:1:*2", *PHI).values == (0.25, 0.5, 1.0)


def test_ranges_and_values_mix_and_integer_parameters_stay_integers() -> None:
    ax = parse_axis("machines-per-config=1:5:2,10", *PHI)
    assert ax.values == (1, 3, 5, 10) and all(type(v) is int for v in ax.values)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("phi=0.015:0:0.003", "range '0.015:0:0.003' goes backwards"),
        ("phi=0:0.015:0", "STEP must be positive"),
        ("phi=0:0.015", "must be START:STOP:STEP or START:STOP:xFACTOR"),
        ("phi=0:1:0.0000001", "has 10,000,001 values; at most 1,000 an axis"),
        ("hours=0:10:x2", "a factor range needs START > 0 and FACTOR > 1"),
        ("machines-per-config=1:2:0.5", "gives values that are not integers"),
        ("phi=0:0.03:0.01", "workload 'lotes-phi' parameter 'phi' must be at most 0.025, got 0.03"),
        ("phi=0:a:0.1", "range '0:a:0.1': expected a number, got 'a'"),
        ("phi=0,0:0.003:0.003", "value '0.0' is listed twice"),
    ],
)
def test_bad_ranges_name_the_problem(text: str, says: str) -> None:
    with pytest.raises(ParameterError, match=None) as e:
        parse_axis(text, *PHI)
    assert says in str(e.value)


def test_a_choice_parameter_takes_no_range_but_its_values() -> None:
    ax = parse_axis("k-sets=vertex,interior", *PHI)
    assert ax == Axis("k_sets", ("vertex", "interior"))


def test_the_cluster_preset_can_be_an_axis_and_its_parameters_then_apply() -> None:
    # machine_type belongs to the homogeneous cluster only: valid once the grid contains it, whatever the order.
    axes = parse_axes(
        ["machine-type=type6", "cluster=ncbi-heterogeneous,ncbi-homogeneous"],
        "ncbi-heterogeneous",
        "ncbi-blast",
        ["fcfs"],
    )
    assert axes == [Axis("machine_type", ("type6",)), Axis("cluster", ("ncbi-heterogeneous", "ncbi-homogeneous"))]
    with pytest.raises(ParameterError, match="--vary machine-type does not apply"):
        parse_axes(["machine-type=type6"], "ncbi-heterogeneous", "ncbi-blast", ["fcfs"])


def test_an_unknown_preset_in_an_axis_lists_the_valid_ones() -> None:
    with pytest.raises(ParameterError) as e:
        parse_axis("cluster=google-2011,nope", *PHI)
    assert "--vary cluster:" in str(e.value) and "'nope'" in str(e.value) and "google-balanced" in str(e.value)


def test_axes_given_as_data_are_checked_like_text() -> None:
    text = parse_axes(["phi=0:0.006:0.003", "load=0.9,0.95"], *PHI)
    data = axes_from_values(
        [{"name": "phi", "values": [0, 0.003, 0.006]}, {"name": "load", "values": [0.9, 0.95]}], *PHI
    )
    assert data == text
    with pytest.raises(ParameterError, match="parameter 'phi' must be at most 0.025"):
        axes_from_values([{"name": "phi", "values": [0.5]}], *PHI)
    with pytest.raises(ParameterError, match="--vary phi is given twice"):
        axes_from_values([{"name": "phi", "values": [0.0]}, {"name": "phi", "values": [0.003]}], *PHI)


def test_an_axis_prints_back_in_the_grammar() -> None:
    for text in ("phi=0.0,0.003", "machines-per-config=1,2", "cluster=ncbi-heterogeneous,ncbi-homogeneous"):
        grid = ("ncbi-heterogeneous", "ncbi-blast", ["fcfs"]) if text.startswith("cluster") else PHI
        ax = parse_axis(text, *grid)
        assert ax.text() == text and parse_axis(ax.text(), *grid) == ax


# -- the grid's size, from the axes' lengths ---------------------------------------------------------------------

#: Issue 25's grid: three axes of 1,000 values each pass their own bound, but the grid is 10^9 runs.
BILLION = ["load=0.001:1:0.001", "hours=0.001:1:0.001", "machines-per-config=1:1000:1"]
BILLION_SAYS = (
    "the grid has 1,000,000,000 runs (3 axes of 1,000, 1,000 and 1,000 values x 1 scheduler x 1 seed); "
    "at most 200 (setting SIMCORE_MAX_RUNS)"
)


def test_an_axis_length_is_counted_by_arithmetic() -> None:
    assert axis_length("load=0.001:1:0.001") == 1000
    assert axis_length("hours=1:100:x10,500") == 4
    assert axis_length("phi=0:1:1e-12") == 10**12 + 1  # counted, not built
    assert axis_length("cluster=a,b,c") == 3


def test_a_billion_run_grid_is_refused_naming_its_size_and_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SIMCORE_MAX_RUNS", raising=False)
    with pytest.raises(ParameterError) as e:
        parse_axes(BILLION, "google-balanced", "google-like", ["greedy"])
    assert str(e.value) == BILLION_SAYS


def test_a_billion_run_grid_is_refused_without_building_its_lists() -> None:
    # A memory bound, not a timing: expanding even one axis' points as dicts would take megabytes.
    tracemalloc.start()
    try:
        with pytest.raises(ParameterError, match="1,000,000,000 runs"):
            parse_axes(BILLION, "google-balanced", "google-like", ["greedy"], max_runs=200)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 256 * 1024


def test_an_axis_over_its_own_bound_is_refused_before_it_is_expanded() -> None:
    tracemalloc.start()
    try:
        with pytest.raises(ParameterError) as e:
            parse_axes(["phi=0:0.025:1e-15"], *PHI)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert str(e.value) == "--vary phi has 25,000,000,000,001 values; at most 1,000 an axis"
    assert peak < 256 * 1024


def test_the_grid_counts_schedulers_and_seeds() -> None:
    assert check_grid_size([6], 3, 5, max_runs=90) == 90
    with pytest.raises(ParameterError) as e:
        check_grid_size([6], 3, 6, max_runs=90)
    assert str(e.value) == (
        "the grid has 108 runs (1 axis of 6 values x 3 schedulers x 6 seeds); at most 90 (setting SIMCORE_MAX_RUNS)"
    )


def test_a_grid_without_axes_is_schedulers_times_seeds() -> None:
    with pytest.raises(ParameterError) as e:
        parse_axes([], *PHI, seeds=50, max_runs=99)
    assert str(e.value) == "the grid has 100 runs (2 schedulers x 50 seeds); at most 99 (setting SIMCORE_MAX_RUNS)"


def test_the_limit_is_the_platforms_setting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_RUNS", "11")
    assert len(parse_axes(["load=0.1:0.5:0.1"], *PHI, seeds=1)) == 1  # 5 points x 2 schedulers: 10 runs
    with pytest.raises(ParameterError, match=r"at most 11 \(setting SIMCORE_MAX_RUNS\)"):
        parse_axes(["load=0.1:0.6:0.1"], *PHI, seeds=1)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("18446744073709551616", "--seeds: seed 18446744073709551616 is outside 0 to 2^32-1 (4,294,967,295)"),
        ("0-4294967296", "--seeds: seed 4294967296 is outside 0 to 2^32-1 (4,294,967,295)"),
        ("9" * 5000, "--seeds: seed 99999999999999999999... is outside 0 to 2^32-1 (4,294,967,295)"),
        (",".join(map(str, range(10_000))), "--seeds: more than 50 seeds, the most a grid may have"),
    ],
)
def test_seeds_are_held_to_the_platforms_bounds(text: str, says: str) -> None:
    with pytest.raises(ParameterError) as e:
        parse_seeds(text)
    assert str(e.value) == says


def test_the_largest_seed_is_accepted() -> None:
    assert parse_seeds("4294967295") == [2**32 - 1]
