"""The command line holds the platform's bounds (simcore.core.limits): grid size, seeds, trials, replayed jobs.

Each refusal is one line on stderr and exit status 2, before any work is done; the messages are the ones
the dashboard's form and API give (tests/dashboard/test_sweeps.py).
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

from simcore.cli import main

ROOT = Path(__file__).resolve().parents[2]
DIAMOND = str(ROOT / "tests" / "data" / "wfcommons" / "diamond-v1.5.json")
GRID = ("sweep", "--cluster", "google-balanced", "--workload", "google-like", "--schedulers", "greedy")


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(list(argv))
    except SystemExit as e:  # argparse's own errors exit 2 the standard way
        code = int(e.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def _platform_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("SIMCORE_MAX_RUNS", "SIMCORE_MAX_JOBS"):
        monkeypatch.delenv(name, raising=False)


def test_sweep_refuses_a_billion_run_grid_in_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    vary = ("--vary", "load=0.001:1:0.001", "--vary", "hours=0.001:1:0.001", "--vary", "machines-per-config=1:1000:1")
    assert run_cli(capsys, *GRID, *vary) == (
        2,
        "",
        "simcore: error: the grid has 1,000,000,000 runs (3 axes of 1,000, 1,000 and 1,000 values x 1 scheduler "
        "x 1 seed); at most 200 (setting SIMCORE_MAX_RUNS)\n",
    )


def test_sweep_reads_the_run_limit_from_the_platforms_setting(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SIMCORE_MAX_RUNS", "3")
    assert run_cli(capsys, *GRID, "--seeds", "0-3") == (
        2,
        "",
        "simcore: error: the grid has 4 runs (1 scheduler x 4 seeds); at most 3 (setting SIMCORE_MAX_RUNS)\n",
    )


def test_sweep_refuses_ten_thousand_seeds(capsys: pytest.CaptureFixture[str]) -> None:
    seeds = ",".join(str(s) for s in range(10_000))
    assert run_cli(capsys, *GRID, "--seeds", seeds) == (
        2,
        "",
        "simcore: error: --seeds: more than 50 seeds, the most a grid may have\n",
    )


def test_sweep_refuses_a_seed_of_2_to_the_64(capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(capsys, *GRID, "--seeds", "18446744073709551616") == (
        2,
        "",
        "simcore: error: --seeds: seed 18446744073709551616 is outside 0 to 2^32-1 (4,294,967,295)\n",
    )


def test_run_refuses_a_seed_of_2_to_the_64(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(
        capsys,
        *("run", "--cluster", "google-balanced", "--workload", "google-like", "--scheduler", "greedy"),
        *("--seed", "18446744073709551616"),
    )
    assert (rc, out) == (2, "")
    assert err.endswith(
        "simcore run: error: argument --seed: seed 18446744073709551616 is outside 0 to 2^32-1 (4,294,967,295)\n"
    )


def test_packing_compaction_refuses_a_billion_trials(capsys: pytest.CaptureFixture[str]) -> None:
    rc, out, err = run_cli(capsys, "packing", "compaction", "--cluster", "google-balanced", "--trials", "1000000000")
    assert (rc, out) == (2, "")
    assert err.endswith("error: argument --trials: 1,000,000,000 trials; give 1 to 100\n")


def test_import_refuses_a_billion_replayed_jobs_before_allocating(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rc, out, err = run_cli(
        capsys, "import", "--format", "wfcommons", DIAMOND, "--jobs", "1000000000", "--out", str(tmp_path / "o")
    )
    assert (rc, out) == (2, "")
    assert err == "simcore: error: jobs: 1,000,000,000 jobs; at most 100,000,000 (setting SIMCORE_MAX_JOBS)\n"


def test_import_counts_the_tasks_of_replayed_jobs(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("SIMCORE_MAX_JOBS", "10")
    rc, out, err = run_cli(
        capsys, "import", "--format", "wfcommons", DIAMOND, "--jobs", "3", "--out", str(tmp_path / "o")
    )
    assert (rc, out) == (2, "")
    assert err == (
        "simcore: error: jobs: 3 jobs of 1 instance(s) are 12 tasks; at most 10 (setting SIMCORE_MAX_JOBS)\n"
    )


def _data_limit() -> None:
    # 2 GB of private memory: the interpreter with numpy holds about 200 MB; 10^9 jobs need 7.45 GiB at once.
    resource.setrlimit(resource.RLIMIT_DATA, (2 << 30, resource.getrlimit(resource.RLIMIT_DATA)[1]))


def test_running_out_of_memory_is_one_line_not_a_traceback(tmp_path: Path) -> None:
    # The bound raised past what the machine has: the allocation itself fails, as in issue 25.
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SIMCORE_MAX_JOBS": str(10**12)}
    p = subprocess.run(
        [sys.executable, "-m", "simcore", "import", "--format", "wfcommons", DIAMOND, "--jobs", "1000000000"]
        + ["--out", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
        preexec_fn=_data_limit,
        check=False,
    )
    assert p.returncode == 2 and p.stdout == ""
    assert p.stderr.startswith("simcore: error: out of memory (Unable to allocate 7.45 GiB")
    assert p.stderr.endswith(": ask for less work\n") and p.stderr.count("\n") == 1
