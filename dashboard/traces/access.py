"""Uploaded files are private to their uploader: the one place uploads are filtered by user.

An experiment that uses an upload makes it readable to whoever sees the
experiment, only through that experiment (its archive); a fork may reuse it.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.http import Http404

from dashboard.common.access import is_signed_in
from dashboard.traces.models import ClusterUpload, TraceUpload

UPLOAD_MODELS: dict[str, type[ClusterUpload] | type[TraceUpload]] = {"cluster": ClusterUpload, "trace": TraceUpload}


def own_uploads(user: Any, kind: str) -> QuerySet[Any]:
    """``user``'s uploads of ``kind`` (uploads are private to their uploader); 404 for an unknown kind."""
    model = UPLOAD_MODELS.get(kind)
    if model is None:
        raise Http404(f"unknown upload kind {kind!r}")
    if not is_signed_in(user):
        return model.objects.none()
    return model.objects.filter(owner=user).defer("content_gz")


def get_upload_for_user(user: Any, kind: str, pk: int) -> Any:
    """Upload ``pk`` of ``kind`` if it is ``user``'s own, else 404 (the existence of others' is not revealed)."""
    up = own_uploads(user, kind).filter(pk=pk).first()
    if up is None:
        raise Http404("no such upload")
    return up
