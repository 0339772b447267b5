"""Column maps for foreign CSVs (issue 17): saved maps, the mapping page's draft, its preview and import.

The page, the API and the import all use :mod:`simcore.traces.colmap`'s grammar
(the same text as ``simcore import --map/--where``); this module only stores
it and moves files between the draft and a trace import
(:func:`dashboard.traces.imports.create_trace_import`).
"""

from __future__ import annotations

import gzip
from collections.abc import Mapping as MappingT
from typing import Any

from django.contrib.auth.models import User
from django.db import IntegrityError, transaction
from django.db.models import QuerySet
from django.http import Http404

from dashboard.traces.imports import FORMATS, check_map_options, create_trace_import, head_text
from dashboard.traces.models import TraceDraft, TraceFormat, TraceMapping, TraceUpload
from dashboard.traces.uploads import GZIP_MAGIC, check_file_type, check_upload_size, safe_filename
from simcore.core.errors import InputError, ParameterError
from simcore.traces import colmap


def own_mappings(user: Any) -> QuerySet[TraceMapping]:
    """``user``'s saved maps (private to their owner, like the traces they read)."""
    if not getattr(user, "is_authenticated", False):
        return TraceMapping.objects.none()
    return TraceMapping.objects.filter(owner=user)


def get_mapping_for_user(user: Any, pk: int) -> TraceMapping:
    """Saved map ``pk`` if it is ``user``'s, else 404 (others' are not revealed)."""
    m = own_mappings(user).filter(pk=pk).first()
    if m is None:
        raise Http404("no such mapping")
    return m


def save_mapping(owner: User, name: str, column_map: str, where: str = "") -> TraceMapping:
    """Store a map under ``name`` (checked; canonical text); a map of the same name is replaced."""
    name = name.strip()
    if not name or len(name) > 100:
        raise ParameterError("name must be 1 to 100 characters")
    opts = check_map_options(column_map, where or None)
    try:
        with transaction.atomic():
            m, _ = TraceMapping.objects.update_or_create(
                owner=owner, name=name, defaults={"column_map": opts["map"] or "", "where": opts["where"] or ""}
            )
    except IntegrityError:  # two saves of one name at once: the other one won
        m = TraceMapping.objects.get(owner=owner, name=name)
    return m


def create_draft(owner: User, name: str, filename: str, content: bytes) -> TraceDraft:
    """Keep a CSV for the mapping page (replacing the user's previous draft); checks size, type and header."""
    fname = safe_filename(filename, "trace.csv")
    try:
        check_upload_size(len(content))
    except InputError as e:
        raise InputError(e.reason, file=fname) from None
    spec = FORMATS[TraceFormat.CSV]
    check_file_type(spec.label, spec.suffixes, fname, content)
    head = head_text(content)
    colmap.sniff(head, 0)  # a header line, or InputError
    stored = content if content.startswith(GZIP_MAGIC) else gzip.compress(content, 1)
    with transaction.atomic():
        TraceDraft.objects.filter(owner=owner).delete()
        return TraceDraft.objects.create(
            owner=owner, name=name[:100], filename=fname, content_gz=stored, head=head[: 64 << 10]
        )


def draft_of(user: User) -> TraceDraft | None:
    return TraceDraft.objects.filter(owner=user).first()


def preview_draft(draft: TraceDraft, column_map: str, where: str | None) -> colmap.Preview:
    """The draft's first rows through the map (problems listed, never raised)."""
    flt = colmap.parse_where(where) if where else None
    return colmap.preview(draft.head, colmap.parse_map(column_map), flt, label=draft.filename)


def import_draft(draft: TraceDraft, options: MappingT[str, Any]) -> TraceUpload:
    """Start the trace import of a draft with ``options`` (map, where, on_error, cluster); the draft goes."""
    # A .gz name must hold gzip bytes (check_file_type); a plain file was compressed only for storage.
    content = bytes(draft.content_gz) if draft.filename.lower().endswith(".gz") else draft.content()
    with transaction.atomic():
        up = create_trace_import(
            draft.owner, draft.name, draft.filename, content, options={**options, "format": TraceFormat.CSV}
        )
        TraceDraft.objects.filter(pk=draft.pk).delete()
    return up


__all__ = [
    "create_draft",
    "draft_of",
    "get_mapping_for_user",
    "import_draft",
    "own_mappings",
    "preview_draft",
    "save_mapping",
]
