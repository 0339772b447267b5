"""The shipped profile table follows the paper's findings; uploaded tables are validated; traces match section 3.3."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcore.api import workload_rng
from simcore.core.errors import InputError
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import SHIPPED, TABLE2_MIX, load_profile, parse_profile
from simcore.profiles.trace import arrival_model, ncbi_trace

T = load_profile(None)


def row(name: str) -> int:
    return T.job_index(name)


def col(name: str) -> int:
    return T.machine_index(name)


def test_the_shipped_table_has_table1_machine_types_and_table2_mix() -> None:
    assert T.machine_types == ("type1", "type2", "type3", "type4", "type5", "type6")
    mhz = [a["cpu_mhz"] for a in T.machine_attributes]
    mem = [a["memory_mb"] for a in T.machine_attributes]
    disk = [a["disk"] for a in T.machine_attributes]
    assert mhz == [733, 2800, 2800, 2800, 2800, 525]
    assert mem == [256, 1536, 256, 1536, 256, 8192]
    assert disk == ["IDE", "IDE", "IDE", "SCSI", "SCSI", "SCSI"]
    assert dict(zip(T.job_types, T.proportions.tolist(), strict=True)) == pytest.approx(TABLE2_MIX)


def test_blastn_io_share_spans_19_to_74_percent_least_on_type6_most_on_type3() -> None:
    share = T.io_share[row("blastn")]
    assert share.min() == pytest.approx(0.19, abs=0.002) and int(share.argmin()) == col("type6")
    assert share.max() == pytest.approx(0.74, abs=0.002) and int(share.argmax()) == col("type3")


def test_blastp_io_share_spans_3_to_45_percent_and_memory_cuts_it() -> None:
    share = T.io_share[row("blastp")]
    assert share[col("type6")] == pytest.approx(0.03, abs=0.002) and share.min() == share[col("type6")]
    assert share[col("type3")] == pytest.approx(0.45, abs=0.002) and share.max() == share[col("type3")]
    # 1.5 GB machines hold most of the 2.3 GB protein database: less I/O than the 256 MB twin.
    io = T.io_s[row("blastp")]
    assert io[col("type2")] < 0.5 * io[col("type3")] and io[col("type4")] < 0.5 * io[col("type5")]


def test_blastx_io_never_exceeds_30_percent() -> None:
    assert T.io_share[row("blastx")].max() <= 0.30 + 1e-3


def test_tblastn_and_tblastx_are_cpu_bound_and_an_order_of_magnitude_longer() -> None:
    for name in ("tblastn", "tblastx"):
        k = row(name)
        assert T.io_share[k].max() < 0.05
        same_cpu = T.cold_s[k, [col(f"type{i}") for i in (2, 3, 4, 5)]]
        assert same_cpu.max() / same_cpu.min() < 1.05  # "small variations" on the 2.8 GHz types
        for other in ("blastn", "blastp", "blastx"):
            assert (T.cold_s[k] >= 8 * T.cold_s[row(other)]).all()


def test_cache_affinity_only_for_blastn_on_type6_and_blastp_on_type2() -> None:
    gain = T.affinity_gain
    assert gain[row("blastn"), col("type6")] == pytest.approx(0.21, abs=1e-4)
    assert gain[row("blastp"), col("type2")] == pytest.approx(0.125, abs=1e-4)
    mask = np.ones_like(gain, dtype=bool)
    mask[row("blastn"), col("type6")] = mask[row("blastp"), col("type2")] = False
    assert np.all(gain[mask] == 0.0)


def test_every_shipped_number_cites_the_paper() -> None:
    data = json.loads(SHIPPED.read_text())
    for r in data["runtimes"]:
        assert "Section 3" in r["source"], r
    assert "1.14" in data["arrivals"]["source"]
    assert all(m["source"] == "Table 1" for m in data["machine_types"])


def test_the_runtime_model_uses_the_warm_time_only_after_the_same_job_type() -> None:
    kinds = np.array([row("blastn"), row("blastp")])
    rt = ProfileRuntime(T, kinds)
    j6, j2 = col("type6"), col("type2")
    assert rt.duration(0, j6, row("blastn")) == pytest.approx(0.79 * T.cold_s[0, j6])
    assert rt.duration(0, j6, row("blastp")) == T.cold_s[0, j6]
    assert rt.duration(0, j6, -1) == T.cold_s[0, j6]
    assert rt.duration(1, j2, row("blastp")) == pytest.approx(0.875 * T.cold_s[1, j2])


def test_the_hourly_model_has_a_mean_interarrival_of_1_14_s_over_25_hours() -> None:
    am = arrival_model(T)
    assert am.start_clock_hour == 13 and am.trace_hours == 25
    assert am.mean_interarrival(25) == pytest.approx(1.14, rel=1e-3)
    hourly = am.hourly_mean_interarrival_s
    assert len(hourly) == 24 and max(hourly) / min(hourly) > 1.5  # the mean varies by hour


@pytest.mark.parametrize("seed", [0, 7])
def test_a_generated_trace_matches_the_rate_and_the_mix(seed: int) -> None:
    submit, kinds = ncbi_trace(T, arrival_model(T), 25.0, workload_rng(seed))
    assert 25 * 3600 / len(submit) == pytest.approx(1.14, rel=0.02)
    mix = np.bincount(kinds, minlength=5) / len(kinds)
    assert mix == pytest.approx(T.proportions, abs=0.006)
    assert np.all(np.diff(submit) >= 0) and submit[-1] < 25 * 3600
    # Within an hour gaps are exponential: coefficient of variation about 1.
    gaps = np.diff(submit[submit < 3600])
    assert gaps.std() / gaps.mean() == pytest.approx(1.0, abs=0.1)


def test_traces_are_deterministic_under_a_seed_and_differ_across_seeds() -> None:
    a = ncbi_trace(T, arrival_model(T), 2.0, workload_rng(3))
    b = ncbi_trace(T, arrival_model(T), 2.0, workload_rng(3))
    c = ncbi_trace(T, arrival_model(T), 2.0, workload_rng(4))
    assert np.array_equal(a[0], b[0]) and np.array_equal(a[1], b[1])
    assert len(a[0]) != len(c[0]) or not np.array_equal(a[0], c[0])


CSV = """job_type,machine_type,cpu_s,io_s,warm_s,proportion
a,fast,10,2,,0.75
a,slow,30,2,25,0.75
b,fast,100,0,,0.25
b,slow,300,0,,0.25
"""


def test_a_user_csv_table_loads(tmp_path: Path) -> None:
    p = tmp_path / "mine.csv"
    p.write_text(CSV)
    t = load_profile(p)
    assert t.job_types == ("a", "b") and t.machine_types == ("fast", "slow")
    assert t.cold_s.tolist() == [[12.0, 32.0], [100.0, 300.0]]
    assert t.warm_s.tolist() == [[12.0, 25.0], [100.0, 300.0]]
    assert t.proportions.tolist() == [0.75, 0.25]


def test_databases_come_from_the_table_or_the_paper() -> None:
    # The shipped table: section 2's nt / nr split.
    assert T.databases == ("nt", "nr", "nr", "nt", "nt") and T.database_groups() == [0, 1, 1, 0, 0]
    assert T.subset(("blastp", "blastn")).databases == ("nr", "nt")
    # A CSV without a database column: every job type its own database.
    t = parse_profile(CSV, name="mine.csv")
    assert t.databases == ("a", "b") and t.database_groups() == [0, 1]
    # Given per row, consistently.
    rows = "job_type,machine_type,cpu_s,io_s,database\na,x,1,1,D\nb,x,2,1,D\nc,x,3,1,\n"
    t = parse_profile(
        rows.replace("cpu_s,io_s,database", "cpu_s,io_s,proportion,database")
        .replace(",1,D", ",1,1,D")
        .replace(",1,\n", ",1,1,\n"),
        name="db.csv",
    )
    assert t.databases == ("D", "D", "c") and t.database_groups() == [0, 0, 1]


def test_a_user_json_table_round_trips_the_shipped_one() -> None:
    t = parse_profile(SHIPPED.read_text(), name="copy.json")
    assert np.array_equal(t.cold_s, T.cold_s) and t.fingerprint() == T.fingerprint()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("job_type,machine_type,cpu_s\na,x,1\n", "missing column(s) io_s"),
        ("job_type,machine_type,cpu_s,io_s,speed\n", "unknown column(s) speed"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,abc,1\n", "line 2, column 'cpu_s': cpu_s must be a number"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,-1,1\n", "line 2, column 'cpu_s'"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,1,1\nblastn,x,1,1\n", "line 3: (blastn, x) appears twice"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,1,1\nblastp,y,1,1\n", "missing run time(s) for (blastn, y)"),
        ("job_type,machine_type,cpu_s,io_s\nfoo,x,1,1\n", "no proportion for job type 'foo'"),
        ("job_type,machine_type,cpu_s,io_s,proportion\na,x,1,1,0.5\na,y,1,1,0.4\n", "line 3, column 'proportion'"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,0,0\n", "cpu_s + io_s must be positive"),
        ("job_type,machine_type,cpu_s,io_s\nblastn,x,1,1,2\n", "line 2: expected 4 fields"),
        (
            "job_type,machine_type,cpu_s,io_s,database\nblastn,x,1,1,nt\nblastn,y,1,1,nr\n",
            "line 3, column 'database': job type 'blastn' searches database 'nr' here but 'nt'",
        ),
        (
            '{"job_types": [{"name": "blastn", "database": 3}], '
            '"runtimes": [{"job_type": "blastn", "machine_type": "x", "cpu_s": 1, "io_s": 1}]}',
            "job_types[0].database must be a non-empty string",
        ),
        ('{"runtimes": [}', "invalid JSON"),
        ('{"runtimes": []}', "'runtimes' must be a non-empty list"),
        ('{"runtimes": [{"job_type": "blastn", "machine_type": "x", "cpu_s": 1}]}', "runtimes[0] has no 'io_s'"),
    ],
)
def test_bad_tables_fail_with_a_message_naming_the_place(tmp_path: Path, text: str, message: str) -> None:
    p = tmp_path / "bad.csv"
    p.write_text(text)
    with pytest.raises(InputError) as e:
        load_profile(p)
    assert message in str(e.value)
    assert str(p) in str(e.value)


def test_a_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="cannot read profile table"):
        load_profile(tmp_path / "nope.json")
