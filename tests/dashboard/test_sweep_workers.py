"""Sweeps on real worker processes: every cell a Celery task, the numbers of `simcore sweep`, any worker.

The session's worker (tests/dashboard/conftest.py) runs a sweep whose every
cell must equal the line `simcore sweep` prints for it. Then two workers of
this test, started with different SIMCORE_VAR_DIR values and nothing shared
but the database URL, the broker and the code, both take cells of one sweep:
what a worker on another machine needs.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.utils import timezone

from dashboard import tasks
from dashboard.celery import READY_FILE_ENV, both_queues
from dashboard.experiments import cache, work
from dashboard.experiments.services import create_experiment
from dashboard.models import Experiment, Run, Status
from simcore.cli import main
from simcore.sweep.scenario import point_key, sweep_of
from tests.dashboard.conftest import ARTIFACTS, ROOT, _test_database_url, wait_for
from tests.dashboard.test_sweeps import sweep_scenario

pytestmark = [pytest.mark.django_db(transaction=True)]

TIMING = ("wall_s", "jobs_per_s", "compile_s")


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in TIMING and k != "point"}


@pytest.mark.usefixtures("celery_worker")
def test_a_sweeps_cells_run_on_a_worker_and_equal_simcore_sweeps_lines(owner, capsys):
    sc = sweep_scenario(["load=0.5,0.9"], schedulers=["greedy", "fcfs"], seeds=[0, 1])
    exp = wait_for(create_experiment(owner, sc), timeout=180)
    assert exp.status == Status.FINISHED and exp.runs.count() == 8
    assert all(r.worker and r.worker != cache.CACHE_WORKER for r in exp.runs.all())
    argv = shlex.split(sweep_of(exp.scenario).command_line())[1:]
    assert main(argv) == 0
    lines = [json.loads(x) for x in capsys.readouterr().out.splitlines()]
    assert len(lines) == 8
    runs = {(r.point_key, r.scheduler, r.seed): r for r in exp.runs.select_related("result")}
    for line in lines:
        run = runs[(point_key(line["point"]), line["scheduler"], line["seed"])]
        assert untimed(run.result.summary) == untimed(line)


@pytest.mark.usefixtures("celery_worker")
def test_a_repeated_sweep_on_real_workers_runs_nothing_again(owner):
    sc = sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0])
    first = wait_for(create_experiment(owner, sc, reuse=True), timeout=120)
    again = create_experiment(owner, sc, reuse=True)
    again.refresh_from_db()
    assert again.cached == 2 and again.status == Status.FINISHED
    assert set(again.runs.values_list("worker", flat=True)) == {cache.CACHE_WORKER}
    assert sorted(again.runs.values_list("cached_from_id", flat=True)) == sorted(
        first.runs.values_list("id", flat=True)
    )


class Worker:
    """A ``celery worker`` of this test with its own SIMCORE_VAR_DIR: it shares only the database and broker."""

    def __init__(self, name: str, queue: str, var_dir: Path, env: dict[str, str] | None = None) -> None:
        self.name = f"{name}-{uuid.uuid4().hex[:6]}"
        self.ready = var_dir / "ready"
        self.log = ARTIFACTS / f"celery-worker-{name}.log"
        var_dir.mkdir(parents=True)
        env = {
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            READY_FILE_ENV: str(self.ready),
            "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
            "SIMCORE_VAR_DIR": str(var_dir),
            "SIMCORE_TASK_QUEUE": queue,
            **(env or {}),
        }
        if not os.environ.get("REDIS_URL"):
            # The filesystem transport's queue is the broker "URL" here: a folder both workers reach.
            env["SIMCORE_BROKER_DIR"] = str(
                Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).parent
            )
        ARTIFACTS.mkdir(exist_ok=True)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "dashboard",
                    "worker",
                    "--concurrency",
                    "1",
                    "-Q",
                    ",".join(both_queues(queue)),
                    "-n",
                    f"{self.name}@%h",
                    "--without-gossip",
                    "--without-mingle",
                    "--without-heartbeat",
                    "--loglevel",
                    "INFO",
                ],
                cwd=ROOT,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
            )

    def wait_ready(self) -> None:
        deadline = time.monotonic() + 60
        while not self.ready.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker not ready after 60 s; see {self.log}")
            time.sleep(0.1)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def test_two_workers_with_their_own_var_dirs_both_take_cells_of_one_sweep(owner, tmp_path, monkeypatch):
    queue = f"simcore-test-two-{uuid.uuid4().hex[:8]}"
    a = Worker("var-a", queue, tmp_path / "var-a")
    b = Worker("var-b", queue, tmp_path / "var-b")
    try:
        a.wait_ready()
        b.wait_ready()

        def to_this_queue(ids: list[int]) -> bool:  # this test's workers, never the session's
            for pk in ids:
                tasks.run_simulation.apply_async((pk,), queue=queue)
            Run.objects.filter(pk__in=ids).update(queued_at=timezone.now())
            return True

        monkeypatch.setattr(work, "enqueue_runs", to_this_queue)
        sc = sweep_scenario(["load=0.5,0.6,0.7,0.8,0.9"], schedulers=["greedy", "fcfs"], seeds=[0], hours=0.5)
        exp: Experiment = wait_for(create_experiment(owner, sc), timeout=240)
    finally:
        a.stop()
        b.stop()
    assert exp.status == Status.FINISHED and exp.runs.count() == 10
    workers = {w.split("@")[0] for w in exp.runs.values_list("worker", flat=True)}
    # Each of the two took cells of the one sweep. The session's worker may take one too: while these two
    # compile their kernels into their own empty caches (20-30 CPU-s each), its periodic repair can find a
    # cell's message unheld and send it again, to its own queue (queueing.requeue_stale; a duplicate is
    # harmless, claiming is conditional), which is the product working, not a leak between the var dirs.
    assert {a.name, b.name} <= workers, workers
    assert workers - {a.name, b.name} <= {"celery"}, workers
