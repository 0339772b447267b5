"""SIMCORE_WORKER_MEMORY_MB on real worker processes: a cell too big for a worker waits for one with enough.

A worker whose limit is a few megabytes (below any cell's estimate: a worker process alone holds more)
declines the test's one-run experiment: the run stays pending, the page says how much it needs and which
workers there are. A second worker with a large limit then starts, and the run is sent to it and finishes
there. Two real ``celery worker`` processes of this test, on a queue of its own.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard import tasks
from dashboard.celery import app
from dashboard.experiments import work
from dashboard.experiments.services import create_experiment
from dashboard.models import Run, Status, WorkerHost
from simcore import memory
from simcore.compiled import jit
from tests.dashboard.conftest import purge_queues, small_scenario, wait_for
from tests.dashboard.test_sweep_workers import Worker

pytestmark = [pytest.mark.django_db(transaction=True)]

#: One run of about 300 jobs on 10 machines: its estimate is still the fixed part, far above 5 MB.
TINY = small_scenario(
    cluster={"preset": "google-balanced", "params": {"machines_per_config": 1}},
    workload={"preset": "lotes-phi", "params": {}},
    hours=1.0,
    schedulers=["greedy"],
)

#: The workers repair (and so route waiting cells) every 2 s, and read the kernels the session's worker
#: compiled (not a cache of their own under their SIMCORE_VAR_DIR: compiling Greedy there would take longer
#: than the whole test).
FAST_REPAIR = {"SIMCORE_WORKER_TIMEOUT_S": "6", "NUMBA_CACHE_DIR": str(jit.cache_dir())}


def _until(check: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout} s: {what}")
        time.sleep(0.2)


def test_a_cell_over_a_workers_memory_waits_then_runs_on_a_worker_with_enough(owner, client, tmp_path, monkeypatch):
    queue = f"simcore-test-mem-{uuid.uuid4().hex[:8]}"
    before = app.conf.task_default_queue
    app.conf.task_default_queue = queue  # the pages read the live workers of this queue
    small = Worker("small", queue, tmp_path / "small", {**FAST_REPAIR, "SIMCORE_WORKER_MEMORY_MB": "5"})
    big: Worker | None = None
    try:

        def to_this_queue(ids: list[int]) -> bool:  # this test's workers, never the session's
            for pk in ids:
                tasks.run_simulation.apply_async((pk,), queue=queue)
            Run.objects.filter(pk__in=ids).update(queued_at=timezone.now())
            return True

        monkeypatch.setattr(work, "enqueue_runs", to_this_queue)
        small.wait_ready()
        exp = create_experiment(owner, TINY)
        run = exp.runs.get()
        _until(lambda: Run.objects.filter(pk=run.pk, needs_mb__isnull=False).exists(), 60, "the small worker declines")
        run.refresh_from_db()
        assert run.status == Status.PENDING and run.attempt == 0 and run.sent_to == ""
        assert run.needs_mb > 5 and run.needs_mb >= memory.FIXED_MB
        assert [d["worker"].split("@")[0] for d in run.declined] == [small.name]
        assert run.declined[0]["limit_mb"] == 5

        client.force_login(owner)
        page = client.get(reverse("experiment-detail", args=[exp.pk])).content.decode()
        need = memory.megabytes_text(run.needs_mb)
        said = f"needs about {need} of memory; waiting for a worker with at least that much (workers here: 5 MB;"
        assert said in page
        progress = client.get(reverse("experiment-progress", args=[exp.pk])).json()
        assert progress["runs"][0]["waiting"].startswith(f"needs about {need} of memory; waiting")
        time.sleep(2.5)  # a repair pass of the small worker leaves it alone: not sent back to the shared queue
        run.refresh_from_db()
        assert run.status == Status.PENDING and len(run.declined) == 1

        big = Worker("big", queue, tmp_path / "big", {**FAST_REPAIR, "SIMCORE_WORKER_MEMORY_MB": "64000"})
        big.wait_ready()
        exp = wait_for(exp, timeout=60)
    finally:
        small.stop()
        if big is not None:
            big.stop()
        purge_queues(queue)
        app.conf.task_default_queue = before
    run.refresh_from_db()
    assert exp.status == Status.FINISHED and run.status == Status.FINISHED
    assert run.worker.split("@")[0] == big.name and run.sent_to.split("@")[0] == big.name
    assert len(run.declined) == 1  # declined once, by the small worker only
    # Stopped workers remove their rows: no page lists them.
    names = [w.split("@")[0] for w in WorkerHost.objects.values_list("node", flat=True)]
    assert small.name not in names and big.name not in names
