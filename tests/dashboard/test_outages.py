"""Issue 25 items 4-6: outages of the database or the broker, analyses lost with their worker, beats in every phase.

Each test that stops a server starts its own (a redis-server, or a PostgreSQL
cluster in a temporary folder) and its own worker: the session's shared
servers and worker are never stopped.
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.db import OperationalError, connection
from django.test import Client
from django.utils import timezone

from dashboard import tasks
from dashboard.celery import app
from dashboard.common.outages import RETRY_AFTER_S, Interrupted
from dashboard.common.queueing import LOST_MESSAGE_GRACE_S, requeue_stale, waiting_messages
from dashboard.experiments.execution import execute_run
from dashboard.experiments.work import enqueue_runs
from dashboard.models import (
    ApiToken,
    ImportStatus,
    PackingAnalysis,
    PackingSource,
    Run,
    RunResult,
    Status,
    TraceUpload,
)
from dashboard.packing.services import SourceChoice, create_analysis
from tests.dashboard.conftest import ARTIFACTS, ROOT, purge_queues, small_scenario
from tests.dashboard.servers import OwnPostgres, need_postgres_bin, wait_until
from tests.dashboard.test_nothing_lost import Broker, _long
from tests.dashboard.test_worker_loss import Worker, _experiment, _trace_import, _wait_until

# ---------------------------------------------------------------------------- 503 during an outage


@contextmanager
def _down() -> Iterator[None]:
    """This process's database connection pointed at a database that cannot be reached, then restored."""
    saved = dict(connection.settings_dict)
    connection.close()
    if connection.vendor == "sqlite":
        connection.settings_dict["NAME"] = "/nonexistent-folder/db.sqlite3"
    else:
        with socket.socket() as s:  # a port nobody listens on
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        connection.settings_dict.update(HOST="127.0.0.1", PORT=str(port))
    try:
        yield
    finally:
        connection.close()
        connection.settings_dict.clear()
        connection.settings_dict.update(saved)


@pytest.fixture
def api_client(owner: Any) -> Client:
    _, secret = ApiToken.issue(owner, "t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


@pytest.mark.django_db(transaction=True)
def test_an_api_request_during_a_database_outage_answers_503_with_retry_after(api_client: Client) -> None:
    with _down():
        resp = api_client.get("/api/experiments/")
    assert resp.status_code == 503
    assert resp["Retry-After"] == str(RETRY_AFTER_S)
    assert "database is unreachable" in resp.json()["detail"]


@pytest.mark.django_db(transaction=True)
def test_a_page_during_a_database_outage_answers_503_with_retry_after(owner: Any) -> None:
    # Not raised into the test: a middleware's response phase meets the outage too, and Django answers it
    # through the 500 handler (dashboard.common.errors.server_error), as in production.
    client = Client(raise_request_exception=False)
    client.force_login(owner)
    with _down():
        resp = client.get("/experiments/")
    assert resp.status_code == 503 and resp["Retry-After"] == str(RETRY_AFTER_S)
    assert "Unavailable for a moment" in resp.content.decode()


@pytest.mark.django_db(transaction=True)
def test_an_api_submission_during_a_database_outage_answers_503_and_the_api_answers_after(
    api_client: Client,
) -> None:
    body = json.dumps({"scenario": small_scenario()})
    with _down():
        resp = api_client.post("/api/experiments/", body, content_type="application/json")
    assert resp.status_code == 503 and resp["Retry-After"] == str(RETRY_AFTER_S)
    assert api_client.get("/api/experiments/").status_code == 200  # back: answers again, nothing to restart


# ---------------------------------------------------------------------------- a broker restarted empty


@pytest.mark.django_db(transaction=True)
def test_work_whose_messages_a_broker_restart_lost_resumes_within_a_minute_once_each(owner, tmp_path):
    """With SIMCORE_REQUEUE_AFTER_S at its default (600 s), the lost messages are noticed within a minute."""
    queue = f"simcore-test-restart-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, _long(hours=1.0, schedulers=["greedy"], seeds=[0, 1, 2, 3, 4]))
    runs = list(exp.runs.order_by("seed"))
    ids = [r.pk for r in runs]
    broker = Broker(tmp_path)
    w = Worker("restart", queue, tmp_path, concurrency=1, SIMCORE_WORKER_TIMEOUT_S="300", **broker.env())
    try:
        w.wait_ready()
        broker.publish(ids, queue)
        _wait_until("a run started", lambda: Run.objects.filter(pk__in=ids, status=Status.RUNNING).exists())
        broker.restart_empty()
        # Well under the 600 s of the slow rule: the lost messages are noticed at the first passes after the grace.
        _wait_until(
            "every run finished",
            lambda: Run.objects.filter(pk__in=ids, status=Status.FINISHED).count() == len(ids),
            timeout=90,
        )
    finally:
        w.kill()
        broker.stop()
    rows = list(Run.objects.filter(pk__in=ids))
    assert all(r.attempt == 1 and r.lost_attempts == [] for r in rows)  # each claimed once
    assert RunResult.objects.filter(run__in=ids).count() == len(ids)
    # Sent again by the fast rule: this test's worker's, or the session worker's (same database, another broker,
    # on which these runs are as lost), whichever passed first.
    session_log = ARTIFACTS / "celery-worker.log"
    logs = w.log.read_text() + (session_log.read_text() if session_log.exists() else "")
    assert "messages lost by the broker, sent again" in logs


# ---------------------------------------------------------------------------- analyses lost with their worker


@contextmanager
def _queue(name: str) -> Iterator[None]:
    before = app.conf.task_default_queue
    app.conf.task_default_queue = name
    try:
        yield
    finally:
        app.conf.task_default_queue = before


def _finished_run(owner: Any) -> Run:
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    tasks.run_simulation(run.pk)
    run.refresh_from_db()
    assert run.status == Status.FINISHED
    return run


#: An analysis of some seconds (many trials of every technique), so that its worker can be killed in its middle.
LONG_SPEC = {
    "techniques": ["utilisation", "holes", "inflation", "compaction", "compare"],
    "placed_by": "as-is",
    "repack_with": "arrival",
    "orderings": ["arrival", "cpu"],
    "schedulers": ["greedy"],
    "units": [0.05, 0.3, 0.6],
    "factors": [1, 1.25, 1.5],
    "taus": [0, 0.006, 0.01],
    "trials": 100,
    "seed": 7,
}


@pytest.mark.django_db(transaction=True)
def test_an_analysis_whose_worker_is_killed_is_queued_again_and_finishes_on_another(owner, settings, tmp_path):
    timeout_s = 3
    settings.SIMCORE_WORKER_TIMEOUT_S = timeout_s
    queue = f"simcore-test-packing-{uuid.uuid4().hex[:8]}"
    run = _finished_run(owner)
    first = Worker("pack-a", queue, tmp_path, concurrency=1, SIMCORE_WORKER_TIMEOUT_S=str(timeout_s))
    try:
        first.wait_ready()
        with _queue(queue):  # its message goes to this test's queue
            a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=1800.0, spec=LONG_SPEC)
        _wait_until(
            "the analysis under way",
            lambda: PackingAnalysis.objects.filter(pk=a.pk, status=Status.RUNNING, fraction__gt=0).exists(),
        )
    finally:
        first.kill()
    second = Worker("pack-b", queue, tmp_path, concurrency=1, SIMCORE_WORKER_TIMEOUT_S=str(timeout_s))
    try:
        second.wait_ready()
        _wait_until(
            "the analysis finished",
            lambda: PackingAnalysis.objects.get(pk=a.pk).status == Status.FINISHED,
            timeout=120,
        )
    finally:
        second.kill()
    a.refresh_from_db()
    assert a.attempt == 2 and [x["attempt"] for x in a.lost_attempts] == [1]
    assert a.lost_attempts[0]["worker"].startswith("pack-a") and a.worker.startswith("pack-b")
    assert a.results is not None and a.error == ""


# ---------------------------------------------------------------------------- beats in every phase


@pytest.mark.django_db(transaction=True)
def test_the_heartbeat_goes_on_while_a_phase_holds_the_interpreter_lock(owner, settings, tmp_path):
    """A run whose scheduler setup holds the lock four timeouts long is never declared lost and finishes once."""
    timeout_s = 1
    settings.SIMCORE_WORKER_TIMEOUT_S = timeout_s
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 1
    queue = f"simcore-test-gil-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, small_scenario(schedulers=["greedy"], engine="python"))
    run = exp.runs.get()
    Run.objects.filter(pk=run.pk).update(scheduler="test-gil-setup")  # registered in the worker only
    mark = tmp_path / "gil"
    w = Worker(
        "gil",
        queue,
        tmp_path,
        concurrency=1,
        SIMCORE_PLUGINS="tests.dashboard.gil_plugin",
        SIMCORE_WORKER_TIMEOUT_S=str(timeout_s),
        SIMCORE_RUN_MAX_ATTEMPTS="1",
        SIMCORE_TEST_GIL_MARK=str(mark),
        SIMCORE_TEST_GIL_HOLD_S=str(4 * timeout_s),
    )
    try:
        w.wait_ready()
        tasks.run_simulation.apply_async((run.pk,), queue=queue)
        _wait_until("inside the phase", lambda: Path(f"{mark}.in").exists())
        entered = Run.objects.get(pk=run.pk).heartbeat_at
        stamped_inside = False
        while not Path(f"{mark}.out").exists():
            heard = Run.objects.get(pk=run.pk).heartbeat_at
            # Read before the phase's end was seen: this stamp was written while the lock was held.
            if heard is not None and heard > entered and not Path(f"{mark}.out").exists():
                stamped_inside = True
            time.sleep(0.1)
        _wait_until("the run ended", lambda: Run.objects.get(pk=run.pk).status not in (Status.PENDING, Status.RUNNING))
    finally:
        w.kill()
    run.refresh_from_db()
    assert stamped_inside
    assert run.status == Status.FINISHED and run.attempt == 1 and run.lost_attempts == [], run.error


def _wfcommons_instance(tasks_n: int) -> bytes:
    """A chain of ``tasks_n`` tasks as one WfFormat 1.5 document, gzipped: parsing it holds the lock for seconds."""
    spec = ",".join(
        f'{{"name":"t{i}","id":"t{i}","parents":[{f"{chr(34)}t{i - 1}{chr(34)}" if i else ""}],'
        f'"children":[{f"{chr(34)}t{i + 1}{chr(34)}" if i + 1 < tasks_n else ""}]}}'
        for i in range(tasks_n)
    )
    exe = ",".join(f'{{"id":"t{i}","runtimeInSeconds":{1 + i % 7},"coreCount":1}}' for i in range(tasks_n))
    doc = (
        '{"name":"chain","schemaVersion":"1.5","workflow":{"specification":{"tasks":[' + spec + '],"files":[]},'
        '"execution":{"makespanInSeconds":1,"executedAt":"20250101T000000+0000","tasks":[' + exe + "]}}}"
    )
    return gzip.compress(doc.encode(), 1)


@pytest.mark.django_db(transaction=True)
def test_an_import_whose_reading_holds_the_interpreter_lock_is_never_declared_lost(owner, settings, tmp_path):
    timeout_s = 1
    settings.SIMCORE_WORKER_TIMEOUT_S = timeout_s
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 1
    queue = f"simcore-test-gil-import-{uuid.uuid4().hex[:8]}"
    up = _trace_import(owner, "chain.json.gz", _wfcommons_instance(400_000), "wfcommons")
    w = Worker("gil-import", queue, tmp_path, concurrency=1, SIMCORE_WORKER_TIMEOUT_S=str(timeout_s))
    try:
        w.wait_ready()
        tasks.import_trace.apply_async((up.pk,), queue=queue)
        _wait_until("claimed", lambda: TraceUpload.objects.get(pk=up.pk).status != ImportStatus.PENDING)
        started = TraceUpload.objects.get(pk=up.pk).started_at
        # The reader reports nothing until the document is parsed: every stamp before it is a heartbeat.
        beat_while_reading = False
        while (row := TraceUpload.objects.get(pk=up.pk)).status == ImportStatus.RUNNING:
            if row.stage == "starting" and row.heartbeat_at is not None and row.heartbeat_at > started:
                beat_while_reading = True
            time.sleep(0.1)
    finally:
        w.kill()
    row = TraceUpload.objects.get(pk=up.pk)
    assert row.status == ImportStatus.READY, (row.error, row.lost_attempts, row.attempt)
    assert row.attempt == 1 and row.lost_attempts == [] and row.info["jobs"] == 400_000
    assert beat_while_reading


# ---------------------------------------------------------------------------- the database down


#: Run in a ``manage.py shell`` against the test's own database: a user and an experiment, queued as the API does.
CREATE = """
import json, os
from django.contrib.auth.models import User
from dashboard.experiments.services import create_experiment
owner = User.objects.create_user("outage", password="outage-password-1")
exp = create_experiment(owner, json.loads(os.environ["SCENARIO"]))
print(exp.pk)
"""


SETTINGS = "tests.dashboard.settings"


def _broker_env() -> dict[str, str]:
    """The session's broker (never stopped here), as the test workers get it."""
    if os.environ.get("REDIS_URL"):
        return {"REDIS_URL": os.environ["REDIS_URL"]}
    return {"SIMCORE_BROKER_DIR": str(Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).parent)}


def test_queued_runs_resume_after_the_database_comes_back_each_once(tmp_path):
    """PostgreSQL stopped while runs are queued: tasks meeting it are retried, not acknowledged; once it is back
    every run finishes within a minute, once, with one result."""
    pg = OwnPostgres(need_postgres_bin())
    queue = f"simcore-test-dbdown-{uuid.uuid4().hex[:8]}"
    env = {"DATABASE_URL": pg.url, "SIMCORE_TASK_QUEUE": queue, "SIMCORE_WORKER_TIMEOUT_S": "300", **_broker_env()}
    w = None
    try:
        pg.start()
        pg.create_and_migrate()
        w = Worker("dbdown", queue, tmp_path, concurrency=1, **env)
        w.wait_ready()
        scenario = small_scenario(schedulers=["greedy", "fcfs"], seeds=[0, 1, 2])
        subprocess.run(
            [sys.executable, "manage.py", "shell", "-c", CREATE],
            cwd=ROOT,
            env={**os.environ, **env, "DJANGO_SETTINGS_MODULE": SETTINGS, "SCENARIO": json.dumps(scenario)},
            check=True,
            timeout=60,
        )
        finished = "SELECT count(*) FROM dashboard_run WHERE status = 'finished'"
        wait_until("a run finished", lambda: pg.query(finished)[0][0] >= 1)
        pg.stop()
        log = w.log
        wait_until("a task retried for the outage", lambda: "trying again in" in log.read_text(), timeout=30)
        pg.start()
        back = time.monotonic()
        wait_until("every run finished", lambda: pg.query(finished)[0][0] == 6, timeout=90)
        recovered_s = time.monotonic() - back
        rows = pg.query("SELECT status, attempt, lost_attempts::text, error FROM dashboard_run")
        results = pg.query("SELECT run_id, count(*) FROM dashboard_runresult GROUP BY run_id")
    finally:
        if w is not None:
            w.kill()
        pg.remove()
    assert [r[0] for r in rows] == ["finished"] * 6
    assert all(r[1] == 1 and r[2] == "[]" for r in rows), rows  # no attempt used up by the outage
    assert len(results) == 6 and all(n == 1 for _, n in results)
    assert recovered_s < 60


# ---------------------------------------------------------------------------- giving back what an outage interrupted


@pytest.mark.django_db
def test_the_retry_of_a_run_an_outage_interrupted_gives_it_back_and_runs_it_without_using_up_an_attempt(owner):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    # Claimed as attempt 1, then the database went away under it (its task raised Interrupted(1)).
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, attempt=1, worker="w1", heartbeat_at=timezone.now())
    assert execute_run(run.pk, worker="w1", give_back=1) == Status.FINISHED
    run.refresh_from_db()
    assert run.attempt == 1 and run.lost_attempts == [] and RunResult.objects.filter(run=run).count() == 1


@pytest.mark.django_db
def test_a_give_back_changes_nothing_once_another_attempt_holds_the_run(owner):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    # The outage outlasted the timeout: the run was declared lost and another worker claimed attempt 2.
    Run.objects.filter(pk=run.pk).update(status=Status.RUNNING, attempt=2, worker="w2", heartbeat_at=timezone.now())
    assert execute_run(run.pk, worker="w1", give_back=1) == Status.RUNNING
    run.refresh_from_db()
    assert (run.status, run.attempt, run.worker) == (Status.RUNNING, 2, "w2")


@pytest.mark.django_db
def test_an_outage_inside_a_claimed_run_raises_interrupted_with_its_attempt(owner, monkeypatch):
    from dashboard.experiments import execution

    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()

    def unreachable(*_: Any, **__: Any) -> Any:
        raise OperationalError("connection to server at 127.0.0.1 failed: Connection refused")

    monkeypatch.setattr(execution, "store_outcome", unreachable)  # the database gone when the results are written
    with pytest.raises(Interrupted) as caught:
        execute_run(run.pk, worker="w1")
    assert caught.value.attempt == 1
    run.refresh_from_db()
    assert run.status == Status.RUNNING and run.error == ""  # not failed for the outage: given back by the retry


@pytest.fixture
def own_queue() -> Iterator[str]:
    """The task queue pointed at a queue of this test's own on the real broker (no consumer), emptied afterwards."""
    name = f"simcore-test-fast-{uuid.uuid4().hex[:8]}"
    with _queue(name):
        try:
            yield name
        finally:
            purge_queues(name)


@pytest.mark.django_db
def test_work_queued_half_a_minute_ago_is_sent_again_only_once_its_messages_are_gone(owner, own_queue):
    """The fast rule, long before SIMCORE_REQUEUE_AFTER_S: a backlog gains no duplicates, lost messages return."""
    exp = _experiment(owner, small_scenario(schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    ids = sorted(exp.runs.values_list("pk", flat=True))
    assert enqueue_runs(ids) and waiting_messages() == 4
    Run.objects.filter(pk__in=ids).update(queued_at=timezone.now() - timedelta(seconds=LOST_MESSAGE_GRACE_S + 10))
    nothing = {"runs": 0, "imports": 0, "analyses": 0, "evaluations": 0, "capacity probes": 0}
    assert requeue_stale() == nothing  # their four messages wait (a backlog): no duplicates
    purge_queues(own_queue)  # the broker loses them
    assert requeue_stale() == {**nothing, "runs": 4}
    assert waiting_messages() == 4
    assert requeue_stale() == nothing  # sent just now: not again
