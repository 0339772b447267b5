"""Which per-job records a run keeps (simcore.records): all, a seeded sample of N, or none; the default by size.

The summary, statistics and series come from every job whatever is kept; only jobs.csv follows the choice.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from simcore import api, archive
from simcore.core.errors import ParameterError
from simcore.records import describe, keep_records, parse_policy, records_text
from simcore.scenario import validate_scenario
from tests.simcore.test_cli import SMALL, run_cli


def test_all_none_and_a_sample_keep_what_they_say() -> None:
    assert keep_records(1000, "all", 0) is None
    none = keep_records(1000, "none", 0)
    assert none is not None and len(none) == 0
    s = keep_records(1000, "sample:100", 7)
    assert s is not None and len(s) == 100 and len(set(s.tolist())) == 100
    assert (np.diff(s) > 0).all() and s.min() >= 0 and s.max() < 1000  # sorted, distinct: records stay in job order
    assert keep_records(50, "sample:100", 7) is None  # a sample as large as the run is the whole run


def test_the_sample_is_the_same_under_a_seed_and_another_under_another_seed() -> None:
    a, b, c = (
        keep_records(10_000, "sample:500", 3),
        keep_records(10_000, "sample:500", 3),
        keep_records(10_000, "sample:500", 4),
    )
    assert a is not None and b is not None and c is not None
    assert np.array_equal(a, b) and not np.array_equal(a, c)
    np.random.seed(99)  # global state plays no part
    assert np.array_equal(keep_records(10_000, "sample:500", 3), a)  # type: ignore[arg-type]


def test_auto_keeps_all_up_to_the_threshold_and_a_sample_above() -> None:
    assert keep_records(100, "auto", 0, all_up_to=100, auto_sample=10) is None
    above = keep_records(101, "auto", 0, all_up_to=100, auto_sample=10)
    assert above is not None and len(above) == 10
    assert describe(101, "auto", 0, above) == {
        "policy": "auto",
        "kept": "sample",
        "jobs_kept": 10,
        "of": 101,
        "sample_seed": 0,
    }
    assert records_text(describe(61_454, "sample:1000", 3, keep_records(61_454, "sample:1000", 3))) == (
        "a sample of 1,000 of 61,454 (seed 3)"
    )
    assert records_text(describe(61_454, "all", 3, None)) == "all 61,454 kept"
    assert records_text(describe(61_454, "none", 3, keep_records(61_454, "none", 3))) == "not kept (none of 61,454)"


@pytest.mark.parametrize("bad", ["some", "sample:", "sample:0", "sample:-3", "sample:1.5", 7])
def test_a_bad_policy_names_the_field_and_the_choices(bad: object) -> None:
    with pytest.raises(ParameterError, match=r"job_records must be one of auto, all, none or sample:N"):
        parse_policy(bad)
    assert parse_policy(" Sample:1_000 ") == "sample:1000"


def test_the_scenario_keeps_only_a_choice_other_than_auto() -> None:
    base = {
        "cluster": {"preset": "google-balanced"},
        "workload": {"preset": "google-like"},
        "schedulers": ["greedy"],
        "seeds": [0],
    }
    assert "job_records" not in validate_scenario({**base, "job_records": "auto"})
    assert validate_scenario({**base, "job_records": "sample:10"})["job_records"] == "sample:10"
    with pytest.raises(ParameterError, match="scenario job_records must be one of"):
        validate_scenario({**base, "job_records": "half"})


@pytest.fixture(scope="module")
def outcome() -> api.RunOutcome:
    return api.run(
        api.RunSpec(
            "google-balanced",
            "google-like",
            "greedy",
            seed=2,
            load=0.8,
            hours=0.02,
            cluster_params={"machines_per_config": 3},
            engine="python",
        )
    )


def _rows(p: Path) -> list[list[str]]:
    with p.open() as f:
        return list(csv.reader(f))


def test_the_summary_and_series_are_the_same_whatever_is_kept(outcome: api.RunOutcome, tmp_path: Path) -> None:
    n = outcome.summary["jobs"]
    assert n > 20
    written = {}
    for policy in ("all", "none", "sample:20"):
        d = tmp_path / policy.replace(":", "-")
        outcome.write(d, policy)
        summary = json.loads((d / "summary.json").read_text())
        written[policy] = (summary.pop("records"), summary, (d / "series.json").read_text())
    assert written["all"][1] == written["none"][1] == written["sample:20"][1]
    assert written["all"][2] == written["none"][2] == written["sample:20"][2]
    assert written["all"][0] == {"policy": "all", "kept": "all", "jobs_kept": n, "of": n}
    assert written["none"][0] == {"policy": "none", "kept": "none", "jobs_kept": 0, "of": n}
    assert written["sample:20"][0] == {
        "policy": "sample:20",
        "kept": "sample",
        "jobs_kept": 20,
        "of": n,
        "sample_seed": 2,
    }
    assert not (tmp_path / "none" / "jobs.csv").exists()
    every, sample = _rows(tmp_path / "all" / "jobs.csv"), _rows(tmp_path / "sample-20" / "jobs.csv")
    assert len(every) == n + 1 and len(sample) == 21 and sample[0] == every[0]
    keep = keep_records(n, "sample:20", 2)
    assert keep is not None
    assert sample[1:] == [every[1 + i] for i in keep.tolist()]  # the very rows of those jobs, job numbers kept


def test_stored_chunks_of_a_sample_keep_their_job_numbers(outcome: api.RunOutcome) -> None:
    keep = keep_records(outcome.summary["jobs"], "sample:20", 2)
    assert keep is not None
    got = archive.concat_jobs(archive.iter_jobs(archive.job_chunks(outcome, 7, keep)))
    every = outcome.jobs_columns()
    assert got["job"].tolist() == keep.tolist()
    assert np.array_equal(got["start_s"], every["start_s"][keep], equal_nan=True)


def test_the_cli_writes_what_job_records_asks(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        *SMALL,
        "--scheduler",
        "greedy",
        "--engine",
        "python",
        "--out",
        str(tmp_path / "s"),
        "--job-records",
        "sample:5",
    )
    assert code == 0, err
    rec = json.loads((tmp_path / "s" / "summary.json").read_text())["records"]
    assert rec["kept"] == "sample" and rec["jobs_kept"] == 5 and len(_rows(tmp_path / "s" / "jobs.csv")) == 6
    code, out, err = run_cli(
        capsys,
        "run",
        *SMALL,
        "--scheduler",
        "greedy",
        "--engine",
        "python",
        "--out",
        str(tmp_path / "n"),
        "--job-records",
        "none",
    )
    assert code == 0, err
    assert not (tmp_path / "n" / "jobs.csv").exists()
    assert json.loads((tmp_path / "n" / "summary.json").read_text())["records"]["kept"] == "none"
    code, out, err = run_cli(
        capsys, "run", *SMALL, "--scheduler", "greedy", "--engine", "python", "--job-records", "half"
    )
    assert code == 2 and "--job-records: must be one of auto, all, none or sample:N" in err
