"""Google cluster-data 2011 reader: hand-computed pairing, windows, machines, bad input, streaming."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import simcore.traces._stream as stream
from simcore.core.errors import Cancelled, InputError, ParameterError
from simcore.core.model import Cluster
from simcore.traces import ImportProgress
from simcore.traces.google2011 import (
    R_BEFORE_START,
    R_END_ORPHAN,
    R_END_PENDING,
    R_NO_REQUEST,
    R_PENDING_AT_END,
    R_RUNNING_AT_END,
    R_TOO_BIG,
    read_google2011,
    read_machine_events,
    to_seconds,
)
from tests.conftest import shared_data

DATA = Path(__file__).resolve().parents[1] / "data" / "google2011"
TASKS = DATA / "task_events.csv"
JOBS = DATA / "job_events.csv"
MACHINES = DATA / "machine_events.csv"
SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "google-clusterdata-2011-2"
PART0 = SHARED / "task_events" / "part-00000-of-00500.csv.gz"
JOB0 = SHARED / "job_events" / "part-00000-of-00500.csv.gz"

OFFSET_US = 600_000_000


def _row(
    t_s: float | int,
    job: int,
    idx: int,
    ev: int,
    cpu: float | str = 0.1,
    mem: float | str = 0.1,
    raw_us: int | None = None,
) -> str:
    t = raw_us if raw_us is not None else (0 if t_s == 0 else OFFSET_US + int(round(t_s * 1e6)))
    return f"{t},,{job},{idx},7,{ev},user,0,0,{cpu},{mem},0.0,0\n"


def _read(text: str, **kw: object) -> object:
    return read_google2011([text.encode()], **kw)  # type: ignore[arg-type]


# -- the worked example in tests/data/google2011/task_events.csv -------------------------------------


def test_it_pairs_submit_schedule_and_end_events_into_jobs_like_the_lotes_paper() -> None:
    # Given the crafted file (times in simulated s = (us - 600e6) / 1e6; 0 stays 0):
    #  task (1,0) initial batch, FINISH at 50           -> arrival 0,  duration 50
    #  task (1,1) initial batch, request only on SCHEDULE, end at 2^63-1 -> cut at 80: duration 80
    #  task (2,0) SUBMIT 10, SCHEDULE 15, FAIL 40        -> arrival 10, duration 25
    #             resubmitted 41, SCHEDULE 50, FINISH 70 -> a new job: arrival 41, duration 20
    #  task (3,0) killed while pending                   -> dropped
    #  task (4,0) still pending at the end               -> dropped
    #  task (5,0) SUBMIT 65, UPDATE_PENDING 66 (0.4, 0.1), SCHEDULE 70 without request, EVICT 80
    #                                                    -> arrival 65, duration 10, request (0.4, 0.1)
    res = read_google2011([TASKS], job_events=[JOBS])
    wl = res.workload
    np.testing.assert_allclose(wl.submit, [0, 0, 10, 41, 65])
    np.testing.assert_allclose(wl.work, [50, 80, 25, 20, 10])
    np.testing.assert_allclose(wl.request, [[0.1, 0.2], [0.05, 0.05], [0.25, 0.125], [0.25, 0.125], [0.4, 0.1]])
    assert wl.resources == ("cpu", "mem")
    assert wl.horizon_s == pytest.approx(80.0)
    assert (wl.job_class == -1).all()
    rep = res.report
    assert rep.dropped == {R_END_PENDING: 1, R_PENDING_AT_END: 1}
    assert rep.kept_notes["running at the window's end: duration cut there"] == 1
    assert rep.extra["rows_ignored"] == {"rows at time 2^63-1 (after the trace window)": 1}
    assert rep.rows_read == {"task_events": 19, "job_events": 4}
    assert rep.extra["job_events"]["tasks_whose_job_has_no_SUBMIT_in_job_events"] == 1  # job 5
    assert res.cluster is not None and res.cluster.name == "google-2011"


def test_unfinished_drop_leaves_out_tasks_running_at_the_end() -> None:
    wl = read_google2011([TASKS], unfinished="drop")
    np.testing.assert_allclose(wl.workload.submit, [0, 10, 41, 65])
    assert wl.report.dropped[R_RUNNING_AT_END] == 1


def test_a_window_cuts_the_trace_like_the_trace_cuts_time() -> None:
    # [45, 75): (1,0) ran 0..50 -> arrives 0, 5 s left; (2,0) first run ended at 40 -> dropped;
    # (2,0) second run 41/50..70 -> arrives 0 (submitted before 45), 20 s; (1,1) running -> cut, 30 s;
    # (5,0) 65/70, evicted at 80 after the end -> cut at 75: arrives 20, 5 s.
    res = read_google2011([TASKS], start_s=45, end_s=75)
    wl = res.workload
    np.testing.assert_allclose(wl.submit, [0, 0, 0, 20])
    np.testing.assert_allclose(wl.work, [5, 20, 30, 5])
    assert wl.horizon_s == pytest.approx(30.0)
    assert res.report.dropped[R_BEFORE_START] == 1
    assert res.report.extra["rows_ignored"] == {
        "rows at or after --end (not read further)": 1,
        "rows at time 2^63-1 (after the trace window)": 1,
    }


def test_time_stamps_map_zero_to_zero_and_remove_the_600_s_offset() -> None:
    t = np.array([0, 600_000_000, 600_500_000, 3_600_000_000, 1], dtype=np.int64)
    np.testing.assert_allclose(to_seconds(t), [0.0, 0.0, 0.5, 3000.0, 0.0])


def test_tasks_without_requests_and_too_big_ones_are_dropped_and_counted() -> None:
    text = (
        _row(1, 1, 0, 0, "", "")
        + _row(2, 1, 0, 1, "", "")
        + _row(3, 1, 0, 4, "", "")
        + _row(4, 2, 0, 0, 0.9, 0.9)
        + _row(5, 2, 0, 1, 0.9, 0.9)
        + _row(6, 2, 0, 4, 0.9, 0.9)
        + _row(7, 3, 0, 0, 0.2, 0.2)
        + _row(8, 3, 0, 1)
        + _row(9, 3, 0, 4)
    )
    small = Cluster("small", ("cpu", "mem"), ("a",), np.array([2]), np.array([[0.5, 0.5]]))
    res = _read(text, cluster=small)
    assert res.workload.n_jobs == 1  # type: ignore[attr-defined]
    assert res.report.dropped == {R_NO_REQUEST: 1, R_TOO_BIG: 1}  # type: ignore[attr-defined]


def test_an_end_event_for_a_task_never_submitted_is_counted_not_fatal() -> None:
    res = _read(_row(1, 9, 0, 4) + _row(2, 1, 0, 0) + _row(3, 1, 0, 1) + _row(4, 1, 0, 4), running_at_start="drop")
    assert res.workload.n_jobs == 1  # type: ignore[attr-defined]
    assert res.report.dropped == {R_END_ORPHAN: 1}  # type: ignore[attr-defined]


# -- machines ---------------------------------------------------------------------------------------


def test_machine_events_give_the_initial_machines_grouped_by_capacity() -> None:
    # Time-0 events: machines 1, 2 (0.5, 0.5); 3 (1, 1); 4 added at (0.5, 0.25) then updated to (0.5, 0.5);
    # 5 has no capacity (left out); 6 added then removed. Later events are ignored.
    cl = read_machine_events(MACHINES)
    assert cl.counts.tolist() == [3, 1]
    assert cl.capacity.tolist() == [[0.5, 0.5], [1.0, 1.0]]
    assert cl.config_names == ("M1", "M2")
    res = read_google2011([TASKS], machine_events=MACHINES)
    assert res.cluster is not None and res.cluster.n_machines == 4
    assert res.report.extra["machines"]["missing_capacity_left_out"] == 1


# -- bad input: a precise error, or a counted skip ------------------------------------------------------


GOOD = _row(1, 1, 0, 0) + _row(2, 1, 0, 1) + _row(3, 1, 0, 4)


@pytest.mark.parametrize(
    ("bad_line", "reason", "column", "message"),
    [
        ("600000000,,1,0,7,0,user,0,0,0.1\n", "wrong column count", None, "expected 13"),
        ("abc,,2,0,7,0,user,0,0,0.1,0.1,0,0\n", "non-numeric field", "time", "'abc'"),
        ("600000000,,2,0,7,0,user,0,0,lots,0.1,0,0\n", "non-numeric field", "CPU request", "'lots'"),
        (",,2,0,7,0,user,0,0,0.1,0.1,0,0\n", "missing value", "time", "empty"),
        ("600000000,,2,0,7,11,user,0,0,0.1,0.1,0,0\n", "unknown event type", "event type", "11"),
        ("600000000,,2,0,7,0,user,0,0,-0.1,0.1,0,0\n", "bad resource request", "CPU request", "-0.1"),
        ("600000000,,2,0,7,0,user,0,0,0.1,inf,0,0\n", "bad resource request", "memory request", "inf"),
        ("1,,2,0,7,0,user,0,0,0.1,0.1,0,0\n", "time stamp goes backwards", "time", "earlier than"),
    ],
)
def test_each_malformed_row_is_an_error_at_its_line_or_a_counted_skip(
    bad_line: str, reason: str, column: str | None, message: str
) -> None:
    text = GOOD + bad_line + _row(4, 3, 0, 0) + _row(5, 3, 0, 1) + _row(6, 3, 0, 4)
    with pytest.raises(InputError) as e:
        _read(text)
    assert e.value.line == 4 and e.value.column == column and message in str(e.value)
    res = _read(text, on_error="skip")
    assert res.report.rows_skipped == {reason: 1}  # type: ignore[attr-defined]
    assert "line 4" in res.report.skipped_examples[0]  # type: ignore[attr-defined]
    assert res.workload.n_jobs == 2  # type: ignore[attr-defined]


def test_a_truncated_gzip_is_an_error_or_loses_only_its_incomplete_last_line() -> None:
    text = "".join(_row(3 * i + 1, i, 0, 0) + _row(3 * i + 2, i, 0, 1) + _row(3 * i + 3, i, 0, 4) for i in range(200))
    gz = gzip.compress(text.encode())
    cut = gz[: len(gz) * 2 // 3]
    with pytest.raises(InputError, match="truncated") as e:
        read_google2011([cut])
    assert e.value.line is not None and e.value.line > 1
    res = read_google2011([cut], on_error="skip")
    assert res.report.rows_skipped == {"truncated gzip file": 1}
    # Every complete line before the cut was read; none after.
    assert 1 < res.report.rows_read["task_events"] == e.value.line - 1
    assert res.workload.n_jobs > 0


def test_corrupt_gzip_data_is_an_error_naming_the_file() -> None:
    gz = bytearray(gzip.compress(GOOD.encode() * 50))
    gz[len(gz) // 2 : len(gz) // 2 + 8] = b"\xff" * 8
    with pytest.raises(InputError, match="corrupt gzip|truncated"):
        read_google2011([bytes(gz)])


def test_parts_out_of_order_are_reported_as_time_going_backwards() -> None:
    a = (_row(1, 1, 0, 0) + _row(2, 1, 0, 1)).encode()
    b = (_row(10, 1, 0, 4)).encode()
    assert read_google2011([a, b]).workload.n_jobs == 1
    with pytest.raises(InputError, match="previous file"):
        read_google2011([b, a])


def test_bad_arguments_are_parameter_errors() -> None:
    with pytest.raises(ParameterError, match="unfinished"):
        read_google2011([TASKS], unfinished="keep")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="end"):
        read_google2011([TASKS], start_s=10, end_s=5)
    with pytest.raises(InputError, match="no such file"):
        read_google2011([DATA / "missing.csv"])


# -- sources, streaming, progress --------------------------------------------------------------------------


def test_paths_bytes_gzip_and_file_objects_give_the_same_workload() -> None:
    ref = read_google2011([TASKS]).workload
    raw = TASKS.read_bytes()
    for src in (raw, gzip.compress(raw), io.BytesIO(raw), gzip.compress(raw[:300]) + gzip.compress(raw[300:])):
        wl = read_google2011([src]).workload  # type: ignore[list-item]
        np.testing.assert_array_equal(wl.submit, ref.submit)
        np.testing.assert_array_equal(wl.work, ref.work)
        np.testing.assert_array_equal(wl.request, ref.request)


def test_tiny_blocks_and_the_stdlib_parser_give_the_same_result(monkeypatch: pytest.MonkeyPatch) -> None:
    ref = read_google2011([TASKS]).workload
    monkeypatch.setattr(stream, "BLOCK_BYTES", 64)  # a few lines per block: state carried across blocks
    monkeypatch.setattr(stream, "_pyarrow", lambda: None)  # pyarrow absent
    wl = read_google2011([gzip.compress(TASKS.read_bytes())]).workload
    np.testing.assert_array_equal(wl.submit, ref.submit)
    np.testing.assert_array_equal(wl.work, ref.work)
    np.testing.assert_array_equal(wl.request, ref.request)


def test_progress_reaches_the_end_and_can_cancel() -> None:
    seen: list[ImportProgress] = []
    read_google2011([TASKS, gzip.compress(b"")], job_events=[JOBS], progress=seen.append)
    stages = [p.stage for p in seen]
    assert stages[0] == "job_events" and stages[-1] == "task_events"
    assert seen[-1].fraction == 1.0 and seen[-1].rows == 19

    def stop(p: ImportProgress) -> None:
        raise Cancelled("stopped by the user")

    with pytest.raises(Cancelled):
        read_google2011([TASKS], progress=stop)


# -- property: any interleaving of task lifecycles pairs back to its runs ----------------------------------


@st.composite
def _lifecycles(draw: st.DrawFn) -> tuple[list[tuple[int, int, int, int]], list[tuple[float, float, float]]]:
    """Random tasks, each a chain of instances (submit, wait, run, end type); returns events and expected jobs."""
    events: list[tuple[int, int, int, int]] = []  # (time_us, job, idx, event)
    expected: list[tuple[float, float, float]] = []  # (arrival s, duration s, cpu)
    for task in range(draw(st.integers(1, 8))):
        t = draw(st.integers(0, 50))
        for _ in range(draw(st.integers(1, 3))):
            wait, run = draw(st.integers(0, 20)), draw(st.integers(0, 20))
            end = draw(st.sampled_from([2, 3, 4, 5, 6]))
            ran = draw(st.booleans())
            cpu = (task + 1) / 100
            us = [OFFSET_US + 1_000_000 * x for x in (t, t + wait, t + wait + run)]
            if ran:
                events += [(us[0], task, 0, 0), (us[1], task, 0, 1), (us[2], task, 0, end)]
                expected.append((float(t), float(run), cpu))
            else:
                events += [(us[0], task, 0, 0), (us[1], task, 0, 5)]
            t += wait + run + 1
    return events, expected


@settings(max_examples=60, deadline=None)
@given(_lifecycles())
def test_any_interleaving_of_lifecycles_gives_back_each_run(
    case: tuple[list[tuple[int, int, int, int]], list[tuple[float, float, float]]],
) -> None:
    events, expected = case
    events.sort(key=lambda e: e[0])  # the trace's order: by time (stable within a task)
    text = "".join(f"{t},,{j},{i},1,{e},u,0,0,{(j + 1) / 100},0.01,0,0\n" for t, j, i, e in events)
    if not expected:
        with pytest.raises(InputError, match="no jobs"):
            read_google2011([text.encode()], start_s=0.0, running_at_start="drop")
        return
    # From time 0 and without the initial batch: the pairing alone (the window rules are tested apart).
    wl = read_google2011([text.encode()], start_s=0.0, running_at_start="drop").workload
    got = sorted(zip(wl.submit.tolist(), wl.work.tolist(), wl.request[:, 0].tolist(), strict=True))
    assert np.allclose(np.array(got), np.array(sorted(expected)))


# -- the real extract (../shared/data) ---------------------------------------------------------------------


@pytest.mark.slow
def test_the_real_part_0_gives_every_scheduled_task_instance_as_a_job() -> None:
    shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    res = read_google2011([PART0], job_events=[JOB0])
    wl, rep = res.workload, res.report
    # 189,994 SCHEDULE events in the part, each the start of one run; 76 tasks ended while pending,
    # 11,421 were still pending at the part's end (5,611.086346 s of trace time, minus the 600 s offset).
    assert rep.rows_read == {"task_events": 450_146, "job_events": 10_704}
    assert wl.n_jobs == 189_994
    assert rep.dropped == {R_END_PENDING: 76, R_PENDING_AT_END: 11_421}
    assert rep.rows_skipped == {}
    assert wl.horizon_s == pytest.approx(5011.086346)
    assert int((wl.submit == 0).sum()) == 133_283
    assert np.all(np.diff(wl.submit) >= 0) and np.all(wl.work >= 0) and np.all(wl.work <= wl.horizon_s)
    assert wl.request.max() <= 1.0 and wl.request.min() >= 0.0
    assert rep.extra["job_events"]["tasks_whose_job_has_no_SUBMIT_in_job_events"] == 0


def _peak_bytes(path: Path) -> int:
    import tracemalloc

    tracemalloc.start()
    try:
        res = read_google2011([path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert res.workload.n_jobs == 1
    return peak


def test_memory_follows_the_result_not_the_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Inputs of 20,000 and 100,000 rows whose tasks are all killed while pending, plus one real job: the
    # result is the same, so the peak memory must be too (a reader holding its input would grow fivefold).
    paths = []
    for n in (10_000, 50_000):
        rows = "".join(f"{OFFSET_US + i},,{i},0,,{ev},u,0,0,0.1,0.1,0,0\n" for i in range(n) for ev in (0, 5))
        text = rows + _row(n, n, 0, 0) + _row(n + 1, n, 0, 1) + _row(n + 2, n, 0, 4)
        paths.append(tmp_path / f"part-{n}.csv.gz")
        paths[-1].write_bytes(gzip.compress(text.encode(), compresslevel=1))
    monkeypatch.setattr(stream, "BLOCK_BYTES", 64 << 10)
    read_google2011([paths[0]])  # imports and registries loaded outside the measurement
    small, large = _peak_bytes(paths[0]), _peak_bytes(paths[1])
    size = len(gzip.decompress(paths[1].read_bytes()))
    assert large < 1.3 * small, (small, large)
    assert large < size / 3, (large, size)


def test_a_gap_in_part_numbers_is_a_warning_in_the_report() -> None:
    # Issue 17: parts 13 then 15 imported without a word.
    from simcore.traces.google2011 import part_gap

    assert part_gap(["a/part-00013-of-00500.csv.gz", "a/part-00014-of-00500.csv.gz"]) is None
    assert part_gap(["x.csv", "y.csv"]) is None
    gap = part_gap(["part-00013-of-00500.csv.gz", "part-00015-of-00500.csv.gz"])
    assert gap is not None and gap.startswith("task_events parts 00014 are missing between part 00013 and 00015")


def test_the_reader_puts_the_part_gap_in_its_warnings(tmp_path: Path) -> None:
    a, b = tmp_path / "part-00013-of-00500.csv", tmp_path / "part-00015-of-00500.csv"
    a.write_bytes((DATA / "task_events.csv").read_bytes())
    b.write_bytes(b"")
    warnings = read_google2011([a, b]).report.warnings
    assert any(n.startswith("task_events parts 00014 are missing") for n in warnings)
