"""A plan's uploads on the disk of the process that runs it: written once, at a path the upload's content names.

A plan's stored spec names an upload by its scenario file name (``cluster_<file>``,
``trace_<file>``) and the plan row says which upload that is: nothing in it is a path of
some machine, so any worker, on any host, can run any probe. The probe itself
(:func:`simcore.planning.probe`) reads files by path, and keeps the cluster and the
workloads it built in a per-process cache keyed by :meth:`simcore.planning.PlanSpec.key`,
which includes that path. So each process writes an upload's bytes (from the database,
as experiments' workers do) to ``$SIMCORE_VAR_DIR/plan-uploads/<sha256>/<name>``: the
same path for every probe of every plan using that upload on this host, hence one read
of the file per worker process and cache hits for every later probe. The write is a
temporary file renamed into place (atomic on one file system), so two processes writing
the same upload at once, or a worker killed mid-write, never leave a half-written file at
that path; a later call finds the file there and reads no bytes from the database.

:func:`runnable_spec` is the only place the stored spec gets paths, and only inside the
process that runs it (a task, the coordinator, the request that checks a new plan).
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from django.conf import settings

from dashboard.traces.models import ClusterUpload, TraceUpload, Upload
from dashboard.traces.uploads import scenario_file_names
from simcore.planning import PlanSpec

#: Under the var dir: one folder per upload content (its SHA-256), holding the file under its scenario name.
FOLDER = "plan-uploads"
_HEX64 = re.compile(r"[0-9a-f]{64}")


def _disk_name(name: str) -> str:
    # Upload.content() is the decompressed text: a name ending in .gz would promise gzip bytes.
    return name[:-3] if name.lower().endswith(".gz") else name


def upload_path(upload: Upload, name: str, digest: str | None = None) -> Path:
    """Where this process keeps ``upload``'s bytes under ``name`` (no write)."""
    return Path(settings.VAR_DIR) / FOLDER / (digest or upload.sha256) / _disk_name(name)


def materialise(upload: Upload, name: str) -> Path:
    """``upload``'s bytes at :func:`upload_path`, written there first if this host does not have them yet."""
    digest = upload.sha256 if _HEX64.fullmatch(upload.sha256 or "") else None
    if digest is not None:
        path = upload_path(upload, name, digest)
        if path.is_file():
            return path
    model: Any = type(upload)
    content = model.objects.get(pk=upload.pk).content()  # the bytes, only when they are not on disk
    if digest is None:  # a row without a hash: name the folder by the bytes themselves
        digest = hashlib.sha256(content).hexdigest()
        path = upload_path(upload, name, digest)
        if path.is_file():
            return path
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".writing-")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(content)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def uploads_of(plan_like: object) -> tuple[ClusterUpload | None, TraceUpload | None]:
    """A plan's uploads without their bytes (``plan_like``: anything with ``cluster_upload_id``/``trace_upload_id``)."""
    cid = getattr(plan_like, "cluster_upload_id", None)
    tid = getattr(plan_like, "trace_upload_id", None)
    cu = ClusterUpload.objects.defer("content_gz").filter(pk=cid).first() if cid else None
    tu = TraceUpload.objects.defer("content_gz").filter(pk=tid).first() if tid else None
    return cu, tu


def runnable(
    spec: PlanSpec, cluster: ClusterUpload | None, trace: TraceUpload | None, *, workload: bool = True
) -> tuple[PlanSpec, dict[str, str]]:
    """``spec`` with its uploads replaced by this host's paths, and path -> how a message names the upload.

    ``workload=False``: only the cluster (checking a new plan reads no trace).
    """
    names = scenario_file_names(cluster, trace)
    shown: dict[str, str] = {}
    if cluster is not None:
        path = str(materialise(cluster, names["cluster"]))
        spec = dataclasses.replace(spec, cluster=path)
        shown[path] = f"cluster upload {cluster.name!r}"
    if trace is not None and workload:
        path = str(materialise(trace, names["workload"]))
        spec = dataclasses.replace(spec, workload=path)
        shown[path] = f"trace upload {trace.name!r}"
    return spec, shown


def runnable_spec(plan: object, spec: PlanSpec) -> tuple[PlanSpec, dict[str, str]]:
    """The plan's ``spec`` as this process runs it (see :func:`runnable`)."""
    return runnable(spec, *uploads_of(plan))


def without_paths(message: str, shown: dict[str, str]) -> str:
    """``message`` naming uploads as their owner does, not by this host's paths."""
    for path, what in shown.items():
        message = message.replace(repr(path), what).replace(path, what)
    return message
