"""Imports that say what they could not see (issue 26, items 4-6): overload, mid-trace Google input, truncated SWF."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from simcore.core.model import Cluster
from simcore.traces import importer
from simcore.traces.swf import read_swf
from tests.conftest import shared_data
from tests.simcore.test_traces_google2011 import PART0, _row

ONE_MACHINE = Cluster("one", ("cpu", "mem"), ("m",), np.array([1]), np.array([[1.0, 1.0]]))


def _swf(tmp_path: Path, header: str, jobs: list[tuple[float, float, int]], name: str = "log.swf") -> Path:
    """An SWF file: header comment lines, then one line per (submit, run, processors)."""
    lines = [f"; {h}\n" for h in header.splitlines() if h.strip()]
    lines += [f"{i + 1} {s:g} 0 {r:g} {p} -1 -1 {p} 60 -1 1 1 1 1 1 -1 -1 -1\n" for i, (s, r, p) in enumerate(jobs)]
    path = tmp_path / name
    path.write_text("".join(lines))
    return path


# -- item 4: an estimate above 1 warns ---------------------------------------------------------------


def test_an_swf_log_that_offers_more_work_than_the_machine_has_warns_of_unbounded_queues(tmp_path: Path) -> None:
    # MaxProcs 4: three jobs of 2 processors (request 0.5) run 100 s each, submitted at 0, 50, 100:
    # offered work 3 x 0.5 x 100 = 150 over a 100 s window on one machine of capacity 1 -> 1.5.
    path = _swf(tmp_path, "MaxProcs: 4", [(0, 100, 2), (50, 100, 2), (100, 100, 2)])
    s = importer.summary(importer.import_trace("swf", [path]))
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(1.5)
    assert len(s["warnings"]) == 1
    assert "cannot keep up (utilisation estimate cpu 1.5, above 1)" in s["warnings"][0]
    assert "every scheduler will queue without bound" in s["warnings"][0]


def test_an_estimate_of_exactly_1_does_not_warn(tmp_path: Path) -> None:
    # Two jobs of request 0.5 for 100 s over a 100 s window: 100 / 100 = 1.0, full but not over.
    path = _swf(tmp_path, "MaxProcs: 4", [(0, 100, 2), (100, 100, 2)])
    s = importer.summary(importer.import_trace("swf", [path]))
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(1.0)
    assert "warnings" not in s


def test_the_overload_warning_names_only_the_resources_above_1() -> None:
    from simcore.traces.report import load_warnings

    w = load_warnings({"cpu": 4.9, "mem": 0.2}, ONE_MACHINE)
    assert len(w) == 1 and "utilisation estimate cpu 4.9, above 1" in w[0] and "mem" not in w[0].split("(")[1]
    assert load_warnings({"cpu": 0.5, "mem": 0.2}, ONE_MACHINE) == []
    assert "nearly idle" in load_warnings({"cpu": 0.01, "mem": 0.02}, ONE_MACHINE)[0]


# -- item 5: a Google input from mid-trace --------------------------------------------------------------


def test_a_google_input_read_from_time_0_is_not_a_lower_bound() -> None:
    # Part 00000's rows start at time 0: every task running at the start has its time-0 events.
    text = "".join(_row(t, 1, 0, ev, cpu=0.5, mem=0.5) for t, ev in ((0, 0), (0, 1), (100, 4))).encode()
    s = importer.summary(importer.import_trace("google2011", [text], cluster=ONE_MACHINE, start_s=0.0))
    assert "utilisation_estimate_is" not in s
    assert not any("mid-trace" in w for w in s.get("warnings", []))


def test_the_streamed_google_import_labels_a_mid_trace_estimate_too(tmp_path: Path) -> None:
    text = "".join(_row(t, 2, 0, ev, cpu=0.5, mem=0.5) for t, ev in ((1000, 0), (1000, 1), (1100, 4))).encode()
    src = tmp_path / "part-00003-of-00500.csv"
    src.write_bytes(text)
    s = importer.stream_google2011([src], tmp_path / "out", cluster=ONE_MACHINE)
    # One task of cpu 0.5 for the whole 100 s window: 0.5, and only a lower bound.
    assert s["utilisation_estimate"]["cpu"] == pytest.approx(0.5)
    assert s["utilisation_estimate_is"].startswith("a lower bound: the input begins mid-trace (first event at 1000 s)")
    assert s["warnings"][0].startswith("the input begins mid-trace (first event at 1000 s, not at 0")


@pytest.mark.slow
def test_the_real_part_0_from_800_s_on_its_own_is_a_lower_bound_of_the_same_window_read_from_0() -> None:
    # Rows from line 300,001 begin at 800.591 s: alone they estimate cpu 0.053; the same window read with the
    # part's time-0 rows (every task running from the start) is 1.125 (the 0.245 vs 1.13, in small).
    shared_data("google-clusterdata-2011-2", "task_events", "part-00000-of-00500.csv.gz")
    lines = gzip.decompress(PART0.read_bytes()).splitlines(keepends=True)
    mid = importer.summary(importer.import_trace("google2011", [b"".join(lines[300_000:])]))
    full = importer.summary(importer.import_trace("google2011", [PART0], start_s=800.591))
    assert mid["utilisation_estimate"]["cpu"] == pytest.approx(0.053134, abs=1e-6)
    assert mid["utilisation_estimate_is"].startswith(
        "a lower bound: the input begins mid-trace (first event at 800.591 s)"
    )
    assert mid["warnings"] == [mid["warnings"][0]] and mid["warnings"][0].startswith("the input begins mid-trace")
    assert full["utilisation_estimate"]["cpu"] == pytest.approx(1.125, abs=1e-3)
    assert "utilisation_estimate_is" not in full
    assert (
        len(full["warnings"]) == 1 and "cannot keep up (utilisation estimate cpu 1.13, above 1)" in full["warnings"][0]
    )


# -- item 6: a truncated SWF log ---------------------------------------------------------------------


def test_an_swf_log_with_fewer_records_than_its_header_claims_warns(tmp_path: Path) -> None:
    path = _swf(tmp_path, "MaxJobs: 10\nMaxRecords: 10\nMaxProcs: 4", [(0, 10, 1), (5, 10, 1), (9, 10, 1)])
    res = read_swf(path)
    assert res.report.warnings == [
        f"the log looks truncated: the header of {path} gives MaxRecords 10: 10 records, but 3 were read "
        "(7 missing, 30.0% read). The jobs missing are not simulated; check the download (or give every part of "
        "a split log)"
    ]
    assert importer.summary(importer.import_trace("swf", [path]))["warnings"][0].startswith("the log looks truncated")


def test_max_jobs_is_the_fallback_and_a_complete_log_says_so_in_its_notes(tmp_path: Path) -> None:
    path = _swf(tmp_path, "MaxJobs: 3\nMaxProcs: 4", [(0, 10, 1), (5, 10, 1), (9, 10, 1)])
    res = read_swf(path)
    assert res.report.warnings == []
    assert f"the header of {path} gives MaxJobs 3: 3 records, all read" in res.report.notes


def test_a_cleaned_log_subtracts_the_jobs_its_filters_removed(tmp_path: Path) -> None:
    header = "MaxJobs: 6\nMaxRecords: 6\nMaxProcs: 4\nNote: A CLEANED VERSION OF THE LOG!\n   user=3 (3 jobs removed)"
    res = read_swf(_swf(tmp_path, header, [(0, 10, 1), (5, 10, 1), (9, 10, 1)]))
    assert res.report.warnings == []
    assert any("MaxRecords 6 minus 3 removed by the log's cleaning: 3 records, all read" in n for n in res.report.notes)


def test_more_records_than_the_header_claims_is_a_warning_too(tmp_path: Path) -> None:
    res = read_swf(_swf(tmp_path, "MaxRecords: 2\nMaxProcs: 4", [(0, 10, 1), (5, 10, 1), (9, 10, 1)]))
    assert len(res.report.warnings) == 1
    assert "MaxRecords 2: 2 records, but 3 were read: the header does not describe this file" in res.report.warnings[0]


def test_a_header_without_a_count_is_not_checked(tmp_path: Path) -> None:
    res = read_swf(_swf(tmp_path, "MaxProcs: 4", [(0, 10, 1)]))
    assert res.report.warnings == [] and not any("records" in n for n in res.report.notes)


def test_bad_lines_count_as_records_read(tmp_path: Path) -> None:
    # Three records, one malformed and skipped: the log is still complete (3 of MaxRecords 3).
    path = _swf(tmp_path, "MaxRecords: 3\nMaxProcs: 4", [(0, 10, 1), (9, 10, 1)])
    path.write_text(path.read_text() + "3 12 0 oops 1 -1 -1 1 60 -1 1 1 1 1 1 -1 -1 -1\n")
    res = read_swf(path, on_error="skip")
    assert res.report.warnings == [] and res.report.rows_skipped


def test_the_real_cleaned_nasa_log_is_complete() -> None:
    # MaxJobs/MaxRecords 42,264 and "(24025 jobs removed)": 18,239 records, every one in the file.
    nasa = shared_data("pwa-swf", "NASA-iPSC-1993-3.1-cln.swf.gz")
    res = read_swf(nasa)
    assert res.report.warnings == []
    assert any(
        "MaxRecords 42,264 minus 24,025 removed by the log's cleaning: 18,239 records, all read" in n
        for n in res.report.notes
    )
