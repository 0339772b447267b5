"""Two queues: long work (packing analyses, trace imports, search coordination) never holds up short work.

And a page whose work has waited for a worker says what is ahead of it.
"""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard.celery import app, long_queue, queue_of, route_task
from dashboard.common import waiting
from dashboard.common.queueing import waiting_messages
from dashboard.experiments.services import create_experiment
from dashboard.experiments.work import enqueue_runs
from dashboard.models import PackingAnalysis, Run, Status
from dashboard.packing.work import enqueue_analyses
from tests.dashboard.conftest import purge_queues, small_scenario, wait_for
from tests.dashboard.test_worker_loss import Worker


def test_long_tasks_go_to_the_long_queue_and_the_rest_to_the_short_one() -> None:
    short = app.conf.task_default_queue
    assert long_queue() == short + ".long"
    for name in ("dashboard.run_packing_analysis", "dashboard.import_trace", "dashboard.advance_search"):
        assert queue_of(name) == short + ".long"
        assert route_task(name, (), {}, {}) == {"queue": short + ".long"}
    for name in ("dashboard.run_simulation", "dashboard.evaluate_policy"):
        assert route_task(name, (), {}, {}) == {"queue": short}


@pytest.mark.django_db
def test_an_analysis_message_waits_in_the_long_queue_and_a_run_message_in_the_short_one(owner, own_queue):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    a = PackingAnalysis.objects.create(
        owner=owner, source="run", run=run, source_spec={}, label="x", time_s=60.0, spec={}
    )
    purge_queues(own_queue)  # create_experiment queued the run already
    assert enqueue_runs([run.pk]) and enqueue_analyses([a.pk])
    assert waiting_messages({own_queue}) == 1 and waiting_messages({own_queue + ".long"}) == 1
    assert waiting_messages() == 2  # the repair's count of lost messages looks at both


# ---------------------------------------------------------------------------- the waiting note


@pytest.mark.django_db
def test_a_run_pending_a_while_says_how_many_tasks_are_ahead_of_it(owner, own_queue):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy", "fcfs"], seeds=[0, 1, 2]))
    runs = list(exp.runs.order_by("pk"))
    now = timezone.now()
    early, late = now - timedelta(seconds=60), now - timedelta(seconds=30)
    Run.objects.filter(pk=runs[0].pk).update(status=Status.RUNNING, queued_at=early)
    Run.objects.filter(pk__in=[runs[1].pk, runs[2].pk]).update(queued_at=early)
    Run.objects.filter(pk__in=[r.pk for r in runs[3:]]).update(queued_at=late)
    backlog = waiting.Backlog("short")
    # One running and two queued 30 s before it: three ahead of each of the last three.
    assert waiting.note("pending", late, backlog, now) == (
        "waiting for a worker: 3 tasks ahead of this one (1 running, 2 queued before it)"
    )
    # The two queued first have only the running one ahead.
    assert waiting.note("pending", early, backlog, now) == "waiting for a worker: 1 task ahead of this one (1 running)"
    # Queued a moment ago, running, or never queued: no note.
    assert waiting.note("pending", now - timedelta(seconds=1), backlog, now) == ""
    assert waiting.note("running", early, backlog, now) == ""
    assert waiting.note("pending", None, backlog, now) == ""


@pytest.mark.django_db
def test_the_progress_poll_and_the_page_carry_the_note(owner_client, owner, own_queue):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy", "fcfs"]))
    first, second = exp.runs.order_by("pk")
    Run.objects.filter(pk=first.pk).update(status=Status.RUNNING, queued_at=timezone.now() - timedelta(seconds=20))
    Run.objects.filter(pk=second.pk).update(queued_at=timezone.now() - timedelta(seconds=10))
    note = "waiting for a worker: 1 task ahead of this one (1 running)"
    progress = owner_client.get(reverse("experiment-progress", args=[exp.pk])).json()
    assert [r["waiting"] for r in progress["runs"]] == ["", note]
    api = owner_client.get(f"/api/experiments/{exp.pk}/progress/").json()
    assert [r["waiting"] for r in api["runs"]] == ["", note]
    assert note in owner_client.get(exp.get_absolute_url()).content.decode()


# ---------------------------------------------------------------------------- real workers, one per queue


def _wait_until(what: str, check: Any, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} after {timeout} s")
        time.sleep(0.2)


@pytest.mark.django_db(transaction=True)
def test_an_analysis_waiting_for_the_long_queue_never_holds_up_an_experiment(owner_client, owner, own_queue, tmp_path):
    # Given a worker that takes the short queue only (the long queue's worker busy elsewhere, or not started)
    short = Worker("short", own_queue, tmp_path, concurrency=1, queues=[own_queue])
    workers = [short]
    try:
        short.wait_ready()
        done = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy"])))
        run = done.runs.get()
        assert run.status == Status.FINISHED
        # When a packing analysis of that run and a new experiment are submitted together
        form = {
            "source": "run",
            "run": str(run.pk),
            "time_s": "1800",
            "techniques": ["utilisation"],
            "placed_by": "as-is",
            "repack_with": "arrival",
            "orderings": ["arrival"],
            "schedulers": ["greedy"],
            "units": "0.05",
            "factors": "1",
            "taus": "0",
            "trials": "1",
            "seed": "1",
            "visibility": "private",
        }
        assert owner_client.post(reverse("packing-new"), form).status_code == 302
        analysis = PackingAnalysis.objects.get()
        # Dated ahead while nothing should take it: the session's own worker (started by other tests) shares this
        # database but not these queues, so its repair would take a message waiting here 20 s for a lost one and
        # run it itself. Deployed, every worker routes to the queues it counts; only tests mix queue names.
        dated_ahead = {"queued_at": timezone.now() + timedelta(minutes=10)}
        PackingAnalysis.objects.filter(pk=analysis.pk).update(**dated_ahead)
        exp = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy", "fcfs"])))
        # then the experiment finishes while the analysis still waits in the long queue
        assert exp.status == Status.FINISHED
        analysis.refresh_from_db()
        assert analysis.status == Status.PENDING and analysis.queued_at is not None
        # and, once it has waited a while, its page says that no worker takes the long queue.
        # (8 s: past the page's 5 s, short of the 20 s after which a repair would count its message lost)
        PackingAnalysis.objects.filter(pk=analysis.pk).update(queued_at=timezone.now() - timedelta(seconds=8))
        page = owner_client.get(analysis.get_absolute_url()).content.decode()
        assert "nothing is ahead of this one, so no worker seems to take the long queue" in page
        poll = owner_client.get(reverse("packing-progress", args=[analysis.pk])).json()
        assert poll["waiting"].startswith("waiting for a worker: nothing is ahead of this one")
        PackingAnalysis.objects.filter(pk=analysis.pk).update(**dated_ahead)
        # A worker of the long queue takes it.
        workers.append(Worker("long", own_queue, tmp_path, concurrency=1, queues=[own_queue + ".long"]))
        workers[-1].wait_ready()
        _wait_until("analysis finished", lambda: PackingAnalysis.objects.get(pk=analysis.pk).status == Status.FINISHED)
        assert PackingAnalysis.objects.get(pk=analysis.pk).worker.startswith("long-")
    finally:
        for w in workers:
            w.kill()


# ---------------------------------------------------------------------------- how workers are started


def test_make_run_starts_one_worker_per_queue() -> None:
    from dashboard.launcher import commands

    cmds = commands("127.0.0.1", 8000, workers=2, long_workers=1)
    short, long = cmds["short-queue worker"], cmds["long-queue worker"]
    q = app.conf.task_default_queue
    assert short[short.index("-Q") + 1] == q and short[short.index("--concurrency") + 1] == "2"
    assert long[long.index("-Q") + 1] == q + ".long" and long[long.index("--concurrency") + 1] == "1"
    assert short[short.index("-n") + 1] != long[long.index("-n") + 1]


def test_a_worker_started_without_a_queue_takes_both(settings) -> None:
    # `celery -A dashboard worker` on an added host: the declared queues are what it consumes.
    names = [q.name for q in settings.CELERY_TASK_QUEUES]
    assert names == [settings.CELERY_TASK_DEFAULT_QUEUE, settings.CELERY_TASK_DEFAULT_QUEUE + ".long"]
    # each its own routing key: one key for both would copy every message into both queues
    assert [q.routing_key for q in settings.CELERY_TASK_QUEUES] == names


def test_docker_compose_runs_a_worker_service_for_each_queue() -> None:
    import yaml

    from tests.dashboard.conftest import ROOT

    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    queues = {
        name: s["command"][s["command"].index("-Q") + 1] for name, s in services.items() if "-Q" in s.get("command", [])
    }
    assert queues == {"worker": "celery", "worker-long": "celery.long"}


def test_docker_compose_validates_the_file_where_the_plugin_exists() -> None:
    """`docker compose config` accepts docker-compose.yml (skipped where Docker has no compose plugin)."""
    import os
    import shutil
    import subprocess

    from tests.dashboard.conftest import ROOT

    docker = shutil.which("docker")
    if docker is None or subprocess.run([docker, "compose", "version"], capture_output=True).returncode != 0:
        pytest.skip("no `docker compose` plugin on this machine")
    env = {**os.environ, "SECRET_KEY": "x" * 50}
    out = subprocess.run(
        [docker, "compose", "-f", str(ROOT / "docker-compose.yml"), "config", "--quiet"],
        capture_output=True,
        text=True,
        env=env,
    )
    assert out.returncode == 0, out.stderr


@pytest.mark.django_db
def test_a_search_whose_step_waits_for_a_worker_says_what_is_ahead(owner, owner_client, own_queue):
    from dashboard.searches.models import EvalStatus, SearchEvaluation
    from dashboard.searches.services import progress_payload
    from tests.dashboard.test_searches import start

    search = start(owner)
    evaluations = SearchEvaluation.objects.filter(search=search, status=EvalStatus.PENDING)
    n = evaluations.count()
    assert n > 1
    # Its first step queued half a minute ago, none of it running, and one run of another experiment running.
    evaluations.update(queued_at=timezone.now() - timedelta(seconds=30))
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"]))
    Run.objects.filter(experiment=exp).update(status=Status.RUNNING)
    note = "waiting for a worker: 1 task ahead of this one (1 running)"
    assert progress_payload(search)["waiting"] == note
    assert owner_client.get(f"/api/searches/{search.pk}/progress/").json()["waiting"] == note
    assert note in owner_client.get(search.get_absolute_url()).content.decode()
