"""Experiments, their runs and results, page aggregates, and a run's per-job records.

A run's per-job records are one Parquet object in the records storage, outside
the database (:class:`RunRecordsObject` says where; dashboard.experiments.storage),
so the pages, which read :class:`RunResult`, never load them and the database
does not grow with them. Runs stored before keep theirs in :class:`RunJobsChunk`
rows (or one :class:`RunJobs` blob), read still.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q

from dashboard.common.models import ACTIVE, TRANSITIONS, OwnedWork, Status, Team, move
from dashboard.traces.models import ClusterUpload, TraceUpload


class Experiment(OwnedWork):
    """A scenario (cluster, workload, parameters, schedulers, seeds) and its runs."""

    untitled = "Experiment"
    detail_route = "experiment-detail"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="experiments")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="experiments")
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    #: The simcore.archive scenario dict (uploaded files referred to by file name).
    scenario = models.JSONField()
    cluster_upload = models.ForeignKey(ClusterUpload, null=True, blank=True, on_delete=models.PROTECT)
    trace_upload = models.ForeignKey(TraceUpload, null=True, blank=True, on_delete=models.PROTECT)
    #: Denormalised for the list's filters.
    cluster_label = models.CharField(max_length=200, db_index=True)
    workload_label = models.CharField(max_length=200, db_index=True)
    #: The paper reproduction it was started from ({"name": ..., "scale": {...}}, simcore.reproductions); null if none.
    reproduction = models.JSONField(null=True, blank=True)

    def refresh_status(self) -> str:
        """Recompute the status from the runs: active while any run is, else the worst outcome.

        Called after every run transition, after its commit, so the last run to
        change sees all the others. The experiment's row is locked while its
        runs are read and the status written: two workers finishing runs at
        once then write in the order they read, and the last word is that of
        the one that saw both runs finished (unlocked, the other could
        overwrite it with what it read before).
        """
        with transaction.atomic():
            Experiment.objects.select_for_update().filter(pk=self.pk).values_list("pk", flat=True).first()
            status = self._status_from_runs()
            Experiment.objects.filter(pk=self.pk).update(status=status)
        self.status = status
        return status

    def _status_from_runs(self) -> str:
        states = set(self.runs.values_list("status", flat=True))
        if states & {Status.RUNNING} or (Status.PENDING in states and states - {Status.PENDING}):
            status = Status.RUNNING
        elif Status.PENDING in states:
            status = Status.PENDING
        elif Status.FAILED in states:
            status = Status.FAILED
        elif Status.FINISHED in states:
            # Some runs cancelled, the rest finished (35 of 36 cells): its results are there, so it is finished;
            # status_text says how many were cancelled (issue 28). Only every run cancelled is "cancelled".
            status = Status.FINISHED
        elif Status.CANCELLED in states:
            status = Status.CANCELLED
        else:
            status = Status.FINISHED
        return status

    @property
    def unit(self) -> str:
        """What its runs are called on its pages: a grid's are cells."""
        return "cells" if self.scenario.get("axes") else "runs"

    def status_text(self, cancelled: int, runs: int) -> str:
        """Its status as the page, the list and the API say it, given its ``cancelled`` runs of ``runs``."""
        return status_text(self.status, cancelled, runs, self.unit)


def status_text(status: str, cancelled: int, runs: int, unit: str = "runs") -> str:
    """``finished, 1 of 36 cells cancelled`` for a finished experiment some of whose runs were cancelled; else
    the status."""
    if status == Status.FINISHED and cancelled:
        return f"finished, {cancelled:,} of {runs:,} {unit} cancelled"
    return str(status)


class Run(models.Model):
    """One scheduler under one seed of an experiment; in a sweep, at one point of its axes (a cell)."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    scheduler = models.CharField(max_length=100, db_index=True)
    seed = models.PositiveIntegerField()
    #: The sweep point ({"phi": 0.003}); {} outside sweeps. ``point_key`` is its canonical text
    #: (simcore.sweep.scenario.point_key), part of what makes a cell unique.
    point = models.JSONField(default=dict, blank=True)
    point_key = models.CharField(max_length=1000, default="", blank=True)
    #: Hash of everything that determines the result except the code version (dashboard.experiments.cache).
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    #: The run whose result this one reuses (the result cache); its per-job records are read from there.
    cached_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+", db_index=True
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    #: Simulated time over horizon, 0..1.
    fraction = models.FloatField(default=0.0)
    jobs_done = models.BigIntegerField(default=0)
    jobs_total = models.BigIntegerField(default=0)
    eta_s = models.FloatField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    #: When its task was last put on the broker (dashboard.common.queueing); null while it never was.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: Last sign of life of the worker running it (see dashboard.common.recovery); null until claimed.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: A message a user can read (never a stack trace).
    error = models.TextField(blank=True)
    code_version = models.CharField(max_length=100, blank=True)
    #: How many times a worker claimed it: the current attempt's number while running. Every write of a
    #: worker requires its own number, so a worker declared lost (a zombie) can change nothing afterwards.
    attempt = models.PositiveIntegerField(default=0)
    #: One record per attempt lost with its worker (dashboard.common.recovery.lost_attempt), oldest first.
    lost_attempts = models.JSONField(default=list, blank=True)
    #: Which per-job records it kept (simcore.records.describe: policy, kept all/sample/none, jobs_kept, of,
    #: sample_seed); null for runs stored before the choice, which kept all. A cached cell copies its source's.
    records = models.JSONField(null=True, blank=True)
    #: The estimated peak memory (MiB, simcore.memory) once a worker declined it as more than its
    #: SIMCORE_WORKER_MEMORY_MB; null while none did. Such a run waits for a worker with enough
    #: (dashboard.experiments.memory), not in the shared queue.
    needs_mb = models.PositiveIntegerField(null=True, blank=True)
    #: The workers that declined it for memory, oldest first: {"worker", "limit_mb", "at"}.
    declined = models.JSONField(default=list, blank=True)
    #: The worker whose own queue holds its message since it was declined; "" while no live worker has enough.
    sent_to = models.CharField(max_length=200, blank=True)

    class Meta:
        ordering = ["experiment_id", "seed", "id"]
        constraints = [
            models.UniqueConstraint(fields=["experiment", "point_key", "scheduler", "seed"], name="one_run_per_cell")
        ]

    def __str__(self) -> str:
        where = ", ".join(f"{k}={v}" for k, v in (self.point or {}).items())
        return f"{self.scheduler} seed {self.seed}" + (f" at {where}" if where else "")

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE

    @property
    def attempts_note(self) -> str:
        """Which attempt this is and when the earlier ones were lost with their worker; empty if none was."""
        from dashboard.common.recovery import attempts_note

        return attempts_note(self.attempt, self.lost_attempts)

    def transition(self, new: str, *, guard: Q | None = None, **fields: Any) -> bool:
        """Move to ``new`` if the row is still in this object's status; False if someone moved it first.

        A conditional UPDATE (healthchecks' claim habit): of two workers, or a
        worker and a cancel, exactly one wins. ``guard``: a further condition
        the row must meet in the same UPDATE (the lost-worker rule's stale heartbeat).
        """
        won = move(Run, self.pk, self.status, new, TRANSITIONS, guard=guard, **fields)
        if won:
            self.status = new
            for k, v in fields.items():
                setattr(self, k, v)
            transaction.on_commit(self.experiment.refresh_status)
        return won


class RunResult(models.Model):
    """What the pages show: summary, plotted series, per-class means, offline plan. Small."""

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="result")
    summary = models.JSONField()
    series = models.JSONField()
    per_class = models.JSONField(default=list)
    offline = models.JSONField(null=True, blank=True)


class CellAggregate(models.Model):
    """A sweep's statistics over the seeds of one point and scheduler, stored when one of its runs finishes.

    The sweep pages, their live data and the API read these rows
    (dashboard.experiments.aggregates) instead of aggregating every summary on
    every view. ``run_ids`` are the finished runs they were computed from: a
    page finding other finished runs in the group computes the group itself
    (and writes nothing), so a row stored before a change is never shown stale.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="cell_aggregates")
    point_key = models.CharField(max_length=1000, default="", blank=True)
    scheduler = models.CharField(max_length=100)
    point = models.JSONField(default=dict, blank=True)
    run_ids = models.JSONField(default=list)
    #: dashboard.experiments.aggregates.group_stats: runs, unstable count, metric keys and each metric's statistics.
    stats = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "point_key", "scheduler"], name="one_aggregate_per_cell")
        ]


class ExperimentCharts(models.Model):
    """An experiment page's chart figures (experiments.charts.all_charts), built when one of its runs finishes.

    ``run_ids``: the finished runs they were built from; the page uses them only while those are exactly its
    finished runs, and otherwise builds the figures itself from the runs' series (without storing them).
    ``figures`` is JSON text, not a JSON column: PostgreSQL's jsonb reorders keys, and the page must send
    the figures exactly as the builders made them (chart order, Plotly's update dicts).
    """

    experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, related_name="stored_charts")
    run_ids = models.JSONField(default=list)
    figures = models.TextField(default="{}")


class RunRecordsObject(models.Model):
    """Where a run's per-job records are: one compressed Parquet object in the "records" storage
    (dashboard.experiments.storage), and what it should hold. The database keeps this row only.

    Written after the object, in the transaction that finishes the run: a row
    always points at a whole object. Deleting the row deletes its object.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="records_object")
    #: The object's name in the "records" storage: experiments/<experiment>/runs/<run>/attempt-<n>-<random>.parquet.
    key = models.CharField(max_length=500, unique=True)
    #: Records (Parquet rows) and row groups in it; its size in bytes and SHA-256 as written.
    rows = models.BigIntegerField()
    row_groups = models.IntegerField()
    size = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    #: dashboard.experiments.storage.LAYOUT when written (its columns and types), for readers of later versions.
    layout = models.PositiveSmallIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return self.key


class RunJobs(models.Model):
    """Per-job records as one simcore.archive.pack_jobs blob (36 bytes a job): runs stored before chunks.

    Read still (dashboard.experiments.jobs); new runs write a :class:`RunRecordsObject`.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="jobs")
    n_jobs = models.BigIntegerField()
    data = models.BinaryField()


class RunJobsChunk(models.Model):
    """Jobs ``first .. first + n_jobs - 1`` of a run as one simcore.archive.pack_jobs blob (36 bytes a job):
    runs stored before per-job records left the database (migration 0019); read still, no longer written.

    A run's chunks are ``index`` 0, 1, ... of SIMCORE_JOB_CHUNK jobs each (the
    last may be shorter; a run without jobs has one empty chunk), all written in
    the transaction that finishes the run: a run has every chunk or none.
    """

    run = models.ForeignKey(Run, on_delete=models.CASCADE, related_name="job_chunks")
    index = models.IntegerField()
    first = models.BigIntegerField()
    n_jobs = models.BigIntegerField()
    data = models.BinaryField()

    class Meta:
        ordering = ["run", "index"]
        constraints = [models.UniqueConstraint(fields=["run", "index"], name="one_chunk_per_run_index")]


#: How a user re-runs a lost run: through a fork of its experiment.
RERUN_RUN = "re-run it: fork the experiment"
