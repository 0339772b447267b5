"""Column maps with identical copies (``count=``) and an added constant (``col+1078``): issue 26, items 7 and 8."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from simcore import cli
from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster
from simcore.traces import importer
from simcore.traces.colmap import Expr, parse_map, read_mapped

DATA = Path(__file__).resolve().parents[1] / "data"
#: One machine of 4 cores (plan_cpu/100) and memory 1.
FOUR_CORES = Cluster("four", ("cpu", "mem"), ("m",), np.array([1]), np.array([[4.0, 1.0]]))
HEADER_2017 = "task_create_time,task_end_time,job_id,task_id,number_of_instances,status,plan_cpu,plan_mem\n"
# An Alibaba v2017 batch_task in miniature: two tasks created before the trace's zero, one of 0 instances.
ROWS_2017 = [
    "-1078,-1000,1,1,3,Terminated,50,0.2\n",
    "-500,100,1,2,1,Terminated,100,0.1\n",
    "0,60,2,3,0,Terminated,100,0.1\n",
    "20,80,3,4,2,Terminated,200,0.3\n",
]
BASE = "duration_s=task_end_time-task_create_time,cpu=plan_cpu/100,mem=plan_mem,job=job_id"
AFTER = f"submit_s=task_create_time+1078,{BASE},count=number_of_instances"


def _v2017(tmp_path: Path, rows: list[str] = ROWS_2017) -> Path:
    path = tmp_path / "batch_task.csv"
    path.write_text(HEADER_2017 + "".join(rows))
    return path


def _summary(path: Path, column_map: str, on_error: Any = "raise") -> dict[str, Any]:
    res = importer.import_trace("csv", [path], cluster=FOUR_CORES, column_map=column_map, on_error=on_error)
    return importer.summary(res)


# -- the grammar ---------------------------------------------------------------------------------------


def test_an_added_constant_parses_and_prints_back() -> None:
    m = parse_map("submit_s=task_create_time+1078,duration_s=d,cpu=c")
    assert m.expr("submit_s") == Expr("task_create_time", -1078.0)
    assert m.text() == "submit_s=task_create_time+1078,duration_s=d,cpu=c"
    scaled = parse_map("submit_s=(t+1.5)/1000,duration_s=d,cpu=c")
    assert scaled.expr("submit_s") == Expr("t", -1.5, "/", 1000.0) and scaled.text().startswith("submit_s=(t+1.5)/1000")


@pytest.mark.parametrize(
    ("item", "words"),
    [
        ("submit_s=t+", "--map 'submit_s=t+': submit_s=t+: '+' needs a number after it, e.g. t+1078"),
        (
            "submit_s=t+x",
            "--map 'submit_s=t+x': submit_s=t+x: '+' adds a constant (a number of the column's unit), got 'x'",
        ),
        ("submit_s=t+-5", "'+' adds a constant (a number of the column's unit), got '-'"),
        (
            "submit_s=t+1078abc",
            "--map 'submit_s=t+1078abc': submit_s=t+1078abc: unexpected 'abc' after t+1078 (one constant only)",
        ),
        ("submit_s=t+1e999", "--map 'submit_s=t+1e999': submit_s=t+1e999: the constant 1e999 is too large"),
        ("submit_s=t+5*2", "put a scaled difference in parentheses"),
    ],
)
def test_a_malformed_constant_is_one_line_naming_the_item(item: str, words: str) -> None:
    with pytest.raises(ParameterError) as e:
        parse_map(f"{item},duration_s=d,cpu=c")
    assert words in str(e.value) and "\n" not in str(e.value)


def test_count_is_a_target_not_a_resource() -> None:
    m = parse_map(AFTER)
    assert m.resources == ["cpu", "mem"] and "count" in m.targets
    with pytest.raises(ParameterError, match="no resource"):
        parse_map("submit_s=a,duration_s=b,count=n")


# -- reading: copies ----------------------------------------------------------------------------------


def test_each_row_becomes_count_identical_jobs_of_one_job(tmp_path: Path) -> None:
    got = read_mapped(_v2017(tmp_path), parse_map(AFTER))
    wl = got.workload
    # Rows 1 (3 copies at 0), 2 (1 copy at 578), 3 (count 0: none), 4 (2 copies at 1098).
    np.testing.assert_allclose(wl.submit, [0, 0, 0, 578, 1098, 1098])
    np.testing.assert_allclose(wl.work, [78, 78, 78, 600, 60, 60])
    np.testing.assert_allclose(wl.request, [[0.5, 0.2]] * 3 + [[1.0, 0.1]] + [[2.0, 0.3]] * 2)
    assert wl.graph is not None and wl.graph.n_jobs == 2  # job ids 1 and 3: copies stay in their job
    assert (got.count_rows, got.zero_count, got.rows_read) == (4, 1, 4)


def test_the_summary_counts_the_copies_and_the_rows_of_count_0(tmp_path: Path) -> None:
    s = _summary(_v2017(tmp_path), AFTER)
    assert s["jobs"] == 6
    assert s["dropped"] == {"count=number_of_instances is 0: the row makes no job": 1}
    assert "count=number_of_instances: each row became that many identical jobs (4 rows -> 6 jobs)" in s["notes"]
    # cpu: 3 x 0.5 x 78 + 1 x 600 + 2 x 2 x 60 = 957 core-s over 4 cores x 1098 s; mem: 142.8 / 1098.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(957 / (4 * 1098), abs=1e-6)
    assert s["utilisation_estimate"]["mem"] == pytest.approx(142.8 / 1098, abs=1e-6)


def test_before_count_and_constant_the_same_file_loses_rows_and_copies(tmp_path: Path) -> None:
    # The old map: negative create times are bad rows (skipped), one job per row.
    s = _summary(_v2017(tmp_path), f"submit_s=task_create_time,{BASE}", on_error="skip")
    assert s["jobs"] == 2 and sum(s["rows_skipped"].values()) == 2
    # cpu: 1 x 60 + 2 x 60 = 180 core-s over 4 cores x 20 s.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(180 / (4 * 20), abs=1e-6)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ("2.5", "line 3: count=number_of_instances is not an integer (2.5)"),
        ("-2", "line 3: count=number_of_instances is negative (-2)"),
        ("many", "line 3: number_of_instances: not a number: 'many'"),
        ("", "line 3: number_of_instances: empty"),
    ],
)
def test_a_bad_count_names_the_line_and_column(tmp_path: Path, value: str, words: str) -> None:
    rows = list(ROWS_2017)
    rows[1] = f"-500,100,1,2,{value},Terminated,100,0.1\n"
    with pytest.raises(InputError) as e:
        read_mapped(_v2017(tmp_path, rows), parse_map(AFTER))
    assert words in str(e.value)
    skipped = read_mapped(_v2017(tmp_path, rows), parse_map(AFTER), on_error="skip")
    assert skipped.errors.skipped == 1 and skipped.workload.n_jobs == 5


def test_the_total_count_is_held_to_simcore_max_jobs_before_any_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMCORE_MAX_JOBS", "5")
    path = _v2017(tmp_path)
    with pytest.raises(ParameterError) as e:
        read_mapped(path, parse_map(AFTER))
    assert str(e.value) == (
        f"count=number_of_instances: the 4 rows of {path} make 6 jobs; at most 5 (setting SIMCORE_MAX_JOBS)"
    )


def test_a_row_claiming_a_trillion_copies_is_refused_without_allocating(tmp_path: Path) -> None:
    # 10^12 copies of a row would be 10^12 x 5 floats: the bound must stop it before np.repeat.
    path = _v2017(
        tmp_path, ["0,60,1,1,1000000000000,Terminated,100,0.1\n", "5,60,1,2,1000000000000,Terminated,1,0.1\n"]
    )
    with pytest.raises(InputError, match=r"count=number_of_instances is above the bound 1e\+08"):
        read_mapped(path, parse_map(AFTER))


# -- rows before the trace's zero ----------------------------------------------------------------------


def test_a_negative_submission_suggests_the_constant_that_keeps_it(tmp_path: Path) -> None:
    with pytest.raises(InputError) as e:
        read_mapped(_v2017(tmp_path), parse_map(f"submit_s=task_create_time,{BASE}"))
    assert "line 2: submit_s=task_create_time is negative (-1078)" in str(e.value)
    assert "an added constant keeps it, e.g. submit_s=task_create_time+1078" in str(e.value)


def test_the_summary_says_which_choice_kept_the_early_rows(tmp_path: Path) -> None:
    s = _summary(_v2017(tmp_path), AFTER)
    assert s["time_span_s"] == [0.0, 1098.0]
    assert any(n.startswith("submit_s=task_create_time+1078: 1078 added to task_create_time") for n in s["notes"])


def test_a_negative_start_is_refused_pointing_a_csv_at_the_constant(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["import", "--format", "csv", str(_v2017(tmp_path)), "--out", str(tmp_path / "o"), "--start", "-1078"]
    assert cli.main([*argv, "--map", AFTER]) == 2
    err = capsys.readouterr().err
    assert "--start must be a non-negative number of seconds, got -1078; to keep a CSV's rows before its zero, " in err
    assert "add a constant in --map instead, e.g. submit_s=task_create_time+1078" in err


def test_the_cli_imports_with_count_and_constant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "o"
    rc = cli.main(["import", "--format", "csv", str(_v2017(tmp_path)), "--out", str(out), "--map", AFTER])
    s = json.loads(capsys.readouterr().out)
    # Checked against the default google-2011 cluster (cpu 1 at most): the two copies of cpu 2 are dropped.
    assert rc == 0 and s["jobs"] == 4
    assert s["dropped"] == {
        "count=number_of_instances is 0: the row makes no job": 1,
        "request larger than every machine of the cluster": 2,
    }
    assert len((out / "trace.csv").read_text().splitlines()) == 4 + 4  # 3 comment lines, the header, 4 jobs


# -- the shared v2018 extract: the map with count= equals the native reader -----------------------------


def test_count_on_the_v2018_batch_task_extract_makes_the_native_readers_units(tmp_path: Path) -> None:
    # tests/data/alibaba/batch_task.csv is header-less; with a header, the map reads it like --format alibaba.
    header = "task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem\n"
    path = tmp_path / "batch_task.csv"
    path.write_text(header + (DATA / "alibaba" / "batch_task.csv").read_text())
    native = importer.import_trace("alibaba", [DATA / "alibaba" / "batch_task.csv"])
    mapped = importer.import_trace(
        "csv",
        [path],
        cluster=native.cluster,
        column_map="submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/9600,mem=plan_mem/100,"
        "count=instance_num",
        where="status=Terminated",
        on_error="skip",
    )
    # The native window starts at the first start time (157,297 s); the map keeps the trace's own zero.
    a, b = native.workload, mapped.workload
    assert a.n_jobs == b.n_jobs == 4
    np.testing.assert_allclose(b.submit - b.submit[0], a.submit)
    np.testing.assert_allclose(b.work, a.work)
    np.testing.assert_allclose(b.request, a.request)
