"""Issue 14 items 8 and 9: trace readers stop early on decompression bombs, endless lines and absurd values."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import pytest

from simcore.core.errors import InputError
from simcore.traces.google2011 import read_google2011
from simcore.traces.swf import read_swf
from simcore.traces.tracefile import read_trace

HEADER = b"submit_s,duration_s,cpu,mem\n"
ROW = b"1.0,10.0,0.25,0.25\n"


class Counting(io.BytesIO):
    """A file that records how many compressed bytes the reader took from it."""

    def __init__(self, data: bytes) -> None:
        super().__init__(data)
        self.taken = 0

    def read(self, n: int | None = -1) -> bytes:
        b = super().read(n)
        self.taken += len(b)
        return b


def test_a_decompression_bomb_is_stopped_by_the_ratio_bound(tmp_path: Path) -> None:
    # 3 GB of valid rows in about 6 MB: 3,000 gzip members of 1 MB of rows each (members concatenate).
    data = gzip.compress(HEADER) + gzip.compress(ROW * 55_000, compresslevel=9) * 3000
    f = Counting(data)
    f.name = "bomb.csv.gz"
    with pytest.raises(InputError, match="expands more than 200x.*SIMCORE_MAX_GZIP_RATIO"):
        read_trace(f, resources=("cpu", "mem"))
    assert f.taken < len(data)  # stopped before the end of the input


def test_the_decompressed_size_bound_is_a_setting_with_a_tested_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    text = HEADER + ROW * 1000  # 19,029 bytes
    monkeypatch.setenv("SIMCORE_MAX_TRACE_BYTES", str(len(text)))
    assert read_trace(io.BytesIO(gzip.compress(text)), resources=("cpu", "mem")).n_jobs == 1000
    monkeypatch.setenv("SIMCORE_MAX_TRACE_BYTES", str(len(text) - 1))
    with pytest.raises(InputError, match="SIMCORE_MAX_TRACE_BYTES"):
        read_trace(io.BytesIO(gzip.compress(text)), resources=("cpu", "mem"))


def test_a_single_endless_line_stops_the_reader_early(monkeypatch: pytest.MonkeyPatch) -> None:
    data = gzip.compress(b"x" * (1 << 20), compresslevel=9) * 2000  # one 2 GB line in about 2 MB
    f = Counting(data)
    with pytest.raises(InputError, match="line 1 is longer than 1,048,576 bytes"):
        read_trace(f, resources=("cpu", "mem"))
    assert f.taken < len(data) // 2


def test_the_line_bound_is_a_setting_with_a_tested_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_LINE_BYTES", "100")
    line = b"9" * 101
    with pytest.raises(InputError, match="longer than 100 bytes"):
        read_trace(io.BytesIO(HEADER + ROW + line), resources=("cpu", "mem"))
    assert read_trace(io.BytesIO(HEADER + ROW * 2), resources=("cpu", "mem")).n_jobs == 2


def test_the_stream_readers_stop_on_an_endless_line_too() -> None:
    # 5,000 gzip members of 1 MB of digits each: 5 GB of one line in about 5 MB (members concatenate).
    data = gzip.compress(b"1" * (1 << 20), compresslevel=9) * 5000
    f = Counting(data)
    with pytest.raises(InputError, match="longer than"):
        read_swf(f)
    assert f.taken < len(data)


@pytest.mark.parametrize(
    ("row", "column", "setting"),
    [
        (b"1.0,1e308,0.25,0.25\n", "duration_s", "SIMCORE_MAX_TRACE_SECONDS"),
        (b"4e8,10,0.25,0.25\n", "submit_s", "SIMCORE_MAX_TRACE_SECONDS"),
        (b"1.0,10,1e13,0.25\n", "cpu", "SIMCORE_MAX_REQUEST"),
    ],
)
def test_absurd_values_are_refused_with_file_line_and_column(row: bytes, column: str, setting: str) -> None:
    f = io.BytesIO(HEADER + ROW + row)
    f.name = "absurd.csv"
    with pytest.raises(InputError, match=setting) as e:
        read_trace(f, resources=("cpu", "mem"))
    assert e.value.file == "absurd.csv" and e.value.line == 3 and e.value.column == column


def test_ten_years_is_still_accepted() -> None:
    ok = HEADER + b"0,315576000,0.25,0.25\n"
    assert read_trace(io.BytesIO(ok), resources=("cpu", "mem")).n_jobs == 1


def test_an_absurd_swf_run_time_is_refused_by_line() -> None:
    # 18 fields: job, submit, wait, run, procs, cpu, mem, req procs, req time, req mem, status, ...
    good = b"1 0 0 100 1 -1 -1 1 -1 -1 1 1 1 1 1 -1 -1 -1\n"
    bad = b"2 10 0 1e308 1 -1 -1 1 -1 -1 1 1 1 1 1 -1 -1 -1\n"
    with pytest.raises(InputError, match="SIMCORE_MAX_TRACE_SECONDS") as e:
        read_swf(io.BytesIO(good + bad))
    assert e.value.line == 2


def test_an_absurd_google_time_stamp_is_refused_by_line() -> None:
    # time, missing, job ID, task index, machine ID, event type, user, class, priority, cpu, mem, disk, constraint
    rows = b"0,,1,0,,0,u,0,0,0.1,0.1,0,0\n" + b"99999999999999999,,2,0,,0,u,0,0,0.1,0.1,0,0\n"
    with pytest.raises(InputError, match="SIMCORE_MAX_TRACE_SECONDS") as e:
        read_google2011([io.BytesIO(rows)])
    assert e.value.line == 2


def test_a_line_of_exactly_the_bound_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    line = b"1.0,10.0,0.25,0.25"
    monkeypatch.setenv("SIMCORE_MAX_LINE_BYTES", str(len(line)))
    assert read_trace(io.BytesIO(HEADER + line), resources=("cpu", "mem")).n_jobs == 1
    monkeypatch.setenv("SIMCORE_MAX_LINE_BYTES", str(len(line) - 1))
    with pytest.raises(InputError, match="SIMCORE_MAX_LINE_BYTES"):
        read_trace(io.BytesIO(HEADER + line), resources=("cpu", "mem"))


def test_a_request_of_exactly_the_bound_is_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_REQUEST", "5")
    assert read_trace(io.BytesIO(HEADER + b"0,1,5,0.5\n"), resources=("cpu", "mem")).n_jobs == 1
    with pytest.raises(InputError, match="SIMCORE_MAX_REQUEST"):
        read_trace(io.BytesIO(HEADER + b"0,1,5.5,0.5\n"), resources=("cpu", "mem"))


def test_the_json_depth_bound_has_a_tested_boundary(monkeypatch: pytest.MonkeyPatch) -> None:
    from simcore.sources import check_tree

    monkeypatch.setenv("SIMCORE_MAX_JSON_DEPTH", "3")
    check_tree({"a": {"b": [1]}})  # three levels: accepted
    with pytest.raises(InputError, match=r"a\.b\[0\]: nested deeper than 3 levels"):
        check_tree({"a": {"b": [[1]]}})
