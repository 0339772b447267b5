"""`simcore packing`: JSON summary, CSV series, and one-line exit-2 errors on bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simcore.cli import main

RUN = ["--cluster", "google-balanced", "--workload", "google-like", "--scheduler", "greedy", "--hours", "0.01"]


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_it_prints_a_json_summary_and_writes_the_series(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    out_file = tmp_path / "c.csv"
    code, out, _ = _run(
        capsys,
        "packing",
        "compaction",
        *RUN,
        "--time",
        "20",
        "--tau",
        "0,0.01",
        "--trials",
        "3",
        "--out",
        str(out_file),
    )
    assert code == 0
    summary = json.loads(out)
    assert [r["tau"] for r in summary["compaction"]] == [0.0, 0.01]
    assert len(summary["compaction"][0]["trials"]) == 3
    lines = out_file.read_text().splitlines()
    assert lines[0].startswith("tau,") and len(lines) == 3


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["compaction", *RUN, "--tau", "1.0"], "tau"),
        (["compaction", *RUN, "--tau", "-0.1"], "tau"),
        (["holes", *RUN, "--units", "0"], "unit size"),
        (["compaction", *RUN, "--ordering", "random"], "valid orderings"),
        (["utilisation", *RUN, "--time", "20", "--placed-by", "random"], "random"),
        (["utilisation"], "snapshot source"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    code, out, err = _run(capsys, "packing", *args)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and message in err


def test_an_empty_snapshot_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    # At time 0 nothing has arrived yet in a Poisson stream.
    code, _, err = _run(capsys, "packing", "utilisation", *RUN, "--time", "0", "--placed-by", "as-is")
    assert code == 2
    assert "no tasks" in err and len(err.strip().splitlines()) == 1
