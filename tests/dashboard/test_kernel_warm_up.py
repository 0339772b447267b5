"""A worker compiles the kernels in the background when it starts (issue 28): a real ``celery worker`` process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from django.conf import settings

from dashboard.celery import READY_FILE_ENV, WARM_KERNELS_ENV, both_queues, warm_kernels_command
from tests.dashboard.conftest import ARTIFACTS, ROOT, _test_database_url


def test_the_setting_chooses_the_kernels_to_warm():
    py = [sys.executable, "-m", "simcore.cli.warm"]
    assert warm_kernels_command(None) == py  # unset: every built-in scheduler's
    assert warm_kernels_command("all") == py
    assert warm_kernels_command(" greedy, lotes ,") == [*py, "greedy", "lotes"]
    for off in ("0", "off", "none", ""):
        assert warm_kernels_command(off) is None


def _kernel_indexes(cache: Path, scheduler: str) -> list[Path]:
    # numba's index of a cached function: <cache>/<source key>/<scheduler>_<hash>/kernel.step-<line>.py311.nbi
    return sorted(cache.glob(f"*/{scheduler}_*/kernel.*.nbi"))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_starting_worker_fills_the_kernel_cache_in_the_background(tmp_path):
    cache = tmp_path / "numba-cache"  # empty: the warm-up has to compile
    ready = tmp_path / "ready"
    queue = f"simcore-warm-test-{uuid.uuid4().hex[:8]}"
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
        "SIMCORE_TASK_QUEUE": queue,
        READY_FILE_ENV: str(ready),
        "NUMBA_CACHE_DIR": str(cache),
        WARM_KERNELS_ENV: "greedy",
    }
    if not os.environ.get("REDIS_URL"):
        env["SIMCORE_BROKER_DIR"] = str(Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).parent)
    ARTIFACTS.mkdir(exist_ok=True)
    log = ARTIFACTS / "warm-up-worker.log"
    cmd = [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--concurrency", "1", "-Q"]
    cmd += [",".join(both_queues(queue)), "--without-gossip", "--without-mingle", "--without-heartbeat"]
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists():
            assert proc.poll() is None, f"worker exited with {proc.returncode}; see {log}"
            assert time.monotonic() < deadline, f"worker not ready after 120 s; see {log}"
            time.sleep(0.05)
        # Ready to take tasks before the kernel is: the warm-up does not hold the worker up.
        assert _kernel_indexes(cache, "greedy") == []
        # Compiling takes 3-6 s on an idle machine, over a minute on a busy one.
        deadline = time.monotonic() + 400
        while not _kernel_indexes(cache, "greedy") or "kernel warm-up: greedy ready" not in log.read_text():
            assert proc.poll() is None, f"worker exited with {proc.returncode}; see {log}"
            assert time.monotonic() < deadline, f"greedy's kernel not cached after 400 s; see {log}"
            time.sleep(0.5)
        assert _kernel_indexes(cache, "lotes") == []  # only what the setting asked for
    finally:
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
