"""The CSV trace format: exact round trips, gzip, class columns, and every error with file, line and column."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster, Workload, check_compatible
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.traces import tracefile
from simcore.traces.tracefile import read_trace, write_trace

HEADER = "submit_s,duration_s,cpu,mem\n"


@pytest.fixture(scope="module")
def google_like() -> Workload:
    c = CLUSTERS.get("google-2011").build()
    return WORKLOADS.get("google-like").build(c, np.random.default_rng(1), load=0.3, hours=0.005)


def same_jobs(a: Workload, b: Workload) -> None:
    for field in ("submit", "request", "work", "job_class"):
        assert np.array_equal(getattr(a, field), getattr(b, field)), field
    assert a.resources == b.resources


def write(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def error(path: Path | io.BytesIO, **kw: object) -> InputError:
    with pytest.raises(InputError) as e:
        read_trace(path, resources=("cpu", "mem"), **kw)  # type: ignore[arg-type]
    return e.value


# -- round trips -----------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["w.csv", "w.csv.gz"])
def test_write_then_read_gives_identical_arrays(tmp_path: Path, google_like: Workload, name: str) -> None:
    write_trace(google_like, tmp_path / name)
    back = read_trace(tmp_path / name, resources=("cpu", "mem"))
    same_jobs(google_like, back)
    assert back.horizon_s == google_like.horizon_s
    assert back.name == "google-like"
    assert back.params["class_names"] == ["class 1", "class 2", "class 3", "class 4"]
    assert back.runtime is None and back.classes is None
    assert back.params["first_data_line"] == 6  # four comments and the header come first


def test_gzip_is_detected_by_its_magic_bytes_not_the_name(tmp_path: Path, google_like: Workload) -> None:
    write_trace(google_like, tmp_path / "w.csv.gz")
    disguised = tmp_path / "plain-looking.csv"
    disguised.write_bytes((tmp_path / "w.csv.gz").read_bytes())
    assert (tmp_path / "w.csv.gz").read_bytes()[:2] == b"\x1f\x8b"
    same_jobs(google_like, read_trace(disguised, resources=("cpu", "mem")))


def test_streams_of_every_kind_are_read(google_like: Workload) -> None:
    buf = io.BytesIO()
    write_trace(google_like, buf)
    data = buf.getvalue()

    class Pipe(io.RawIOBase):  # a non-seekable, non-peekable stream such as a socket
        def __init__(self, b: bytes) -> None:
            self._b = io.BytesIO(b)

        def readable(self) -> bool:
            return True

        def readinto(self, out: bytearray) -> int:  # type: ignore[override]
            chunk = self._b.read(len(out))
            out[: len(chunk)] = chunk
            return len(chunk)

    for src in (
        io.BytesIO(data),
        Pipe(data),
        io.BytesIO(gzip.compress(data)),
        Pipe(gzip.compress(data)),
        io.StringIO(data.decode()),
    ):
        same_jobs(google_like, read_trace(src, resources=("cpu", "mem")))  # type: ignore[arg-type]
    text = io.StringIO()
    write_trace(google_like, text)
    assert text.getvalue().encode() == data


def test_a_multi_block_file_reads_the_same(
    tmp_path: Path, google_like: Workload, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_trace(google_like, tmp_path / "w.csv.gz")
    monkeypatch.setattr(tracefile, "BLOCK_BYTES", 4096)
    back = read_trace(tmp_path / "w.csv.gz", resources=("cpu", "mem"))
    same_jobs(google_like, back)
    assert back.params["first_data_line"] == 6


def test_columns_are_matched_by_name_and_put_in_the_clusters_order(tmp_path: Path) -> None:
    p = write(tmp_path, "mem,duration_s,cpu,submit_s\n0.2,10,0.1,0\n0.4,20,0.3,5\n")
    w = read_trace(p, resources=("cpu", "mem"))
    assert w.request.tolist() == [[0.1, 0.2], [0.3, 0.4]]
    assert w.work.tolist() == [10.0, 20.0] and w.submit.tolist() == [0.0, 5.0]
    free = read_trace(p)
    assert free.resources == ("mem", "cpu")  # no cluster given: file order
    assert free.name == "t"


def test_unsorted_rows_are_stably_sorted(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + "5,1,0.1,0.1\n1,2,0.2,0.2\n5,3,0.3,0.3\n1,4,0.4,0.4\n")
    w = read_trace(p, resources=("cpu", "mem"))
    assert w.submit.tolist() == [1, 1, 5, 5]
    assert w.work.tolist() == [2, 4, 1, 3]  # equal times keep file order
    assert w.params["sorted_on_read"] is True and "first_data_line" not in w.params
    assert w.horizon_s == 5.0


def test_comments_and_blank_lines_are_skipped_and_metadata_read(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "# simcore trace v1\n# name: mine\n\n# horizon_s = 100\n"
        + HEADER
        + "0,1,0.1,0.2\n\n# a note\n2,1,0.1,0.2\n   \n",
    )
    w = read_trace(p, resources=("cpu", "mem"))
    assert w.n_jobs == 2 and w.name == "mine" and w.horizon_s == 100.0
    assert read_trace(p, resources=("cpu", "mem"), name="other").name == "other"


def test_class_names_get_ids_in_order_of_first_appearance(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        "submit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,web\n1,1,0.1,0.2,batch\n2,1,0.1,0.2,web\n3,1,0.1,0.2,\n",
    )
    w = read_trace(p, resources=("cpu", "mem"))
    assert w.job_class.tolist() == [0, 1, 0, -1]
    assert w.params["class_names"] == ["web", "batch"]


def test_a_classes_comment_fixes_ids_and_allows_mixing(tmp_path: Path) -> None:
    p = write(
        tmp_path,
        '# classes: a,"b,c",d\nsubmit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,d\n1,1,0.1,0.2,"b,c"\n2,1,0.1,0.2,0\n',
    )
    w = read_trace(p, resources=("cpu", "mem"))
    assert w.job_class.tolist() == [2, 1, 0]
    assert w.params["class_names"] == ["a", "b,c", "d"]


def test_integer_class_ids_are_kept(tmp_path: Path) -> None:
    p = write(tmp_path, "submit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,3\n1,1,0.1,0.2,-1\n2,1,0.1,0.2,0\n")
    assert read_trace(p, resources=("cpu", "mem")).job_class.tolist() == [3, -1, 0]


def test_machine_dependent_workloads_cannot_be_written(tmp_path: Path) -> None:
    c = CLUSTERS.get("google-balanced").build(machines_per_config=2)
    w = WORKLOADS.get("lotes-phi").build(c, np.random.default_rng(0), load=0.5, hours=0.01, phi=0.0)
    with pytest.raises(ParameterError, match="machine-dependent"):
        write_trace(w, tmp_path / "x.csv")


# -- errors ------------------------------------------------------------------------------------------


def test_missing_mem_column(tmp_path: Path) -> None:
    e = error(write(tmp_path, "submit_s,duration_s,cpu\n0,1,0.1\n"))
    assert (e.file, e.line, e.column) == (str(tmp_path / "t.csv"), 1, "mem")
    assert "missing column" in str(e) and "t.csv" in str(e)


@pytest.mark.parametrize(
    "header,column,words",
    [
        ("duration_s,cpu,mem\n", "submit_s", "missing column"),
        ("submit_s,cpu,mem\n", "duration_s", "missing column"),
        ("submit_s,duration_s,cpu,mem,disk\n", "disk", "not a resource"),
        ("submit_s,duration_s,cpu,cpu,mem\n", "cpu", "twice"),
    ],
)
def test_header_errors_name_the_column(tmp_path: Path, header: str, column: str, words: str) -> None:
    e = error(write(tmp_path, "# comment\n" + header + "0,1,0.1,0.2\n"))
    assert (e.line, e.column) == (2, column)
    assert words in e.reason


@pytest.mark.parametrize(
    "row,column,words",
    [
        ("1,2,-0.3,0.4", "cpu", "negative"),
        ("-1,2,0.3,0.4", "submit_s", "negative"),
        ("1,-2,0.3,0.4", "duration_s", "negative"),
        ("1,2,abc,0.4", "cpu", "not a number: 'abc'"),
        ("1,2,0.3,", "mem", "empty value"),
        ("1,nan,0.3,0.4", "duration_s", "not a finite number"),
        ("1,2,0.3,inf", "mem", "not a finite number"),
        ("1,2,0.3,1e400", "mem", "not a finite number"),
        ("1_0,2,0.3,0.4", "submit_s", "not a number"),
    ],
)
def test_bad_values_name_line_and_column(tmp_path: Path, row: str, column: str, words: str) -> None:
    e = error(write(tmp_path, HEADER + "0,1,0.1,0.2\n" + row + "\n5,1,0.1,0.2\n"))
    assert (e.line, e.column) == (3, column)
    assert words in e.reason


@pytest.mark.parametrize("row,found", [("1,2,0.3", 3), ("1,2,0.3,0.4,9", 5)])
def test_wrong_field_counts_name_the_line(tmp_path: Path, row: str, found: int) -> None:
    e = error(write(tmp_path, HEADER + "0,1,0.1,0.2\n" + row + "\n"))
    assert e.line == 3 and f"found {found}" in e.reason


def test_the_first_bad_line_is_reported_when_there_are_several(tmp_path: Path) -> None:
    e = error(write(tmp_path, HEADER + "0,1,0.1,0.2\n1,1,0.1,nan\n2,1,-1,0.2\n"))
    assert (e.line, e.column) == (3, "mem")


def test_line_numbers_stay_right_across_blocks_and_skipped_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    rows = [f"{i},1,0.1,0.2" for i in range(3000)]
    rows[2500] = "2500,1,0.1,-0.5"
    p = write(tmp_path, "# c\n\n" + HEADER + "\n".join(rows[:100]) + "\n\n" + "\n".join(rows[100:]) + "\n")
    monkeypatch.setattr(tracefile, "BLOCK_BYTES", 1000)
    e = error(p)
    # 3 preamble lines, then rows 0..99 on lines 4..103, a blank line, row i on line i + 5.
    assert (e.line, e.column) == (2505, "mem")


@pytest.mark.parametrize("row,words", [("0,1,0.1,0.2,1.5", "integer"), ("0,1,0.1,0.2,-2", "integer")])
def test_bad_class_ids(tmp_path: Path, row: str, words: str) -> None:
    e = error(write(tmp_path, "submit_s,duration_s,cpu,mem,class\n" + row + "\n"))
    assert (e.line, e.column) == (2, "class") and words in e.reason


def test_mixing_ids_and_names_without_a_classes_comment(tmp_path: Path) -> None:
    e = error(write(tmp_path, "submit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,1\n1,1,0.1,0.2,web\n"))
    assert (e.line, e.column) == (3, "class") and "classes:" in e.reason


def test_class_outside_the_classes_comment(tmp_path: Path) -> None:
    e = error(write(tmp_path, "# classes: a,b\nsubmit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,c\n"))
    assert (e.line, e.column) == (3, "class")
    e = error(write(tmp_path, "# classes: a,b\nsubmit_s,duration_s,cpu,mem,class\n0,1,0.1,0.2,2\n"))
    assert (e.line, e.column) == (3, "class") and "only 2 classes" in e.reason


def test_horizon_before_the_last_job(tmp_path: Path) -> None:
    e = error(write(tmp_path, "# horizon_s: 0.5\n" + HEADER + "0,1,0.1,0.2\n1,1,0.1,0.2\n"))
    assert e.line == 1 and "before the last submission" in e.reason
    e = error(write(tmp_path, "# horizon_s: soon\n" + HEADER + "0,1,0.1,0.2\n"))
    assert e.line == 1


@pytest.mark.parametrize(
    "text,words",
    [("", "no header"), ("# only a comment\n", "no header"), (HEADER, "no jobs"), (HEADER + "\n\n", "no jobs")],
)
def test_empty_traces(tmp_path: Path, text: str, words: str) -> None:
    assert words in error(write(tmp_path, text)).reason


def test_truncated_gzip(tmp_path: Path, google_like: Workload) -> None:
    write_trace(google_like, tmp_path / "w.csv.gz")
    data = (tmp_path / "w.csv.gz").read_bytes()
    (tmp_path / "cut.csv.gz").write_bytes(data[: len(data) // 2])
    e = error(tmp_path / "cut.csv.gz")
    assert e.file == str(tmp_path / "cut.csv.gz") and "truncated or corrupt gzip" in e.reason


def test_corrupt_gzip(tmp_path: Path) -> None:
    p = tmp_path / "bad.csv.gz"
    good = gzip.compress((HEADER + "0,1,0.1,0.2\n").encode())
    p.write_bytes(good[:12] + b"\x00" * 20 + good[32:])
    assert "gzip" in error(p).reason


def test_binary_garbage_is_not_utf8(tmp_path: Path) -> None:
    p = tmp_path / "x.csv"
    p.write_bytes(HEADER.encode() + b"0,1,0.1,0.2\n\xff\xfe,1,2,3\n")
    e = error(p)
    assert e.line == 3 and "UTF-8" in e.reason


def test_a_missing_file(tmp_path: Path) -> None:
    e = error(tmp_path / "nope.csv")
    assert e.file == str(tmp_path / "nope.csv") and "cannot open" in e.reason


def test_a_request_larger_than_every_machine_names_file_line_and_column(tmp_path: Path) -> None:
    p = write(tmp_path, HEADER + "0,1,0.1,0.2\n1,1,0.5,1.5\n")
    w = read_trace(p, resources=("cpu", "mem"))
    cluster = CLUSTERS.get("google-2011").build()
    with pytest.raises(InputError) as e:
        check_compatible(cluster, w)
    assert (e.value.file, e.value.line, e.value.column) == (str(p), 3, "mem")
    assert "no machine has more than mem 1" in str(e.value)


def test_a_request_that_fits_each_resource_but_no_single_machine(tmp_path: Path) -> None:
    c = Cluster("two", ("cpu", "mem"), ("A", "B"), np.array([1, 1]), np.array([[1.0, 0.1], [0.1, 1.0]]))
    w = read_trace(write(tmp_path, HEADER + "0,1,0.5,0.5\n"), resources=("cpu", "mem"))
    with pytest.raises(InputError) as e:
        check_compatible(c, w)
    assert e.value.line == 2 and e.value.column is None and "no configuration has them all" in str(e.value)


# -- speed ---------------------------------------------------------------------------------------------
