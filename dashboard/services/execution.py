"""Execution: a worker claims a run, keeps its heartbeat, simulates it with simcore and stores the outcome."""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from pathlib import Path
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from dashboard.models import (
    Experiment,
    Run,
    RunJobs,
    RunResult,
    Status,
    heartbeat_every_s,
)
from dashboard.services.sweeps import scenario_for
from dashboard.services.uploads import materialised_files
from simcore import archive
from simcore.api import RunOutcome
from simcore.engine import Progress
from simcore.errors import Cancelled, SimcoreError
from simcore.version import code_version

log = logging.getLogger(__name__)


#: Least wall time between two progress writes of one run (s): the bars move, the DB rests.
PROGRESS_EVERY_S = 0.5


class Heartbeat:
    """While a worker runs ``rows`` (one running run or import), stamp their ``heartbeat_at`` every few seconds.

    A daemon thread of the worker process, independent of the simulation's
    progress callbacks: those stop during long phases (building a big
    workload, solving LPs, storing the results), and a live worker must never
    look lost (:func:`dashboard.models.fail_lost_runs`). ``rows`` must filter
    on ``status=running``: once the work left that status (finished,
    cancelled, declared lost) a stamp changes nothing and the thread stops.
    The thread uses its own database connection and closes it.

    Work that left ``running`` while it is still being done (cancelled, or
    declared lost because the worker looked dead) is stopped at once: the
    thread raises :class:`~simcore.errors.Cancelled` in the working thread
    (at its next Python instruction, whatever phase it is in: building the
    cluster or workload, solving LPs, simulating), so a declared-lost run
    never keeps the worker's only slot.
    """

    def __init__(self, rows: QuerySet[Any], every_s: float | None = None) -> None:
        self.rows = rows
        self.every_s = heartbeat_every_s() if every_s is None else every_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._worker_thread = threading.get_ident()
        self._thread = threading.Thread(target=self._beat, name="simcore-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        # Inside a transaction (a test calling the worker's code) other connections cannot see the claim
        # yet, so there is nothing to keep alive, and a stamp would only wait for this transaction's locks.
        if not connection.in_atomic_block:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # never interrupt the worker once its work is over
            self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                try:
                    if not self.rows.update(heartbeat_at=timezone.now()):
                        self._interrupt()
                        return
                except DatabaseError as e:  # a busy or briefly unreachable database: the next beat retries
                    log.warning("heartbeat of %s failed: %s", self.rows.model.__name__, e)
        finally:
            connection.close()

    def _interrupt(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._worker_thread), ctypes.py_object(Cancelled))
            log.warning("work of %s left 'running' while in progress: stopped", self.rows.model.__name__)


class _Reporter:
    """simcore progress callback: writes the run's progress, stops the run when it was cancelled."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self.last = 0.0

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and p.fraction < 1.0:
            return
        self.last = now
        f = p.fraction
        eta = p.wall_s * (1.0 - f) / f if 0.0 < f < 1.0 else (0.0 if f >= 1.0 else None)
        alive = Run.objects.filter(pk=self.run_id, status=Status.RUNNING).update(
            fraction=f, jobs_done=p.completed, jobs_total=p.jobs, eta_s=eta, heartbeat_at=timezone.now()
        )
        if not alive:
            raise Cancelled(f"run {self.run_id} was cancelled")


def execute_run(run_id: int, worker: str = "") -> str:
    """Claim a pending run, simulate it, store its results; returns the final status.

    A run that is gone, already claimed or cancelled is left alone. Errors
    become the run's message; other runs are untouched.
    """
    run = (
        Run.objects.select_related("experiment", "experiment__cluster_upload", "experiment__trace_upload")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.status != Status.PENDING:
        return run.status if run else "missing"
    now = timezone.now()
    if not run.transition(
        Status.RUNNING, started_at=now, heartbeat_at=now, worker=worker[:200], code_version=code_version()[:100]
    ):
        return "claimed elsewhere"
    try:
        with Heartbeat(Run.objects.filter(pk=run.pk, status=Status.RUNNING)):
            return _simulate(run)
    except Cancelled:  # raised by the heartbeat outside the simulation's own handler
        return _current_status(run)


def _simulate(run: Run) -> str:
    files: dict[str, Path] = {}
    try:
        with materialised_files(run.experiment) as files:
            outcome = archive.run_scenario(scenario_for(run), run.scheduler, run.seed, files, progress=_Reporter(run))
    except Cancelled:  # cancelled, or declared lost while this worker was too slow to stamp its heartbeat
        return _current_status(run)
    except SimcoreError as e:
        return _fail(run, _upload_names(str(e), files, run.experiment))
    except MemoryError:
        return _fail(run, "the run needed more memory than the worker has")
    except Exception as e:  # a bug: log the traceback for us, show the user one line
        log.exception("run %s failed", run.pk)
        return _fail(run, f"internal error ({type(e).__name__}): {e}")
    return Status.FINISHED if store_outcome(run, outcome) else _current_status(run)


def _upload_names(message: str, files: dict[str, Path], experiment: Experiment) -> str:
    """``message`` with the worker's temporary paths replaced by the names the user gave the uploads."""
    names = {}
    cluster, trace = experiment.cluster_upload, experiment.trace_upload
    if cluster is not None:
        names["cluster"] = f"cluster upload {cluster.name!r}"
    if trace is not None:
        names["trace"] = f"trace upload {trace.name!r}"
        names["classes"] = f"the job classes of trace upload {trace.name!r}"
    for key, path in files.items():
        kind = "classes" if key.endswith(".classes.json") or key.startswith("classes") else key.split("_", 1)[0]
        message = message.replace(str(path), names.get(kind, key))
    return message


def _current_status(run: Run) -> str:
    return Run.objects.filter(pk=run.pk).values_list("status", flat=True).first() or "missing"


def _fail(run: Run, message: str) -> str:
    run.refresh_from_db(fields=["status"])
    if run.status == Status.RUNNING:
        run.transition(Status.FAILED, error=message[:2000], finished_at=timezone.now(), eta_s=None)
    return run.status


def clean_json(x: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null (PostgreSQL's jsonb rejects them)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    if hasattr(x, "item"):  # numpy scalar
        return clean_json(x.item())
    return x


def store_outcome(run: Run, outcome: RunOutcome) -> bool:
    """Write a run's results and mark it finished in one transaction; False if it was cancelled first."""
    blob = archive.pack_jobs(outcome.jobs_columns())
    n = int(outcome.summary.get("jobs", 0))
    with transaction.atomic():
        if not run.transition(
            Status.FINISHED,
            finished_at=timezone.now(),
            fraction=1.0,
            jobs_done=int(outcome.summary.get("completed", 0)),
            jobs_total=n,
            eta_s=0.0,
        ):
            return False
        RunResult.objects.create(
            run=run,
            summary=clean_json(outcome.summary),
            series=clean_json(outcome.series),
            per_class=clean_json(outcome.per_class),
            offline=clean_json(outcome.offline),
        )
        RunJobs.objects.create(run=run, n_jobs=n, data=blob)
    return True
