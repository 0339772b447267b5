"""The one grid grammar (simcore.sweep_grammar): ranges, preset axes, and the data form of axes.

The command line, the dashboard's form and its API all read ``--vary`` texts
through these functions; tests/dashboard/test_sweeps.py checks that they
agree. Here: what the grammar itself accepts and refuses.
"""

from __future__ import annotations

import pytest

from simcore.errors import ParameterError
from simcore.sweep_grammar import Axis, axes_from_values, parse_axes, parse_axis

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
