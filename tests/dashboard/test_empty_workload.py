"""A scenario whose workload draws no job (issue 25, item 7): the worker stores the clear message, not
"internal error (ValueError)", for an experiment's runs and for a design-space search alike.

Whether a generated workload has jobs is known only by generating it (seeds differ), so the API
accepts the scenario and a real worker fails it with simcore's one-line message.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from dashboard.models import ApiToken, EvalStatus, Experiment, Search, SearchEvaluation, Status
from tests.dashboard.conftest import wait_for

SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
    "workload": {"preset": "workflows", "params": {}},
    "load": 0.5,
    "hours": 0.05,
}


def _empty(seed: int) -> str:
    return f"the workload 'workflows' generated no jobs in 0.05 h at load 0.5; raise hours or load (seed {seed})"


def _post(user: User, url: str, body: dict[str, Any]) -> Any:
    api = Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(user, 't')[1]}")
    return api.post(url, json.dumps(body), content_type="application/json")


def _wait(search: Search, timeout: float = 120.0) -> Search:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        search.refresh_from_db()
        if not search.is_active:
            return search
        time.sleep(0.2)
    raise AssertionError(f"search {search.pk} still {search.status} after {timeout} s")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_an_experiment_without_jobs_fails_each_run_with_the_clear_message(owner: User) -> None:
    scenario = {**SCENARIO, "schedulers": ["greedy"], "scheduler_params": {}, "seeds": [0], "drain": True}
    resp = _post(owner, "/api/experiments/", {"name": "empty", "scenario": scenario})
    assert resp.status_code == 201, resp.content
    exp = wait_for(Experiment.objects.get(pk=resp.json()["id"]))
    assert exp.status == Status.FAILED
    assert [(r.status, r.error) for r in exp.runs.all()] == [(Status.FAILED, _empty(0))]


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_search_without_jobs_fails_with_the_clear_message(owner: User) -> None:
    body = {"name": "empty", "scenario": SCENARIO, "metric": "trt", "population": 4, "generations": 2, "seed": 0}
    resp = _post(owner, "/api/searches/", body)
    assert resp.status_code == 201, resp.content
    search = _wait(Search.objects.get(pk=resp.json()["id"]))
    assert search.status == Status.FAILED
    # The scenario, not a policy, is at fault: the message names no policy.
    assert search.error == _empty(0)
    failed = SearchEvaluation.objects.filter(search=search, status=EvalStatus.FAILED)
    assert failed.exists() and set(failed.values_list("error", flat=True)) == {_empty(0)}
