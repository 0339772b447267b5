"""SWF reader: field mapping, normalisation against a cluster, windows, bad input, the real NASA log."""

from __future__ import annotations

import gzip
import io
from pathlib import Path

import numpy as np
import pytest

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster
from simcore.traces.swf import R_NO_RUN, R_TOO_BIG, read_swf
from tests.conftest import shared_data

SMALL = Path(__file__).resolve().parents[1] / "data" / "swf" / "small.swf"
NASA = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "pwa-swf" / "NASA-iPSC-1993-3.1-cln.swf.gz"


def _line(
    job: int, submit: float, run: float, alloc: float = 4, req: float = -1, used_mem: float = -1, req_mem: float = -1
) -> str:
    return f"{job} {submit} 0 {run} {alloc} -1 {used_mem} {req} 60 {req_mem} 1 1 1 1 1 -1 -1 -1\n"


def test_it_maps_submit_run_time_processors_and_memory_normalised_to_max_procs() -> None:
    # small.swf: MaxProcs 64. Job 1: 32 allocated procs, no memory -> (0.5, 0);
    # job 2: allocated -1 so requested 16 procs, 1024 KB/proc requested -> 16,384 KB;
    # job 3: run time -1 -> dropped; job 4: 64 procs, used 2048 KB/proc (requested -1) -> 131,072 KB, the
    # largest job memory and so the machine's memory; job 5: 128 procs > 64 -> does not fit, dropped.
    res = read_swf(SMALL)
    wl = res.workload
    np.testing.assert_allclose(wl.submit, [0, 10, 30])
    np.testing.assert_allclose(wl.work, [100, 50, 0])
    np.testing.assert_allclose(wl.request, [[0.5, 0.0], [0.25, 0.125], [1.0, 1.0]])
    assert wl.horizon_s == 30.0 and (wl.job_class == -1).all()
    assert res.report.dropped == {R_NO_RUN: 1, R_TOO_BIG: 1}
    assert res.report.kept_notes == {"no memory information: mem request 0": 1}  # job 1
    assert res.report.extra["swf_header"]["MaxProcs"] == "64"
    cl = res.cluster
    assert cl is not None and cl.name == "swf-test-machine-9000" and cl.n_machines == 1
    assert cl.capacity.tolist() == [[1.0, 1.0]]


def test_requested_processors_and_a_user_cluster_change_the_normalisation() -> None:
    # Requested procs (fallback allocated), 32 procs = the cpu of the largest machine (0.8 here).
    cl = Cluster("two", ("cpu", "mem"), ("big", "small"), np.array([1, 3]), np.array([[0.8, 1.0], [0.4, 0.5]]))
    res = read_swf(SMALL, cluster=cl, procs="requested", machine_procs=32, machine_mem_kb=262_144)
    wl = res.workload
    # job 1: 32 -> 0.8; job 2: 16 -> 0.4, 16,384 KB -> 0.0625; job 4: 64 -> 1.6 does not fit; job 5 neither.
    np.testing.assert_allclose(wl.submit, [0, 10])
    np.testing.assert_allclose(wl.request, [[0.8, 0.0], [0.4, 0.0625]])
    assert res.cluster is cl
    assert res.report.dropped[R_TOO_BIG] == 2


def test_a_window_keeps_jobs_submitted_inside_it_shifted_to_zero() -> None:
    res = read_swf(SMALL, start_s=5, end_s=35)
    np.testing.assert_allclose(res.workload.submit, [5, 25])
    assert res.workload.horizon_s == 30.0
    assert res.report.dropped["submitted before the window's start"] == 1


@pytest.mark.parametrize(
    ("bad", "reason", "column", "message"),
    [
        ("7 40 0 10 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1\n", "wrong column count", None, "found 17"),
        ("7 40 0 ten 4 -1 -1 4 60 -1 1 1 1 1 1 -1 -1 -1\n", "non-numeric field", "run time", "'ten'"),
        (_line(7, 40, -5), "negative run time", "run time", "-5"),
        (_line(7, -3, 5), "negative submit time", "submit time", "-3"),
        (_line(7, 1, 5), "submit time goes backwards", "submit time", "earlier than 20"),
    ],
)
def test_each_malformed_line_is_an_error_at_its_line_or_a_counted_skip(
    bad: str, reason: str, column: str | None, message: str
) -> None:
    text = "; MaxProcs: 8\n" + _line(1, 0, 10) + _line(2, 20, 10) + bad + _line(3, 50, 10)
    with pytest.raises(InputError) as e:
        read_swf(text.encode())
    assert e.value.line == 4 and e.value.column == column and message in str(e.value)
    res = read_swf(text.encode(), on_error="skip")
    assert res.report.rows_skipped == {reason: 1}
    assert res.workload.n_jobs == 3


def test_a_truncated_gzip_is_an_error_or_a_counted_skip() -> None:
    text = "; MaxProcs: 8\n" + "".join(_line(i, 10 * i, 5) for i in range(1, 400))
    cut = gzip.compress(text.encode())[:-200]
    with pytest.raises(InputError, match="truncated"):
        read_swf(cut)
    res = read_swf(cut, on_error="skip")
    assert res.report.rows_skipped == {"truncated gzip file": 1}
    assert 100 < res.workload.n_jobs < 399


def test_no_usable_job_is_an_error_and_bad_options_are_parameter_errors() -> None:
    with pytest.raises(InputError, match="no jobs"):
        read_swf((_line(1, 0, -1)).encode())
    with pytest.raises(ParameterError, match="procs"):
        read_swf(SMALL, procs="most")  # type: ignore[arg-type]
    with pytest.raises(ParameterError, match="machine_procs"):
        read_swf(SMALL, machine_procs=0)
    with pytest.raises(ParameterError, match="no 'cpu'"):
        read_swf(SMALL, cluster=Cluster("g", ("gpu",), ("a",), np.array([1]), np.array([[1.0]])))


def test_without_a_max_procs_header_the_largest_job_sets_the_scale() -> None:
    res = read_swf((_line(1, 0, 5, alloc=2) + _line(2, 1, 5, alloc=8)).encode())
    np.testing.assert_allclose(res.workload.request[:, 0], [0.25, 1.0])


@pytest.mark.slow
def test_the_real_nasa_ipsc_log() -> None:
    res = read_swf(shared_data("pwa-swf", "NASA-iPSC-1993-3.1-cln.swf.gz"))
    wl = res.workload
    # 18,239 job lines (18,271 lines minus 32 header comments); every one has a run time and processors.
    assert res.report.rows_read == {"swf": 18_239}
    assert wl.n_jobs == 18_239 and res.report.dropped == {} and res.report.rows_skipped == {}
    assert wl.horizon_s == 7_948_936.0
    assert wl.request[:, 0].min() == pytest.approx(1 / 128) and wl.request[:, 0].max() == 1.0
    assert (wl.request[:, 1] == 0).all()  # the log has no memory information
    assert wl.work.max() == 62_643.0


def test_fields_beyond_the_standard_18_are_ignored_with_a_note() -> None:
    # Alea's logs carry 21 fields; the first 18 are the standard ones (issue 17).
    line18 = "1 0 0 100 1 -1 -1 1 -1 -1 1 1 1 1 1 -1 -1 -1"
    data = f"{line18} 7 8 9\n2 10 0 50 2 -1 -1 2 -1 -1 1 1 1 1 1 -1 -1 -1 7 8 9\n".encode()
    res = read_swf(io.BytesIO(data))
    assert res.workload.n_jobs == 2
    assert res.workload.work.tolist() == [100.0, 50.0]
    assert any("beyond the standard 18 are ignored" in n for n in res.report.notes)


def test_fewer_than_18_fields_is_still_an_error() -> None:
    with pytest.raises(InputError, match="expected 18 whitespace-separated fields, found 17"):
        read_swf(io.BytesIO(b"1 0 0 100 1 -1 -1 1 -1 -1 1 1 1 1 1 -1 -1\n"))


def test_absolute_unix_submit_times_open_the_window_at_the_first_job() -> None:
    # Issue 17: a log in Unix time imported with a horizon of 1.36e9 s; the window now starts at the
    # first submission, so the horizon is the log's own span.
    text = "; MaxProcs: 8\n" + _line(1, 1_300_000_000, 100) + _line(2, 1_300_000_050, 10) + _line(3, 1_300_000_400, 5)
    wl = read_swf(text.encode()).workload
    assert wl.submit.tolist() == [0.0, 50.0, 400.0]
    assert wl.horizon_s == 400.0
    assert wl.params["window_start_s"] == 1_300_000_000.0


def test_a_span_longer_than_the_bound_is_still_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_TRACE_SECONDS", "1000")
    text = "; MaxProcs: 8\n" + _line(1, 1_300_000_000, 100) + _line(2, 1_300_005_000, 10)
    with pytest.raises(InputError, match="line 3.*submit time"):
        read_swf(text.encode())
