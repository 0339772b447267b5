"""Azure Packing Trace 2020 reader: a hand-built database in the published schema, inferred machines, windows."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError
from simcore.traces.azure import R_NO_TYPE, infer_machines, read_azure
from simcore.traces.window import K_CUT_AT_END, K_RUNNING_AT_START, R_ENDED_BEFORE, R_RUNNING_AT_START

DAY = 86_400.0


def _db(path: Path, vms: list[tuple[int, float, float | str | None]]) -> Path:
    con = sqlite3.connect(path)
    con.execute(
        "CREATE TABLE vm (vmId INTEGER, tenantId INTEGER, vmTypeId INTEGER, priority INTEGER, "
        "starttime REAL, endtime REAL)"
    )
    con.execute(
        "CREATE TABLE vmType (id INTEGER, vmTypeId INTEGER, machineId INTEGER, core REAL, memory REAL, "
        "hdd REAL, ssd REAL, nic REAL)"
    )
    # Machine type 6 is twice machine type 5: VM type 0 takes half the fraction there.
    types = [(0, 5, 0.25, 0.125), (0, 6, 0.125, 0.0625), (1, 5, 0.5, 0.25), (3, 5, 0.1, 0.1), (2, 6, 0.25, 0.25)]
    con.executemany("INSERT INTO vmType VALUES (?,?,?,?,?,0,0,0)", [(i, *t) for i, t in enumerate(types)])
    con.executemany("INSERT INTO vm VALUES (?,7,?,0,?,?)", [(i, t, s, e) for i, (t, s, e) in enumerate(vms)])
    con.commit()
    con.close()
    return path


VMS: list[tuple[int, float, float | str | None]] = [
    (0, -0.5, 0.25),  # running when the trace starts
    (1, 0.5, 1.0),
    (2, 1.0, None),  # still running at the end
    (0, 1.5, 2.0),
    (0, -1.0, -0.5),  # ended before the trace
    (99, 0.2, 0.3),  # a type the vmType table does not have
]


@pytest.fixture()
def db(tmp_path: Path) -> Path:
    return _db(tmp_path / "packing.sqlite", VMS)


def test_machine_capacities_are_inferred_from_the_fractions_of_shared_vm_types() -> None:
    order, caps, req = infer_machines(
        np.array([0, 0, 1, 3, 2]),
        np.array([5, 6, 5, 5, 6]),
        np.array([[0.25, 0.125], [0.125, 0.0625], [0.5, 0.25], [0.1, 0.1], [0.25, 0.25]]),
    )
    assert order.tolist() == [5, 6]
    assert caps.tolist() == [[1.0, 1.0], [2.0, 2.0]]
    # A type only on machine 6 requests its fraction there times that machine's size.
    assert req[2].tolist() == [0.5, 0.5]


def test_vms_become_jobs_from_the_traces_start(db: Path) -> None:
    res = read_azure(db)
    wl = res.workload
    assert wl.submit.tolist() == [0.0, 0.5 * DAY, 1.0 * DAY, 1.5 * DAY]
    # The first ran since before the trace: 0.25 day left; the third has no end: cut at 2 days.
    assert wl.work.tolist() == [0.25 * DAY, 0.5 * DAY, 1.0 * DAY, 0.5 * DAY]
    assert wl.request.tolist() == [[0.25, 0.125], [0.5, 0.25], [0.5, 0.5], [0.25, 0.125]]
    assert wl.horizon_s == 2 * DAY


def test_the_report_counts_what_was_dropped_or_changed(db: Path) -> None:
    rep = read_azure(db).report
    assert rep.dropped == {R_NO_TYPE: 1, R_ENDED_BEFORE: 1}
    assert rep.kept_notes == {K_RUNNING_AT_START: 1, K_CUT_AT_END: 1}


def test_the_assumed_cluster_has_each_machine_type_and_says_so(db: Path) -> None:
    c = read_azure(db, machines_per_type=3).cluster
    assert c is not None
    assert c.config_names == ("machine-5", "machine-6")
    assert c.counts.tolist() == [3, 3]
    assert c.capacity.tolist() == [[1.0, 1.0], [2.0, 2.0]]
    assert "assumed" in c.description


def test_vms_running_at_the_start_can_be_dropped(db: Path) -> None:
    res = read_azure(db, running_at_start="drop")
    assert res.workload.n_jobs == 3
    assert res.report.dropped[R_RUNNING_AT_START] == 1


def test_a_gzipped_upload_reads_like_the_file(db: Path) -> None:
    import gzip

    a = read_azure(db).workload
    b = read_azure(gzip.compress(db.read_bytes())).workload
    assert np.array_equal(a.submit, b.submit) and np.array_equal(a.work, b.work)


def test_a_text_time_names_the_table_row_and_column(tmp_path: Path) -> None:
    p = _db(tmp_path / "bad.sqlite", [*VMS[:2], (1, "soon", 1.0)])
    with pytest.raises(InputError, match=r"column 'starttime'.*table vm, rowid 3"):
        read_azure(p)


def test_skip_mode_counts_a_bad_row(tmp_path: Path) -> None:
    p = _db(tmp_path / "bad.sqlite", [*VMS[:2], (1, "soon", 1.0)])
    res = read_azure(p, on_error="skip")
    assert res.report.rows_skipped == {"bad value": 1}
    assert res.workload.n_jobs == 2


def test_a_file_that_is_not_a_database_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "x.sqlite"
    p.write_bytes(b"vmId,starttime\n1,0.5\n")
    with pytest.raises(InputError, match="not a SQLite database"):
        read_azure(p)


def test_a_database_without_the_vm_tables_is_refused(tmp_path: Path) -> None:
    p = tmp_path / "other.sqlite"
    sqlite3.connect(p).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(InputError, match="no table 'vmType'"):
        read_azure(p)


def test_simcore_import_reads_the_database(db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from simcore.cli import main

    out = tmp_path / "out"
    assert main(["import", "--format", "azure", str(db), "--out", str(out), "--machines-per-type", "1"]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["jobs"] == 4 and s["cluster"]["machines"] == 2
    # cpu: 0.25 x 0.25 d + 0.5 x 0.5 d + 0.5 x 1 d + 0.25 x 0.5 d over capacity 1 + 2 for 2 days.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx((0.0625 + 0.25 + 0.5 + 0.125) / (3 * 2), abs=1e-6)
