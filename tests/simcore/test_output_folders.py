"""Two runs of one spec write byte-identical output folders, apart from timings.json (issue 26).

Every figure read off the host's clock (the run's wall and compile seconds, LoTES's offline
stage timings, a k-means' seconds) goes to ``timings.json``; every other file depends on the
spec alone, for every scheduler and both engines.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simcore import api
from simcore.schedulers import SCHEDULERS


def spec(scheduler: str, engine: str) -> api.RunSpec:
    if "profile" in SCHEDULERS.get(scheduler).requires:
        return api.RunSpec("ncbi-heterogeneous", "ncbi-blast", scheduler, seed=5, hours=0.5, engine=engine)
    return api.RunSpec(
        "google-balanced",
        "google-like",
        scheduler,
        seed=5,
        hours=0.01,
        engine=engine,
        cluster_params={"machines_per_config": 3},
    )


@pytest.mark.parametrize("engine", ["python", "compiled"])
@pytest.mark.parametrize("scheduler", SCHEDULERS.names())
def test_two_runs_of_one_spec_differ_only_in_timings_json(tmp_path: Path, scheduler: str, engine: str) -> None:
    s = spec(scheduler, engine)
    for k in ("a", "b"):
        api.run(s).write(tmp_path / k)
    names = sorted(p.name for p in (tmp_path / "a").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "b").iterdir())
    assert api.TIMINGS_FILE in names
    for name in names:
        if name != api.TIMINGS_FILE:
            assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    summary = json.loads((tmp_path / "a" / "summary.json").read_text())
    timings = json.loads((tmp_path / "a" / api.TIMINGS_FILE).read_text())
    assert not api.WALL_CLOCK_KEYS & set(summary)
    assert {"wall_s", "jobs_per_s", "compile_s"} <= set(timings["summary"])
    if scheduler == "lotes":
        offline = json.loads((tmp_path / "a" / "series.json").read_text())["offline"]
        assert "timings_s" not in offline and set(timings["offline"]["timings_s"]) == {"stage1", "bins", "assignment"}


def test_split_timings_moves_clock_readings_at_any_depth() -> None:
    summary = {"jobs": 3, "wall_s": 1.5, "compile_s": None, "utilization": {"cpu": 0.5}}
    offline = {"k": 2, "timings_s": {"stage1": 0.1}, "class_source": {"source": "kmeans", "seconds": 0.2}}
    s, o, t = api.split_timings(summary, offline)
    assert s == {"jobs": 3, "utilization": {"cpu": 0.5}}
    assert o == {"k": 2, "class_source": {"source": "kmeans"}}
    assert t == {
        "summary": {"wall_s": 1.5, "compile_s": None},
        "offline": {"timings_s": {"stage1": 0.1}, "class_source": {"seconds": 0.2}},
    }
