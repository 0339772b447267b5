"""Uploads: checking and storing cluster files and traces, and giving them back to runs."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import importlib
import json
import logging
import re
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db.models import QuerySet

from dashboard.common.access import visible
from dashboard.experiments.models import Experiment
from dashboard.traces.models import ClusterUpload, ImportStatus, TraceUpload, Upload
from simcore.core.errors import InputError, ParameterError, SimcoreError

log = logging.getLogger(__name__)


def _reader(module: str, func: str) -> Any:
    try:
        return getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError):
        raise ParameterError(f"this version of simcore cannot read these files ({module}.{func} is missing)") from None


def safe_filename(name: str, default: str) -> str:
    """A plain file name (no directories, no leading dot) keeping the suffixes readers look at.

    The name is only ever used inside a fresh private temporary folder and as
    a label; no user input chooses where anything is written.
    """
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name or "").name).lstrip("._")
    return base[:150] or default


@contextlib.contextmanager
def _as_file(content: bytes, filename: str) -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="simcore-upload-") as tmp:
        p = Path(tmp) / filename
        p.write_bytes(content)
        yield p


GZIP_MAGIC = b"\x1f\x8b"


@dataclass(frozen=True)
class UploadKind:
    """One kind of uploaded file: where it is stored, which names it may have, how it is read.

    A new format (say another trace layout) is one more entry in
    :data:`UPLOAD_KINDS` (or, for traces, in :data:`dashboard.traces.imports.FORMATS`):
    the pages, the API and the checks pick it up.
    """

    model: type[ClusterUpload] | type[TraceUpload]
    label: str
    #: Accepted file name endings (lower case); ``.gz`` variants are gzip-compressed text.
    suffixes: tuple[str, ...]
    default_name: str
    #: (content, file name) -> the ``info`` dict shown in lists; raises InputError on bad content.
    #: None: the file is read by a background import (:mod:`dashboard.traces.imports`), not in the request.
    inspect: Callable[[bytes, str], dict[str, Any]] | None


@dataclass(frozen=True)
class InputFile:
    """One file of an upload request: its role (``trace``, ``task_events``, ...), name and bytes."""

    role: str
    filename: str
    content: bytes


def check_upload_size(size: int) -> None:
    """Refuse files over SIMCORE_MAX_UPLOAD_MB (checked before the content is read) and empty ones."""
    limit = settings.SIMCORE_MAX_UPLOAD_MB * 1024 * 1024
    if size > limit:
        raise InputError(f"the file is {size / 2**20:.1f} MB; the limit is {settings.SIMCORE_MAX_UPLOAD_MB} MB")
    if size == 0:
        raise InputError("the file is empty")


def _check_text(head: bytes, filename: str, what: str) -> None:
    if b"\x00" in head:
        raise InputError(f"the {what} is binary, not text", file=filename)
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as e:
        if e.start < len(head) - 4:  # a multi-byte character cut at the 64 KiB boundary is fine
            raise InputError(f"the {what} is not UTF-8 text (byte {e.start + 1})", file=filename) from None


def check_file_type(label: str, suffixes: tuple[str, ...], filename: str, content: bytes) -> None:
    """The name must end in one of ``suffixes`` and the bytes must be what it says (gzip, or UTF-8 text).

    For gzip only the first 64 KiB are decompressed (a cheap sniff in the
    request); a truncated or corrupt stream further on is found by the reader.
    """
    lower = filename.lower()
    if not lower.endswith(suffixes):
        raise InputError(f"a {label} must be a {' or '.join(suffixes)} file", file=filename)
    if lower.endswith(".gz"):
        if not content.startswith(GZIP_MAGIC):
            raise InputError("the file name ends in .gz but the content is not gzip-compressed", file=filename)
        try:
            head = zlib.decompressobj(wbits=31).decompress(content[: 1 << 20], 65536)
        except zlib.error as e:
            raise InputError(f"corrupt gzip data at the start of the file ({e})", file=filename) from None
        _check_text(head, filename, "decompressed file")
        return
    _check_text(content[:65536], filename, "file")


def check_upload_type(kind: UploadKind, filename: str, content: bytes) -> None:
    """:func:`check_file_type` with the kind's label and suffixes."""
    check_file_type(kind.label, kind.suffixes, filename, content)


def _inspect_cluster(content: bytes, filename: str) -> dict[str, Any]:
    cluster = read_cluster_bytes(content, filename)
    return {
        "machines": int(cluster.n_machines),
        "configurations": int(cluster.n_configs),
        "resources": list(cluster.resources),
    }


def read_cluster_bytes(content: bytes, filename: str) -> Any:
    """The Cluster in an uploaded file; InputError names the file, line and column on bad content."""
    read_cluster = _reader("simcore.clusterfile", "read_cluster")
    with _as_file(content, filename) as p:
        try:
            return read_cluster(str(p))
        except InputError as e:
            raise InputError(e.reason, file=filename, line=e.line, column=e.column) from None


UPLOAD_KINDS: dict[str, UploadKind] = {
    "cluster": UploadKind(ClusterUpload, "cluster file", (".json",), "cluster.json", _inspect_cluster),
    "trace": UploadKind(TraceUpload, "trace", (".csv", ".csv.gz", ".swf", ".swf.gz", ".gz"), "trace.csv", None),
}


def create_upload(
    kind: str,
    owner: User,
    name: str,
    filename: str = "",
    content: bytes = b"",
    *,
    files: Sequence[InputFile] = (),
    options: Mapping[str, Any] | None = None,
) -> Upload:
    """Check an upload, then store it: the one path for pages and the API.

    A cluster file is read here (it is small) and stored only if it is
    valid. A trace is checked cheaply here (options, size, names, gzip magic
    or UTF-8 text) and stored with its raw files as a *pending* import that
    one background task converts (:func:`dashboard.traces.imports.execute_import`);
    ``files`` gives several files (Google 2011 parts), ``options`` the import
    options (:func:`dashboard.traces.imports.check_import_options`). Nothing is
    stored on error; every error is an InputError or ParameterError naming
    the file (never our temporary copy) or the option.
    """
    spec = UPLOAD_KINDS.get(kind)
    if spec is None:
        raise ParameterError(f"unknown upload kind {kind!r}; valid kinds: {', '.join(UPLOAD_KINDS)}")
    if spec.inspect is None:
        from dashboard.traces import imports

        return imports.create_trace_import(owner, name, filename, content, files=files, options=options or {})
    if files or options:
        raise ParameterError(f"a {spec.label} upload is one file and takes no options")
    check_upload_size(len(content))
    filename = safe_filename(filename, spec.default_name)
    check_upload_type(spec, filename, content)
    try:
        info = spec.inspect(content, filename)
    except SimcoreError:
        raise
    except (ValueError, TypeError, KeyError, IndexError, OSError, EOFError, zlib.error) as e:
        # A reader tripping over malformed bytes is a bad file, not a server error; we keep the detail in the log.
        log.warning("reading uploaded %s %r failed: %r", kind, filename, e)
        raise InputError(f"could not read the file: {type(e).__name__}", file=filename) from None
    return spec.model.objects.create(
        owner=owner,
        name=(name or filename)[:100],
        filename=filename,
        content_gz=gzip.compress(content, 6),
        size_bytes=len(content),
        sha256=hashlib.sha256(content).hexdigest(),
        info=info,
    )


def create_cluster_upload(owner: User, name: str, filename: str, content: bytes) -> ClusterUpload:
    return create_upload("cluster", owner, name, filename, content)  # type: ignore[return-value]


def create_trace_upload(owner: User, name: str, filename: str, content: bytes, **options: Any) -> TraceUpload:
    return create_upload("trace", owner, name, filename, content, options=options)  # type: ignore[return-value]


def usable_traces(owner: User) -> QuerySet[TraceUpload]:
    """``owner``'s traces that experiments may use: imported completely (never pending or failed ones)."""
    return TraceUpload.objects.filter(owner=owner, status=ImportStatus.READY).defer("content_gz")


def classes_file_name(trace: TraceUpload) -> str:
    return f"classes_{Path(trace.filename).name.split('.')[0]}.json"


def scenario_file_names(cluster: ClusterUpload | None, trace: TraceUpload | None) -> dict[str, str]:
    """File names the scenario uses for uploads (prefixed so a cluster and a trace never collide).

    ``classes``: the trace's job-class table, when its import computed one.
    """
    out = {}
    if cluster is not None:
        out["cluster"] = f"cluster_{cluster.filename}"
    if trace is not None:
        out["workload"] = f"trace_{trace.filename}"
        if trace.classes:
            out["classes"] = classes_file_name(trace)
    return out


def upload_specs(cluster: ClusterUpload | None, trace: TraceUpload | None) -> dict[str, dict[str, str]]:
    """The scenario's ``cluster``/``workload`` entries for uploads (file names, labels, the class table)."""
    names = scenario_file_names(cluster, trace)
    out: dict[str, dict[str, str]] = {}
    if cluster is not None:
        out["cluster"] = {"file": names["cluster"], "name": cluster.name}
    if trace is not None:
        out["workload"] = {"file": names["workload"], "name": trace.name}
        if "classes" in names:
            out["workload"]["classes"] = names["classes"]
    return out


def delete_upload(upload: Upload) -> None:
    """Delete one of the caller's uploads (the caller checked ownership); refused while an experiment, a search or a
    capacity plan uses it.

    Deleting a trace whose import is still running stops it: the worker's
    next progress write finds no row and gives up, storing nothing.
    """
    from dashboard.searches.models import Search  # searches import traces: this one waits for the call

    field = "cluster_upload" if isinstance(upload, ClusterUpload) else "trace_upload"
    users = Experiment.objects.filter(**{field: upload})
    if users.exists():
        # Count only what the owner can see: others' private forks must not be revealed.
        n = visible(users, upload.owner).count()
        which = f"by {n} experiment(s) you can see" if n else "by experiments"
        raise ParameterError(f"{upload} is in use {which}; it stays so they can be re-run and forked")
    searches = Search.objects.filter(**{field: upload})
    if searches.exists():
        n = visible(searches, upload.owner).count()
        which = f"by {n} search(es) you can see" if n else "by searches"
        raise ParameterError(f"{upload} is in use {which}; it stays so they can be re-run and forked")
    from dashboard.capacity.models import CapacityPlan  # capacity imports traces, as searches do

    plans = CapacityPlan.objects.filter(**{field: upload})
    if plans.exists():
        n = visible(plans, upload.owner).count()
        which = f"by {n} capacity plan(s) you can see" if n else "by capacity plans"
        raise ParameterError(f"{upload} is in use {which}; it stays so they can be re-run and forked")
    upload.delete()


def experiment_files(experiment: Experiment) -> dict[str, bytes]:
    """The uploaded files an experiment's scenario names, by scenario file name."""
    names = scenario_file_names(experiment.cluster_upload, experiment.trace_upload)
    out = {}
    if experiment.cluster_upload is not None:
        out[names["cluster"]] = experiment.cluster_upload.content()
    if experiment.trace_upload is not None:
        out[names["workload"]] = experiment.trace_upload.content()
        if "classes" in names and experiment.scenario["workload"].get("classes") == names["classes"]:
            out[names["classes"]] = json.dumps(experiment.trace_upload.classes, indent=2).encode()
    return out


@contextlib.contextmanager
def materialised_files(experiment: Experiment) -> Iterator[dict[str, Path]]:
    """The experiment's uploads written to a private temp folder for the simcore readers."""
    files = experiment_files(experiment)
    with tempfile.TemporaryDirectory(prefix="simcore-run-") as tmp:
        paths = {}
        for name, content in files.items():
            paths[name] = Path(tmp) / name
            paths[name].write_bytes(content)
        yield paths
