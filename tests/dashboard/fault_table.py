"""Measure the fault table of issue 25 (a script, not a test): ``python -m tests.dashboard.fault_table [case ...]``.

Needs a PostgreSQL and a Redis of its own that it may stop (never the shared
ones): FAULTS_PG_CLUSTER (default ``15 faults``, port 5433, made with
``pg_createcluster 15 faults -p 5433``, trust on 127.0.0.1) and a
redis-server on FAULTS_REDIS_PORT (default 6380, no persistence), which it
restarts empty itself. One Celery worker (one process) at a time, as in the
issue; SIMCORE_WORKER_TIMEOUT_S=30.

For each case: whether the interrupted work was run again, duplicates (work
finished twice: "ended: finished" lines per id in the workers' logs, and
results per row), lost (work not finished), and the time from recovery (the
worker, database or broker back) to all work finished. Prints one JSON line per case.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
PG_PORT = int(os.environ.get("FAULTS_PG_PORT", "5433"))
PG_CLUSTER = os.environ.get("FAULTS_PG_CLUSTER", "15 faults").split()
REDIS_PORT = int(os.environ.get("FAULTS_REDIS_PORT", "6380"))
DB = "simcore_faults"
TIMEOUT_S = 30
ENV = {
    "DATABASE_URL": f"postgresql://postgres@127.0.0.1:{PG_PORT}/{DB}",
    "REDIS_URL": f"redis://127.0.0.1:{REDIS_PORT}/0",
    "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
    "SIMCORE_TASK_QUEUE": f"faults-{uuid.uuid4().hex[:6]}",
    "SIMCORE_WORKER_TIMEOUT_S": str(TIMEOUT_S),
}
os.environ.update(ENV)
LOGS = ROOT / "test-artifacts" / "fault-table"


def sh(*cmd: str, check: bool = True) -> None:
    subprocess.run(cmd, check=check, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def pg(action: str) -> None:
    extra = ["-m", "immediate"] if action == "stop" else []
    sh("pg_ctlcluster", *PG_CLUSTER, action, *extra)


def redis_restart_empty() -> None:
    sh("redis-cli", "-p", str(REDIS_PORT), "shutdown", "nosave", check=False)
    time.sleep(0.5)
    sh("redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "--port", str(REDIS_PORT), "--save", "",
       "--appendonly", "no")  # fmt: skip


def fresh_database() -> None:
    import psycopg

    with psycopg.connect(f"postgresql://postgres@127.0.0.1:{PG_PORT}/postgres", autocommit=True) as c:
        c.execute(f"DROP DATABASE IF EXISTS {DB} WITH (FORCE)")
        c.execute(f"CREATE DATABASE {DB}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, check=True)


#: Workers started by the current case (all killed when it ends).
STARTED: list[Worker] = []


class Worker:
    def __init__(self, name: str) -> None:
        STARTED.append(self)
        LOGS.mkdir(parents=True, exist_ok=True)
        self.log = LOGS / f"{name}.log"
        self.ready = LOGS / f"{name}.ready"
        self.ready.unlink(missing_ok=True)
        with open(self.log, "w") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "--concurrency", "1",
                 "-Q", ENV["SIMCORE_TASK_QUEUE"], "-n", f"{name}@%h", "--without-gossip", "--without-mingle",
                 "--without-heartbeat", "--loglevel", "INFO"],
                cwd=ROOT, env={**os.environ, "SIMCORE_WORKER_READY_FILE": str(self.ready)},
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
            )  # fmt: skip
        until(lambda: self.ready.exists(), 90)

    def kill(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()


def until(check: Any, timeout: float) -> float:
    deadline = time.monotonic() + timeout
    while True:
        try:
            if check():
                return time.monotonic()
        except Exception:  # the database down while we look: look again
            from django.db import connection

            connection.close()
        if time.monotonic() > deadline:
            raise TimeoutError("gave up waiting")
        time.sleep(0.2)


def finished_lines(kind: str) -> Counter[int]:
    pattern = re.compile(rf"{kind} (\d+) attempt \d+ ended: finished")
    ends: Counter[int] = Counter()
    for log in LOGS.glob("*.log"):
        ends.update(int(m.group(1)) for m in pattern.finditer(log.read_text()))
    return ends


def owner() -> Any:
    from django.contrib.auth.models import User

    return User.objects.get_or_create(username="faults")[0]


def long_runs(n_seeds: int, hours: float = 1.0) -> Any:
    from dashboard.experiments.services import create_experiment
    from tests.dashboard.conftest import small_scenario

    cluster = {"preset": "google-balanced", "params": {"machines_per_config": 10}}
    sc = small_scenario(cluster=cluster, hours=hours, engine="python", seeds=list(range(n_seeds)))
    return create_experiment(owner(), sc)


def runs_outcome(exp: Any, recovered: float) -> dict[str, Any]:
    from django.utils import timezone

    from dashboard.models import Run, RunResult, Status

    back = timezone.now()
    done = until(lambda: not exp.runs.filter(status__in=[Status.PENDING, Status.RUNNING]).exists(), 900)
    rows = list(Run.objects.filter(experiment=exp))
    resumed = [r.started_at for r in rows if r.started_at and r.started_at >= back]
    ends = finished_lines("run")
    return {
        "work": len(rows),
        "re_run": sum(1 for r in rows if r.lost_attempts),
        "duplicates": sum(1 for r in rows if ends[r.pk] > 1)
        + sum(1 for r in rows if RunResult.objects.filter(run=r).count() > 1),
        "lost": sum(1 for r in rows if r.status != Status.FINISHED),
        "recovery_to_first_claim_s": round((min(resumed) - back).total_seconds(), 1) if resumed else None,
        "recovery_to_all_finished_s": round(done - recovered, 1),
        "work_left_at_recovery": len(resumed),
    }


def case_sigkill_sweep_cell() -> dict[str, Any]:
    from dashboard.models import Status

    w = Worker("kill-cell-a")
    exp = long_runs(10)  # 20 cells: greedy and fcfs x 10 seeds
    until(lambda: exp.runs.filter(status=Status.RUNNING, fraction__gt=0.05).exists(), 120)
    w.kill()
    Worker("kill-cell-b")
    return runs_outcome(exp, time.monotonic())


def case_sigkill_search_evaluation() -> dict[str, Any]:
    from dashboard.models import EvalStatus, SearchEvaluation
    from dashboard.searches.services import check_search, create_search
    from simcore.dse.explore.search import SearchSettings

    scenario = {
        "cluster": {"preset": "dse-2020", "params": {"machines": 16}},
        "workload": {"preset": "workflows-short-long", "params": {}},
        "load": 0.9,
        "hours": 1.0,
    }
    cfg = SearchSettings("trt", population=6, generations=3, seed=5)
    w = Worker("kill-eval-a")
    search = create_search(owner(), check_search(dict(scenario), cfg, 5), cfg, 5)
    until(lambda: SearchEvaluation.objects.filter(search=search, status=EvalStatus.RUNNING).exists(), 120)
    w.kill()
    Worker("kill-eval-b")
    recovered = time.monotonic()
    search.refresh_from_db()
    done = until(lambda: (search.refresh_from_db(), not search.is_active)[1], 900)
    evs = list(SearchEvaluation.objects.filter(search=search))
    return {
        "work": len(evs),
        "re_run": sum(1 for e in evs if e.attempts > 1),
        "duplicates": 0 if all(e.attempts <= 2 for e in evs) else "see attempts",
        "lost": sum(1 for e in evs if e.status != EvalStatus.DONE),
        "search": search.status,
        "recovery_to_all_finished_s": round(done - recovered, 1),
    }


def case_sigkill_packing_analysis() -> dict[str, Any]:
    from dashboard.models import PackingAnalysis, PackingSource, Status
    from dashboard.packing.services import SourceChoice, create_analysis
    from tests.dashboard.test_outages import LONG_SPEC

    w = Worker("kill-pack-a")
    exp = long_runs(1, hours=1.0)
    until(lambda: exp.runs.filter(status=Status.FINISHED).count() == 2, 300)
    run = exp.runs.filter(scheduler="greedy").get()
    a = create_analysis(owner(), SourceChoice(PackingSource.RUN, run=run), time_s=1800.0, spec=LONG_SPEC)
    until(lambda: PackingAnalysis.objects.filter(pk=a.pk, status=Status.RUNNING, fraction__gt=0).exists(), 120)
    w.kill()
    Worker("kill-pack-b")
    recovered = time.monotonic()
    done = until(lambda: not PackingAnalysis.objects.get(pk=a.pk).is_active, 900)
    a.refresh_from_db()
    return {
        "work": 1,
        "re_run": len(a.lost_attempts),
        "duplicates": 0 if a.attempt == len(a.lost_attempts) + 1 else a.attempt,
        "lost": int(a.status != Status.FINISHED),
        "recovery_to_all_finished_s": round(done - recovered, 1),
    }


def case_sigkill_trace_import() -> dict[str, Any]:
    from dashboard.models import ImportStatus, TraceUpload
    from dashboard.traces import imports
    from dashboard.traces.uploads import InputFile
    from tests.dashboard.test_outages import _wfcommons_instance

    w = Worker("kill-import-a")
    content = _wfcommons_instance(400_000)
    up = imports.create_trace_import(
        owner(), "chain", "chain.json.gz", content, files=[InputFile("trace", "chain.json.gz", content)],
        options={"format": "wfcommons"},
    )  # fmt: skip
    until(lambda: TraceUpload.objects.get(pk=up.pk).status == ImportStatus.RUNNING, 120)
    time.sleep(2)  # in the middle of reading
    w.kill()
    Worker("kill-import-b")
    recovered = time.monotonic()
    done = until(lambda: TraceUpload.objects.get(pk=up.pk).status not in ("pending", "running"), 900)
    row = TraceUpload.objects.get(pk=up.pk)
    return {
        "work": 1,
        "re_run": len(row.lost_attempts),
        "duplicates": 0 if row.attempt == len(row.lost_attempts) + 1 else row.attempt,
        "lost": int(row.status != ImportStatus.READY),
        "recovery_to_all_finished_s": round(done - recovered, 1),
    }


def case_postgres_down_30s() -> dict[str, Any]:
    from django.db import connection

    from dashboard.models import Status

    Worker("db-down")
    exp = long_runs(10, hours=0.5)  # 20 cells of a few seconds
    until(lambda: exp.runs.filter(status=Status.FINISHED).count() >= 5, 300)
    connection.close()
    pg("stop")
    time.sleep(30)
    pg("start")
    return runs_outcome(exp, time.monotonic())


def case_broker_restarted_empty() -> dict[str, Any]:
    from dashboard.models import Status

    Worker("broker-restart")
    exp = long_runs(10, hours=0.5)
    until(lambda: exp.runs.filter(status=Status.FINISHED).count() >= 2, 300)
    redis_restart_empty()
    return runs_outcome(exp, time.monotonic())


CASES = {
    "sigkill-sweep-cell": case_sigkill_sweep_cell,
    "sigkill-search-evaluation": case_sigkill_search_evaluation,
    "sigkill-packing-analysis": case_sigkill_packing_analysis,
    "sigkill-trace-import": case_sigkill_trace_import,
    "postgres-down-30s": case_postgres_down_30s,
    "broker-restarted-empty": case_broker_restarted_empty,
}


def main(names: list[str]) -> None:
    import django

    for name in names or list(CASES):
        fresh_database()
        django.setup()
        for log in LOGS.glob("*.log"):
            log.unlink()
        try:
            out = {"case": name, **CASES[name]()}
        except Exception as e:  # report and go on with the next case
            out = {"case": name, "error": f"{type(e).__name__}: {e}"}
        finally:
            while STARTED:
                STARTED.pop().kill()
            from django.db import connections

            connections.close_all()
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
