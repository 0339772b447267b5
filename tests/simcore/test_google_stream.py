"""The streamed Google 2011 import writes the in-memory import's trace, byte for byte, in bounded memory."""

from __future__ import annotations

from pathlib import Path

import pytest

from simcore.traces import importer
from simcore.traces.google2011 import read_google2011
from simcore.traces.google_stream import _buckets, import_google2011_to
from simcore.traces.tracefile import write_trace
from tests.simcore.test_google_partial import PART
from tests.simcore.test_traces_google2011 import JOBS, TASKS, _row


def _generated(n: int) -> bytes:
    # Interleaved lifecycles with ties on arrival (many SUBMITs at the same second) and some long runs.
    rows = []
    for i in range(n):
        t = 100 + i // 7
        rows.append((t, i, 0))
        rows.append((t + 1 + i % 3, i, 1))
        rows.append((t + 2 + (i % 11) * 13, i, 4))
    rows.sort(key=lambda r: (r[0], r[2]))
    return "".join(_row(t, 100 + i // 5, i % 5, e, cpu=0.01 * (1 + i % 9)) for t, i, e in rows).encode()


@pytest.mark.parametrize(
    ("source", "kw"),
    [
        ([TASKS], {"job_events": [JOBS]}),
        ([PART], {}),
        ([_generated(3000)], {}),
        ([_generated(3000)], {"start_s": 150.0, "end_s": 400.0}),
    ],
)
def test_streaming_with_tiny_chunks_and_buckets_writes_the_same_trace(
    tmp_path: Path, source: list[object], kw: dict[str, object]
) -> None:
    expected = tmp_path / "memory.csv"
    write_trace(read_google2011(source, **kw).workload, expected)  # type: ignore[arg-type]
    got = tmp_path / "stream.csv"
    import_google2011_to(got, source, spill_bytes=1, bucket_rows=50, **kw)  # type: ignore[arg-type]
    assert got.read_bytes() == expected.read_bytes()


def test_the_streamed_summary_has_the_in_memory_numbers(tmp_path: Path) -> None:
    src = _generated(2000)
    mem = importer.summary(importer.import_trace("google2011", [src]))
    streamed = importer.stream_google2011([src], tmp_path, gzip=True)
    for key in ("jobs", "time_span_s", "horizon_s", "jobs_at_time_0", "dropped", "kept_but_changed", "rows_read"):
        assert streamed[key] == mem[key], key
    assert streamed["requests"]["cpu"]["mean"] == pytest.approx(mem["requests"]["cpu"]["mean"])
    assert streamed["utilisation_estimate"]["cpu"] == pytest.approx(mem["utilisation_estimate"]["cpu"], abs=1e-6)
    assert (tmp_path / "trace.csv.gz").is_file() and (tmp_path / "cluster.json").is_file()


def test_buckets_close_before_they_exceed_the_row_limit() -> None:
    import numpy as np

    edges = _buckets(np.array([3, 3, 3, 0, 5]), 5.0, 6)
    assert edges[:-1] == [2.0, 4.0] and edges[-1] == float("inf")


def test_the_temporary_chunks_are_removed(tmp_path: Path) -> None:
    spill = tmp_path / "spill"
    spill.mkdir()
    import_google2011_to(tmp_path / "t.csv", [_generated(500)], spill_bytes=1, temp_dir=str(spill))
    assert list(spill.iterdir()) == []
