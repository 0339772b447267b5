"""Nothing lost (issue 12): work lost with its worker runs again and completes exactly once; limits end work cleanly.

The rule (dashboard.common.recovery) is checked first on rows with hand-set
heartbeats and claims (exact messages, the zombie worker's refused writes),
then with real ``celery worker`` processes of the tests' own (never the
session's shared worker): SIGKILL of a worker's process group in the middle
of runs, a broker that restarts with nothing on disk, runs over the time
limit and over the memory limit.
"""

from __future__ import annotations

import gzip
import json
import os
import shutil
import signal
import socket
import subprocess
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.urls import reverse
from django.utils import timezone

from dashboard import tasks
from dashboard.celery import app
from dashboard.common.limits import Limits
from dashboard.common.queueing import requeue_stale, waiting_messages
from dashboard.common.recovery import attempts_note, exhausted_message
from dashboard.experiments import storage
from dashboard.experiments.execution import _fail, _Reporter, claim_run, store_outcome
from dashboard.experiments.jobs import run_job_chunks
from dashboard.experiments.work import enqueue_runs, recover_lost_runs
from dashboard.models import (
    ClusterUpload,
    Experiment,
    ImportStatus,
    Run,
    RunRecordsObject,
    RunResult,
    Status,
    TraceImportFile,
    TraceUpload,
)
from dashboard.traces import imports
from dashboard.traces.uploads import InputFile
from dashboard.traces.work import recover_lost_imports
from simcore.core.engine import Progress
from simcore.core.errors import Cancelled
from simcore.scenario import run_scenario
from tests.dashboard.conftest import ARTIFACTS, purge_queues, small_scenario
from tests.dashboard.test_worker_loss import CSV, TIMEOUT_S, Worker, _api, _experiment, _set, _trace_import, _wait_until

T0 = datetime(2031, 3, 4, 14, 0, 0, tzinfo=UTC)
STALE = timedelta(seconds=61)  # past the 60 s timeout these tests set


@pytest.fixture
def rule(settings: Any) -> Any:
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 3
    return settings


def _claim_and_lose(run: Run, worker: str, started: datetime, heard: datetime) -> Run:
    """``worker`` claims ``run`` (its next attempt) at ``started`` and is last heard of at ``heard``."""
    mine = claim_run(run.pk, worker)
    assert mine is not None
    _set(mine, started_at=started, heartbeat_at=heard)
    return mine


# ---------------------------------------------------------------------------- the rule, on hand-set claims


@pytest.mark.django_db
def test_a_lost_attempt_is_recorded_and_the_run_is_pending_again(owner, rule, django_capture_on_commit_callbacks):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = _claim_and_lose(exp.runs.get(), "a@host", T0 - timedelta(minutes=5), T0 - STALE)
    Run.objects.filter(pk=run.pk).update(fraction=0.4, jobs_done=2000, jobs_total=6000, eta_s=12.0)

    with django_capture_on_commit_callbacks(execute=True):
        done = recover_lost_runs(now=T0)
    assert (done.retried, done.failed) == ([run.pk], [])
    run.refresh_from_db()
    # Pending again, its progress reset, its attempt counted and recorded.
    assert run.status == Status.PENDING and run.attempt == 1
    assert (run.fraction, run.jobs_done, run.eta_s, run.worker, run.heartbeat_at, run.queued_at) == (
        0.0,
        0,
        None,
        "",
        None,
        None,
    )
    assert run.lost_attempts == [
        {
            "attempt": 1,
            "worker": "a@host",
            "started_at": (T0 - timedelta(minutes=5)).isoformat(),
            "last_heard_at": (T0 - STALE).isoformat(),
            "noticed_at": T0.isoformat(),
        }
    ]
    assert run.error == "" and not RunResult.objects.filter(run=run).exists()
    assert Experiment.objects.get(pk=exp.pk).status == Status.PENDING
    # Applied again: nothing more (the run is no longer running).
    assert recover_lost_runs(now=T0 + timedelta(seconds=1)).retried == []


@pytest.mark.django_db
def test_after_the_last_attempt_the_run_fails_naming_every_lost_attempt(owner, rule):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = exp.runs.get()
    for n, worker in enumerate(["a@host", "b@host", "a@host"], start=1):
        heard = T0 + timedelta(minutes=10 * n)
        _claim_and_lose(Run.objects.get(pk=run.pk), worker, heard - timedelta(minutes=3), heard)
        done = recover_lost_runs(now=heard + STALE)
        assert (done.retried, done.failed) == (([run.pk], []) if n < 3 else ([], [run.pk]))

    run.refresh_from_db()
    assert run.status == Status.FAILED and run.attempt == 3 and len(run.lost_attempts) == 3
    assert run.finished_at == T0 + timedelta(minutes=30) + STALE
    assert run.error == (
        "the workers running this stopped without finishing 3 times, the most attempts allowed "
        "(setting SIMCORE_RUN_MAX_ATTEMPTS): attempt 1 on a@host lost at 14:10 UTC; "
        "attempt 2 on b@host lost at 14:20 UTC; attempt 3 on a@host lost at 14:30 UTC; "
        "re-run it: fork the experiment"
    )
    # A failed run is never claimed again.
    assert claim_run(run.pk, "c@host") is None


def test_with_one_attempt_allowed_the_message_is_the_lost_worker_message():
    one = [{"attempt": 1, "worker": "a@host", "started_at": None, "last_heard_at": "2031-03-04T13:58:00+00:00"}]
    assert exhausted_message(one, T0, "re-run it: fork the experiment") == (
        "the worker running this stopped without finishing (lost at 13:58 UTC); re-run it: fork the experiment"
    )


@pytest.mark.django_db
def test_a_zombie_worker_stores_nothing_once_its_run_was_given_to_another(
    owner, rule, django_capture_on_commit_callbacks
):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"], hours=0.2))
    outcome = run_scenario(exp.scenario, "greedy", 0)
    # Worker a claims the run, goes quiet for longer than the timeout (swapped out, say): declared lost.
    zombie = _claim_and_lose(exp.runs.get(), "a@host", T0, T0)
    assert recover_lost_runs(now=T0 + STALE).retried == [zombie.pk]
    # Worker b takes the re-sent message: attempt 2.
    live = claim_run(zombie.pk, "b@host")
    assert live is not None and live.attempt == 2 and zombie.attempt == 1

    # Worker a wakes up: the run is "running" again, but not its attempt. Every write of a is refused:
    assert (
        Run.objects.filter(pk=zombie.pk, status=Status.RUNNING, attempt=zombie.attempt).update(
            heartbeat_at=timezone.now()
        )
        == 0
    )  # its heartbeat (the thread then stops a's work)
    with pytest.raises(Cancelled):  # its progress
        _Reporter(zombie)(Progress(now=50.0, horizon=100.0, arrived=20, started=15, completed=10, jobs=40, wall_s=1.0))
    assert not store_outcome(zombie, outcome)  # its results
    assert _fail(zombie, "some error") == Status.RUNNING  # its error
    row = Run.objects.get(pk=zombie.pk)
    assert (row.status, row.attempt, row.worker, row.error) == (Status.RUNNING, 2, "b@host", "")
    assert not RunResult.objects.filter(run=row).exists() and not RunRecordsObject.objects.filter(run=row).exists()

    # Worker b finishes: one result, the lost attempt recorded, nothing of a.
    with django_capture_on_commit_callbacks(execute=True):
        assert store_outcome(live, outcome)
    row.refresh_from_db()
    assert row.status == Status.FINISHED and row.jobs_total == outcome.summary["jobs"]
    assert RunResult.objects.filter(run=row).count() == 1 and RunRecordsObject.objects.filter(run=row).count() == 1
    assert [a["worker"] for a in row.lost_attempts] == ["a@host"]


@pytest.mark.django_db
def test_of_two_claims_of_one_run_exactly_one_wins(owner, rule):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    pk = exp.runs.get().pk
    assert claim_run(pk, "a@host") is not None
    assert claim_run(pk, "b@host") is None  # a duplicate message
    # Lost and re-sent, and delivered twice (the re-send and a broker redelivery): still one claim.
    _set(Run.objects.get(pk=pk), heartbeat_at=timezone.now() - STALE)
    assert recover_lost_runs().retried == [pk]
    assert claim_run(pk, "b@host") is not None
    assert claim_run(pk, "c@host") is None
    assert Run.objects.filter(pk=pk).values_list("attempt", "worker").get() == (2, "b@host")


@pytest.mark.django_db
def test_a_lost_attempt_heard_of_for_the_time_limit_fails_for_it_and_is_not_retried(owner, rule):
    rule.SIMCORE_RUN_TIME_LIMIT_S = 600
    exp = _experiment(owner, small_scenario(schedulers=["greedy"], seeds=[0, 1]))
    over, under = exp.runs.order_by("seed")
    # Celery's hard limit killed the first one's pool process after 600 s of heartbeats; the second died at 599 s.
    _claim_and_lose(over, "a@host", T0 - timedelta(seconds=600), T0)
    _claim_and_lose(under, "a@host", T0 - timedelta(seconds=599), T0)
    done = recover_lost_runs(now=T0 + STALE)
    assert (done.retried, done.failed) == ([under.pk], [over.pk])
    over.refresh_from_db()
    assert over.status == Status.FAILED and over.lost_attempts == []
    assert over.error == "stopped after 600 s: the run time limit (setting SIMCORE_RUN_TIME_LIMIT_S)"


@pytest.mark.django_db
def test_the_page_and_the_api_show_the_lost_attempts(owner, owner_client, rule):
    exp = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run = _claim_and_lose(exp.runs.get(), "a@host", T0 - timedelta(minutes=3), T0)
    recover_lost_runs(now=T0 + STALE)
    claim_run(run.pk, "b@host")
    note = attempts_note(2, Run.objects.get(pk=run.pk).lost_attempts, now=T0)
    assert note == "attempt 2 of 3; lost with their worker and run again: attempt 1 (a@host, last heard of 14:00 UTC)"

    api = _api(owner)
    body = api.get(f"/api/runs/{run.pk}/").json()
    assert body["attempt"] == 2 and [a["worker"] for a in body["lost_attempts"]] == ["a@host"]
    assert body["lost_attempts"][0]["last_heard_at"] == "2031-03-04T14:00:00Z"
    progress = api.get(f"/api/experiments/{exp.pk}/progress/").json()["runs"][0]
    assert progress["attempt"] == 2 and progress["attempts_note"].startswith("attempt 2 of 3; ")
    html = owner_client.get(exp.get_absolute_url()).content.decode()
    # Read on another day than 2031-03-04, the page gives the date too.
    row = html[html.index(f'id="run-{run.pk}-attempts"') :].split("</tr>")[0]
    assert row == (
        f'id="run-{run.pk}-attempts" ><td colspan="7" class="note">attempt 2 of 3; lost with their worker and run '
        "again: attempt 1 (a@host, last heard of 2031-03-04 14:00 UTC)</td>"
    )


@pytest.mark.django_db
def test_a_lost_import_is_queued_again_with_its_files_and_its_late_worker_stores_nothing(owner, owner_client, rule):
    up = _trace_import(owner, "t.csv.gz", gzip.compress(CSV), "csv")
    # Worker a claims it (attempt 1), converts it, and is not heard of for longer than the timeout.
    assert TraceUpload.objects.filter(pk=up.pk).update(
        status=ImportStatus.RUNNING, attempt=1, worker="a@host", started_at=T0, heartbeat_at=T0
    )
    files = [InputFile(f.role, f.filename, bytes(f.content_gz)) for f in up.inputs.all()]
    late = imports.convert("csv", files, up.options, name=up.name, progress=imports._Reporter(up.pk, [], attempt=1))
    done = recover_lost_imports(now=T0 + STALE)
    assert (done.retried, done.failed) == ([up.pk], [])
    up.refresh_from_db()
    assert (up.status, up.attempt, up.worker, up.heartbeat_at) == (ImportStatus.PENDING, 1, "", None)
    assert [a["worker"] for a in up.lost_attempts] == ["a@host"]
    assert TraceImportFile.objects.filter(upload=up).count() == 1  # kept for the next attempt
    # Worker b takes it and imports it (attempt 2) ...
    assert imports.execute_import(up.pk, "b@host") == ImportStatus.READY
    up.refresh_from_db()
    assert (up.attempt, up.worker, up.info["jobs"]) == (2, "b@host", 2)
    # ... and worker a, waking up, can neither store its conversion nor fail the import.
    assert imports._store(up, late, attempt=1) == ImportStatus.READY
    assert imports._finish_failed(up.pk, "late error", attempt=1) == ImportStatus.READY
    assert TraceUpload.objects.get(pk=up.pk).error == "" and ClusterUpload.objects.count() == 0
    page = owner_client.get(reverse("trace-import-detail", args=[up.pk])).content.decode()
    assert "attempt 2 of 3; lost with their worker and run again: attempt 1 (a@host, last heard of" in page
    assert _api(owner).get(f"/api/uploads/trace/{up.pk}/").json()["trace_import"]["attempt"] == 2


def test_under_the_memory_limit_an_oversized_allocation_is_a_memory_error_and_the_limit_is_lifted_after():
    limits = Limits("run", time_s=0, memory_mb=64)
    with pytest.raises(MemoryError), limits.memory():
        np.ones(16 * 2**20)  # 128 MB
    assert float(np.ones(16 * 2**20).sum()) == 16 * 2**20  # outside the block: allowed again


# ---------------------------------------------------------------------------- real workers


def _long(hours: float = 8.0, **changes: Any) -> dict[str, Any]:
    """Runs of a few seconds each (100 machines, ~250,000 jobs in 8 hours).

    In the Python engine: compiled, a run is over before a worker can be killed in its middle.
    """
    cluster = {"preset": "google-balanced", "params": {"machines_per_config": 10}}
    return small_scenario(cluster=cluster, hours=hours, engine="python", **changes)


def _running_mid_way(runs: list[Run], worker: str, n: int) -> list[int]:
    """Ids of the runs ``worker`` holds that reported progress, once there are ``n`` of them."""
    got: list[int] = []

    def check() -> bool:
        got[:] = list(
            Run.objects.filter(
                pk__in=[r.pk for r in runs], status=Status.RUNNING, worker__startswith=worker, fraction__gt=0.02
            ).values_list("pk", flat=True)
        )
        return len(got) >= n

    _wait_until(f"{n} run(s) mid-way on worker {worker}", check, timeout=120)
    return got


def _finished_lines(logs: list[Path]) -> Counter[int]:
    """How many times each run was reported finished in the workers' logs (execute_run logs every end)."""
    ends: Counter[int] = Counter()
    for log in logs:
        for line in log.read_text().splitlines():
            if " ended: finished" in line and "run " in line:
                ends[int(line.split("run ", 1)[1].split()[0])] += 1
    return ends


@pytest.mark.django_db(transaction=True)
def test_workers_killed_mid_run_lose_nothing_and_every_run_completes_exactly_once(owner, tmp_path):
    queue = f"simcore-test-kill-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, _long(schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    runs = list(exp.runs.order_by("seed", "scheduler"))
    # A longer timeout than the other worker tests': on a busy machine a live worker's heartbeat may come late,
    # and here any attempt declared lost that was not killed would fail the count.
    # Records in row groups of 100,000 jobs: each run stores three, and must end with exactly one object.
    env = {"SIMCORE_RUN_MAX_ATTEMPTS": "3", "SIMCORE_WORKER_TIMEOUT_S": "6", "SIMCORE_JOB_CHUNK": "100000"}
    workers: list[Worker] = []
    killed: list[int] = []
    try:
        a = Worker("a", queue, tmp_path, **env)
        workers.append(a)
        a.wait_ready()
        for r in runs:
            tasks.run_simulation.apply_async((r.pk,), queue=queue)
        # Given worker a in the middle of two runs, it is SIGKILLed with its pool processes.
        killed += _running_mid_way(runs, "a-", 2)
        a.kill()
        # Worker b starts: it takes the runs still queued, and its repair queues a's runs again once they are stale.
        b = Worker("b", queue, tmp_path, **env)
        workers.append(b)
        b.wait_ready()
        # b is killed in the middle of two runs as well; a restarted worker a finishes the lot.
        killed += _running_mid_way(runs, "b-", 2)
        b.kill()
        a2 = Worker("a2", queue, tmp_path, **env)
        workers.append(a2)
        a2.wait_ready()
        _wait_until(
            "every run finished",
            lambda: Run.objects.filter(pk__in=[r.pk for r in runs], status=Status.FINISHED).count() == len(runs),
            timeout=240,
        )
        # The log line of an end follows its commit: wait for the last ones before killing the worker.
        logs = [w.log for w in workers]
        _wait_until("every end logged", lambda: sum(_finished_lines(logs).values()) >= len(runs))
    finally:
        for w in workers:
            w.kill()

    rows = {r.pk: r for r in Run.objects.filter(pk__in=[r.pk for r in runs])}
    lost = Counter(pk for pk in killed)
    # Every killed attempt is recorded on its run, with the worker that held it; no other attempt was lost.
    for pk, row in rows.items():
        assert len(row.lost_attempts) == lost[pk], (pk, row.lost_attempts)
        assert row.attempt == 1 + lost[pk] and row.error == ""
        assert [a["attempt"] for a in row.lost_attempts] == list(range(1, lost[pk] + 1))
    # One result per run, whole: its one records object holds every job the summary counts, in row groups, and
    # the run's folder holds no other (a killed attempt's object is deleted by the next attempt).
    assert RunResult.objects.filter(run__in=runs).count() == len(runs)
    for row in rows.values():
        obj = RunRecordsObject.objects.get(run=row)
        assert obj.rows == row.result.summary["jobs"] == row.jobs_total and obj.row_groups == -(-obj.rows // 100_000)
        assert [len(c["job"]) for c in run_job_chunks(row)] == [
            min(100_000, obj.rows - i) for i in range(0, obj.rows, 100_000)
        ]
        assert list(storage.objects_under(storage.run_folder(row.experiment_id, row.pk))) == [obj.key]
    # Completed exactly once: one "finished" end per run in all the workers' logs.
    ends = _finished_lines(logs)
    assert ends == Counter({pk: 1 for pk in rows}), ends
    # A re-run gives the numbers the run would have given undisturbed (same seed, same code).
    rerun = max(rows.values(), key=lambda r: r.attempt)
    clean = run_scenario(exp.scenario, rerun.scheduler, rerun.seed)
    assert rerun.result.summary["mean_response_s"] == pytest.approx(clean.summary["mean_response_s"], rel=1e-12)
    assert Experiment.objects.get(pk=exp.pk).status == Status.FINISHED

    figures = {
        "kills": 2,
        "attempts_killed": len(killed),
        "runs": len(runs),
        "runs_rerun": sum(1 for r in rows.values() if r.lost_attempts),
        "duplicates": RunResult.objects.filter(run__in=runs).count() - len(runs),
        "lost": sum(1 for r in rows.values() if r.status != Status.FINISHED),
        "attempts": {f"{r.scheduler} seed {r.seed}": r.attempt for r in rows.values()},
    }
    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "nothing-lost-kill-test.json").write_text(json.dumps(figures, indent=2))
    assert figures["duplicates"] == 0 and figures["lost"] == 0 and figures["runs_rerun"] >= 2


# ---------------------------------------------------------------------------- a broker that forgets


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Broker:
    """A broker of this test's own, which can restart with nothing on disk.

    Redis (when REDIS_URL is set, as in CI): a private ``redis-server`` without
    persistence, SIGKILLed and started again on the same port. The filesystem
    transport (the embedded default): a private folder whose messages are deleted.
    """

    def __init__(self, tmp: Path) -> None:
        self.redis = bool(os.environ.get("REDIS_URL"))
        self.proc: subprocess.Popen[bytes] | None = None
        if self.redis:
            server = shutil.which("redis-server")
            assert server, "REDIS_URL is set but redis-server is not installed: the broker test needs its own server"
            self.server, self.port = server, _free_port()
            self.url = f"redis://127.0.0.1:{self.port}/0"
            self.options: dict[str, Any] = {"visibility_timeout": 12 * 3600}
            self.start()
        else:
            self.dir = tmp / "broker"
            for sub in ("queue", "processed", "control"):
                (self.dir / sub).mkdir(parents=True)
            self.url = "filesystem://"
            self.options = {
                "data_folder_in": str(self.dir / "queue"),
                "data_folder_out": str(self.dir / "queue"),
                "processed_folder": str(self.dir / "processed"),
                "control_folder": str(self.dir / "control"),
                "store_processed": False,
            }

    def env(self) -> dict[str, str]:
        return {"REDIS_URL": self.url} if self.redis else {"SIMCORE_BROKER_DIR": str(self.dir)}

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [self.server, "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        _wait_until("the private redis-server up", self._up, timeout=20)

    def _up(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                s.sendall(b"PING\r\n")
                return s.recv(16).startswith(b"+PONG")
        except OSError:
            return False

    def publish(self, run_ids: list[int], queue: str) -> None:
        with app.connection_for_write(self.url, transport_options=self.options) as conn:
            for pk in run_ids:
                tasks.run_simulation.apply_async((pk,), connection=conn, queue=queue)
        Run.objects.filter(pk__in=run_ids).update(queued_at=timezone.now())  # as dashboard.common.queueing does

    def restart_empty(self) -> None:
        if self.redis:
            assert self.proc is not None
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
            self.start()
        else:
            for f in (self.dir / "queue").iterdir():
                f.unlink()

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()


@pytest.mark.django_db
def test_old_pending_runs_are_sent_again_only_when_the_queue_holds_fewer_messages(owner, own_queue):
    exp = _experiment(owner, small_scenario(schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    ids = sorted(exp.runs.values_list("pk", flat=True))
    assert enqueue_runs(ids) and waiting_messages() == 4
    long_ago = timezone.now() - timedelta(hours=1)
    Run.objects.filter(pk__in=ids).update(queued_at=long_ago)
    # Queued an hour ago but their four messages still wait (a backlog): no duplicates.
    assert requeue_stale() == {"runs": 0, "imports": 0, "analyses": 0, "evaluations": 0, "capacity probes": 0}
    assert waiting_messages() == 4
    # The broker loses them (a restart with nothing on disk empties the queue): all four are sent again.
    purge_queues(own_queue)
    assert waiting_messages() == 0
    assert requeue_stale() == {"runs": 4, "imports": 0, "analyses": 0, "evaluations": 0, "capacity probes": 0}
    assert waiting_messages() == 4
    assert all(q > long_ago for q in Run.objects.filter(pk__in=ids).values_list("queued_at", flat=True))


@pytest.mark.django_db(transaction=True)
def test_runs_whose_messages_a_broker_restart_lost_are_sent_again_and_finish(owner, settings, tmp_path):
    settings.SIMCORE_WORKER_TIMEOUT_S = TIMEOUT_S
    queue = f"simcore-test-broker-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, _long(hours=2.0, schedulers=["greedy"], seeds=[0, 1, 2, 3]))
    runs = list(exp.runs.order_by("seed"))
    broker = Broker(tmp_path)
    # One pool process: while it runs the first run, the others wait on the broker.
    w = Worker("w", queue, tmp_path, concurrency=1, SIMCORE_REQUEUE_AFTER_S="2", **broker.env())
    try:
        w.wait_ready()
        broker.publish([r.pk for r in runs], queue)
        _wait_until(
            "a run started", lambda: Run.objects.filter(pk__in=[r.pk for r in runs], status=Status.RUNNING).exists()
        )
        # The broker restarts with nothing on disk: the waiting messages are gone.
        broker.restart_empty()
        flushed = timezone.now()
        _wait_until(
            "every run finished",
            lambda: Run.objects.filter(pk__in=[r.pk for r in runs], status=Status.FINISHED).count() == len(runs),
            timeout=180,
        )
    finally:
        w.kill()
        broker.stop()
    rows = list(Run.objects.filter(pk__in=[r.pk for r in runs]))
    # The periodic repair sent the lost ones again (at most one message had been handed to the worker before).
    assert sum(1 for r in rows if r.queued_at > flushed) >= len(runs) - 2
    # Each ran once: no attempt lost, one result each.
    assert all(r.attempt == 1 and r.lost_attempts == [] for r in rows)
    assert RunResult.objects.filter(run__in=runs).count() == len(runs)


# ---------------------------------------------------------------------------- limits


@pytest.mark.django_db(transaction=True)
def test_a_run_over_the_time_limit_stops_with_the_message_and_is_not_retried(owner, settings, tmp_path):
    settings.SIMCORE_WORKER_TIMEOUT_S = TIMEOUT_S
    queue = f"simcore-test-time-{uuid.uuid4().hex[:8]}"
    exp = _experiment(owner, _long(hours=24.0, schedulers=["greedy"]))  # ~10 s of simulation
    small = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run, after = exp.runs.get(), small.runs.get()
    w = Worker("t", queue, tmp_path, concurrency=1, SIMCORE_RUN_TIME_LIMIT_S="2")
    try:
        w.wait_ready()
        tasks.run_simulation.apply_async((run.pk,), queue=queue)
        tasks.run_simulation.apply_async((after.pk,), queue=queue)
        # The one pool process is free again for the next run (and the worker's repair ran meanwhile, every second).
        _wait_until(
            "the next run finished", lambda: Run.objects.get(pk=after.pk).status == Status.FINISHED, timeout=120
        )
    finally:
        w.kill()
    run.refresh_from_db()
    assert run.status == Status.FAILED
    assert run.error == "stopped after 2 s: the run time limit (setting SIMCORE_RUN_TIME_LIMIT_S)"
    assert run.attempt == 1 and run.lost_attempts == [] and run.fraction < 1.0
    assert not RunResult.objects.filter(run=run).exists() and not RunRecordsObject.objects.filter(run=run).exists()
    assert Experiment.objects.get(pk=exp.pk).status == Status.FAILED


@pytest.mark.django_db(transaction=True)
def test_a_run_over_the_memory_limit_stops_with_the_message_and_is_not_retried(owner, settings, tmp_path):
    settings.SIMCORE_WORKER_TIMEOUT_S = TIMEOUT_S
    queue = f"simcore-test-memory-{uuid.uuid4().hex[:8]}"
    # ~3 million jobs: some 300 MB of arrays, three times the limit.
    exp = _experiment(owner, _long(hours=48.0, schedulers=["greedy"]))
    small = _experiment(owner, small_scenario(schedulers=["greedy"]))
    run, after = exp.runs.get(), small.runs.get()
    w = Worker("m", queue, tmp_path, concurrency=1, SIMCORE_RUN_MEMORY_MB="100")
    try:
        w.wait_ready()
        tasks.run_simulation.apply_async((run.pk,), queue=queue)
        tasks.run_simulation.apply_async((after.pk,), queue=queue)
        # The same pool process (the limit was lifted after the first) runs the next one, which fits.
        _wait_until(
            "the next run finished", lambda: Run.objects.get(pk=after.pk).status == Status.FINISHED, timeout=120
        )
    finally:
        w.kill()
    run.refresh_from_db()
    assert run.status == Status.FAILED, run.error
    assert run.error == "stopped at 100 MB of memory: the run memory limit (setting SIMCORE_RUN_MEMORY_MB)"
    assert run.attempt == 1 and run.lost_attempts == []
    assert not RunResult.objects.filter(run=run).exists()
