"""simcore.traces.colmap: the --map / --where grammar, the mapped reader, and `simcore import --format csv --map`."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore import cli
from simcore.core.errors import InputError, ParameterError
from simcore.traces.colmap import Expr, Mapping, Where, parse_expr, parse_map, parse_where, preview, read_mapped
from simcore.traces.importer import import_trace
from simcore.traces.tracefile import read_trace

ALIBABA = (
    "task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem\n"
    "M1,1,j_1,1,Terminated,100,160,100,0.39\n"
    "R2_1,2,j_1,1,Terminated,90,200,50,0.2\n"
    "M3,1,j_2,1,Running,300,,100,0.1\n"
    "M4,1,j_3,1,Terminated,310,,200,0.5\n"
    "M5,1,j_3,1,Failed,320,330,300,0.5\n"
)
MAP = "submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem"


def _file(tmp_path: Path, text: str = ALIBABA, name: str = "batch_task.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, Any, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, (json.loads(out) if rc == 0 and out.strip() else out), err


# -- the grammar, hand-computed ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "text,expr",
    [
        ("plan_cpu", Expr("plan_cpu")),
        ("end_time-start_time", Expr("end_time", "start_time")),
        ("plan_cpu/100", Expr("plan_cpu", None, "/", 100.0)),
        ("plan_mem*0.5", Expr("plan_mem", None, "*", 0.5)),
        ("(end-start)/1000", Expr("end", "start", "/", 1000.0)),
        ("start_time-1500000000", Expr("start_time", 1.5e9)),
        (" end - start ", Expr("end", "start")),
        ("cpu/2.5e1", Expr("cpu", None, "/", 25.0)),
    ],
)
def test_it_parses_each_form_of_expression(text: str, expr: Expr) -> None:
    assert parse_expr(text) == expr


def test_a_map_keeps_its_order_and_names_its_resources() -> None:
    m = parse_map(MAP + ",job=job_id")
    assert m.targets == ["submit_s", "duration_s", "cpu", "mem", "job"]
    assert m.resources == ["cpu", "mem"]
    assert m.columns() == ["start_time", "end_time", "plan_cpu", "plan_mem", "job_id"]
    assert m.text() == MAP + ",job=job_id"


@pytest.mark.parametrize(
    "text,words",
    [
        ("", "--map is empty"),
        ("submit_s=a,duration_s=b", "no resource"),
        ("submit_s=a,cpu=c", "missing duration_s"),
        ("submit_s=a,duration_s=b,cpu", "expected target=expression"),
        ("submit_s=a,duration_s=b,cpu=c,cpu=d", "cpu is mapped twice"),
        ("submit_s=a,duration_s=b-c/10,cpu=c", "put a scaled difference in parentheses"),
        ("submit_s=a,duration_s=b,cpu=c/0", "divide by zero"),
        ("submit_s=a,duration_s=b,cpu=c/x", "expected a number after * or /"),
        ("submit_s=a,duration_s=(b-c),cpu=c", "needs a scale"),
        ("submit_s=a,duration_s=(b/2)*3,cpu=c", "expected 'column'"),
        ("submit_s=a,duration_s=b+c,cpu=c", "'+' adds a constant (a number of the column's unit), got 'c'"),
        ("submit_s=a,duration_s=b,cpu=c,,mem=d", "an empty item"),
        ("submit_s=a,duration_s=b,2cpu=c", "is not a name"),
        ("submit_s=a,duration_s=b,cpu=", "no expression"),
        ("submit_s=a,duration_s=b,cpu=c*2*3", "unexpected"),
        ("submit_s=a,duration_s=end-end,cpu=c", "--map 'duration_s=end-end': duration_s = end-end is always 0"),
        ("submit_s=a,duration_s=(end - end)/1000,cpu=c", "duration_s = (end-end)/1000 is always 0 (end minus itself)"),
    ],
)
def test_a_bad_map_is_one_line_naming_the_item(text: str, words: str) -> None:
    with pytest.raises(ParameterError) as e:
        parse_map(text)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_a_filter_is_column_equals_values() -> None:
    assert parse_where("status=Terminated") == Where((("status", ("Terminated",)),))
    assert parse_where("status = Terminated|Failed, task_type=1").conds == (
        ("status", ("Terminated", "Failed")),
        ("task_type", ("1",)),
    )
    for bad in ("status", "=x", "status=", "status=a|", "s=a,s=b"):
        with pytest.raises(ParameterError, match="--where"):
            parse_where(bad)


# -- round trip: text -> parse -> text ---------------------------------------------------------------

_names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.]{0,8}", fullmatch=True)
_targets = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda t: t not in ("submit_s", "duration_s", "job")
)
_factor = st.one_of(st.integers(1, 10**6).map(float), st.floats(1e-6, 1e9, allow_nan=False))


@st.composite
def _exprs(draw: st.DrawFn) -> Expr:
    col = draw(_names)
    other = _names.filter(lambda c: c != col)  # a column minus itself is refused
    minus = draw(st.one_of(st.none(), other, st.integers(0, 10**12).map(float), st.floats(0, 1e12)))
    scaled = draw(st.booleans())
    return Expr(col, minus, draw(st.sampled_from("*/")) if scaled else None, draw(_factor) if scaled else None)


@st.composite
def _maps(draw: st.DrawFn) -> Mapping:
    res = draw(st.lists(_targets, min_size=1, max_size=4, unique=True))
    targets = ["submit_s", "duration_s", *res] + (["job"] if draw(st.booleans()) else [])
    order = draw(st.permutations(targets))
    return Mapping(tuple((t, draw(_exprs())) for t in order))


@settings(max_examples=300, deadline=None)
@given(_maps())
def test_a_map_reads_back_from_its_text(m: Mapping) -> None:
    text = m.text()
    again = parse_map(text)
    assert again == m
    assert again.text() == text


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(_names, st.lists(st.from_regex(r"[A-Za-z0-9_]{1,6}", fullmatch=True), min_size=1, max_size=3)),
        min_size=1,
        max_size=3,
        unique_by=lambda c: c[0],
    )
)
def test_a_filter_reads_back_from_its_text(conds: list[tuple[str, list[str]]]) -> None:
    w = Where(tuple((c, tuple(v)) for c, v in conds))
    assert parse_where(w.text()) == w


# -- reading ---------------------------------------------------------------------------------------


def test_it_maps_filters_and_sorts_hand_computed(tmp_path: Path) -> None:
    got = read_mapped(_file(tmp_path), parse_map(MAP), parse_where("status=Terminated|Failed"), on_error="skip")
    wl = got.workload
    # Kept: M1 (100, 60 s), R2_1 (90, 110 s), M5 (320, 10 s); M3 filtered (Running), M4 has no end: skipped.
    np.testing.assert_array_equal(wl.submit, [90.0, 100.0, 320.0])
    np.testing.assert_array_equal(wl.work, [110.0, 60.0, 10.0])
    np.testing.assert_allclose(wl.request, [[0.5, 0.2], [1.0, 0.39], [3.0, 0.5]])
    assert wl.resources == ("cpu", "mem") and wl.params["sorted_on_read"]
    assert (got.rows_read, got.filtered, got.errors.counts) == (5, 1, {"end_time: empty": 1})


def test_an_empty_field_stops_the_read_naming_line_and_every_bad_field(tmp_path: Path) -> None:
    text = ALIBABA.replace("M4,1,j_3,1,Terminated,310,,200,0.5", "M4,1,j_3,1,Terminated,,,x,0.5")
    with pytest.raises(InputError) as e:
        read_mapped(_file(tmp_path, text), parse_map(MAP), parse_where("status=Terminated"))
    assert e.value.line == 5
    assert "start_time: empty" in str(e.value) and "end_time: empty" in str(e.value)
    assert "plan_cpu: not a number: 'x'" in str(e.value)


def test_a_negative_duration_is_an_error_naming_the_target(tmp_path: Path) -> None:
    text = ALIBABA.split("\n")[0] + "\nA,1,j,1,Terminated,100,90,100,0.1\n"
    with pytest.raises(InputError, match=r"line 2: duration_s=end_time-start_time is negative \(-10\)"):
        read_mapped(_file(tmp_path, text), parse_map(MAP))


def test_missing_columns_are_listed_together_with_the_header(tmp_path: Path) -> None:
    m = parse_map("submit_s=create,duration_s=end-create,cpu=plan_cpu")
    with pytest.raises(InputError) as e:
        read_mapped(_file(tmp_path), m, parse_where("state=Terminated"))
    msg = str(e.value)
    assert "missing column(s) create, end, state" in msg and "the header has task_name, instance_num" in msg
    assert str(tmp_path / "batch_task.csv") in msg and e.value.line == 1


def test_a_gzipped_file_with_comments_and_blank_lines_reads_the_same(tmp_path: Path) -> None:
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress(("# from the cluster trace\n" + ALIBABA.replace("\nM3", "\n\nM3")).encode()))
    got = read_mapped(p, parse_map(MAP), parse_where("status=Terminated"), on_error="skip")
    assert got.workload.n_jobs == 2 and got.errors.examples == [f"{p}, line 7: end_time: empty"]


def test_the_preview_converts_the_first_rows_and_says_why_others_fail() -> None:
    p = preview(ALIBABA, parse_map(MAP), parse_where("status=Terminated"))
    assert p.header[:2] == ["task_name", "instance_num"] and len(p.rows) == 5
    assert p.jobs == [
        {"submit_s": 100.0, "duration_s": 60.0, "cpu": 1.0, "mem": 0.39},
        {"submit_s": 90.0, "duration_s": 110.0, "cpu": 0.5, "mem": 0.2},
    ]
    assert p.filtered == 2 and p.problems == ["the file, line 5: end_time: empty"]


def test_a_job_target_groups_rows_into_jobs(tmp_path: Path) -> None:
    text = "id,t,d,c\n7,0,5,1\n7,1,5,1\n9,2,5,2\n"
    got = read_mapped(_file(tmp_path, text), parse_map("submit_s=t,duration_s=d,cores=c,job=id"))
    assert got.workload.graph is not None and got.workload.graph.n_jobs == 2


# -- the importer and the command line --------------------------------------------------------------


def test_skip_works_for_a_project_csv_through_the_api(tmp_path: Path) -> None:
    p = _file(tmp_path, "submit_s,duration_s,cpu,mem\n0,10,0.5,0.1\n1,,0.5,0.1\n2,10,0.25,0.1\n", "t.csv")
    with pytest.raises(InputError, match="line 3"):
        import_trace("csv", [p])
    res = import_trace("csv", [p], on_error="skip")
    assert res.workload.n_jobs == 2 and res.report.rows_skipped == {"duration_s: empty": 1}


def test_the_default_cluster_of_a_csv_is_google_2011_and_said(tmp_path: Path) -> None:
    p = _file(tmp_path, "submit_s,duration_s,cpu,mem\n0,10,0.5,0.1\n1,10,1.5,0.1\n", "t.csv")
    res = import_trace("csv", [p])
    assert res.cluster is not None and res.cluster.name == "google-2011"
    assert res.report.dropped == {"request larger than every machine of the cluster": 1}
    assert any("default 'google-2011'" in n for n in res.report.notes)


def test_a_csv_with_other_resources_keeps_every_job_and_says_so(tmp_path: Path) -> None:
    p = _file(tmp_path, "submit_s,duration_s,cores\n0,10,64\n", "t.csv")
    res = import_trace("csv", [p])
    assert res.cluster is None and res.workload.n_jobs == 1
    assert any("jobs kept as they are" in n for n in res.report.notes)


def test_cli_maps_a_foreign_csv_and_writes_a_trace_run_accepts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, s, err = _cli(
        capsys, "import", "--format", "csv", str(_file(tmp_path)), "--map", MAP, "--where", "status=Terminated",
        "--on-error", "skip", "--out", str(tmp_path / "o"),
    )  # fmt: skip
    assert rc == 0, err
    assert s["jobs"] == 2 and s["rows_read"] == {"trace": 5} and s["rows_skipped"] == {"end_time: empty": 1}
    assert s["dropped"] == {"filtered out by where status=Terminated": 2}
    assert s["cluster"]["name"] == "google-2011"
    wl = read_trace(tmp_path / "o" / "trace.csv")
    np.testing.assert_array_equal(wl.work, [110.0, 60.0])


@pytest.mark.parametrize(
    "map_,words",
    [
        ("submit_s=start,duration_s=end_time-start_time,cpu=plan_cpu", "missing column(s) start"),
        ("submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/0", "divide by zero"),
        ("submit_s=start_time,duration_s=end_time-start_time/2,cpu=plan_cpu", "parentheses"),
        ("submit_s=start_time,duration_s=end_time^2,cpu=plan_cpu", "cannot read"),
        ("submit_s=start_time,cpu=plan_cpu", "missing duration_s"),
        (
            "submit_s=start_time,duration_s=end_time-end_time,cpu=plan_cpu",
            "--map 'duration_s=end_time-end_time': duration_s = end_time-end_time is always 0 (end_time minus itself); "
            "subtract another column",
        ),
    ],
)
def test_cli_bad_maps_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], map_: str, words: str
) -> None:
    rc, _, err = _cli(capsys, "import", "--format", "csv", str(_file(tmp_path)), "--map", map_, "--out", str(tmp_path))
    assert rc == 2 and words in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    "extra,words",
    [
        (["--where", "status"], "--where 'status': expected column=value"),
        (["--where", "state=Terminated"], "missing column(s) state"),
        (["--map", ""], "--map is empty"),
    ],
)
def test_cli_bad_filters_exit_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], words: str
) -> None:
    args = ["--map", MAP, *extra] if extra[0] == "--where" else extra
    rc, _, err = _cli(capsys, "import", "--format", "csv", str(_file(tmp_path)), *args, "--out", str(tmp_path))
    assert rc == 2 and words in err and len(err.strip().splitlines()) == 1


def test_a_project_csv_header_error_lists_every_missing_column_at_once(tmp_path: Path) -> None:
    p = _file(tmp_path, "start,end,plan_cpu\n1,2,3\n", "t.csv")
    with pytest.raises(InputError) as e:
        read_trace(p, resources=["cpu", "mem"])
    msg = str(e.value)
    assert "missing column(s) submit_s, duration_s, cpu, mem" in msg and "the header has start, end, plan_cpu" in msg
    assert e.value.line == 1


def test_cli_an_empty_field_without_skip_exits_2_naming_the_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rc, _, err = _cli(capsys, "import", "--format", "csv", str(_file(tmp_path)), "--map", MAP, "--out", str(tmp_path))
    assert rc == 2 and "line 4" in err and "end_time: empty" in err


def test_cli_map_applies_to_csv_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    rc, _, err = _cli(capsys, "import", "--format", "swf", str(_file(tmp_path)), "--map", MAP)
    assert rc == 2 and "--format csv only" in err
