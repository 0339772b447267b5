"""Issue 14: inputs that used to reach the server as errors (500) get clear 4xx answers.

Each test is one input from the issue's report. On PostgreSQL (CI) the NUL cases
used to fail inside the database; the guard answers before any query runs.
"""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from django.test import Client

from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.middleware import CONTENT_SECURITY_POLICY
from dashboard.models import ApiToken
from dashboard.traces.uploads import create_upload, delete_upload, upload_specs
from tests.dashboard.conftest import small_scenario


def api(user) -> Client:
    _, secret = ApiToken.issue(user, "t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def nested_lists(depth: int) -> str:
    return "[" * depth + "]" * depth


# -- 1. NUL bytes in paths and queries ----------------------------------------------------------------


def test_a_nul_in_a_shared_link_path_is_a_400_without_signing_in(db) -> None:
    resp = Client().get("/shared/%00/")
    assert resp.status_code == 400
    assert "NUL" in resp.content.decode()


@pytest.mark.parametrize("query", ["owner=a%00b", "status=%00", "team=%00", "%00=1"])
def test_a_nul_in_an_api_query_is_a_json_400(owner, query: str) -> None:
    resp = api(owner).get(f"/api/experiments/?{query}")
    assert resp.status_code == 400
    assert "NUL" in resp.json()["detail"]


@pytest.mark.parametrize("name", ["owner", "status", "cluster", "workload", "scheduler"])
def test_a_nul_in_an_experiment_list_filter_is_a_400(owner_client, name: str) -> None:
    resp = owner_client.get(f"/?{name}=x%00y")
    assert resp.status_code == 400
    assert name in resp.content.decode()


# -- 2. page sizes and offsets --------------------------------------------------------------------------


def test_a_page_size_beyond_bigint_is_served_as_the_largest_page(owner) -> None:
    resp = api(owner).get("/api/experiments/?limit=99999999999999999999999")
    assert resp.status_code == 200
    assert resp.json()["results"] == []


def test_an_offset_beyond_bigint_is_a_400_naming_it(owner) -> None:
    resp = api(owner).get("/api/experiments/?offset=99999999999999999999999")
    assert resp.status_code == 400
    assert "offset" in resp.json()


# -- 3. deeply nested JSON ------------------------------------------------------------------------------


def _upload_cluster(client: Client, text: str):
    f = io.BytesIO(text.encode())
    f.name = "deep.json"
    return client.post("/api/uploads/cluster/", {"file": f})


def test_a_cluster_upload_of_100000_nested_lists_is_a_400(owner) -> None:
    resp = _upload_cluster(api(owner), nested_lists(100_000))
    assert resp.status_code == 400
    assert "nested too deeply" in json.dumps(resp.json())


def test_deep_nesting_inside_cluster_attributes_is_a_400(owner) -> None:
    doc = (
        '{"resources": ["cpu"], "configurations": [{"name": "a", "count": 1, "capacity": {"cpu": 1}, '
        f'"attributes": {{"x": {nested_lists(100_000)}}}}}]}}'
    )
    resp = _upload_cluster(api(owner), doc)
    assert resp.status_code == 400
    assert "nested too deeply" in json.dumps(resp.json())


def test_deep_nesting_in_scheduler_params_is_a_400(owner) -> None:
    body = '{"scenario": {"scheduler_params": {"greedy": ' + nested_lists(100_000) + "}}}"
    resp = api(owner).post("/api/experiments/", body, content_type="application/json")
    assert resp.status_code == 400
    assert "nested too deeply" in resp.json()["detail"]


def test_50000_nested_objects_in_a_fork_change_are_a_400(owner) -> None:
    client = api(owner)
    created = client.post(
        "/api/experiments/", json.dumps({"scenario": small_scenario()}), content_type="application/json"
    ).json()
    body = '{"changes": ' + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}"
    resp = client.post(f"/api/experiments/{created['id']}/fork/", body, content_type="application/json")
    assert resp.status_code == 400
    assert "nested" in resp.json()["detail"]


def test_moderate_nesting_beyond_the_limit_names_the_path(owner, monkeypatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_JSON_DEPTH", "4")
    body = {"scenario": small_scenario(scheduler_params={"greedy": {"a": {"b": {}}}})}
    resp = api(owner).post("/api/experiments/", json.dumps(body), content_type="application/json")
    assert resp.status_code == 400
    assert "scenario.scheduler_params.greedy.a: nested deeper than 4 levels" in resp.json()["detail"]


# -- 4, 5, 6. cluster files: huge counts, NUL characters -----------------------------------------------


def _cluster_doc(**config: object) -> str:
    cfg = {"name": "a", "count": 2, "capacity": {"cpu": 1.0, "mem": 1.0}, **config}
    return json.dumps({"resources": ["cpu", "mem"], "configurations": [cfg]})


@pytest.mark.parametrize("count", [2**64, 9223372036854775807, 1_000_000_000])
def test_a_huge_configuration_count_is_a_400_naming_the_limit(owner, count: int) -> None:
    resp = _upload_cluster(api(owner), _cluster_doc(count=count))
    assert resp.status_code == 400
    text = json.dumps(resp.json())
    assert "configurations[0].count" in text and "SIMCORE_MAX_MACHINES" in text


def test_the_machine_limit_is_a_setting_with_a_tested_boundary(owner, monkeypatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", "10")
    assert _upload_cluster(api(owner), _cluster_doc(count=10)).status_code == 201
    assert _upload_cluster(api(owner), _cluster_doc(count=11)).status_code == 400


def test_a_preset_beyond_the_machine_limit_is_refused_at_submission(owner, monkeypatch) -> None:
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", "1000")
    scenario = small_scenario(cluster={"preset": "google-balanced", "params": {"machines_per_config": 101}})
    resp = api(owner).post("/api/experiments/", json.dumps({"scenario": scenario}), content_type="application/json")
    assert resp.status_code == 400
    assert "SIMCORE_MAX_MACHINES" in json.dumps(resp.json())


@pytest.mark.parametrize(
    ("doc", "where"),
    [
        (json.dumps({"resources": ["c\u0000pu"], "configurations": []}), "resources[0]"),
        (json.dumps({"name": "n\u0000", "resources": ["cpu"], "configurations": []}), "name"),
        (_cluster_doc(attributes={"k": "v\u0000"}), "configurations[0].attributes.k"),
    ],
)
def test_a_nul_character_in_a_cluster_file_is_refused_naming_the_field(owner, doc: str, where: str) -> None:
    resp = _upload_cluster(api(owner), doc)
    assert resp.status_code == 400
    assert f"{where}: contains a NUL character" in json.dumps(resp.json())


# -- read-only views answer 405 to writes ---------------------------------------------------------------


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_the_shared_page_and_its_progress_refuse_writes(db, method: str) -> None:
    c = Client()
    assert getattr(c, method)("/shared/some-token/").status_code == 405
    assert getattr(c, method)("/shared/some-token/progress.json").status_code == 405
    assert getattr(c, method)("/shared/some-token/download/summary.csv").status_code == 405


@pytest.mark.parametrize(
    "url", ["/", "/experiments/1/", "/experiments/1/progress.json", "/compare/", "/experiments/1/download/summary.csv"]
)
def test_signed_in_read_only_pages_refuse_writes(owner_client, url: str) -> None:
    assert owner_client.post(url).status_code == 405
    assert owner_client.delete(url).status_code == 405


# -- unknown keys ---------------------------------------------------------------------------------------


def test_an_unknown_scenario_key_is_refused_by_name(owner) -> None:
    body = {"scenario": {**small_scenario(), "seedz": [1]}}
    resp = api(owner).post("/api/experiments/", json.dumps(body), content_type="application/json")
    assert resp.status_code == 400
    assert "seedz" in json.dumps(resp.json())


def test_an_unknown_key_in_a_fork_change_is_refused_by_name(owner) -> None:
    client = api(owner)
    created = client.post(
        "/api/experiments/", json.dumps({"scenario": small_scenario()}), content_type="application/json"
    ).json()
    resp = client.post(
        f"/api/experiments/{created['id']}/fork/", json.dumps({"changes": {"lod": 2}}), content_type="application/json"
    )
    assert resp.status_code == 400
    assert "lod" in json.dumps(resp.json())


def test_validate_scenario_refuses_unknown_keys_in_the_library_too() -> None:
    from simcore.core.errors import ParameterError
    from simcore.scenario import validate_scenario

    with pytest.raises(ParameterError, match="scenario cluster has unknown key 'prest'"):
        validate_scenario({**small_scenario(), "cluster": {"preset": "google-2011", "prest": 1}})


# -- API errors are JSON --------------------------------------------------------------------------------


def test_a_body_larger_than_the_server_accepts_gets_a_json_400(owner, settings) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    resp = api(owner).post("/api/experiments/", "x" * 5000, content_type="application/json")
    assert resp.status_code == 400
    assert resp["Content-Type"].startswith("application/json")
    assert "larger than the server accepts" in resp.json()["detail"]


def test_an_unknown_api_url_gets_a_json_404(owner) -> None:
    resp = api(owner).get("/api/no-such-thing/")
    assert resp.status_code == 404
    assert resp.json()["detail"]


# -- headers --------------------------------------------------------------------------------------------


def test_pages_carry_a_content_security_policy_without_inline_scripts(db) -> None:
    resp = Client().get("/accounts/login/")
    assert resp["Content-Security-Policy"] == CONTENT_SECURITY_POLICY
    assert (
        "script-src 'self'" in CONTENT_SECURITY_POLICY
        and "unsafe-inline" not in CONTENT_SECURITY_POLICY.split("script-src")[1].split(";")[0]
    )


def test_signed_in_pages_are_not_cached(owner_client) -> None:
    assert owner_client.get("/")["Cache-Control"] == "private, no-store"


# -- 11. login throttling under concurrent guesses ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_parallel_wrong_passwords_never_check_more_than_the_limit(settings) -> None:
    import threading

    from django.contrib.auth import authenticate
    from django.contrib.auth.models import User
    from django.db import connection
    from django.test import RequestFactory

    from dashboard.models import LoginFailure

    settings.SIMCORE_LOGIN_MAX_FAILURES = 5
    User.objects.create_user("victim", password="right-password-1")
    checked: list[int] = []
    original = User.check_password

    def counting(self: User, raw: str) -> bool:  # the real check, counted
        checked.append(1)
        return original(self, raw)

    User.check_password = counting  # type: ignore[method-assign]
    barrier = threading.Barrier(30)
    errors: list[BaseException] = []

    def guess() -> None:
        try:
            barrier.wait()
            request = RequestFactory().post("/accounts/login/", REMOTE_ADDR="10.0.0.9")
            assert authenticate(request, username="victim", password="wrong") is None
        except BaseException as e:  # reported below, not lost in the thread
            errors.append(e)
        finally:
            connection.close()

    threads = [threading.Thread(target=guess) for _ in range(30)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    finally:
        User.check_password = original  # type: ignore[method-assign]
    assert errors == []
    row = LoginFailure.objects.get(username="victim", ip="10.0.0.9")
    assert len(checked) == 5  # at most the limit reached the password check ...
    assert row.failures == 5  # ... and every one of them is recorded
    assert row.locked_until is not None


# -- 10. the broker is down -----------------------------------------------------------------------------


@pytest.fixture
def broker_down() -> Any:
    """The Celery app pointed at a closed port (a real refused connection, no mock), then restored."""
    from dashboard.celery import app

    before = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        yield
    finally:
        app.conf.broker_url = before


@pytest.mark.django_db(transaction=True)  # queueing happens on commit, as in a real request
def test_an_api_submission_with_the_broker_down_is_saved_and_says_so(owner, broker_down) -> None:
    from dashboard.models import Experiment, Status

    resp = api(owner).post(
        "/api/experiments/", json.dumps({"scenario": small_scenario()}), content_type="application/json"
    )
    assert resp.status_code == 201
    assert "job queue is unavailable" in resp.json()["warning"]
    exp = Experiment.objects.get()
    assert {r.status for r in exp.runs.all()} == {Status.PENDING}
    assert all(r.queued_at is None for r in exp.runs.all())


@pytest.mark.django_db(transaction=True)
def test_a_form_submission_with_the_broker_down_redirects_with_a_warning(owner_client, broker_down) -> None:
    from tests.dashboard.conftest import GOOD

    resp = owner_client.post("/experiments/new/", GOOD, follow=True)
    assert resp.status_code == 200
    assert "job queue is unavailable" in resp.content.decode()


def test_pending_work_never_queued_is_queued_once_the_broker_is_back(owner, django_capture_on_commit_callbacks) -> None:
    from datetime import timedelta

    from django.utils import timezone

    from dashboard.celery import app
    from dashboard.common.queueing import requeue_stale
    from dashboard.models import Experiment

    before = app.conf.broker_url
    app.conf.broker_url = "redis://127.0.0.1:1/0"
    try:
        with django_capture_on_commit_callbacks(execute=True):
            api(owner).post(
                "/api/experiments/", json.dumps({"scenario": small_scenario()}), content_type="application/json"
            )
        later = timezone.now() + timedelta(minutes=2)  # past the grace a request has to queue its own work
        assert requeue_stale(later) == {
            "runs": 0,
            "imports": 0,
            "analyses": 0,
            "evaluations": 0,
            "capacity probes": 0,
        }  # still down: nothing sent, nothing raised
    finally:
        app.conf.broker_url = before
    assert requeue_stale() == {
        "runs": 0,
        "imports": 0,
        "analyses": 0,
        "evaluations": 0,
        "capacity probes": 0,
    }  # within the grace: left to the request
    assert requeue_stale(later) == {
        "runs": 2,
        "imports": 0,
        "analyses": 0,
        "evaluations": 0,
        "capacity probes": 0,
    }
    assert all(r.queued_at is not None for r in Experiment.objects.get().runs.all())
    assert requeue_stale(later) == {
        "runs": 0,
        "imports": 0,
        "analyses": 0,
        "evaluations": 0,
        "capacity probes": 0,
    }  # queued recently: not again


# -- smaller items --------------------------------------------------------------------------------------


def _ready_trace(owner, text: str, name: str = "my-trace"):
    from dashboard.traces import imports

    up = create_upload("trace", owner, name, "t.csv", text.encode())
    imports.execute_import(up.pk)  # the worker's code, run here
    up.refresh_from_db()
    assert up.is_ready, up.error
    return up


def test_a_run_error_names_the_upload_not_the_workers_temporary_path(owner) -> None:
    from dashboard.models import Status
    from tests.dashboard.conftest import CLUSTER

    text = "# simcore trace v1\n# horizon_s: 100\nsubmit_s,duration_s,cpu,mem\n0,10,0.2,0.2\n1,10,0.9,0.9\n"
    trace = _ready_trace(owner, text)
    small = {**CLUSTER, "configurations": [{"name": "s", "count": 2, "capacity": {"cpu": 0.5, "mem": 0.5}}]}
    cluster = create_upload("cluster", owner, "tiny", "tiny.json", json.dumps(small).encode())
    scenario = small_scenario(schedulers=["greedy"])
    scenario.update(upload_specs(cluster, trace))
    exp = create_experiment(owner, scenario, cluster_upload=cluster, trace_upload=trace)
    assert execute_run(exp.runs.get().pk) == Status.FAILED
    error = exp.runs.get().error
    assert "trace upload 'my-trace'" in error and "/tmp" not in error and "simcore-run-" not in error


def test_a_trace_and_cluster_with_different_resources_are_refused_at_submission(owner) -> None:
    from simcore.core.errors import ParameterError

    text = "# simcore trace v1\n# horizon_s: 100\nsubmit_s,duration_s,slot\n0,10,1\n"
    trace = _ready_trace(owner, text, "slots")
    scenario = small_scenario(schedulers=["greedy"])
    scenario.update(upload_specs(None, trace))
    with pytest.raises(ParameterError, match=r"trace 'slots' requests resources \['slot'\] but cluster"):
        create_experiment(owner, scenario, trace_upload=trace)


def test_deleting_an_upload_used_by_others_private_forks_does_not_reveal_them(owner, outsider) -> None:
    from dashboard.models import ClusterUpload, Experiment
    from simcore.core.errors import ParameterError
    from tests.dashboard.conftest import CLUSTER

    cluster = create_upload("cluster", owner, "c", "c.json", json.dumps(CLUSTER).encode())
    scenario = small_scenario(schedulers=["greedy"])
    scenario.update(upload_specs(cluster, None))
    exp = create_experiment(owner, scenario, cluster_upload=cluster)
    for _ in range(4):  # private forks by someone else, which alice cannot see
        Experiment.objects.create(
            owner=outsider, scenario=exp.scenario, cluster_upload=cluster, cluster_label="c", workload_label="w"
        )
    with pytest.raises(ParameterError) as e:
        delete_upload(cluster)
    assert "by 1 experiment(s) you can see" in str(e.value) and "5" not in str(e.value)
    exp.delete()
    with pytest.raises(ParameterError) as e:
        delete_upload(cluster)
    assert str(e.value) == f"{cluster} is in use by experiments; it stays so they can be re-run and forked"
    assert ClusterUpload.objects.filter(pk=cluster.pk).exists()


# -- one state machine for runs and imports -------------------------------------------------------------


def test_runs_and_imports_share_one_guarded_transition_rule(owner) -> None:
    from dashboard.models import (
        IMPORT_TRANSITIONS,
        TRANSITIONS,
        ImportStatus,
        Run,
        Status,
        TraceUpload,
        move,
    )

    up = TraceUpload.objects.create(owner=owner, name="t", filename="t.csv", content_gz=b"", size_bytes=0, sha256="")
    assert move(TraceUpload, up.pk, ImportStatus.PENDING, ImportStatus.RUNNING, IMPORT_TRANSITIONS)
    assert not move(TraceUpload, up.pk, ImportStatus.PENDING, ImportStatus.RUNNING, IMPORT_TRANSITIONS)  # claimed
    with pytest.raises(ValueError, match="ready -> pending is not an allowed transition"):
        move(TraceUpload, up.pk, ImportStatus.READY, ImportStatus.PENDING, IMPORT_TRANSITIONS)
    with pytest.raises(ValueError, match="finished -> running"):
        move(Run, 1, Status.FINISHED, Status.RUNNING, TRANSITIONS)


def test_a_worker_frees_a_finished_runs_simulation_itself(owner) -> None:
    """A Simulation and its scheduler refer to each other: execute_run collects them, so a worker's next run
    (and its memory limit) does not start beside the last run's arrays, waiting for Python's cycle collector."""
    import gc

    from dashboard.models import Status
    from simcore.core.engine import Simulation

    exp = create_experiment(owner, small_scenario(schedulers=["tetris"]))
    gc.collect()
    gc.disable()  # only execute_run's own collection may free it
    try:
        status = execute_run(exp.runs.get().pk)
        alive = [o for o in gc.get_objects() if type(o) is Simulation]  # not isinstance: dead weak proxies raise
    finally:
        gc.enable()
    assert status == Status.FINISHED
    assert alive == []
