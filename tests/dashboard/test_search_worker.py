"""Design-space searches in real Celery worker processes: the same generations as ``simcore explore``, even when
the worker evaluating a policy is killed half-way."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest
from django.contrib.auth.models import User

from dashboard.celery import app
from dashboard.models import EvalStatus, Search, SearchEvaluation, Status
from dashboard.searches.services import check_search, create_search
from simcore.cli import main
from simcore.dse.explore.search import SearchSettings
from tests.dashboard.test_worker_loss import TIMEOUT_S, Worker

SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
    "workload": {"preset": "workflows-short-long", "params": {}},
    "load": 0.9,
    "hours": 0.25,
}
CLI = ["explore", "--cluster", "dse-2020", "--machines", "8", "--workload", "workflows-short-long", "--load", "0.9"]


def _start(owner: User, scenario: dict[str, Any], settings: SearchSettings, sim_seed: int) -> Search:
    return create_search(owner, check_search(dict(scenario), settings, sim_seed), settings, sim_seed)


def _wait(search: Search, timeout: float = 180.0) -> Search:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        search.refresh_from_db()
        if not search.is_active:
            return search
        time.sleep(0.2)
    raise AssertionError(f"search {search.pk} still {search.status} after {timeout} s (generation {search.generation})")


def _elites(search: Search) -> list[list[Any]]:
    return [[g.elite_policy, g.elite_fitness] for g in search.generations.order_by("index")]


def _cli_elites(capsys: Any, *args: str) -> list[list[Any]]:
    assert main([*CLI, "--quiet", *args]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    return [[e["elite"], e["fitness"]] for e in summary["elite_sequence"]]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_worker_finishes_a_search_with_the_elites_of_simcore_explore(owner, capsys):
    settings = SearchSettings("trt", population=6, generations=5, seed=11)
    search = _wait(_start(owner, SCENARIO, settings, 11))
    assert search.status == Status.FINISHED, search.error
    assert search.generations_done == 5 and search.stop_reason == "generations"
    expected = _cli_elites(capsys, "--hours", "0.25", "--population", "6", "--generations", "5", "--seed", "11")
    assert _elites(search) == expected
    assert not SearchEvaluation.objects.filter(search=search).exclude(status=EvalStatus.DONE).exists()


@pytest.mark.django_db(transaction=True)
def test_a_search_survives_a_killed_worker(owner, settings, tmp_path, capsys):
    settings.SIMCORE_WORKER_TIMEOUT_S = TIMEOUT_S
    queue = f"simcore-test-search-{uuid.uuid4().hex[:8]}"
    default_queue = app.conf.task_default_queue
    app.conf.task_default_queue = queue  # this test's workers take this search's tasks, the session's worker none
    # Long enough evaluations (a few hundred ms each) that one is caught running.
    scenario = {**SCENARIO, "cluster": {"preset": "dse-2020", "params": {"machines": 16}}, "hours": 1.0}
    cfg = SearchSettings("trt", population=6, generations=3, seed=5)
    env = {"SIMCORE_REQUEUE_AFTER_S": "10"}  # messages a dead worker had taken are queued again after 10 s
    workers = [Worker("search-a", queue, tmp_path, concurrency=1, **env)]
    try:
        workers[0].wait_ready()
        search = _start(owner, scenario, cfg, 5)
        deadline = time.monotonic() + 60
        running = None
        while running is None:
            running = SearchEvaluation.objects.filter(search=search, status=EvalStatus.RUNNING).first()
            assert time.monotonic() < deadline, "no evaluation started"
            time.sleep(0.02)
        # When the worker dies in the middle of an evaluation
        workers[0].kill()
        assert SearchEvaluation.objects.get(pk=running.pk).status == EvalStatus.RUNNING
        # a new worker's periodic repair gives that evaluation (and the messages the dead one held) back
        workers.append(Worker("search-b", queue, tmp_path, concurrency=1, **env))
        workers[1].wait_ready()
        search = _wait(search)
    finally:
        app.conf.task_default_queue = default_queue
        for w in workers:
            w.kill()
    assert search.status == Status.FINISHED, search.error
    again = SearchEvaluation.objects.get(pk=running.pk)
    assert again.status == EvalStatus.DONE and again.attempts == 2 and again.worker.startswith("search-b-")
    # and the search is the one simcore explore makes.
    expected = _cli_elites(
        capsys, "--machines", "16", "--hours", "1", "--population", "6", "--generations", "3", "--seed", "5"
    )
    assert _elites(search) == expected
