"""Teams and their members, uploads, experiments, runs and their results, API tokens.

Uploaded files live in the database (gzip bytes), not on a worker's disk:
workers may run on other machines. A run's per-job records are compact
binary chunks of consecutive jobs in their own table (:class:`RunJobsChunk`),
so the pages, which read :class:`RunResult`, never load them, and no run is
too large for one database value.
"""

from __future__ import annotations

import gzip
import hashlib
import secrets
from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models, transaction
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from dashboard.names import validate_name


class Team(models.Model):
    """A group of users sharing experiments; roles are on :class:`Membership`."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("team-detail", args=[self.pk])


class Role(models.TextChoices):
    OWNER = "owner"  # manages members and invitations, runs experiments, cancels the team's runs
    MEMBER = "member"  # runs experiments in the team
    VIEWER = "viewer"  # reads the team's experiments


#: Roles allowed to start experiments in a team.
RUN_ROLES = (Role.OWNER, Role.MEMBER)


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


def token_hash(token: str) -> str:
    """What we store of a secret token: its SHA-256 (a database leak gives no usable token)."""
    return hashlib.sha256(token.encode()).hexdigest()


class Invitation(models.Model):
    """A single-use link that creates an account (or adds a signed-in user) in a team with a role."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="invitations")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    token_hash = models.CharField(max_length=64, unique=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created = models.DateTimeField(default=timezone.now)
    expires = models.DateTimeField()
    used_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    @property
    def is_open(self) -> bool:
        return self.used_at is None and self.expires > timezone.now()


class ApiToken(models.Model):
    """A REST API token; only its hash is kept, the token itself is shown once when created."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    name = models.CharField(max_length=100, validators=[validate_name])
    #: The first characters, so a user can tell their tokens apart.
    prefix = models.CharField(max_length=12)
    token_hash = models.CharField(max_length=64, unique=True)
    created = models.DateTimeField(default=timezone.now)
    last_used = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}...)"

    @classmethod
    def issue(cls, user: Any, name: str) -> tuple[ApiToken, str]:
        """A new token for ``user``; returns the row and the secret (never stored)."""
        secret = "sc_" + secrets.token_urlsafe(32)
        row = cls.objects.create(user=user, name=name or "token", prefix=secret[:10], token_hash=token_hash(secret))
        return row, secret


class LoginFailure(models.Model):
    """Failed sign-ins per user name and client address, for throttling password guessing."""

    username = models.CharField(max_length=150)
    ip = models.CharField(max_length=45)
    failures = models.PositiveIntegerField(default=0)
    first_at = models.DateTimeField(default=timezone.now)
    locked_until = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["username", "ip"], name="one_counter_per_username_ip")]


class Upload(models.Model):
    """Common part of an uploaded cluster file or trace file."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE)
    name = models.CharField(max_length=100, validators=[validate_name])
    filename = models.CharField(max_length=200)
    content_gz = models.BinaryField()
    size_bytes = models.BigIntegerField()
    sha256 = models.CharField(max_length=64)
    #: What the reader found (machines, configurations, resources / jobs, horizon...).
    info = models.JSONField(default=dict)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["-created"]

    def __str__(self) -> str:
        return f"{self.name} ({self.filename})"

    def content(self) -> bytes:
        return gzip.decompress(bytes(self.content_gz))


class ClusterUpload(Upload):
    """A cluster description file (JSON) read by simcore.clusterfile."""


class ImportStatus(models.TextChoices):
    PENDING = "pending"  # stored, waiting for a worker
    RUNNING = "running"  # a worker is reading it
    READY = "ready"  # the converted trace is stored; experiments may use it
    FAILED = "failed"  # the input was rejected; ``error`` says where
    CANCELLED = "cancelled"


IMPORT_ACTIVE = (ImportStatus.PENDING, ImportStatus.RUNNING)

#: Allowed trace-import transitions; the same guarded state machine as runs (:func:`move`).
#: running -> pending: the attempt was lost with its worker and the import is queued again (dashboard.recovery).
IMPORT_TRANSITIONS: dict[str, frozenset[str]] = {
    ImportStatus.PENDING: frozenset({ImportStatus.RUNNING, ImportStatus.CANCELLED}),
    ImportStatus.RUNNING: frozenset(
        {ImportStatus.READY, ImportStatus.FAILED, ImportStatus.CANCELLED, ImportStatus.PENDING}
    ),
    ImportStatus.READY: frozenset(),
    ImportStatus.FAILED: frozenset(),
    ImportStatus.CANCELLED: frozenset(),
}


def move(
    model: type[models.Model],
    pk: int,
    old: str | Iterable[str],
    new: str,
    table: Mapping[str, frozenset[str]],
    *,
    guard: Q | None = None,
    **fields: Any,
) -> bool:
    """Move row ``pk`` of ``model`` from ``old`` (one status or several) to ``new``; False if another moved it first.

    The one claim rule for runs and trace imports (healthchecks' conditional
    UPDATE, OpenDC's guarded state machine): the transition must be in
    ``table``, and the row changes only if it is still in ``old`` (and meets
    ``guard``), so of two workers, or a worker and a cancel, exactly one wins.
    """
    olds = [old] if isinstance(old, str) else list(old)
    for o in olds:
        if new not in table[o]:
            raise ValueError(f"{model.__name__} {pk}: {o} -> {new} is not an allowed transition")
    rows = model._default_manager.filter(pk=pk, status__in=olds)
    if guard is not None:
        rows = rows.filter(guard)
    return bool(rows.update(status=new, **fields) == 1)


class TraceFormat(models.TextChoices):
    CSV = "csv", "the project's CSV trace (simcore trace v1)"
    SWF = "swf", "Standard Workload Format (Parallel Workloads Archive)"
    GOOGLE2011 = "google2011", "Google cluster-data 2011 task_events (+ job_events, machine_events)"
    WFCOMMONS = "wfcommons", "WfCommons workflow instances (WfFormat JSON), one job each"
    ALIBABA = "alibaba", "Alibaba cluster-trace-v2018 batch_task or batch_instance (header-less CSV)"
    AZURE = "azure", "Azure Packing Trace 2020 (the SQLite database: vm and vmType tables)"


class TraceUpload(Upload):
    """A job trace in the project's CSV format (simcore.traces.tracefile), imported from an uploaded file.

    The upload request stores the raw files (:class:`TraceImportFile`) and a
    pending row; a worker converts them with ``simcore.traces.importer`` (Google
    2011, SWF or the project's CSV) and, in one transaction, stores the
    converted trace in ``content_gz``, marks the row ready and deletes the raw
    files. On failure only ``error`` (naming file, line and field) is kept.
    ``content_gz`` is empty until the row is ready.
    """

    format = models.CharField(max_length=16, choices=TraceFormat.choices, default=TraceFormat.CSV)
    status = models.CharField(max_length=16, choices=ImportStatus.choices, default=ImportStatus.PENDING, db_index=True)
    #: The import options (bad-input policy, window, k-means classes...), as imports.check_import_options returns.
    options = models.JSONField(default=dict)
    #: Progress while importing: the reader's stage, the fraction of input bytes read, data rows parsed.
    stage = models.CharField(max_length=40, blank=True)
    fraction = models.FloatField(default=0.0)
    rows_read = models.BigIntegerField(default=0)
    bytes_total = models.BigIntegerField(default=0)
    #: A message a user can read (file, line, field), never a stack trace.
    error = models.TextField(blank=True)
    #: simcore.traces.importer.summary: rows read, skipped and dropped by reason, notes, timings.
    report = models.JSONField(default=dict)
    #: simcore.traces.importer.class_table_dict when k-means classes were asked for; runs get Workload.classes from it.
    classes = models.JSONField(null=True, blank=True)
    #: The machines the import derived (Google machine_events, SWF's parallel computer), stored as a cluster upload.
    cluster_upload = models.ForeignKey(
        ClusterUpload, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    #: When its task was last put on the broker (dashboard.queueing); null while it never was.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: Last sign of life of the worker importing it (see dashboard.recovery); null until claimed.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: Claims so far and the attempts lost with their workers, as on :class:`Run`.
    attempt = models.PositiveIntegerField(default=0)
    lost_attempts = models.JSONField(default=list, blank=True)

    @property
    def is_active(self) -> bool:
        return self.status in IMPORT_ACTIVE

    @property
    def is_ready(self) -> bool:
        return self.status == ImportStatus.READY

    @property
    def attempts_note(self) -> str:
        """Which attempt this is and when the earlier ones were lost with their worker; empty if none was."""
        from dashboard.recovery import attempts_note

        return attempts_note(self.attempt, self.lost_attempts)

    def get_absolute_url(self) -> str:
        return reverse("trace-import-detail", args=[self.pk])


class ImportRole(models.TextChoices):
    TRACE = "trace"  # the one file of a CSV or SWF trace
    TASK_EVENTS = "task_events"
    JOB_EVENTS = "job_events"
    MACHINE_EVENTS = "machine_events"


class TraceImportFile(models.Model):
    """One raw input file of a trace import, kept (gzip-compressed) only until the import ends."""

    upload = models.ForeignKey(TraceUpload, on_delete=models.CASCADE, related_name="inputs")
    role = models.CharField(max_length=16, choices=ImportRole.choices)
    #: Order within the role (task_events parts are read in this order).
    position = models.PositiveIntegerField(default=0)
    filename = models.CharField(max_length=200)
    size_bytes = models.BigIntegerField()
    #: The bytes as uploaded if they were gzip, else gzip-compressed here (the readers detect gzip by its magic).
    content_gz = models.BinaryField()

    class Meta:
        ordering = ["upload_id", "role", "position"]


class Status(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Allowed run transitions (OpenDC's guarded state machine). Anything else is refused.
#: running -> pending: the attempt was lost with its worker and the run is queued again (dashboard.recovery).
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.PENDING: frozenset({Status.RUNNING, Status.CANCELLED}),
    Status.RUNNING: frozenset({Status.FINISHED, Status.FAILED, Status.CANCELLED, Status.PENDING}),
    Status.FINISHED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
}
ACTIVE = (Status.PENDING, Status.RUNNING)


class Visibility(models.TextChoices):
    PRIVATE = "private", "private (only me)"
    TEAM = "team", "team (members of its team)"
    PUBLIC = "public", "public read-only link (and the team)"


class Experiment(models.Model):
    """A scenario (cluster, workload, parameters, schedulers, seeds) and its runs."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="experiments")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="experiments")
    #: Who can read it; see dashboard.access, the one place that applies it.
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE)
    #: The secret of the public read-only link; set exactly when visibility is public.
    share_token = models.CharField(max_length=64, null=True, blank=True, unique=True)
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    name = models.CharField(max_length=200, blank=True, validators=[validate_name])
    #: The simcore.archive scenario dict (uploaded files referred to by file name).
    scenario = models.JSONField()
    cluster_upload = models.ForeignKey(ClusterUpload, null=True, blank=True, on_delete=models.PROTECT)
    trace_upload = models.ForeignKey(TraceUpload, null=True, blank=True, on_delete=models.PROTECT)
    #: Denormalised for the list's filters.
    cluster_label = models.CharField(max_length=200, db_index=True)
    workload_label = models.CharField(max_length=200, db_index=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    #: The paper reproduction it was started from ({"name": ..., "scale": {...}}, simcore.reproductions); null if none.
    reproduction = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"Experiment {self.pk}"

    @property
    def title(self) -> str:
        return str(self)

    def get_absolute_url(self) -> str:
        return reverse("experiment-detail", args=[self.pk])

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
        elif Status.CANCELLED in states:
            status = Status.CANCELLED
        else:
            status = Status.FINISHED
        return status


class Run(models.Model):
    """One scheduler under one seed of an experiment; in a sweep, at one point of its axes (a cell)."""

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="runs")
    scheduler = models.CharField(max_length=100, db_index=True)
    seed = models.PositiveIntegerField()
    #: The sweep point ({"phi": 0.003}); {} outside sweeps. ``point_key`` is its canonical text
    #: (simcore.sweep.scenario.point_key), part of what makes a cell unique.
    point = models.JSONField(default=dict, blank=True)
    point_key = models.CharField(max_length=1000, default="", blank=True)
    #: Hash of everything that determines the result except the code version (dashboard.services.cache).
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
    #: When its task was last put on the broker (dashboard.queueing); null while it never was.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: Last sign of life of the worker running it (see dashboard.recovery); null until claimed.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: A message a user can read (never a stack trace).
    error = models.TextField(blank=True)
    code_version = models.CharField(max_length=100, blank=True)
    #: How many times a worker claimed it: the current attempt's number while running. Every write of a
    #: worker requires its own number, so a worker declared lost (a zombie) can change nothing afterwards.
    attempt = models.PositiveIntegerField(default=0)
    #: One record per attempt lost with its worker (dashboard.recovery.lost_attempt), oldest first.
    lost_attempts = models.JSONField(default=list, blank=True)

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
        from dashboard.recovery import attempts_note

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
    (dashboard.services.aggregates) instead of aggregating every summary on
    every view. ``run_ids`` are the finished runs they were computed from: a
    page finding other finished runs in the group computes the group itself
    (and writes nothing), so a row stored before a change is never shown stale.
    """

    experiment = models.ForeignKey(Experiment, on_delete=models.CASCADE, related_name="cell_aggregates")
    point_key = models.CharField(max_length=1000, default="", blank=True)
    scheduler = models.CharField(max_length=100)
    point = models.JSONField(default=dict, blank=True)
    run_ids = models.JSONField(default=list)
    #: dashboard.services.aggregates.group_stats: runs, unstable count, metric keys and each metric's statistics.
    stats = models.JSONField(default=dict)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["experiment", "point_key", "scheduler"], name="one_aggregate_per_cell")
        ]


class ExperimentCharts(models.Model):
    """An experiment page's chart figures (dashboard.charts.all_charts), built when one of its runs finishes.

    ``run_ids``: the finished runs they were built from; the page uses them only while those are exactly its
    finished runs, and otherwise builds the figures itself from the runs' series (without storing them).
    ``figures`` is JSON text, not a JSON column: PostgreSQL's jsonb reorders keys, and the page must send
    the figures exactly as the builders made them (chart order, Plotly's update dicts).
    """

    experiment = models.OneToOneField(Experiment, on_delete=models.CASCADE, related_name="stored_charts")
    run_ids = models.JSONField(default=list)
    figures = models.TextField(default="{}")


class RunJobs(models.Model):
    """Per-job records as one simcore.archive.pack_jobs blob (36 bytes a job): runs stored before chunks.

    Read still (dashboard.services.jobs); new runs write :class:`RunJobsChunk` rows.
    """

    run = models.OneToOneField(Run, on_delete=models.CASCADE, related_name="jobs")
    n_jobs = models.BigIntegerField()
    data = models.BinaryField()


class RunJobsChunk(models.Model):
    """Jobs ``first .. first + n_jobs - 1`` of a run as one simcore.archive.pack_jobs blob (36 bytes a job).

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


# ---------------------------------------------------------------------------- lost workers
#
# A worker that dies (SIGKILL, out of memory, a machine restart) cannot mark its
# run or import failed. While it works it stamps ``heartbeat_at`` every few
# seconds (dashboard.services.execution.Heartbeat); work still ``running`` whose stamp is
# older than SIMCORE_WORKER_TIMEOUT_S is declared lost, and queued again or, once
# its attempts are used up, failed (dashboard.recovery, applied by the workers'
# periodic repair, dashboard.repair). A live worker, wherever it runs, keeps its
# stamps fresh, so no one takes work it still holds.


def worker_timeout() -> timedelta:
    """How long running work may go without a heartbeat before it counts as lost."""
    return timedelta(seconds=settings.SIMCORE_WORKER_TIMEOUT_S)


def heartbeat_every_s() -> float:
    """Seconds between two heartbeats: a sixth of the timeout (at most 5 s), so a few missed ones are harmless."""
    return max(0.2, min(5.0, settings.SIMCORE_WORKER_TIMEOUT_S / 6))


def stale_heartbeat(now: datetime) -> Q:
    """The lost-worker rule as a filter on ``heartbeat_at`` (claims set it, so running work always has one)."""
    return Q(heartbeat_at__lt=now - worker_timeout())


def heard_at(last_heard: datetime | None, now: datetime) -> str:
    """``last_heard`` for a reader at ``now``: the time of day, with the date when it was another day."""
    if last_heard is None:
        return "an unknown time"
    local = timezone.localtime(last_heard)
    day = "" if local.date() == timezone.localtime(now).date() else f"{local:%Y-%m-%d} "
    return f"{day}{local:%H:%M} {local.tzname() or ''}".strip()


def lost_message(last_heard: datetime | None, now: datetime, advice: str) -> str:
    """What a user reads on work whose worker vanished; ``last_heard``: its last heartbeat."""
    return f"the worker running this stopped without finishing (lost at {heard_at(last_heard, now)}); {advice}"


#: How a user re-runs lost work: a run through a fork of its experiment, a trace by uploading it again.
RERUN_RUN = "re-run it: fork the experiment"
RERUN_IMPORT = "re-run it: upload the files again"


# Saved column maps of foreign CSVs and the mapping page's draft (issue 17); packing analyses (issue 11).
# Each lives in its own module, imported here so Django registers them.
from dashboard.mapping_models import TraceDraft, TraceMapping  # noqa: E402, F401
from dashboard.packing_models import PackingAnalysis, PackingSource  # noqa: E402, F401

# Design-space searches live in their own module; imported here so Django registers them with the app.
from dashboard.search_models import (  # noqa: E402, F401
    EvalStatus,
    Phase,
    Search,
    SearchEvaluation,
    SearchGeneration,
)
