"""Work whose worker died, on its last allowed attempt, is marked failed ("lost") and says so; live work,
however slow, is never touched.

The rule (dashboard.common.recovery): running work whose heartbeat is older than
SIMCORE_WORKER_TIMEOUT_S is queued again while it has attempts left
(SIMCORE_RUN_MAX_ATTEMPTS; tests/dashboard/test_nothing_lost.py), else failed
with a message naming when its worker was last heard of. These tests allow
one attempt, so a lost attempt is the last. The first tests check the rule on
rows with hand-set heartbeats; a later one SIGKILLs a real worker process (its
own, never the session's shared worker) in the middle of a run and a trace
import and reads the outcome through the pages and the API.
"""

from __future__ import annotations

import gzip
import os
import signal
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard import tasks
from dashboard.celery import READY_FILE_ENV, both_queues
from dashboard.experiments.execution import _fail, _Reporter, store_outcome
from dashboard.experiments.services import cancel_run
from dashboard.experiments.work import recover_lost_runs
from dashboard.models import (
    RERUN_IMPORT,
    RERUN_RUN,
    ApiToken,
    ClusterUpload,
    Experiment,
    ImportRole,
    ImportStatus,
    Run,
    RunRecordsObject,
    RunResult,
    Status,
    TraceImportFile,
    TraceUpload,
    lost_message,
)
from dashboard.traces import imports
from dashboard.traces.uploads import InputFile, usable_traces
from dashboard.traces.work import recover_lost_imports
from simcore.core.engine import Progress
from simcore.core.errors import Cancelled
from simcore.scenario import labels_of, run_scenario, validate_scenario
from tests.dashboard.conftest import ARTIFACTS, ROOT, _test_database_url, small_scenario

T0 = datetime(2031, 3, 4, 14, 0, 0, tzinfo=UTC)
LOST = "the worker running this stopped without finishing"


def fail_lost_runs(now: datetime) -> list[int]:
    """The rule with one attempt allowed: the runs it failed (it queues none again)."""
    done = recover_lost_runs(now=now)
    assert done.retried == []
    return done.failed


def fail_lost_imports(now: datetime) -> list[int]:
    done = recover_lost_imports(now=now)
    assert done.retried == []
    return done.failed


@pytest.fixture(autouse=True)
def _one_attempt(settings: Any) -> None:
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 1


def _experiment(owner: User, scenario: dict[str, Any]) -> Experiment:
    """An experiment and its pending runs, stored without enqueuing tasks (the tests choose who runs what)."""
    sc = validate_scenario(scenario)
    names = labels_of(sc)
    exp = Experiment.objects.create(
        owner=owner, scenario=sc, cluster_label=names["cluster"], workload_label=names["workload"]
    )
    for seed in sc["seeds"]:
        for s in sc["schedulers"]:
            Run.objects.create(experiment=exp, scheduler=s, seed=seed)
    return exp


def _trace_import(owner: User, filename: str, content_gz: bytes, fmt: str, **options: Any) -> TraceUpload:
    """A pending trace import with its raw file, stored without enqueuing its task."""
    opts = imports.check_import_options({"format": fmt, **options})
    up = TraceUpload.objects.create(
        owner=owner,
        name=filename,
        filename=filename,
        content_gz=b"",
        size_bytes=0,
        sha256="",
        format=fmt,
        options=opts,
        bytes_total=len(content_gz),
    )
    TraceImportFile.objects.create(
        upload=up, role=ImportRole.TRACE, filename=filename, size_bytes=len(content_gz), content_gz=content_gz
    )
    return up


def _set(obj: Run | TraceUpload, **fields: Any) -> None:
    type(obj).objects.filter(pk=obj.pk).update(**fields)
    obj.refresh_from_db()


def _api(owner: User) -> Client:
    _, secret = ApiToken.issue(owner, "t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


# ---------------------------------------------------------------------------- the rule, on hand-set heartbeats


def test_the_message_names_when_the_worker_was_last_heard_of():
    assert lost_message(T0 - timedelta(minutes=2, seconds=5), T0, RERUN_RUN) == (
        f"{LOST} (lost at 13:57 UTC); re-run it: fork the experiment"
    )
    # Read on another day, the date is part of it.
    assert lost_message(datetime(2031, 3, 3, 23, 59, 30, tzinfo=UTC), T0, RERUN_IMPORT) == (
        f"{LOST} (lost at 2031-03-03 23:59 UTC); re-run it: upload the files again"
    )


@pytest.mark.django_db
def test_only_running_runs_with_a_heartbeat_older_than_the_timeout_fail(
    owner, settings, django_capture_on_commit_callbacks
):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    exp = _experiment(owner, small_scenario(schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    stale, boundary, pending, finished = exp.runs.order_by("seed", "scheduler")
    _set(
        stale,
        status=Status.RUNNING,
        attempt=1,
        started_at=T0 - timedelta(hours=1),
        heartbeat_at=T0 - timedelta(seconds=61),
    )
    _set(
        boundary,
        status=Status.RUNNING,
        attempt=1,
        started_at=T0 - timedelta(hours=1),
        heartbeat_at=T0 - timedelta(seconds=60),
    )
    _set(finished, status=Status.FINISHED, heartbeat_at=T0 - timedelta(hours=1))
    Experiment.objects.filter(pk=exp.pk).update(status=Status.RUNNING)

    with django_capture_on_commit_callbacks(execute=True):
        assert fail_lost_runs(now=T0) == [stale.pk]
    stale.refresh_from_db()
    assert stale.status == Status.FAILED and stale.finished_at == T0 and stale.eta_s is None
    assert stale.error == f"{LOST} (lost at 13:58 UTC); re-run it: fork the experiment"
    # Exactly at the timeout is not yet lost; pending and finished runs are never touched.
    assert dict(exp.runs.values_list("pk", "status")) == {
        stale.pk: Status.FAILED,
        boundary.pk: Status.RUNNING,
        pending.pk: Status.PENDING,
        finished.pk: Status.FINISHED,
    }
    exp.refresh_from_db()
    assert exp.status == Status.RUNNING

    # A second later the boundary run is lost too; a pending run keeps the experiment active.
    with django_capture_on_commit_callbacks(execute=True):
        assert fail_lost_runs(now=T0 + timedelta(seconds=1)) == [boundary.pk]
        assert fail_lost_runs(now=T0 + timedelta(seconds=1)) == []  # applied twice: nothing more
    exp.refresh_from_db()
    assert exp.status == Status.RUNNING
    with django_capture_on_commit_callbacks(execute=True):
        assert cancel_run(pending)
    exp.refresh_from_db()
    assert exp.status == Status.FAILED  # failed outranks cancelled and finished


@pytest.mark.django_db
def test_a_late_worker_cannot_bring_a_lost_run_back(owner, settings, django_capture_on_commit_callbacks):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    exp = _experiment(owner, small_scenario(schedulers=["greedy"], hours=0.2))
    run = exp.runs.get()
    outcome = run_scenario(exp.scenario, "greedy", 0)
    # The worker claimed it, then went quiet for longer than the timeout (swapped out, say) and is declared lost.
    assert run.transition(Status.RUNNING, attempt=1, started_at=T0, heartbeat_at=T0)
    with django_capture_on_commit_callbacks(execute=True):
        assert fail_lost_runs(now=T0 + timedelta(seconds=61)) == [run.pk]
    message = Run.objects.get(pk=run.pk).error
    assert message.startswith(f"{LOST} (lost at 14:00 UTC)")
    # When it wakes up, its heartbeat, progress, error and results all find the run no longer running.
    assert run.status == Status.RUNNING  # the worker's own copy
    assert Run.objects.filter(pk=run.pk, status=Status.RUNNING).update(heartbeat_at=timezone.now()) == 0
    with pytest.raises(Cancelled):
        _Reporter(run)(Progress(now=50.0, horizon=100.0, arrived=20, started=15, completed=10, jobs=40, wall_s=1.0))
    assert not store_outcome(run, outcome)
    assert _fail(run, "some error") == Status.FAILED
    run = Run.objects.get(pk=run.pk)
    assert (run.status, run.error, run.heartbeat_at) == (Status.FAILED, message, T0)
    assert not RunResult.objects.filter(run=run).exists() and not RunRecordsObject.objects.filter(run=run).exists()


CSV = b"submit_s,duration_s,cpu,mem\n0,10,0.5,0.25\n5,20,0.25,0.5\n"


@pytest.mark.django_db
def test_a_lost_import_fails_drops_its_files_and_a_late_worker_stores_nothing(owner, settings):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    fresh = _trace_import(owner, "fresh.csv.gz", gzip.compress(CSV), "csv")
    up = _trace_import(owner, "t.csv.gz", gzip.compress(CSV), "csv")
    _set(fresh, status=ImportStatus.RUNNING, attempt=1, heartbeat_at=T0)
    # A worker claimed it and converted the trace ...
    _set(up, status=ImportStatus.RUNNING, attempt=1, heartbeat_at=T0 - timedelta(seconds=30))
    files = [InputFile(f.role, f.filename, bytes(f.content_gz)) for f in up.inputs.all()]
    conv = imports.convert(
        "csv", files, up.options, name=up.name, progress=imports._Reporter(up.pk, list(up.inputs.all()))
    )
    assert conv.info["jobs"] == 2
    # ... but was not heard of for longer than the timeout: lost, raw files dropped, the fresh one untouched.
    _set(up, heartbeat_at=T0 - timedelta(seconds=61))
    assert fail_lost_imports(now=T0) == [up.pk]
    up.refresh_from_db()
    assert up.status == ImportStatus.FAILED and up.finished_at == T0
    assert up.error == f"{LOST} (lost at 13:58 UTC); re-run it: upload the files again"
    assert not TraceImportFile.objects.filter(upload=up).exists()
    assert TraceUpload.objects.get(pk=fresh.pk).status == ImportStatus.RUNNING
    # Storing afterwards changes nothing: the trace never becomes usable.
    assert imports._store(up, conv) == ImportStatus.FAILED
    up.refresh_from_db()
    assert up.status == ImportStatus.FAILED and bytes(up.content_gz) == b"" and up.error.startswith(LOST)
    assert not ClusterUpload.objects.exists() and usable_traces(owner).count() == 0


@pytest.mark.django_db(transaction=True)
def test_pages_only_read_and_the_periodic_repair_applies_the_rule(owner, owner_client, settings):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from dashboard.common.repair import repair_once

    settings.SIMCORE_WORKER_TIMEOUT_S = 30
    now = timezone.now()
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    _set(run, status=Status.RUNNING, attempt=1, started_at=now, heartbeat_at=now - timedelta(seconds=50))
    exp.refresh_status()
    up = _trace_import(owner, "t.csv.gz", gzip.compress(CSV), "csv")
    _set(up, status=ImportStatus.RUNNING, attempt=1, heartbeat_at=now - timedelta(seconds=50))
    api = _api(owner)
    # Heard of 50 s ago with a 30 s timeout: lost, but reading pages and the API changes nothing.
    pages = [
        lambda: owner_client.get(reverse("experiment-list")),
        lambda: owner_client.get(exp.get_absolute_url()),
        lambda: owner_client.get(reverse("experiment-progress", args=[exp.pk])),
        lambda: owner_client.get(reverse("trace-import-progress", args=[up.pk])),
        lambda: api.get(f"/api/experiments/{exp.pk}/"),
        lambda: api.get(f"/api/uploads/trace/{up.pk}/"),
    ]
    for read in pages:
        with CaptureQueriesContext(connection) as q:
            assert read().status_code == 200
        writes = [x["sql"] for x in q.captured_queries if x["sql"].split()[0] in ("INSERT", "UPDATE", "DELETE")]
        # The API's token check stamps the token's last use; nothing else is written.
        assert all("dashboard_apitoken" in w for w in writes), writes
    assert Run.objects.get(pk=run.pk).status == Status.RUNNING
    # The workers' periodic repair applies the rule.
    done = repair_once()
    assert done["runs_failed"] == [run.pk] and done["imports_failed"] == [up.pk]
    run.refresh_from_db()
    assert run.status == Status.FAILED and run.error.startswith(LOST)
    body = api.get(f"/api/experiments/{exp.pk}/").json()
    assert body["status"] == "failed" and body["runs"][0]["error"] == run.error
    assert run.error in owner_client.get(exp.get_absolute_url()).content.decode()
    progress = owner_client.get(reverse("trace-import-progress", args=[up.pk])).json()
    assert progress["status"] == "failed" and progress["error"].startswith(LOST)
    assert api.get(f"/api/uploads/trace/{up.pk}/").json()["trace_import"]["error"] == progress["error"]


# ---------------------------------------------------------------------------- a real worker, killed

#: Tiny, so the test waits seconds; the workers get it too (their heartbeat comes every TIMEOUT_S / 6 s).
TIMEOUT_S = 3


class Worker:
    """A ``celery worker`` process of this test (own queue, own process group, so it can be killed whole)."""

    def __init__(
        self,
        name: str,
        queue: str,
        tmp: Path,
        concurrency: int = 2,
        queues: list[str] | None = None,
        **extra_env: str,
    ) -> None:
        """``queues``: the queues it takes (default both of ``queue``: the short one and its long twin)."""
        self.ready = tmp / f"{name}.ready"
        self.log = ARTIFACTS / f"celery-worker-lost-{name}.log"
        env = {
            **os.environ,
            "DATABASE_URL": _test_database_url(),
            READY_FILE_ENV: str(self.ready),
            "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
            "SIMCORE_WORKER_TIMEOUT_S": str(TIMEOUT_S),
            "SIMCORE_TASK_QUEUE": queue,
        }
        if not os.environ.get("REDIS_URL"):
            env["SIMCORE_BROKER_DIR"] = str(
                Path(django_settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).parent
            )
        env.update(extra_env)  # last: a test may give its worker its own broker
        ARTIFACTS.mkdir(exist_ok=True)
        with open(self.log, "w") as out:
            # Prefork with two processes, as deployed: a run and an import at once.
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "dashboard",
                    "worker",
                    "--concurrency",
                    str(concurrency),
                    "-Q",
                    ",".join(queues or both_queues(queue)),
                    "-n",
                    f"{name}-{uuid.uuid4().hex[:6]}@%h",
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
                start_new_session=True,
            )

    def wait_ready(self) -> None:
        """Until it consumes tasks and has applied the lost-work rule at start-up (its log says so)."""
        deadline = time.monotonic() + 60
        while not (self.ready.exists() and "start-up check for work lost" in self.log.read_text()):
            if self.proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {self.proc.returncode}; see {self.log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker not ready after 60 s; see {self.log}")
            time.sleep(0.1)

    def kill(self) -> None:
        """SIGKILL the worker and its pool processes at once, as a machine restart or the OOM killer of a container."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def _wait_until(what: str, check: Any, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} after {timeout} s")
        time.sleep(0.1)


def _big_swf(lines: int) -> bytes:
    """A valid SWF trace (gzip) that takes the importer several seconds: ``lines`` jobs, 1,000 per second.

    Run times and widths vary, so fitting classes is real work: with identical rows k-means converged at
    once, and since the faster SWF reader the whole import finished before the test could see it running.
    """
    per = 1000
    rows = "".join(
        f"1 @ 0 {600 + (j * 37) % 3000} {1 + j % 64} -1 -1 {1 + j % 64} -1 -1 1 1 1 -1 -1 -1 -1 -1\n"
        for j in range(per)
    )
    body = "".join(rows.replace("@", str(k)) for k in range(lines // per))
    return gzip.compress(("; MaxProcs: 128\n" + body).encode(), 1)


def _not_heard_of_for(rows: list[Run | TraceUpload], seconds: float) -> None:
    """Wait until none of ``rows`` got a heartbeat for ``seconds`` (read straight from the table: no rule applied)."""
    while True:
        beats = [type(r).objects.filter(pk=r.pk).values_list("heartbeat_at", flat=True).get() for r in rows]
        wait = max(beats) + timedelta(seconds=seconds) - timezone.now()
        if wait <= timedelta(0):
            return
        time.sleep(wait.total_seconds() + 0.1)


#: The SWF reader parses 16 MB blocks in one numpy call that holds the GIL; on a busy machine that starves the
#: heartbeat thread for seconds, so the test with a big import gives live work more than TIMEOUT_S.
SLOW_IMPORT_TIMEOUT_S = 8


@pytest.mark.django_db(transaction=True)
def test_a_killed_workers_run_and_import_are_marked_failed_and_live_work_is_not(
    owner, owner_client, settings, tmp_path
):
    settings.SIMCORE_WORKER_TIMEOUT_S = SLOW_IMPORT_TIMEOUT_S
    queue = f"simcore-test-lost-{uuid.uuid4().hex[:8]}"
    # ~4.4 million jobs in the Python engine: about 20 s of simulation on an idle machine (compiled, or 24 h,
    # it could finish before the kill); the import reads 2 million SWF rows and fits 100 classes (about 20 s).
    # Both are killed a few seconds after they start.
    exp = _experiment(
        owner,
        small_scenario(
            cluster={"preset": "google-balanced", "params": {"machines_per_config": 20}},
            hours=72.0,
            schedulers=["greedy"],
            engine="python",
        ),
    )
    run = exp.runs.get()
    up = _trace_import(owner, "big.swf.gz", _big_swf(2_000_000), "swf", classes=100)
    api = _api(owner)
    # One attempt allowed: the work lost with worker a is failed, not run again (test_nothing_lost.py).
    slow = {"SIMCORE_WORKER_TIMEOUT_S": str(SLOW_IMPORT_TIMEOUT_S)}
    workers = [Worker("a", queue, tmp_path, SIMCORE_RUN_MAX_ATTEMPTS="1", **slow)]
    try:
        a = workers[0]
        a.wait_ready()
        # Given worker a running the run and the import
        tasks.run_simulation.apply_async((run.pk,), queue=queue)
        tasks.import_trace.apply_async((up.pk,), queue=queue)
        _wait_until(
            "claimed",
            lambda: (
                Run.objects.get(pk=run.pk).status == Status.RUNNING
                and TraceUpload.objects.get(pk=up.pk).status == ImportStatus.RUNNING
            ),
        )
        run.refresh_from_db()
        up.refresh_from_db()
        assert run.worker.startswith("a-") and up.worker.startswith("a-")
        # and an import whose worker was last heard of a minute ago, before it died: lost for these workers
        # (SLOW_IMPORT_TIMEOUT_S), not yet for the session's own worker (the default 300 s, three attempts),
        # whose periodic repair would otherwise queue it again and import it, a race this test lost at times
        dead = _trace_import(owner, "old.csv.gz", gzip.compress(CSV), "csv")
        _set(
            dead,
            status=ImportStatus.RUNNING,
            attempt=1,
            worker="gone@elsewhere",
            heartbeat_at=timezone.now() - timedelta(seconds=60),
        )

        # When worker b starts, it fails the dead worker's import and leaves live worker a's work alone.
        workers.append(Worker("b", f"{queue}-b", tmp_path, SIMCORE_RUN_MAX_ATTEMPTS="1", **slow))
        workers[1].wait_ready()
        dead.refresh_from_db()
        assert dead.status == ImportStatus.FAILED and dead.error.startswith(f"{LOST} (lost at ")
        assert not TraceImportFile.objects.filter(upload=dead).exists()
        assert Run.objects.get(pk=run.pk).status == Status.RUNNING
        assert TraceUpload.objects.get(pk=up.pk).status == ImportStatus.RUNNING

        # Live work stays running through reads of pages and the API, longer than the timeout after its claim:
        # the heartbeat keeps coming.
        _wait_until(
            "past the timeout",
            lambda: (
                timezone.now() > max(run.started_at, up.started_at) + timedelta(seconds=SLOW_IMPORT_TIMEOUT_S + 0.5)
            ),
        )
        assert api.get(f"/api/experiments/{exp.pk}/progress/").json()["runs"][0]["status"] == "running"
        assert api.get(f"/api/uploads/trace/{up.pk}/").json()["status"] == "running"
        run_beat = Run.objects.get(pk=run.pk).heartbeat_at
        up_beat = TraceUpload.objects.get(pk=up.pk).heartbeat_at
        assert run_beat > run.started_at and up_beat > up.started_at

        # When worker a is killed mid-way
        a.kill()
        # nothing shows at once (its last heartbeat is recent) ...
        assert api.get(f"/api/experiments/{exp.pk}/progress/").json()["status"] == "running"
        _not_heard_of_for([run, up], SLOW_IMPORT_TIMEOUT_S)

        # then live worker b's periodic repair (every SLOW_IMPORT_TIMEOUT_S / 3 s) marks the run and the import failed,
        _wait_until(
            "marked failed by the repair",
            lambda: (
                Run.objects.get(pk=run.pk).status == Status.FAILED
                and TraceUpload.objects.get(pk=up.pk).status == ImportStatus.FAILED
            ),
            timeout=30,
        )
        # and the next read shows the run failed with the message, and the experiment failed.
        progress = api.get(f"/api/experiments/{exp.pk}/progress/").json()
        run.refresh_from_db()
        expected = f"{LOST} (lost at {timezone.localtime(run.heartbeat_at):%H:%M} UTC); re-run it: fork the experiment"
        assert progress["status"] == "failed"
        assert progress["runs"][0]["status"] == "failed" and progress["runs"][0]["error"] == expected
        assert run.error == expected and run.finished_at is not None
        assert Experiment.objects.get(pk=exp.pk).status == Status.FAILED
        assert api.get(f"/api/runs/{run.pk}/").json()["error"] == expected
        html = owner_client.get(exp.get_absolute_url()).content.decode()
        assert expected in html and 'id="experiment-status" class="status failed"' in html
        assert not RunResult.objects.filter(run=run).exists()
        # It can be re-run: the fork form opens with its scenario.
        fork = owner_client.get(reverse("experiment-fork", args=[exp.pk]))
        assert fork.status_code == 200 and fork.context["source"] == exp

        # The import too, through the API; its raw files are gone and it is not usable.
        body = api.get(f"/api/uploads/trace/{up.pk}/").json()
        up.refresh_from_db()
        assert body["status"] == "failed" and body["trace_import"]["error"] == up.error
        assert up.error == (
            f"{LOST} (lost at {timezone.localtime(up.heartbeat_at):%H:%M} UTC); re-run it: upload the files again"
        )
        assert not TraceImportFile.objects.filter(upload=up).exists() and usable_traces(owner).count() == 0
    finally:
        for w in workers:
            w.kill()  # b is idle: nothing to wait for


@pytest.mark.django_db(transaction=True)
def test_a_run_declared_lost_in_a_long_phase_is_stopped_and_frees_its_worker(owner, settings, tmp_path):
    """Issue 14 item 7: the heartbeat beats during a phase without progress reports, and a run declared
    lost (here by hand, as a misfiring detector would) stops at once instead of holding the worker."""
    settings.SIMCORE_WORKER_TIMEOUT_S = TIMEOUT_S
    queue = f"simcore-test-slow-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, small_scenario(schedulers=["greedy"], seeds=[0, 1]))
    slow, after = exp.runs.order_by("seed")
    Run.objects.filter(pk=slow.pk).update(scheduler="test-slow-setup")  # registered in the worker only
    w = Worker("slow", queue, tmp_path, concurrency=1, SIMCORE_PLUGINS="tests.dashboard.slow_plugin")
    try:
        w.wait_ready()
        # One pool process: the second run can only start once the first one lets go.
        tasks.run_simulation.apply_async((slow.pk,), queue=queue)
        _wait_until("claimed", lambda: Run.objects.get(pk=slow.pk).status == Status.RUNNING)
        first = Run.objects.get(pk=slow.pk).heartbeat_at
        # The heartbeat keeps coming while the scheduler's setup runs (no progress reports in it).
        _wait_until("heartbeat during setup", lambda: Run.objects.get(pk=slow.pk).heartbeat_at > first, timeout=20)
        # Declared lost while its worker is alive:
        assert Run.objects.filter(pk=slow.pk, status=Status.RUNNING).update(
            status=Status.FAILED, error="declared lost by hand", finished_at=timezone.now()
        )
        tasks.run_simulation.apply_async((after.pk,), queue=queue)
        # the worker stops it and runs the next one.
        _wait_until("the next run finished", lambda: Run.objects.get(pk=after.pk).status == Status.FINISHED)
        assert Run.objects.get(pk=slow.pk).status == Status.FAILED
        assert "left 'running' while in progress: stopped" in w.log.read_text()
    finally:
        w.kill()
