"""Trace imports: an uploaded real trace becomes a ready-to-run project trace in a background task.

Part of the service layer (the traces room; its services delegate trace uploads
here): views, the API and the Celery task call these functions and hold no
domain logic.

1. :func:`create_trace_import` (in the request): cheap checks only (options,
   file roles, size, names, gzip magic or UTF-8 text), then one transaction
   stores a *pending* :class:`TraceUpload` with its raw files
   (:class:`TraceImportFile`) and, after the commit, enqueues one task.
2. :func:`execute_import` (in a worker): claims the row with a conditional
   update, converts the files with :mod:`simcore.traces.importer` (Google 2011, SWF)
   or :mod:`simcore.traces.tracefile` (the project's CSV), optionally fits k-means job
   classes, writing progress (bytes read, rows) to the row; a cancel shows up
   at the next progress write and stops the reader.
3. Success: one transaction stores the converted trace, the class table and
   the derived machines (as a cluster upload), marks the row ready and
   deletes the raw files. Failure: the row keeps only the error (file, line,
   field) and is never usable; the raw files are deleted too.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import logging
import math
import time
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import connection, transaction
from django.db.models import Q
from django.utils import timezone

from dashboard.common import beats, outages, waiting
from dashboard.common.heartbeat import PROGRESS_EVERY_S, Heartbeat, clean_json, status_after_interrupt
from dashboard.common.limits import Limits
from dashboard.common.models import move
from dashboard.traces import work
from dashboard.traces.models import (
    IMPORT_ACTIVE,
    IMPORT_TRANSITIONS,
    ClusterUpload,
    ImportRole,
    ImportStatus,
    TraceFormat,
    TraceImportFile,
    TraceUpload,
)
from dashboard.traces.uploads import GZIP_MAGIC, InputFile, check_file_type, check_upload_size, safe_filename
from simcore.core.errors import Cancelled, InputError, ParameterError, SimcoreError
from simcore.core.limits import MAX_SEED
from simcore.core.model import Cluster, Workload
from simcore.traces import ImportProgress, ImportResult

log = logging.getLogger(__name__)

#: Most files in one trace upload (Google task_events parts, job_events parts, one machine_events file).
MAX_FILES = 64
#: Most k-means classes an upload may ask for (LoTES uses a handful; the bin enumeration grows fast).
MAX_CLASSES = 100


@dataclass(frozen=True)
class FormatSpec:
    """What files a trace format takes: accepted names and, per role, how many files (min, max)."""

    label: str
    suffixes: tuple[str, ...]
    roles: dict[str, tuple[int, int]]
    #: The role of the upload's main file (the form's and the API's ``file`` field).
    main_role: str
    #: The bytes a (decompressed) file must start with, for binary formats; None: UTF-8 text.
    magic: bytes | None = None


#: Keys: the values of models.TraceFormat.
FORMATS: dict[str, FormatSpec] = {
    "csv": FormatSpec("trace", (".csv", ".csv.gz", ".gz"), {ImportRole.TRACE: (1, 1)}, ImportRole.TRACE),
    "swf": FormatSpec("SWF trace", (".swf", ".swf.gz", ".gz"), {ImportRole.TRACE: (1, 1)}, ImportRole.TRACE),
    "google2011": FormatSpec(
        "Google 2011 events file",
        (".csv", ".csv.gz", ".gz"),
        {
            ImportRole.TASK_EVENTS: (1, MAX_FILES),
            ImportRole.JOB_EVENTS: (0, MAX_FILES),
            ImportRole.MACHINE_EVENTS: (0, 1),
        },
        ImportRole.TASK_EVENTS,
    ),
    # Workflows: one job (a DAG) per instance, all arriving at 0; `simcore import` replays streams.
    "wfcommons": FormatSpec(
        "WfCommons instance", (".json", ".json.gz", ".gz"), {ImportRole.TRACE: (1, MAX_FILES)}, ImportRole.TRACE
    ),
    TraceFormat.ALIBABA: FormatSpec(
        "Alibaba v2018 batch_task or batch_instance file",
        (".csv", ".csv.gz", ".gz"),
        {ImportRole.TRACE: (1, MAX_FILES)},
        ImportRole.TRACE,
    ),
    TraceFormat.AZURE: FormatSpec(
        "Azure packing trace database",
        (".sqlite", ".db", ".sqlite.gz", ".gz"),
        {ImportRole.TRACE: (1, 1)},
        ImportRole.TRACE,
        magic=b"SQLite format 3\x00",
    ),
}


def format_choices() -> list[tuple[str, str]]:
    """Every trace format the upload form and the API offer (models.TraceFormat's choices)."""
    return list(TraceFormat.choices)


#: Import options, their defaults, and the formats they apply to.
DEFAULTS: dict[str, Any] = {
    "format": "csv",
    "on_error": "raise",
    "unfinished": "cut",
    "running_at_start": "keep",
    "start_s": None,
    "end_s": None,
    "cluster": None,
    "classes": None,
    "class_window_hours": 24.0,
    "class_seed": 0,
    "class_duration": False,
    "map": None,
    "where": None,
}
_REAL_ONLY = ("start_s", "end_s")  # the window: Google and SWF only (a CSV is cut by an experiment's hours)
_WINDOW = ("start_s", "end_s")  # Google and SWF only (a WfCommons import takes a cluster, to check cores against)


# ---------------------------------------------------------------------------- options


def _number(
    opts: Mapping[str, Any],
    key: str,
    *,
    integer: bool = False,
    lo: float | None = None,
    hi: float | None = None,
    positive: bool = False,
) -> Any:
    v = opts[key]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not float(v).is_integer()):
        raise ParameterError(f"{key} must be {'an integer' if integer else 'a number'}, got {v!r}")
    if not math.isfinite(v) or (lo is not None and v < lo) or (hi is not None and v > hi) or (positive and v <= 0):
        rng = "positive" if positive else f"between {lo:g} and {hi:g}" if hi is not None else f"at least {lo:g}"
        raise ParameterError(f"{key} must be {rng}, got {v!r}")
    return int(v) if integer else float(v)


def check_import_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """The normalised import options; ParameterError names the option and its valid values.

    ``format``: csv, swf or google2011. ``on_error``: ``raise`` stops at the
    first malformed row (file, line, field), ``skip`` skips and counts such
    rows in the report (every format). ``map``/``where``: a CSV with other
    column names (:mod:`simcore.traces.colmap`'s grammar).
    ``start_s``/``end_s``: the window (s, Google and SWF). ``unfinished``:
    Google tasks running at the window's end are ``cut`` or ``drop``-ped.
    ``cluster``: a cluster preset to normalise against (default: Google's
    machine_events or the google-2011 preset; SWF's parallel computer; for a
    CSV, :func:`simcore.traces.importer.csv_default_cluster`, as the CLI); for
    ``wfcommons`` instances, the cluster whose largest machine's cores clip
    the tasks' requests (default dse-2020).
    ``classes``: K k-means job classes fitted on the first
    ``class_window_hours`` with ``class_seed`` (LoTES section 5.3.2).
    """
    from simcore.presets import CLUSTERS

    unknown = sorted(set(options) - set(DEFAULTS))
    if unknown:
        raise ParameterError(f"unknown import option(s) {unknown}; valid options: {', '.join(DEFAULTS)}")
    o = {**DEFAULTS, **{k: v for k, v in options.items() if v is not None and v != ""}}
    if o["format"] not in FORMATS:
        raise ParameterError(f"format must be one of {', '.join(FORMATS)}, got {o['format']!r}")
    for key, valid in (
        ("on_error", ("raise", "skip")),
        ("unfinished", ("cut", "drop")),
        ("running_at_start", ("keep", "drop")),
    ):
        if o[key] not in valid:
            raise ParameterError(f"{key} must be one of {', '.join(valid)}, got {o[key]!r}")
    # start_s None: the window opens at the trace's first event (issue 17).
    if o["start_s"] is not None:
        o["start_s"] = _number(o, "start_s", lo=0.0)
    if o["end_s"] is not None:
        o["end_s"] = _number(o, "end_s", lo=0.0)
        if o["end_s"] <= (o["start_s"] or 0.0):
            raise ParameterError(f"end_s ({o['end_s']:g}) must be after start_s ({o['start_s'] or 0.0:g})")
    if o["cluster"] is not None:
        CLUSTERS.get(str(o["cluster"]))  # UnknownNameError lists the presets
        o["cluster"] = str(o["cluster"])
    if o["format"] == TraceFormat.CSV:
        given = [k for k in _REAL_ONLY if o[k] != DEFAULTS[k]]
        if given:
            raise ParameterError(
                f"{', '.join(given)} apply to google2011 and swf traces; a CSV trace is used as it "
                "is (an experiment's hours cut it)"
            )
        o.update(check_map_options(o["map"], o["where"]))
    elif o["map"] is not None or o["where"] is not None:
        raise ParameterError("map and where apply to csv traces only")
    if o["format"] == TraceFormat.WFCOMMONS:
        given = [k for k in _WINDOW if o[k] != DEFAULTS[k]]
        if given:
            raise ParameterError(f"{', '.join(given)} apply to google2011 and swf traces, not to wfcommons instances")
    windowed = (TraceFormat.GOOGLE2011, TraceFormat.ALIBABA, TraceFormat.AZURE)
    if o["format"] not in windowed and o["unfinished"] != "cut":
        raise ParameterError("unfinished applies to google2011, alibaba and azure traces only")
    if o["format"] not in windowed and o["running_at_start"] != "keep":
        raise ParameterError("running_at_start applies to google2011, alibaba and azure traces only")
    if o["classes"] is not None:
        k = _number(o, "classes", integer=True, lo=1, hi=MAX_CLASSES)
        o["classes"] = {
            "k": k,
            "window_hours": _number(o, "class_window_hours", positive=True),
            "seed": _number(o, "class_seed", integer=True, lo=0, hi=MAX_SEED),
            "use_duration": bool(o["class_duration"]),
        }
    for key in ("class_window_hours", "class_seed", "class_duration"):
        del o[key]
    return o


def check_map_options(column_map: Any, where: Any) -> dict[str, str | None]:
    """``map`` and ``where`` parsed and written back in canonical form; ParameterError starts with the option."""
    from simcore.traces import colmap

    out: dict[str, str | None] = {"map": None, "where": None}
    for key, parse in (("map", colmap.parse_map), ("where", colmap.parse_where)):
        v = column_map if key == "map" else where
        if v is None:
            continue
        if not isinstance(v, str):
            raise ParameterError(f"{key} must be text, got {v!r}")
        try:
            out[key] = parse(v).text()
        except ParameterError as e:
            raise ParameterError(f"{key}: {str(e).split(': ', 1)[-1]}") from None
    return out


def _check_columns(content: bytes, filename: str, opts: Mapping[str, Any]) -> None:
    """A map or filter naming a column the file's header lacks fails the request (a 400), not the import."""
    from simcore.traces import colmap

    if not (opts.get("map") or opts.get("where")):
        return
    head = head_text(content)
    try:
        header = colmap.sniff(head, 0).header
        mapping = colmap.parse_map(opts["map"]) if opts.get("map") else colmap.identity_map(header)
        colmap.bind(
            mapping, colmap.parse_where(opts["where"]) if opts.get("where") else colmap.Where(), header, filename, 1
        )
    except ParameterError as e:
        raise ParameterError(f"map: {e}") from None
    except InputError as e:
        raise ParameterError(f"map: {e}") from None


#: Bytes of a file's (decompressed) head that the mapping page shows and the column check reads.
HEAD_BYTES = 64 << 10


def head_text(content: bytes) -> str:
    """The first whole lines (at most HEAD_BYTES) of a plain or gzipped file, as text."""
    if content.startswith(GZIP_MAGIC):
        import zlib

        try:
            raw = zlib.decompressobj(wbits=31).decompress(content, HEAD_BYTES)
        except zlib.error:
            raise InputError("not a valid gzip file") from None
    else:
        raw = content[:HEAD_BYTES]
    if len(raw) >= HEAD_BYTES and b"\n" in raw:
        raw = raw[: raw.rindex(b"\n")]
    return raw.decode("utf-8-sig", errors="replace").replace("\r", "")


# ---------------------------------------------------------------------------- the request


def _check_magic(fmt: FormatSpec, fname: str, content: bytes) -> None:
    """A binary format's name and first bytes (after gzip), checked cheaply in the request."""
    if fmt.magic is None:
        return
    if not fname.lower().endswith(fmt.suffixes):
        raise InputError(f"a {fmt.label} must be a {' or '.join(fmt.suffixes)} file", file=fname)
    head = content[: len(fmt.magic)]
    if content.startswith(GZIP_MAGIC):
        try:
            head = zlib.decompressobj(wbits=31).decompress(content[: 1 << 16], len(fmt.magic))
        except zlib.error as e:
            raise InputError(f"corrupt gzip data at the start of the file ({e})", file=fname) from None
    if head != fmt.magic:
        raise InputError(f"not an {fmt.label}: it does not start like one", file=fname)


def _named(content: bytes, name: str) -> io.BytesIO:
    """A binary file object whose ``name`` the readers put in their error messages."""
    f = io.BytesIO(content)
    f.name = name
    return f


def create_trace_import(
    owner: User,
    name: str,
    filename: str,
    content: bytes,
    *,
    files: Sequence[InputFile] = (),
    options: Mapping[str, Any],
) -> TraceUpload:
    """Check an upload cheaply and store it as a pending import; the task starts after the commit."""
    opts = check_import_options(options)
    fmt = FORMATS[opts["format"]]
    parts = list(files) or [InputFile(fmt.main_role, filename, content)]
    if len(parts) > MAX_FILES:
        raise ParameterError(f"at most {MAX_FILES} files per upload, got {len(parts)}")
    for role, (lo, hi) in fmt.roles.items():
        n = sum(1 for f in parts if f.role == role)
        if not lo <= n <= hi:
            want = f"exactly {lo}" if lo == hi else f"at least {lo}" if hi == MAX_FILES else f"at most {hi}"
            raise ParameterError(f"a {opts['format']} upload takes {want} {role} file(s), got {n}")
    stray = sorted({f.role for f in parts} - set(fmt.roles))
    if stray:
        raise ParameterError(f"a {opts['format']} upload takes no {', '.join(stray)} files")
    clean: list[InputFile] = []
    for f in parts:
        fname = safe_filename(f.filename, f"{f.role}.csv")
        try:
            check_upload_size(len(f.content))
        except InputError as e:
            raise InputError(e.reason, file=fname) from None
        if fmt.magic is None:
            check_file_type(fmt.label, fmt.suffixes, fname, f.content)
        else:
            _check_magic(fmt, fname, f.content)
        if f.role == fmt.main_role and opts["format"] == TraceFormat.CSV:
            _check_columns(f.content, fname, opts)
        clean.append(InputFile(f.role, fname, f.content))
    total = sum(len(f.content) for f in clean)
    if total > settings.SIMCORE_MAX_UPLOAD_MB * 2**20:
        raise InputError(
            f"the files are {total / 2**20:.1f} MB together; the limit is {settings.SIMCORE_MAX_UPLOAD_MB} MB"
        )
    # Stored compressed; the readers recognise gzip by its magic bytes, whatever the name says.
    stored = [f.content if f.content.startswith(GZIP_MAGIC) else gzip.compress(f.content, 1) for f in clean]
    main = next(f for f in clean if f.role == fmt.main_role)
    with transaction.atomic():
        up = TraceUpload.objects.create(
            owner=owner,
            name=(name or main.filename)[:100],
            filename=main.filename,
            content_gz=b"",
            size_bytes=total,
            sha256="",
            info={"files": len(clean)},
            format=opts["format"],
            options=opts,
            status=ImportStatus.PENDING,
            bytes_total=sum(len(b) for b in stored),
        )
        order = {role: 0 for role in fmt.roles}
        rows = []
        for f, data in zip(clean, stored, strict=True):
            rows.append(
                TraceImportFile(
                    upload=up,
                    role=f.role,
                    position=order[f.role],
                    filename=f.filename,
                    size_bytes=len(f.content),
                    content_gz=data,
                )
            )
            order[f.role] += 1
        TraceImportFile.objects.bulk_create(rows)
        pk = up.pk
        transaction.on_commit(lambda: setattr(up, "queued", enqueue_import(pk)))
    return up


def enqueue_import(upload_id: int) -> bool:
    """Queue the import (:mod:`dashboard.common.queueing`); False when the broker is unreachable (it stays pending)."""
    return work.enqueue_import(upload_id)


def cancel_import(upload: TraceUpload) -> bool:
    """Stop a pending or running import; a running one stops at its reader's next progress report."""
    with transaction.atomic():
        won = move(
            TraceUpload,
            upload.pk,
            IMPORT_ACTIVE,
            ImportStatus.CANCELLED,
            IMPORT_TRANSITIONS,
            finished_at=timezone.now(),
        )
        if won:
            TraceImportFile.objects.filter(upload_id=upload.pk).delete()
    return won


def progress_payload(upload: TraceUpload) -> dict[str, Any]:
    """What the uploads page polls: status, stage, fraction of input bytes read, rows, the error."""
    upload.refresh_from_db(fields=["status", "stage", "fraction", "rows_read", "error", "info", "queued_at"])
    return {
        "waiting": waiting.notes([(upload.status, upload.queued_at)], "long")[0],
        "id": upload.pk,
        "status": upload.status,
        "stage": upload.stage,
        "fraction": upload.fraction,
        "rows_read": upload.rows_read,
        "error": upload.error,
        "info": upload.info,
    }


# ---------------------------------------------------------------------------- the worker


class _Reporter:
    """simcore import progress -> the row (at most every PROGRESS_EVERY_S); raises Cancelled once it was cancelled.

    The fraction is over all input bytes (compressed, as stored), files read
    in the readers' order: machine events, job events, task events.
    """

    ORDER = (ImportRole.MACHINE_EVENTS, ImportRole.JOB_EVENTS, ImportRole.TASK_EVENTS, ImportRole.TRACE)
    #: The readers' stage names -> our file roles.
    STAGES = {
        "task_events": ImportRole.TASK_EVENTS,
        "job_events": ImportRole.JOB_EVENTS,
        "swf": ImportRole.TRACE,
        "trace": ImportRole.TRACE,
        "wfcommons": ImportRole.TRACE,
    }

    def __init__(self, upload_id: int, files: Sequence[TraceImportFile], attempt: int | None = None) -> None:
        self.upload_id = upload_id
        #: This worker's attempt (None: any); a worker declared lost writes nothing once another took over.
        self.attempt = attempt
        self.last = 0.0
        self.rows: dict[str, int] = {}
        ordered = sorted(files, key=lambda f: (self.ORDER.index(f.role), f.position))
        self.total = max(1, sum(len(f.content_gz) for f in ordered))
        self.before: dict[tuple[str, int], int] = {}
        acc = 0
        for f in ordered:
            self.before[(f.role, f.position)] = acc
            acc += len(f.content_gz)

    def __call__(self, p: ImportProgress) -> None:
        self.rows[p.stage] = p.rows
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and p.bytes_done != p.bytes_total:
            return
        self.last = now
        base = self.before.get((self.STAGES.get(p.stage, p.stage), p.file_index), 0)
        # Reading ends at 99%: classifying and storing the trace come after.
        fraction = min(0.99, (base + p.bytes_done) / self.total)
        self.write(f"{p.stage} {p.file_index + 1}/{p.n_files}", fraction)

    def write(self, stage: str, fraction: float | None = None) -> None:
        fields: dict[str, Any] = {
            "stage": stage[:40],
            "rows_read": sum(self.rows.values()),
            "heartbeat_at": timezone.now(),
        }
        if fraction is not None:
            fields["fraction"] = fraction
        rows = TraceUpload.objects.filter(pk=self.upload_id, status=ImportStatus.RUNNING)
        if self.attempt is not None:
            rows = rows.filter(attempt=self.attempt)
        try:
            alive = rows.update(**fields)
        except outages.DATABASE_ERRORS as e:  # a blip: read on, the next write (or the outcome's) retries
            log.warning("progress of trace import %s not written: %s", self.upload_id, e)
            connection.close()
            return
        if not alive:
            raise Cancelled(f"trace import {self.upload_id} was cancelled")


class _CountingReader(io.RawIOBase):
    """A byte stream that reports how far it has been read (the CSV reader has no progress callback)."""

    def __init__(self, data: bytes, name: str, report: Any) -> None:
        super().__init__()
        self._buf = io.BytesIO(data)
        self.name = name
        self._report = report

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        n = self._buf.readinto(b)
        self._report(self._buf.tell())
        return n


@dataclass
class Converted:
    """A converted trace, ready to be stored (``content_gz``: gzip of the trace file ``filename``)."""

    filename: str
    content_gz: bytes
    sha256: str
    info: dict[str, Any]
    report: dict[str, Any]
    classes: dict[str, Any] | None
    #: The machines the input described (Google machine_events, SWF's parallel computer), else None.
    cluster: Cluster | None


class _HashingWriter:
    """Writes bytes through to ``out`` and hashes them (the SHA-256 of the trace file, not of its gzip)."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.hash = hashlib.sha256()

    def write(self, b: bytes) -> int:
        self.hash.update(b)
        return int(self.out.write(b))


def _stem(name: str) -> str:
    stem = safe_filename(name, "trace")
    for suffix in (".gz", ".csv", ".swf", ".json"):
        stem = stem[: -len(suffix)] if stem.lower().endswith(suffix) and len(stem) > len(suffix) else stem
    return stem


def _read_csv(f: InputFile, options: Mapping[str, Any], name: str, progress: _Reporter) -> ImportResult:
    """The CSV through :func:`simcore.traces.importer.import_trace`, as ``simcore import --format csv`` reads it."""
    from simcore.traces import importer

    total = len(f.content)
    stream = io.BufferedReader(
        _CountingReader(
            f.content, f.filename, lambda done: progress(ImportProgress("trace", f.filename, 0, 1, done, total, 0))
        ),
        buffer_size=1 << 20,
    )
    return importer.import_trace(
        "csv",
        [stream],
        cluster=options.get("cluster"),
        on_error=options.get("on_error", "raise"),
        column_map=options.get("map"),
        where=options.get("where"),
        name=name,
    )


def _read(
    fmt: str, by_role: Mapping[str, list[InputFile]], options: Mapping[str, Any], name: str, progress: _Reporter
) -> ImportResult:
    """Step 1: the raw files read by simcore's reader of ``fmt`` (rows skipped or dropped in its report)."""
    from simcore.traces import importer

    if fmt == TraceFormat.CSV:
        return _read_csv(by_role[ImportRole.TRACE][0], options, name, progress)
    if fmt == TraceFormat.WFCOMMONS:
        return importer.import_trace(
            "wfcommons",
            [_named(f.content, f.filename) for f in by_role[ImportRole.TRACE]],
            cluster=options.get("cluster"),
            name=name,
            progress=progress,
        )
    main = by_role.get(ImportRole.TASK_EVENTS) or by_role.get(ImportRole.TRACE) or []
    machines = by_role.get(ImportRole.MACHINE_EVENTS)
    result = importer.import_trace(
        fmt,  # type: ignore[arg-type]
        [_named(f.content, f.filename) for f in main],
        job_events=[_named(f.content, f.filename) for f in by_role.get(ImportRole.JOB_EVENTS, [])],
        machine_events=_named(machines[0].content, machines[0].filename) if machines else None,
        cluster=options.get("cluster"),
        start_s=options["start_s"],
        end_s=options["end_s"],
        unfinished=options["unfinished"],
        running_at_start=options.get("running_at_start", "keep"),
        on_error=options["on_error"],
        name=name,
        progress=progress,
    )
    if options["on_error"] == "skip" and not result.report.rows_skipped:
        result.report.notes.append("on_error=skip: no row needed skipping")
    return result


def _stored_file(
    fmt: str,
    main_file: InputFile,
    wl: Workload,
    result: ImportResult,
    options: Mapping[str, Any],
    name: str,
    *,
    classified: bool,
) -> tuple[str, bytes, str]:
    """Step 3: the project trace to store (file name, gzip bytes, SHA-256 of the text)."""
    from simcore.traces.tracefile import write_trace

    as_sent = not (options.get("map") or options.get("where") or result.report.rows_skipped or result.report.dropped)
    if fmt == TraceFormat.CSV and not classified and as_sent:
        # The user's own file, byte for byte, as before background imports (read_trace found no fault in it).
        raw = main_file.content if main_file.filename.lower().endswith(".gz") else gzip.decompress(main_file.content)
        return main_file.filename, gzip.compress(raw, 1), hashlib.sha256(raw).hexdigest()
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", compresslevel=1, mtime=0) as gz:
        out = _HashingWriter(gz)
        write_trace(wl, out, priority=result.priority)  # type: ignore[arg-type]
    return f"{_stem(name)}.csv", buf.getvalue(), out.hash.hexdigest()


def _info(fmt: str, wl: Workload, result: ImportResult, classes: dict[str, Any] | None) -> dict[str, Any]:
    """Step 4: what the uploads page says of the stored trace."""
    info: dict[str, Any] = {
        "jobs": int(wl.n_jobs),
        "hours": float(wl.horizon_s) / 3600.0,
        "resources": list(wl.resources),
        "format": fmt,
        "rows_read": int(sum(result.report.rows_read.values())),
        "rows_skipped": int(sum(result.report.rows_skipped.values())),
        "jobs_dropped": int(sum(result.report.dropped.values())),
    }
    if classes is not None:
        info["classes"] = len(classes["classes"])
    if wl.graph is not None:  # jobs made of tasks: "jobs" above counts tasks
        info["task_jobs"] = int(wl.graph.n_jobs)
    return info


def convert(
    fmt: str, files: Sequence[InputFile], options: Mapping[str, Any], *, name: str, progress: _Reporter
) -> Converted:
    """Read the raw files with simcore, fit classes if asked, and write the project trace (no database here)."""
    from simcore.traces import importer

    by_role: dict[str, list[InputFile]] = {}
    for f in files:
        by_role.setdefault(f.role, []).append(f)
    result = _read(fmt, by_role, options, name, progress)
    wl: Workload = result.workload
    derived = (
        result.cluster
        if options.get("cluster") is None
        and (fmt in (TraceFormat.SWF, "alibaba", "azure") or ImportRole.MACHINE_EVENTS in by_role)
        else None
    )
    classes = None
    if options.get("classes"):  # step 2: job classes by k-means
        progress.write("fitting job classes", 0.99)
        c = options["classes"]
        result = importer.classify(
            result, c["k"], window_hours=c["window_hours"], seed=c["seed"], use_duration=c["use_duration"]
        )
        wl = result.workload
        classes = clean_json(importer.class_table_dict(wl))
    progress.write("storing the trace", 0.99)
    filename, content_gz, digest = _stored_file(
        fmt, files[0], wl, result, options, name, classified=classes is not None
    )
    report = clean_json(importer.summary(result))
    return Converted(filename, content_gz, digest, _info(fmt, wl, result, classes), report, classes, derived)


def execute_import(upload_id: int, worker: str = "", give_back: int | None = None) -> str:
    """Claim a pending import, convert it, store the result; returns the final status.

    An import that is gone, already claimed or cancelled is left alone.
    Errors become the row's message; nothing usable is stored. The claim and
    every later write carry this worker's attempt number, as runs do
    (:mod:`dashboard.common.recovery`), and the same time and memory limits apply.
    A database outage raises (the task is retried, giving back ``give_back``: see
    :mod:`dashboard.common.outages`).
    """
    outages.give_back(
        TraceUpload, upload_id, give_back, ImportStatus.RUNNING, ImportStatus.PENDING, stage="", fraction=0.0
    )
    now = timezone.now()
    attempt = TraceUpload.objects.filter(pk=upload_id).values_list("attempt", flat=True).first()
    if attempt is None or not move(
        TraceUpload,
        upload_id,
        ImportStatus.PENDING,
        ImportStatus.RUNNING,
        IMPORT_TRANSITIONS,
        guard=Q(attempt=attempt),
        attempt=attempt + 1,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        stage="starting",
    ):
        return _status(upload_id)
    attempt += 1
    limits = Limits.from_settings("import")
    mine = TraceUpload.objects.filter(pk=upload_id, status=ImportStatus.RUNNING, attempt=attempt)
    try:
        with (
            outages.interrupted_as(attempt),
            Heartbeat(
                mine,
                stamp=beats.target(TraceUpload, upload_id, status=ImportStatus.RUNNING, attempt=attempt),
                time_limit_s=limits.time_s,
                on_time_limit=lambda: _finish_failed(upload_id, limits.time_message(), attempt),
            ) as heartbeat,
        ):
            return _import(upload_id, attempt, limits, heartbeat)
    except Cancelled:  # raised by the heartbeat outside the reader's own handler
        return status_after_interrupt(lambda: _status(upload_id))


def _status(upload_id: int) -> str:
    return TraceUpload.objects.filter(pk=upload_id).values_list("status", flat=True).first() or "missing"


def _import(
    upload_id: int, attempt: int | None = None, limits: Limits | None = None, heartbeat: Heartbeat | None = None
) -> str:
    limits = limits or Limits.from_settings("import")
    up = TraceUpload.objects.defer("content_gz").get(pk=upload_id)
    rows = list(TraceImportFile.objects.filter(upload_id=upload_id))
    over_memory = False
    try:
        with limits.memory():
            files = [InputFile(r.role, r.filename, bytes(r.content_gz)) for r in rows]
            for r, f in zip(rows, files, strict=True):
                r.content_gz = f.content  # the reporter sizes files by their stored bytes
            conv = convert(up.format, files, up.options, name=up.name, progress=_Reporter(upload_id, rows, attempt))
        if heartbeat is not None:
            heartbeat.finishing()  # the outcome's conditional write decides from here (see Heartbeat.finishing)
    except Cancelled:  # cancelled, deleted, over the time limit, or declared lost while this worker was too slow
        return status_after_interrupt(lambda: _status(upload_id))
    except SimcoreError as e:
        message = str(e)
    except MemoryError:
        over_memory = True  # written after the handler, which keeps the import's arrays alive
    except outages.OUTAGE_ERRORS:  # not the import's fault: the task is retried (dashboard.common.outages)
        raise
    except Exception as e:  # a bug: log the traceback for us, show the user one line
        log.exception("trace import %s failed", upload_id)
        message = f"internal error ({type(e).__name__}): {e}"
    else:
        return _store(up, conv, attempt)
    if heartbeat is not None:
        heartbeat.finishing()
    return _finish_failed(upload_id, limits.memory_message() if over_memory else message, attempt)


def _finish_failed(upload_id: int, message: str, attempt: int | None = None) -> str:
    """Record the error and drop the raw files, if this attempt still holds the import; nothing usable remains.

    A cancelled import dropped its files when it was cancelled, and one
    declared lost keeps them for its next attempt (or dropped them when failed).
    """
    with transaction.atomic():
        if move(
            TraceUpload,
            upload_id,
            ImportStatus.RUNNING,
            ImportStatus.FAILED,
            IMPORT_TRANSITIONS,
            guard=Q(attempt=attempt) if attempt is not None else None,
            error=message[:4000],
            finished_at=timezone.now(),
        ):
            TraceImportFile.objects.filter(upload_id=upload_id).delete()
    return _status(upload_id)


def _store(up: TraceUpload, conv: Converted, attempt: int | None = None) -> str:
    """Everything the import produced, in one transaction; nothing if it was cancelled (or lost) meanwhile."""
    from simcore.clusterfile import write_cluster

    with transaction.atomic():
        cu = None
        if conv.cluster is not None:
            buf = io.BytesIO()
            write_cluster(conv.cluster, buf)
            text = buf.getvalue()
            cu = ClusterUpload.objects.create(
                owner_id=up.owner_id,
                name=f"{up.name} machines"[:100],
                filename=f"{_stem(up.name)}-cluster.json",
                content_gz=gzip.compress(text, 6),
                size_bytes=len(text),
                sha256=hashlib.sha256(text).hexdigest(),
                info={
                    "machines": int(conv.cluster.n_machines),
                    "configurations": int(conv.cluster.n_configs),
                    "resources": list(conv.cluster.resources),
                    "from_trace": up.pk,
                },
            )
        won = move(
            TraceUpload,
            up.pk,
            ImportStatus.RUNNING,
            ImportStatus.READY,
            IMPORT_TRANSITIONS,
            guard=Q(attempt=attempt) if attempt is not None else None,
            content_gz=conv.content_gz,
            filename=conv.filename,
            sha256=conv.sha256,
            info=conv.info,
            report=conv.report,
            classes=conv.classes,
            cluster_upload=cu,
            fraction=1.0,
            stage="done",
            finished_at=timezone.now(),
            error="",
            rows_read=int(conv.info["rows_read"]),
        )
        if not won:  # cancelled, deleted or declared lost meanwhile: undo the cluster upload too
            transaction.set_rollback(True)
        else:
            TraceImportFile.objects.filter(upload_id=up.pk).delete()
    if won:
        return ImportStatus.READY
    # Read after the block: a transaction marked for rollback refuses every further query.
    return TraceUpload.objects.filter(pk=up.pk).values_list("status", flat=True).first() or "missing"


__all__ = [
    "DEFAULTS",
    "FORMATS",
    "cancel_import",
    "check_import_options",
    "convert",
    "create_trace_import",
    "execute_import",
    "progress_payload",
]
