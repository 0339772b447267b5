"""Execution: a worker claims a run, keeps its heartbeat, simulates it with simcore and stores the outcome."""

from __future__ import annotations

import gc
import logging
import time
from pathlib import Path

from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.common import beats, outages
from dashboard.common.heartbeat import PROGRESS_EVERY_S, Heartbeat, clean_json, status_after_interrupt
from dashboard.common.limits import Limits
from dashboard.common.models import TRANSITIONS, Status, move
from dashboard.experiments import aggregates, memory
from dashboard.experiments.jobs import save_jobs, write_jobs
from dashboard.experiments.models import Experiment, Run, RunResult
from dashboard.experiments.services import scenario_for
from dashboard.experiments.storage import discard
from dashboard.traces.uploads import materialised_files
from simcore import records
from simcore.api import RunOutcome
from simcore.core.engine import Progress
from simcore.core.errors import Cancelled, SimcoreError
from simcore.scenario import run_scenario
from simcore.version import code_version

log = logging.getLogger(__name__)


class _Reporter:
    """simcore progress callback: writes the run's progress, stops the run when it was cancelled (or lost)."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self.attempt = run.attempt
        self.last = 0.0

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and p.fraction < 1.0:
            return
        self.last = now
        f = p.fraction
        eta = p.eta_s  # compile time left out: a first run's compilation would inflate it tenfold
        try:
            alive = Run.objects.filter(pk=self.run_id, status=Status.RUNNING, attempt=self.attempt).update(
                fraction=f, jobs_done=p.completed, jobs_total=p.jobs, eta_s=eta, heartbeat_at=timezone.now()
            )
        except outages.DATABASE_ERRORS as e:  # a blip: simulate on, the next write (or the outcome's) retries
            log.warning("progress of run %s not written: %s", self.run_id, e)
            connection.close()
            return
        if not alive:
            raise Cancelled(f"run {self.run_id} was cancelled")


def claim_run(run_id: int, worker: str = "") -> Run | None:
    """Take pending run ``run_id`` for this worker as its next attempt; None if it is gone or not pending.

    One conditional UPDATE on status and attempt number: of two workers given
    the same run (a duplicate task message), exactly one wins, and the winner's
    attempt number fences every later write (:mod:`dashboard.common.recovery`).
    """
    run = (
        Run.objects.select_related("experiment", "experiment__cluster_upload", "experiment__trace_upload")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.status != Status.PENDING:
        return None
    now = timezone.now()
    claimed = run.transition(
        Status.RUNNING,
        guard=Q(attempt=run.attempt),
        attempt=run.attempt + 1,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        code_version=code_version()[:100],
        fraction=0.0,
        jobs_done=0,
        eta_s=None,
    )
    return run if claimed else None


def execute_run(run_id: int, worker: str = "", give_back: int | None = None) -> str:
    """Claim a pending run, simulate it, store its results; returns the final status.

    A run that is gone, already claimed or cancelled is left alone (a
    duplicate task message is harmless). Errors become the run's message;
    other runs are untouched. A database outage is not an error of the run:
    it raises (:class:`~dashboard.common.outages.Interrupted` once claimed) and the
    task is retried, first giving back the attempt ``give_back`` it interrupted.
    """
    outages.give_back(Run, run_id, give_back, Status.RUNNING, Status.PENDING, fraction=0.0, jobs_done=0, eta_s=None)
    if memory.too_big(run_id, worker):  # more than SIMCORE_WORKER_MEMORY_MB: left for a worker with more
        return Status.PENDING
    run = claim_run(run_id, worker)
    if run is None:  # gone, not pending, or taken by another worker's claim of a duplicate message
        return Run.objects.filter(pk=run_id).values_list("status", flat=True).first() or "missing"
    log.info("run %s attempt %s claimed by %s", run.pk, run.attempt, worker)
    limits = Limits.from_settings("run")
    mine = Run.objects.filter(pk=run.pk, status=Status.RUNNING, attempt=run.attempt)
    try:
        with (
            outages.interrupted_as(run.attempt),
            Heartbeat(
                mine,
                stamp=beats.target(Run, run.pk, status=Status.RUNNING, attempt=run.attempt),
                time_limit_s=limits.time_s,
                on_time_limit=lambda: _fail(run, limits.time_message()),
            ) as heartbeat,
        ):
            status = _simulate(run, limits, heartbeat)
    except Cancelled:  # raised by the heartbeat outside the simulation's own handler
        status = status_after_interrupt(lambda: _current_status(run))
    finally:
        # The run's Simulation and scheduler refer to each other: free their arrays now, not when the cycle
        # collector next runs, so the worker's next run (and its memory limit) starts from what it holds.
        gc.collect()
    log.info("run %s attempt %s ended: %s", run.pk, run.attempt, status)
    return status


def _simulate(run: Run, limits: Limits, heartbeat: Heartbeat | None = None) -> str:
    files: dict[str, Path] = {}
    over_memory = False
    try:
        with limits.memory(), materialised_files(run.experiment) as files:
            outcome = run_scenario(scenario_for(run), run.scheduler, run.seed, files, progress=_Reporter(run))
        if heartbeat is not None:
            heartbeat.finishing()
    except Cancelled:  # cancelled, over the time limit, or declared lost while this worker was too slow to stamp
        return status_after_interrupt(lambda: _current_status(run))
    except SimcoreError as e:
        message = _upload_names(str(e), files, run.experiment)
    except MemoryError:
        # Written after the handler: leaving it frees the run's arrays (the traceback holds their frames).
        over_memory = True
    except outages.OUTAGE_ERRORS:  # not the run's fault: the task is retried (dashboard.common.outages)
        raise
    except Exception as e:  # a bug: log the traceback for us, show the user one line
        log.exception("run %s failed", run.pk)
        message = f"internal error ({type(e).__name__}): {e}"
    else:
        return Status.FINISHED if store_outcome(run, outcome) else _current_status(run)
    if heartbeat is not None:
        heartbeat.finishing()
    if over_memory:
        return _fail(run, limits.memory_message())
    return _fail(run, message)


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
    """Fail this worker's attempt of ``run`` with ``message``; nothing changes once the attempt is no longer running.

    Safe from the heartbeat thread (the time limit): it reads only the run's
    id and attempt number and writes through one conditional UPDATE.
    """
    if move(
        Run,
        run.pk,
        Status.RUNNING,
        Status.FAILED,
        TRANSITIONS,
        guard=Q(attempt=run.attempt),
        error=message[:2000],
        finished_at=timezone.now(),
        eta_s=None,
    ):
        transaction.on_commit(run.experiment.refresh_status)
    return _current_status(run)


def store_outcome(run: Run, outcome: RunOutcome) -> bool:
    """Write a run's results and mark it finished; False if it was cancelled first (or is no longer this
    worker's attempt).

    The per-job records are written first, as an object in the records storage
    (dashboard.experiments.jobs.write_jobs), outside any transaction: a large
    run's takes seconds, and no row is locked meanwhile. Then one transaction
    finishes the run and names the object. Only this worker's attempt may
    finish it (a worker declared lost, whose run was given to another, stores
    nothing), and a run has one result at most. If the transaction does not
    commit, the object is deleted: no row ever names a missing object, and a
    worker killed between the two leaves an object its run's next attempt deletes.
    """
    n = int(outcome.summary.get("jobs", 0))
    kept, stored = write_jobs(run, outcome, run.experiment.scenario.get("job_records", records.DEFAULT))
    finished = False
    try:
        with transaction.atomic():
            if not run.transition(
                Status.FINISHED,
                guard=Q(attempt=run.attempt),
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
            save_jobs(run, kept, stored)
            # What the pages show of it, once, here (issue 25), so no view aggregates summaries or series.
            aggregates.runs_finished(run.experiment, [run])
        finished = True
    finally:
        if not finished:
            discard(None if stored is None else stored.key)
    return True
