"""Saved column maps (issue 17): how a foreign CSV's columns become jobs, reused by name.

A :class:`TraceMapping` holds the text of a :mod:`simcore.traces.colmap` map and
filter, checked when saved. Like the traces it is used for, it is private to
its owner (:func:`dashboard.access.own_uploads` rules: no team sharing).

A :class:`TraceDraft` is a CSV sent to the column-mapping page and not yet
imported: the page shows its head, previews a map on it, and imports it on
confirmation (then the draft is deleted). A user has at most one draft; a new
one replaces it, so drafts never pile up.
"""

from __future__ import annotations

import gzip

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.names import validate_name


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
