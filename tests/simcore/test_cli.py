"""The command line: the contract the dashboard, the API and users rely on.

In-process tests use ``simcore.cli.main`` with a tiny first-fit scheduler
registered under a test-only name (so they do not depend on the schedulers
other modules provide); a few tests run the installed ``simcore`` script in
a subprocess to check what a user really sees (exit status, no traceback).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import deque
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from simcore.cli import main
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS, Scheduler, register
from simcore.traces.tracefile import write_trace

TEST_SCHEDULER = "test-first-fit"
SIMCORE = Path(sys.executable).with_name("simcore")

#: The keys check-cli-contract requires of `simcore run`.
CONTRACT_KEYS = (
    "scheduler cluster workload seed jobs completed mean_response_s p50_response_s p90_response_s "
    "p99_response_s max_response_s mean_completion_s max_queue_len utilization stable lambda_star "
    "wall_s jobs_per_s"
).split()


class FirstFit(Scheduler):
    """FIFO over one queue; each job starts on the first machine it fits (test only)."""

    name = TEST_SCHEDULER
    description = "test only: first fit, one FIFO queue"

    def setup(self, sim, rng):  # type: ignore[no-untyped-def]
        super().setup(sim, rng)
        self.queue: deque[int] = deque()

    def _place(self, job: int) -> bool:
        sim = self.sim
        ok = np.flatnonzero((sim.request[job] <= sim.free + 1e-9).all(axis=1))
        if len(ok) == 0:
            return False
        sim.start(job, int(ok[0]))
        return True

    def on_arrival(self, job: int) -> None:
        if self.queue or not self._place(job):
            self.queue.append(job)

    def on_completion(self, job: int, machine: int) -> None:
        while self.queue and self._place(self.queue[0]):
            self.queue.popleft()


@pytest.fixture(autouse=True)
def first_fit() -> Iterator[None]:
    SCHEDULERS.names()  # load the real schedulers first
    register(TEST_SCHEDULER)(FirstFit)
    yield
    SCHEDULERS._items.pop(TEST_SCHEDULER, None)


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse usage errors exit 2 the standard way
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


SMALL = (
    "--cluster",
    "google-balanced",
    "--machines-per-config",
    "3",
    "--workload",
    "google-like",
    "--hours",
    "0.01",
    "--load",
    "0.8",
    "--seed",
    "1",
)


def test_run_prints_every_key_of_the_contract(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(capsys, "run", *SMALL, "--scheduler", TEST_SCHEDULER)
    assert code == 0, err
    d = json.loads(out)
    missing = [k for k in CONTRACT_KEYS if k not in d]
    assert not missing
    assert d["scheduler"] == TEST_SCHEDULER and d["cluster"] == "google-balanced" and d["workload"] == "google-like"
    assert d["seed"] == 1
    assert 0 < d["completed"] <= d["jobs"]
    assert 0 <= d["p50_response_s"] <= d["p90_response_s"] <= d["p99_response_s"] <= d["max_response_s"]
    c = CLUSTERS.get("google-balanced").build(machines_per_config=3)
    w = WORKLOADS.get("google-like").build(c, np.random.default_rng(0), load=0.8, hours=0.01)
    assert d["lambda_star"] == pytest.approx(w.params["lambda_star"])
    assert d["arrival_rate"] == pytest.approx(0.8 * d["lambda_star"])


def test_run_is_deterministic_under_a_seed(capsys: pytest.CaptureFixture[str]) -> None:
    runs = [json.loads(run_cli(capsys, "run", *SMALL, "--scheduler", TEST_SCHEDULER)[1]) for _ in range(2)]
    for k in ("jobs", "completed", "mean_response_s", "max_queue_len"):
        assert runs[0][k] == runs[1][k]


def test_lambda_star_of_google_2011_with_google_like(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        "--cluster",
        "google-2011",
        "--workload",
        "google-like",
        "--hours",
        "0.0005",
        "--load",
        "0.5",
        "--scheduler",
        TEST_SCHEDULER,
        "--seed",
        "1",
    )
    assert code == 0, err
    assert json.loads(out)["lambda_star"] == pytest.approx(1314.11, rel=1e-5)


def test_lotes_workloads_take_their_parameters(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(
        capsys,
        "run",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "2",
        "--workload",
        "lotes-omega",
        "--omega",
        "0.3",
        "--phi",
        "0.003",
        "--mu-form",
        "omega_over_u",
        "--hours",
        "0.01",
        "--scheduler",
        TEST_SCHEDULER,
    )
    assert code == 0, err
    assert json.loads(out)["jobs"] > 0


def test_a_trace_file_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    c = CLUSTERS.get("google-balanced").build(machines_per_config=3)
    w = WORKLOADS.get("google-like").build(c, np.random.default_rng(3), load=0.5, hours=0.01)
    write_trace(w, tmp_path / "t.csv.gz")
    code, out, err = run_cli(
        capsys,
        "run",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "3",
        "--workload",
        str(tmp_path / "t.csv.gz"),
        "--scheduler",
        TEST_SCHEDULER,
    )
    assert code == 0, err
    assert json.loads(out)["jobs"] == w.n_jobs


def test_a_cluster_file_runs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from simcore.clusterfile import write_cluster

    write_cluster(CLUSTERS.get("google-balanced").build(machines_per_config=2), tmp_path / "c.json")
    code, out, err = run_cli(
        capsys,
        "run",
        "--cluster",
        str(tmp_path / "c.json"),
        "--workload",
        "google-like",
        "--hours",
        "0.005",
        "--scheduler",
        TEST_SCHEDULER,
    )
    assert code == 0, err


def test_unknown_cluster_lists_the_presets(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "run", "--cluster", "no-such-cluster", "--workload", "google-like", "--scheduler", TEST_SCHEDULER
    )
    assert code == 2
    assert "unknown cluster 'no-such-cluster'" in err and "google-2011" in err and "google-balanced" in err


def test_unknown_scheduler_lists_the_valid_names(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys, "run", "--cluster", "google-2011", "--workload", "google-like", "--scheduler", "no-such-scheduler"
    )
    assert code == 2
    assert "no-such-scheduler" in err
    for name in SCHEDULERS.names():
        assert name in err


def test_trace_without_mem_column(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("submit_s,duration_s,cpu\n0,1,0.1\n")
    code, _, err = run_cli(
        capsys, "run", "--cluster", "google-2011", "--workload", str(p), "--scheduler", TEST_SCHEDULER
    )
    assert code == 2
    assert str(p) in err and "line 1" in err and "'mem'" in err


def test_a_job_too_big_for_the_cluster(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    p = tmp_path / "t.csv"
    p.write_text("submit_s,duration_s,cpu,mem\n0,1,0.1,0.1\n1,1,1.5,0.1\n")
    code, _, err = run_cli(
        capsys, "run", "--cluster", "google-2011", "--workload", str(p), "--scheduler", TEST_SCHEDULER
    )
    assert code == 2
    assert "line 3" in err and "'cpu'" in err and "more than any machine" in err


@pytest.mark.parametrize("load", ["abc", "-1", "0", "nan", "inf"])
def test_bad_load(capsys: pytest.CaptureFixture[str], load: str) -> None:
    code, _, err = run_cli(capsys, "run", *SMALL[:-4], "--load", load, "--scheduler", TEST_SCHEDULER)
    assert code == 2
    assert "load" in err


def test_phi_does_not_apply_to_google_like(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(capsys, "run", *SMALL, "--phi", "0.01", "--scheduler", TEST_SCHEDULER)
    assert code == 2
    assert "--phi does not apply" in err and "google-like" in err


def test_phi_out_of_range(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys,
        "run",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "2",
        "--workload",
        "lotes-phi",
        "--phi",
        "0.06",
        "--scheduler",
        TEST_SCHEDULER,
    )
    assert code == 2
    assert "'phi'" in err and "at most 0.025" in err


def test_machines_per_config_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys,
        "run",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "0",
        "--workload",
        "google-like",
        "--scheduler",
        TEST_SCHEDULER,
    )
    assert code == 2 and "machines_per_config" in err


def test_presets_lists_every_cluster_workload_and_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(capsys, "presets")
    assert code == 0
    for name in [*CLUSTERS.names(), *WORKLOADS.names(), *SCHEDULERS.names()]:
        assert name in out
    code, out, _ = run_cli(capsys, "presets", "--json")
    d = json.loads(out)
    assert [c["name"] for c in d["clusters"]] == CLUSTERS.names()
    assert [w["name"] for w in d["workloads"]] == WORKLOADS.names()
    balanced = next(c for c in d["clusters"] if c["name"] == "google-balanced")
    assert balanced["params"][0]["name"] == "machines_per_config" and balanced["params"][0]["default"] == 1000
    omega = next(w for w in d["workloads"] if w["name"] == "lotes-omega")
    assert {p["name"] for p in omega["params"]} == {"omega", "phi", "class_seed", "mu_form", "request_cv", "load_basis"}


# -- the installed script, as a user runs it ---------------------------------------------------------------


def script(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SIMCORE), *argv], capture_output=True, text=True, timeout=120)


@pytest.mark.skipif(not SIMCORE.exists(), reason="the simcore script is not installed next to python")
class TestScript:
    def test_unknown_cluster(self) -> None:
        scheduler = "greedy" if "greedy" in SCHEDULERS else SCHEDULERS.names()[0]
        r = script("run", "--cluster", "no-such-cluster", "--workload", "google-like", "--scheduler", scheduler)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "no-such-cluster" in r.stderr

    def test_unknown_scheduler(self) -> None:
        r = script("run", "--cluster", "google-2011", "--workload", "google-like", "--scheduler", "nope")
        assert r.returncode == 2 and "Traceback" not in r.stderr
        listed = json.loads(script("presets", "--json").stdout)["schedulers"]
        assert listed and all(s["name"] in r.stderr for s in listed)

    def test_trace_without_mem_column(self, tmp_path: Path) -> None:
        p = tmp_path / "t.csv"
        p.write_text("submit_s,duration_s,cpu\n0,1,0.1\n")
        scheduler = "greedy" if "greedy" in SCHEDULERS else SCHEDULERS.names()[0]
        r = script("run", "--cluster", "google-2011", "--workload", str(p), "--scheduler", scheduler)
        assert r.returncode == 2 and "Traceback" not in r.stderr and "'mem'" in r.stderr

    def test_presets(self) -> None:
        r = script("presets")
        assert r.returncode == 0
        for name in ("google-2011", "google-balanced", "google-like", "lotes-phi", "lotes-omega"):
            assert name in r.stdout


def test_compare_all_skips_schedulers_built_for_another_setting(capsys: pytest.CaptureFixture[str]) -> None:
    # The profile-study schedulers need run-time profiles that google-like does not have:
    # 'all' skips them with the reason and runs the rest on identical jobs.
    code, out, err = run_cli(
        capsys,
        "compare",
        "--schedulers",
        "all",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "2",
        "--workload",
        "google-like",
        "--hours",
        "0.02",
    )
    assert code == 0, err
    ran = [json.loads(line) for line in out.splitlines()]
    names = {r["scheduler"] for r in ran}
    assert {"greedy", "tetris", "lotes", "mris", "fcfs"} <= names
    assert "affinity" not in names and "skipping affinity" in err
    assert len({r["jobs"] for r in ran}) == 1  # same workload for every scheduler


def test_compare_with_an_explicit_list_fails_on_an_incompatible_scheduler(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run_cli(
        capsys,
        "compare",
        "--schedulers",
        "greedy,affinity",
        "--cluster",
        "google-balanced",
        "--machines-per-config",
        "2",
        "--workload",
        "google-like",
        "--hours",
        "0.02",
    )
    assert code == 2
    assert "affinity" in err and "Traceback" not in err
