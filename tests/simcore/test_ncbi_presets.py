"""The ncbi-* presets: cluster sizes, workloads, per-job-type metrics, the CLI, and the size search."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from simcore import cli
from simcore.api import RunSpec, lambda_star, resolve_cluster, resolve_workload, run
from simcore.core.errors import InputError
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.profiles.sizing import WAIT_FRACTION, default_size, smallest_size
from simcore.profiles.table import load_profile


def test_the_presets_are_registered_with_the_study_defaults() -> None:
    for name in ("ncbi-heterogeneous", "ncbi-homogeneous"):
        assert name in CLUSTERS
    for name in ("ncbi-blast", "ncbi-blast-reduced"):
        p = WORKLOADS.get(name)
        assert p.default_cluster == "ncbi-heterogeneous" and not p.uses_load and p.default_hours == 25.0


def test_the_heterogeneous_cluster_has_equal_numbers_of_each_type_at_the_recorded_size() -> None:
    c = resolve_cluster("ncbi-heterogeneous")
    n = default_size(load_profile(None), "heterogeneous", "full")
    assert c.config_names == ("type1", "type2", "type3", "type4", "type5", "type6")
    assert c.counts.tolist() == [n] * 6 and c.resources == ("slot",)
    assert np.all(c.capacity == 1.0)
    assert c.attributes[5] == {
        "cpu_mhz": 525,
        "memory_mb": 8192,
        "disk": "SCSI",
        "disk_mb_s": 60,
        "cpu_slowdown": pytest.approx(2.43),
    }
    assert resolve_cluster("ncbi-heterogeneous", {"machines_per_type": 2}).n_machines == 12
    reduced = resolve_cluster("ncbi-heterogeneous", {"sized_for": "reduced"})
    assert reduced.n_machines < c.n_machines


def test_the_homogeneous_cluster_is_type6_only() -> None:
    c = resolve_cluster("ncbi-homogeneous")
    assert c.config_names == ("type6",) and c.n_machines == default_size(load_profile(None), "homogeneous", "full")


def test_the_workload_carries_job_types_rates_and_a_lambda_star() -> None:
    c = resolve_cluster("ncbi-heterogeneous")
    wl = resolve_workload("ncbi-blast", c, seed=0, hours=2.0)
    t = load_profile(None)
    assert wl.classes is not None and wl.classes.names == t.job_types
    assert np.allclose(wl.classes.rates, 1.0 / t.cold_s)
    assert np.allclose(wl.classes.proportions, t.proportions)
    lam = lambda_star(wl, c)
    # Every machine busy, each job type on its machines: well above the 1/1.14 jobs/s the trace offers.
    assert lam is not None and lam > 1 / 1.14
    red = resolve_workload("ncbi-blast-reduced", c, seed=0, hours=2.0)
    assert red.classes is not None and red.classes.names == ("blastn", "blastp")
    assert red.classes.proportions == pytest.approx([0.558 / 0.746, 0.188 / 0.746])
    # Under one seed the reduced trace is the full trace's blastn and blastp jobs.
    keep = np.isin(wl.job_class, [0, 1])
    assert np.array_equal(red.submit, wl.submit[keep])


def test_the_workload_ignores_load_and_scales_with_rate_scale() -> None:
    c = resolve_cluster("ncbi-heterogeneous")
    a = resolve_workload("ncbi-blast", c, seed=1, load=0.3, hours=2.0)
    b = resolve_workload("ncbi-blast", c, seed=1, load=0.9, hours=2.0)
    d = resolve_workload("ncbi-blast", c, seed=1, hours=2.0, params={"rate_scale": 2.0})
    assert np.array_equal(a.submit, b.submit)
    assert d.n_jobs / a.n_jobs == pytest.approx(2.0, rel=0.05)


def test_a_cluster_with_unknown_machine_types_is_refused() -> None:
    c = resolve_cluster("ncbi-heterogeneous")
    from dataclasses import replace

    bad = replace(c, config_names=("t1", "type2", "type3", "type4", "type5", "type6"))
    with pytest.raises(InputError, match="configuration.s. t1 that the profile table does not know"):
        resolve_workload("ncbi-blast", bad, seed=0, hours=1.0)


def test_per_job_type_metrics_split_completion_into_wait_and_run() -> None:
    out = run(
        RunSpec(cluster="ncbi-heterogeneous", workload="ncbi-blast", scheduler="greedy2", seed=2, hours=2.0, drain=True)
    )
    s = out.summary
    assert s["mean_completion_s"] == pytest.approx(s["mean_response_s"] + s["mean_run_s"], rel=1e-9)
    names = [r["class"] for r in out.per_class]
    assert names == ["blastn", "blastp", "blastx", "tblastn", "tblastx"]
    t = load_profile(None)
    for r in out.per_class:
        k = t.job_index(r["class"])
        assert r["mean_completion_s"] == pytest.approx(r["mean_response_s"] + r["mean_run_s"])
        # Run times lie between the fastest warm and the slowest cold time of the job type.
        assert t.warm_s[k].min() - 1e-9 <= r["mean_run_s"] <= t.cold_s[k].max() + 1e-9


def test_seeded_runs_are_deterministic() -> None:
    spec = RunSpec(cluster="ncbi-heterogeneous", workload="ncbi-blast", scheduler="greedy3", seed=5, hours=1.0)
    a, b = run(spec).summary, run(spec).summary
    for key in ("jobs", "completed", "mean_completion_s", "mean_response_s", "mean_run_s"):
        assert a[key] == b[key]


def test_the_cli_runs_a_preset_and_prints_the_contract_keys(capsys: pytest.CaptureFixture[str]) -> None:
    rc = cli.main(
        [
            "run",
            "--cluster",
            "ncbi-heterogeneous",
            "--workload",
            "ncbi-blast",
            "--hours",
            "1",
            "--scheduler",
            "affinity",
            "--seed",
            "1",
        ]
    )
    d = json.loads(capsys.readouterr().out)
    assert rc == 0 and d["completed"] > 0 and d["cluster"] == "ncbi-heterogeneous"
    assert 0 <= d["p50_response_s"] <= d["p90_response_s"] <= d["p99_response_s"] <= d["max_response_s"]
    assert d["mean_run_s"] > 0 and d["lambda_star"] > 0


def test_the_cli_reports_a_bad_profile_file_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = tmp_path / "p.csv"
    p.write_text("job_type,machine_type,cpu_s,io_s\nblastn,type1,x,1\n")
    rc = cli.main(
        [
            "run",
            "--cluster",
            "ncbi-heterogeneous",
            "--machines-per-type",
            "1",
            "--workload",
            "ncbi-blast",
            "--hours",
            "0.1",
            "--scheduler",
            "fcfs",
            "--profile",
            str(p),
        ]
    )
    err = capsys.readouterr().err
    assert rc == 2 and "line 2, column 'cpu_s'" in err and "Traceback" not in err


def test_the_size_search_returns_the_smallest_size_at_which_fcfs_keeps_up() -> None:
    t = load_profile(None)
    n, probes = smallest_size(t, "heterogeneous", "reduced", hours=3.0)
    by = {p.per_type: p for p in probes}
    assert by[n].keeps_up and by[n].mean_wait_s <= WAIT_FRACTION * by[n].mean_run_s
    assert n == 1 or not by[n - 1].keeps_up


@pytest.mark.slow
def test_the_recorded_sizes_are_what_the_search_finds() -> None:
    t = load_profile(None)
    for kind, trace in (("heterogeneous", "full"), ("homogeneous", "reduced")):
        n, _ = smallest_size(t, kind, trace)  # type: ignore[arg-type]
        assert n == default_size(t, kind, trace)  # type: ignore[arg-type]
