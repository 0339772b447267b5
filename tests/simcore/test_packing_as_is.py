"""A Google 2011 snapshot placed as the trace placed it (issue 26, item 9): hand-built traces, then the sample."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcore import cli
from simcore.core.model import Cluster
from simcore.packing import aggregate_utilisation, hole_filling, sources
from simcore.packing.trace_placement import google2011_as_is, machines_at, ranked_capacities, repacked
from tests.conftest import shared_data

OFFSET_US = 600_000_000


def _row(
    t_s: float, job: int, idx: int, ev: int, machine: int | str = "", cpu: float | str = "", mem: float | str = ""
) -> str:
    t = 0 if t_s == 0 else OFFSET_US + int(round(t_s * 1e6))
    return f"{t},,{job},{idx},{machine},{ev},user,0,9,{cpu},{mem},0.0,0\n"


# At t = 100 s: (1,0) on 501, (1,1) on 502 (its SCHEDULE row gives the request), (3,0) on 501, (4,0) on 501
# (501 is then over its capacity), (6,0) scheduled inside [t, t + 1 s) on 503. (2,0) finished before t,
# (5,0) is still pending, (7,0) is scheduled after the window.
TASKS = "".join(
    [
        _row(10, 1, 0, 0, cpu=0.3, mem=0.2),
        _row(10, 1, 1, 0, cpu=0.1, mem=0.1),
        _row(20, 1, 0, 1, machine=501),
        _row(30, 1, 1, 1, machine=502, cpu=0.4, mem=0.4),
        _row(40, 2, 0, 0, cpu=0.3, mem=0.3),
        _row(50, 2, 0, 1, machine=501),
        _row(60, 3, 0, 0, cpu=0.5, mem=0.1),
        _row(70, 3, 0, 1, machine=501),
        _row(80, 4, 0, 0, cpu=0.4, mem=0.4),
        _row(85, 4, 0, 1, machine=501),
        _row(90, 2, 0, 4, machine=501),
        _row(90, 6, 0, 0, cpu=0.1, mem=0.1),
        _row(95, 5, 0, 0, cpu=0.2, mem=0.2),
        _row(100.5, 6, 0, 1, machine=503),
        _row(150, 7, 0, 0, cpu=0.2, mem=0.2),
        _row(150, 7, 0, 1, machine=504),
    ]
)
# 501 (1, 1), 502 (0.5, 0.5), 503 (0.5, 0.25) and an idle 504 (1, 0.5); 505 is removed at 50 s.
#: Two machines of (1, 1) and one of (0.5, 0.5): the capacity mix given when no machine events are read.
MIX = Cluster("mix", ("cpu", "mem"), ("big", "small"), np.array([2, 1]), np.array([[1.0, 1.0], [0.5, 0.5]]))
MACHINES = "0,501,0,,1,1\n0,502,0,,0.5,0.5\n0,503,0,,0.5,0.25\n0,504,0,,1,0.5\n0,505,0,,1,1\n650000000,505,1,,,\n"


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    t, m = tmp_path / "task_events.csv", tmp_path / "machine_events.csv"
    t.write_text(TASKS)
    m.write_text(MACHINES)
    return t, m


def test_the_machines_alive_at_t_come_from_the_machine_events(files: tuple[Path, Path]) -> None:
    assert machines_at(files[1], 100.0) == {501: (1.0, 1.0), 502: (0.5, 0.5), 503: (0.5, 0.25), 504: (1.0, 0.5)}
    assert 505 in machines_at(files[1], 49.0)


def test_tasks_stay_on_the_machines_their_schedule_names(files: tuple[Path, Path]) -> None:
    snap = google2011_as_is([files[0]], MIX, 100.0, machine_events=files[1])
    np.testing.assert_allclose(snap.request, [[0.3, 0.2], [0.4, 0.4], [0.5, 0.1], [0.4, 0.4], [0.1, 0.1]])
    # Machines 501..504 are rows 0..3; (4,0) would take 501 to cpu 1.2: left pending, counted.
    np.testing.assert_array_equal(snap.placement, [0, 1, 0, -1, 2])
    assert snap.meta["over_capacity"] == 1 and snap.meta["unknown_machine"] == 0
    util = aggregate_utilisation(snap)
    assert util["cpu"] == pytest.approx(1.3 / 3.0) and util["mem"] == pytest.approx(0.8 / 2.25)
    # U = 0.5 of the median machine (0.75, 0.5): units (0.375, 0.25); only the idle 504 holds any (two).
    h = hole_filling(snap, 0.5)
    assert h["units"] == 2
    assert h["utilisation"]["cpu"] == pytest.approx((1.3 + 0.75) / 3.0)
    assert h["utilisation"]["mem"] == pytest.approx((0.8 + 0.5) / 2.25)


def test_repacking_the_same_snapshot_first_fit_moves_the_holes(files: tuple[Path, Path]) -> None:
    snap = google2011_as_is([files[0]], MIX, 100.0, machine_events=files[1])
    ff = repacked(snap, "arrival")
    # First fit in arrival order: 501 takes (1,0), (1,1), (6,0); 502 (3,0); 504 (4,0); nothing pending.
    np.testing.assert_array_equal(ff.placement, [0, 0, 1, 3, 0])
    h = hole_filling(ff, 0.5)
    assert h["units"] == 1  # only 503 (0.5, 0.25) holds a unit
    assert h["utilisation"]["cpu"] == pytest.approx((1.7 + 0.375) / 3.0)
    assert h["utilisation"]["mem"] == pytest.approx((1.2 + 0.25) / 2.25)


def test_without_machine_events_the_named_machines_get_the_clusters_mix_largest_to_most_loaded(
    files: tuple[Path, Path],
) -> None:
    snap = google2011_as_is([files[0]], MIX, 100.0)
    # 501 (load 1.2 + 0.7), 502 (0.8), 503 (0.2): the two big machines to 501 and 502, the small one to 503.
    np.testing.assert_allclose(snap.capacity, [[1.0, 1.0], [1.0, 1.0], [0.5, 0.5]])
    np.testing.assert_array_equal(snap.placement, [0, 1, 0, -1, 2])
    assert snap.meta["capacities"].startswith("assumed: the 3 machines the running tasks name")


def test_ranked_capacities_keep_the_clusters_proportions() -> None:
    cluster = Cluster(
        "c", ("cpu", "mem"), ("a", "b", "c"), np.array([5, 3, 2]), np.array([[1, 1], [0.5, 0.5], [0.25, 0.5]])
    )
    load = np.array([[0.1, 0.1], [0.9, 0.9], [0.5, 0.5], [0.2, 0.0]])
    # 4 machines: shares 2, 1.2, 0.8 -> 2, 1, 1 by largest remainder; ranked by cpu + mem.
    np.testing.assert_allclose(ranked_capacities(cluster, load), [[0.5, 0.5], [1, 1], [1, 1], [0.25, 0.5]])


def test_the_cli_places_a_trace_snapshot_as_is(files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["packing", "holes", "--trace", str(files[0]), "--time", "100", "--placed-by", "as-is", "--units", "0.5"]
    assert cli.main([*argv, "--machine-events", str(files[1])]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["machines"], out["tasks"], out["pending"]) == (4, 5, 1)
    assert out["holes"][0]["units"] == 2
    assert cli.main(["packing", "holes", "--trace", str(files[0]), "--machine-events", str(files[1])]) == 2
    assert "--machine-events applies to --trace with --placed-by as-is" in capsys.readouterr().err


@pytest.mark.slow
def test_the_sample_snapshot_as_is_has_the_tasks_of_the_repacked_one_and_smaller_holes() -> None:
    from simcore.presets import CLUSTERS

    part = shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    cluster = CLUSTERS.get("google-2011").build()
    snap = google2011_as_is([part], cluster, 600.0, min_priority=9)
    assert snap.n_tasks == sources.from_google2011([part], cluster, 600.0, min_priority=9).n_tasks == 56_058
    assert (snap.n_machines, snap.n_pending) == (12_474, 876)
    ff = repacked(snap, "arrival")
    # Production work at 600 s, U = 0.3: the trace's placement leaves 2,462 holes, first fit 6,944.
    assert hole_filling(snap, 0.3)["units"] == 2_462 and hole_filling(ff, 0.3)["units"] == 6_944
