"""Uploaded clusters and traces, a trace import's raw files, and saved column maps (issue 17).

Uploaded files live in the database (gzip bytes), not on a worker's disk:
workers may run on other machines.

A :class:`TraceMapping` holds the text of a :mod:`simcore.traces.colmap` map and
filter, checked when saved. Like the traces it is used for, it is private to
its owner (:func:`dashboard.common.access.own_uploads` rules: no team sharing).

A :class:`TraceDraft` is a CSV sent to the column-mapping page and not yet
imported: the page shows its head, previews a map on it, and imports it on
confirmation (then the draft is deleted). A user has at most one draft; a new
one replaces it, so drafts never pile up.
"""

from __future__ import annotations

import gzip

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from dashboard.common.names import validate_name


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
#: running -> pending: the attempt was lost with its worker and the import is queued again (dashboard.common.recovery).
IMPORT_TRANSITIONS: dict[str, frozenset[str]] = {
    ImportStatus.PENDING: frozenset({ImportStatus.RUNNING, ImportStatus.CANCELLED}),
    ImportStatus.RUNNING: frozenset(
        {ImportStatus.READY, ImportStatus.FAILED, ImportStatus.CANCELLED, ImportStatus.PENDING}
    ),
    ImportStatus.READY: frozenset(),
    ImportStatus.FAILED: frozenset(),
    ImportStatus.CANCELLED: frozenset(),
}


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
    #: When its task was last put on the broker (dashboard.common.queueing); null while it never was.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: Last sign of life of the worker importing it (see dashboard.common.recovery); null until claimed.
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
        from dashboard.common.recovery import attempts_note

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


#: How a user re-runs a lost import.
RERUN_IMPORT = "re-run it: upload the files again"


class TraceMapping(models.Model):
    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trace_mappings")
    name = models.CharField(max_length=100, validators=[validate_name])
    #: simcore.traces.colmap map text, e.g. "submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100".
    column_map = models.TextField()
    #: simcore.traces.colmap filter text ("" : keep every row), e.g. "status=Terminated".
    where = models.TextField(blank=True)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]
        constraints = [models.UniqueConstraint(fields=["owner", "name"], name="one_mapping_name_per_owner")]

    def __str__(self) -> str:
        return self.name


class TraceDraft(models.Model):
    owner = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="trace_draft")
    name = models.CharField(max_length=100, blank=True, validators=[validate_name])
    filename = models.CharField(max_length=200)
    #: The file as sent, gzip-compressed (as TraceImportFile stores it).
    content_gz = models.BinaryField()
    #: The decompressed head of the file (header and first rows) the page shows and previews.
    head = models.TextField()
    created = models.DateTimeField(default=timezone.now)

    def content(self) -> bytes:
        return gzip.decompress(bytes(self.content_gz))

    def __str__(self) -> str:
        return f"{self.name or self.filename} (draft)"
