"""Alibaba cluster-trace-v2018 reader: hand-computed samples in the published schema, windows, bad input."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError
from simcore.traces.alibaba import R_NO_PEAK, R_NO_PLAN, R_NO_RUN, assumed_cluster, read_alibaba
from simcore.traces.window import K_RUNNING_AT_START, R_RUNNING_AT_START

DATA = Path(__file__).resolve().parents[1] / "data" / "alibaba"
TASKS = DATA / "batch_task.csv"
INSTANCES = DATA / "batch_instance.csv"


def test_a_task_becomes_instance_num_units_with_its_plan_from_the_first_start() -> None:
    res = read_alibaba(TASKS)
    wl = res.workload
    # Starts 157297 (first), 157310, 157330 (2 instances): the window opens at the first start.
    assert wl.submit.tolist() == [0.0, 13.0, 33.0, 33.0]
    assert wl.work.tolist() == [28.0, 90.0, 60.0, 60.0]
    # plan_cpu 100 = one core of 96; plan_mem normalised to 100.
    assert wl.request[:, 0] == pytest.approx([1 / 96, 1.0, 0.5 / 96, 0.5 / 96])
    assert wl.request[:, 1] == pytest.approx([0.003, 0.01, 0.0059, 0.0059])
    assert wl.horizon_s == 103.0


def test_the_units_of_a_job_form_one_bag_of_tasks() -> None:
    g = read_alibaba(TASKS).workload.graph
    assert g is not None
    assert g.job_of.tolist() == [0, 1, 0, 0]
    assert g.job_ids is not None and g.job_ids.tolist() == [1, 2]


def test_rows_that_never_ran_or_have_no_plan_are_counted_not_kept() -> None:
    rep = read_alibaba(TASKS).report
    assert rep.dropped == {R_NO_RUN: 1, R_NO_PLAN: 1}
    assert rep.rows_read == {"batch_task": 5}


def test_the_default_cluster_is_the_assumed_4000_machines_of_96_cores() -> None:
    res = read_alibaba(TASKS)
    assert res.cluster is not None and res.cluster.name == "alibaba-2018"
    assert res.cluster.n_machines == 4000 == assumed_cluster().n_machines
    assert any("assumed" in n for n in res.report.notes)


def test_an_instance_requests_its_peak_use() -> None:
    res = read_alibaba(INSTANCES)
    wl = res.workload
    assert wl.submit.tolist() == [0.0, 10.0]
    assert wl.work.tolist() == [60.0, 90.0]
    assert wl.request[:, 0] == pytest.approx([1.5 / 96, 0.96 / 96])
    assert wl.request[:, 1] == pytest.approx([0.008, 0.02])
    assert res.report.dropped == {R_NO_PEAK: 1, R_NO_RUN: 1}


def test_tasks_running_at_a_later_start_are_kept_with_their_remaining_run() -> None:
    res = read_alibaba(TASKS, start_s=157320)
    wl = res.workload
    # 157297-157325 and 157310-157400 were running at 157320: they arrive at 0 with 5 s and 80 s left.
    assert wl.submit.tolist() == [0.0, 0.0, 10.0, 10.0]
    assert sorted(wl.work.tolist()) == [5.0, 60.0, 60.0, 80.0]
    assert res.report.kept_notes[K_RUNNING_AT_START] == 2


def test_tasks_running_at_the_start_can_be_dropped_and_counted() -> None:
    res = read_alibaba(TASKS, start_s=157320, running_at_start="drop")
    assert res.workload.n_jobs == 2
    assert res.report.dropped[R_RUNNING_AT_START] == 2


def test_a_non_numeric_time_names_the_file_line_and_column() -> None:
    bad = TASKS.read_bytes().replace(b"157330", b"soon", 1)
    with pytest.raises(InputError, match=r"line 2.*start_time"):
        read_alibaba(bad)


def test_a_line_with_the_wrong_field_count_names_its_line() -> None:
    bad = TASKS.read_bytes().replace(b"R2_1,2,", b"R2_1,", 1)
    with pytest.raises(InputError, match=r"line 2.*expected 9 comma-separated fields, found 8"):
        read_alibaba(bad)


def test_a_file_of_neither_table_is_refused_at_line_1() -> None:
    with pytest.raises(InputError, match=r"line 1.*expected 9 .*batch_task.* or 14"):
        read_alibaba(b"a,b,c\n")


def test_a_job_name_without_a_number_is_bad_input() -> None:
    bad = TASKS.read_bytes().replace(b"j_2,", b"jobx,", 1)
    with pytest.raises(InputError, match=r"line 3.*job_name"):
        read_alibaba(bad)


def test_skip_mode_counts_bad_rows_and_keeps_the_rest() -> None:
    bad = TASKS.read_bytes().replace(b"157330", b"soon", 1)
    res = read_alibaba(bad, on_error="skip")
    assert res.report.rows_skipped == {"non-numeric field": 1}
    assert res.workload.n_jobs == 2


def test_gzip_and_plain_give_the_same_workload() -> None:
    import gzip

    a = read_alibaba(TASKS).workload
    b = read_alibaba(gzip.compress(TASKS.read_bytes())).workload
    assert np.array_equal(a.submit, b.submit) and np.array_equal(a.request, b.request)


def test_simcore_import_writes_the_trace_and_the_assumed_cluster(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from simcore.cli import main

    assert main(["import", "--format", "alibaba", str(TASKS), "--out", str(tmp_path)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["jobs"] == 4 and s["cluster"]["name"] == "alibaba-2018"
    # 28 s x 1/96 + 90 s x 1 + 2 x 60 s x 0.5/96 cores over 4000 machines for 103 s: nearly idle.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx((28 / 96 + 90 + 60 / 96) / (4000 * 103), abs=1e-6)
    assert "nearly idle" in s["warnings"][0]
    assert (tmp_path / "trace.csv").is_file() and (tmp_path / "cluster.json").is_file()


def test_simcore_import_names_a_bad_line_and_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from simcore.cli import main

    bad = tmp_path / "batch_task.csv"
    bad.write_bytes(TASKS.read_bytes().replace(b"157330", b"soon", 1))
    assert main(["import", "--format", "alibaba", str(bad), "--out", str(tmp_path / "o")]) == 2
    assert "line 2" in capsys.readouterr().err
