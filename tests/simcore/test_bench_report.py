"""simcore bench --save: the file the docs' speed table is made from, and that table."""

from __future__ import annotations

import json

import pytest

from simcore.bench.report import FORMAT, command, markdown, save
from simcore.bench.runs import BenchOptions

REPORT = {
    "results": [
        {
            "scenario": "google",
            "scheduler": "greedy",
            "engine": "compiled",
            "machines": 10000,
            "jobs": 307432,
            "jobs_per_s": 1437000.4,
            "jobs_per_cpu_s": 1500000.0,
            "compile_s": 0.25,
            "peak_rss_mb": 301.2,
            "status": "ok",
        },
        {"scenario": "trace", "scheduler": "mris", "status": "error", "error": "boom"},
        {
            "scenario": "staged",
            "scheduler": "staged",
            "label": "staged#1",
            "engine": "python",
            "machines": 100,
            "jobs": 10000,
            "jobs_per_s": 87000.0,
            "jobs_per_cpu_s": 90000.0,
            "compile_s": None,
            "peak_rss_mb": 200.0,
            "status": "ok",
            "scheduler_params": {"policy": "T2=Task-Duration(asc)"},
        },
    ],
    "load_average_before": [1.0, 0.5, 0.25],
    "load_average_after": [1.5, 0.75, 0.3],
    "cpu_count": 2,
    "python": "3.11.7",
    "explore": {"wall_s": 2.04, "individuals": 32},
}


def test_the_command_names_only_the_options_that_differ_from_the_defaults():
    assert command(BenchOptions()) == "simcore bench"
    assert command(BenchOptions(schedulers="greedy,tetris", hours=0.5, big=True)) == (
        "simcore bench --schedulers greedy,tetris --hours 0.5 --big"
    )


def test_save_then_markdown_gives_the_numbers_as_measured(tmp_path):
    path = save(REPORT, tmp_path / "bench" / "results.json", BenchOptions(scenarios="google"))
    doc = json.loads(path.read_text())
    assert doc["format"] == FORMAT and doc["command"] == "simcore bench --scenarios google"
    assert doc["results"] == REPORT["results"] and not list(tmp_path.rglob("*.tmp"))
    text = markdown(doc)
    assert f"Measured {doc['measured_at']} with `simcore bench --scenarios google`" in text
    assert "load average before 1.00, 0.50, 0.25, after 1.50, 0.75, 0.30" in text
    assert "| google | greedy | compiled | 10,000 | 307,432 | 1,437,000 | 1,500,000 | 0.2 | 301 | ok |" in text
    assert "| trace | mris | | | | | | | | error: boom |" in text
    assert "| staged | staged#1 | python | 100 | 10,000 | 87,000 | 90,000 |  | 200 | ok |" in text
    assert "- `staged#1`: `T2=Task-Duration(asc)`" in text
    assert "| wall_s | 2.04 |" in text and "| individuals | 32 |" in text


def test_a_file_of_another_layout_is_refused_by_name():
    with pytest.raises(ValueError, match="bench results of format 7; this code reads format 1"):
        markdown({**REPORT, "format": 7})
