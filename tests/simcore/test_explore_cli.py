"""``simcore explore``: progress lines, the JSON summary, the tables, the same results whatever --workers, bad input."""

from __future__ import annotations

import csv
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from simcore.cli import main

SIMCORE = Path(sys.executable).with_name("simcore")
SMALL = ["--cluster", "dse-2020", "--machines", "8", "--workload", "workflows-short-long", "--hours", "0.25"]


def _run(capsys: Any, *args: str) -> tuple[dict[str, Any], list[str]]:
    assert main(["explore", *SMALL, *args]) == 0
    out, err = capsys.readouterr()
    return json.loads(out.strip().splitlines()[-1]), err.strip().splitlines()


def test_it_prints_one_progress_line_per_generation_and_a_summary(capsys: Any) -> None:
    summary, lines = _run(capsys, "--population", "6", "--generations", "3", "--seed", "1")
    assert [ln.split(":")[0] for ln in lines] == [f"[explore] generation {g}/3" for g in (1, 2, 3)]
    assert summary["generations_run"] == 3 and summary["stop"] == "generations"
    assert summary["elite"] == summary["elite_sequence"][-1]["elite"]
    assert summary["elite_fitness"] == summary["elite_metrics"]["trt"]
    assert set(summary["elite_stages"]) == {"J1", "J2", "J3", "T1", "T2", "R5"}
    assert (summary["metric"], summary["population"], summary["seed"], summary["sim_seed"]) == ("trt", 6, 1, 1)
    assert summary["machines"] == 8 and summary["tasks"] > 0 and summary["version"]


def test_out_writes_every_generations_individuals_and_the_elites(capsys: Any, tmp_path: Path) -> None:
    summary, _ = _run(capsys, "--population", "5", "--generations", "2", "--metric", "jwt", "--out", str(tmp_path))
    rows = list(csv.DictReader((tmp_path / "generations.csv").open()))
    assert len(rows) == 10 and {r["generation"] for r in rows} == {"0", "1"}
    elites = [r for r in rows if r["elite"] == "1"]
    assert [(r["policy"], float(r["fitness"])) for r in elites] == [
        (e["elite"], e["fitness"]) for e in summary["elite_sequence"]
    ]
    assert all(float(r["fitness"]) == float(r["jwt"]) for r in rows if r["unfinished"] == "0")
    per_gen = list(csv.DictReader((tmp_path / "elites.csv").open()))
    assert [r["policy"] for r in per_gen] == [e["elite"] for e in summary["elite_sequence"]]
    data = json.loads((tmp_path / "search.json").read_text())
    assert data["summary"]["elite"] == summary["elite"] and len(data["generations"]) == 2


def test_the_same_seed_gives_the_same_search_whatever_the_workers(capsys: Any) -> None:
    one, _ = _run(capsys, "--population", "6", "--generations", "3", "--seed", "7", "--workers", "1")
    two, _ = _run(capsys, "--population", "6", "--generations", "3", "--seed", "7", "--workers", "2")
    assert one["elite_sequence"] == two["elite_sequence"]
    assert one["explanations"] == two["explanations"] and one["simulations"] == two["simulations"]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--metric", "latency"], "invalid choice: 'latency'"),
        (["--population", "1"], "population must be a whole number from 2"),
        (["--generations", "0"], "expected a positive integer, got '0'"),
        (["--cluster", "no-such-cluster"], "unknown cluster 'no-such-cluster'"),
        (["--workload", "missing-trace.json"], "unknown workload 'missing-trace.json'"),
        (["--phi", "0.1"], "--phi does not apply"),
        (["--out", "/dev/null"], "is a file"),
    ],
)
def test_bad_input_is_one_line_and_exit_status_2(args: list[str], message: str) -> None:
    proc = subprocess.run([str(SIMCORE), "explore", *SMALL, *args], capture_output=True, text=True)
    assert proc.returncode == 2
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0] and "Traceback" not in proc.stderr
