"""A cell's memory on the pages: the form's estimate before a run, a declined run's words while it waits.

No worker here (tests/dashboard/test_worker_memory.py runs real ones): the rows the workers publish are
written by the test, and the notes read them.
"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard.common import queueing
from dashboard.experiments import memory as run_memory
from dashboard.experiments import work
from dashboard.experiments.services import create_experiment
from dashboard.models import Experiment, Run, Status, WorkerHost
from simcore import memory
from simcore.scenario import validate_scenario
from tests.dashboard.conftest import GOOD, small_scenario

pytestmark = pytest.mark.django_db


def publish(name: str, memory_mb: int, *, ago_s: float = 0.0) -> None:
    WorkerHost.objects.create(
        node=name,
        memory_mb=memory_mb,
        queues=f"{queueing.short_queue()},{name}.dq2",
        heard_at=timezone.now() - timedelta(seconds=ago_s),
    )


def test_checking_the_scale_also_says_how_much_memory_a_run_needs(owner_client):
    data = {**GOOD, "schedulers": ["greedy"], "check": "1"}
    publish("small@a", 2048)
    publish("big@b", 0)
    publish("gone@c", 64, ago_s=3600)  # not heard of for an hour: not listed
    resp = owner_client.post(reverse("experiment-new"), data)
    assert resp.status_code == 200 and not Experiment.objects.exists()
    sc = validate_scenario(small_scenario(schedulers=["greedy"]))
    size = memory.cell_size(sc, 0)
    need = memory.megabytes_text(memory.estimate_mb(size.jobs, size.machines, "greedy"))
    expected = (
        f"Memory: each run needs about {need} at its peak in a worker "
        "(workers here: no limit, 2,048 MB; setting SIMCORE_WORKER_MEMORY_MB)."
    )
    assert resp.context["memory_note"] == expected
    assert expected in resp.content.decode()


def test_a_declined_run_says_what_it_needs_and_which_workers_there_are(owner):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    Run.objects.filter(pk=run.pk).update(needs_mb=4505, declined=[{"worker": "small@a", "limit_mb": 2048}])
    run.refresh_from_db()
    assert run_memory.note(run.needs_mb, run.sent_to, []).startswith(
        "needs about 4.4 GB of memory; waiting for a worker with at least that much (no worker is running;"
    )
    publish("small@a", 2048)
    publish("small@b", 2048)
    (words,) = run_memory.waiting_notes([(run.status, run.queued_at, run.needs_mb, run.sent_to)])
    assert words.startswith(
        "needs about 4.4 GB of memory; waiting for a worker with at least that much "
        "(workers here: 2,048 MB, 2,048 MB; setting SIMCORE_WORKER_MEMORY_MB"
    )
    publish("big@c", 8192)
    assert run_memory.note(4505, "big@c").startswith(
        "needs about 4.4 GB of memory: sent to worker big@c (8,192 MB), which starts it once it is free"
    )
    # Out of the shared queue's repair (it would send it back where the small workers take it) ...
    assert run.pk not in set(work.RUNS.pending_rows().values_list("pk", flat=True))
    # ... and a run no worker declined keeps the queue's own words.
    other = create_experiment(owner, small_scenario(schedulers=["fcfs"])).runs.get()
    assert other.pk in set(work.RUNS.pending_rows().values_list("pk", flat=True))
    assert run_memory.waiting_notes([(Status.PENDING, None, None, "")]) == [""]


def test_the_worker_with_enough_memory_and_the_fewest_cells_sent_is_chosen():
    from dashboard.common.workers import Live

    small, big, huge, free = Live("s", 2048, ()), Live("b", 8192, ()), Live("h", 65536, ()), Live("f", 0, ())
    assert run_memory._choose(4505, [small], {}) is None
    assert run_memory._choose(4505, [small, big, huge], {"b": 2, "h": 1}) == huge
    assert run_memory._choose(4505, [small, big, free], {"b": 1}) == free  # no limit takes anything
