"""Schemathesis fuzzes every API operation from the schema the app serves: no request gets a 500.

Runs in-process against the WSGI application (no server, no broker: inside
the test's transaction nothing is enqueued), as a signed-in user with a team,
an experiment with a finished run and an upload, so that generated ids
sometimes hit real objects. Bounded: a few examples per operation,
derandomised so CI sees the same requests every time.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.db import close_old_connections
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import ApiToken, Membership, Role, Status, Team, Visibility
from dashboard.traces.uploads import create_upload
from dashboard.wsgi import application
from tests.dashboard.conftest import CLUSTER, small_scenario

schema = schemathesis.openapi.from_wsgi("/api/openapi.json", application)

#: Examples per API operation (about 20 operations); the whole file takes well under a minute.
EXAMPLES = 12


@pytest.fixture
def _keep_connection() -> Iterator[None]:
    # A WSGI request closes the database connection when it starts and ends; inside the test's transaction it
    # must stay open (Django's test client does the same).
    for signal in (request_started, request_finished):
        signal.disconnect(close_old_connections)
    try:
        yield
    finally:
        for signal in (request_started, request_finished):
            signal.connect(close_old_connections)


@pytest.fixture
def auth(db: None, django_user_model: Any, _keep_connection: None) -> dict[str, str]:
    user = django_user_model.objects.create_user("fuzzer", password="fuzzer-password-1")
    team = Team.objects.create(name="fuzz-lab")
    Membership.objects.create(team=team, user=user, role=Role.OWNER)
    create_upload("cluster", user, "c", "c.json", json.dumps(CLUSTER).encode())
    exp = create_experiment(user, small_scenario(schedulers=["greedy"]), team=team, visibility=Visibility.TEAM)
    assert execute_run(exp.runs.get().pk) == Status.FINISHED
    _, secret = ApiToken.issue(user, "fuzz")
    return {"Authorization": f"Bearer {secret}"}


@schema.parametrize()
@settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, database=None, suppress_health_check=list(HealthCheck)
)
def test_no_api_request_gets_a_server_error(case: Any, auth: dict[str, str]) -> None:
    case.call_and_validate(headers=auth, checks=[not_a_server_error])
