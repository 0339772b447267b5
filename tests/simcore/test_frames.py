"""simcore.frames: the DataFrames hold exactly what ``simcore run --out`` writes, labelled by run."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest

from simcore import api, frames

pd = pytest.importorskip("pandas")


def _run(scheduler: str, seed: int, **kw: object) -> api.RunOutcome:
    spec = api.RunSpec(
        cluster="google-balanced",
        workload="google-like",
        scheduler=scheduler,
        seed=seed,
        hours=0.05,
        load=1.3,  # overloaded: some jobs wait and some never start, so the missing values are exercised
        cluster_params={"machines_per_config": 1},
        engine="python",
        **kw,  # type: ignore[arg-type]
    )
    return api.run(spec)


@pytest.fixture(scope="module")
def runs() -> list[api.RunOutcome]:
    return [_run("greedy", 0), _run("fcfs", 0), _run("greedy", 1)]


def test_jobs_frame_equals_the_jobs_csv_row_for_row(runs, tmp_path):
    run = runs[0]
    run.write(tmp_path)
    with (tmp_path / "jobs.csv").open() as f:
        rows = list(csv.DictReader(f))
    frame = frames.jobs(run)
    assert len(frame) == len(rows) == run.summary["jobs"]
    assert list(frame.columns) == ["scheduler", "seed", "cluster", "workload", "load", *rows[0].keys()]
    unstarted = 0
    for (_, got), want in zip(frame.iterrows(), rows, strict=True):
        for col, text in want.items():
            value = got[col]
            if text == "":
                unstarted += col == "machine"
                assert value is pd.NA or (isinstance(value, float) and math.isnan(value)), (col, value)
            else:
                assert float(value) == float(text), (col, value, text)
    assert unstarted > 0, "the scenario should leave some jobs unstarted (overload)"
    assert str(frame["machine"].dtype) == "Int64" and str(frame["config"].dtype) == "Int64"


def test_runs_are_stacked_and_labelled(runs):
    frame = frames.jobs(runs)
    assert len(frame) == sum(r.summary["jobs"] for r in runs)
    counts = frame.groupby(["scheduler", "seed"]).size().to_dict()
    assert counts == {(r.summary["scheduler"], r.summary["seed"]): r.summary["jobs"] for r in runs}
    assert set(frame["cluster"]) == {"google-balanced"} and set(frame["load"]) == {1.3}
    # The same seed gives both schedulers the same jobs (seeding rule): identical submit times.
    greedy0 = frame[(frame.scheduler == "greedy") & (frame.seed == 0)]["submit_s"].to_numpy()
    fcfs0 = frame[(frame.scheduler == "fcfs") & (frame.seed == 0)]["submit_s"].to_numpy()
    np.testing.assert_array_equal(greedy0, fcfs0)


def test_summary_frame_flattens_nested_values(runs):
    frame = frames.summary(runs)
    assert list(frame.columns[:5]) == list(frames.RUN_COLUMNS)
    assert len(frame) == 3
    for (_, row), run in zip(frame.iterrows(), runs, strict=True):
        assert row["mean_response_s"] == run.summary["mean_response_s"]
        assert row["utilization.cpu"] == run.summary["utilization"]["cpu"]
        assert row["utilization.mem"] == run.summary["utilization"]["mem"]
    assert "utilization" not in frame.columns


@pytest.mark.parametrize("name", sorted(frames.SERIES))
def test_series_frame_equals_the_series_json(runs, tmp_path, name):
    run = runs[1]
    run.write(tmp_path)
    stored = json.loads((tmp_path / "series.json").read_text())["series"][name]
    frame = frames.series(name, run)
    data = frame.drop(columns=list(frames.RUN_COLUMNS))
    assert list(data.columns) == [c for c in stored if isinstance(stored[c], list)]
    for col in data.columns:
        assert data[col].tolist() == stored[col]
    assert set(frame["scheduler"]) == {"fcfs"}


def test_per_class_frame(runs):
    frame = frames.per_class(runs[0])
    assert len(frame) == len(runs[0].per_class) > 1
    for (_, row), want in zip(frame.iterrows(), runs[0].per_class, strict=True):
        assert {k: row[k] for k in want} == want
        assert (row["scheduler"], row["seed"]) == ("greedy", 0)


def test_bad_input_says_what_is_wrong(runs):
    with pytest.raises(ValueError, match="unknown series 'queues'; the series are cdf, ccdf"):
        frames.series("queues", runs)
    with pytest.raises(ValueError, match="no runs given"):
        frames.summary([])
    with pytest.raises(TypeError, match="run 1 is a dict, not a simcore.api.RunOutcome"):
        frames.summary([runs[0], {}])  # type: ignore[list-item]
