"""The one place that converts between database rows and simcore objects.

Views and tasks call these functions and hold no domain logic themselves.
Scenario dicts follow :mod:`simcore.archive`; a worker runs a run through
:func:`simcore.archive.run_scenario`, exactly as ``simcore rerun`` does, so
the numbers on the page are the numbers a colleague reproduces.
"""

from __future__ import annotations

import contextlib
import ctypes
import gzip
import hashlib
import importlib
import json
import logging
import math
import re
import secrets
import tempfile
import threading
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import DatabaseError, connection, transaction
from django.db.models import QuerySet
from django.utils import timezone

from dashboard import queueing
from dashboard.models import (
    ClusterUpload,
    Experiment,
    ImportStatus,
    Run,
    RunJobs,
    RunResult,
    Status,
    Team,
    TraceUpload,
    Upload,
    Visibility,
    heartbeat_every_s,
)
from simcore import archive
from simcore.api import RunOutcome
from simcore.engine import Progress
from simcore.errors import Cancelled, InputError, ParameterError, SimcoreError
from simcore.version import code_version

log = logging.getLogger(__name__)

#: Least wall time between two progress writes of one run (s): the bars move, the DB rests.
PROGRESS_EVERY_S = 0.5


# ---------------------------------------------------------------------------- uploads


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
    :data:`UPLOAD_KINDS` (or, for traces, in :data:`dashboard.imports.FORMATS`):
    the pages, the API and the checks pick it up.
    """

    model: type[ClusterUpload] | type[TraceUpload]
    label: str
    #: Accepted file name endings (lower case); ``.gz`` variants are gzip-compressed text.
    suffixes: tuple[str, ...]
    default_name: str
    #: (content, file name) -> the ``info`` dict shown in lists; raises InputError on bad content.
    #: None: the file is read by a background import (:mod:`dashboard.imports`), not in the request.
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
    one background task converts (:func:`dashboard.imports.execute_import`);
    ``files`` gives several files (Google 2011 parts), ``options`` the import
    options (:func:`dashboard.imports.check_import_options`). Nothing is
    stored on error; every error is an InputError or ParameterError naming
    the file (never our temporary copy) or the option.
    """
    spec = UPLOAD_KINDS.get(kind)
    if spec is None:
        raise ParameterError(f"unknown upload kind {kind!r}; valid kinds: {', '.join(UPLOAD_KINDS)}")
    if spec.inspect is None:
        from dashboard import imports

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
    """Delete one of the caller's uploads (the caller checked ownership); refused while an experiment uses it.

    Deleting a trace whose import is still running stops it: the worker's
    next progress write finds no row and gives up, storing nothing.
    """
    from dashboard.access import visible_experiments

    field = "cluster_upload" if isinstance(upload, ClusterUpload) else "trace_upload"
    users = Experiment.objects.filter(**{field: upload})
    if users.exists():
        # Count only what the owner can see: others' private forks must not be revealed.
        n = visible_experiments(upload.owner).filter(**{field: upload}).count()
        which = f"by {n} experiment(s) you can see" if n else "by experiments"
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


# ---------------------------------------------------------------------------- experiments


#: Parameters that name a file on the server (simcore's CLI reads them); never taken from web input.
SERVER_PATH_PARAMS = frozenset({"profile"})
#: Ceiling for integer parameters the registry leaves unbounded (machines per configuration...):
#: a web request must not make the server build a billion-machine cluster.
WEB_INT_CEILING = 100_000
#: Bounds the form and the API share.
MAX_LOAD = 10.0
MAX_HOURS = 24 * 365
MAX_SEEDS = 50
MAX_SEED = 2**32 - 1


def _check_web_params(kind: str, name: str, params: tuple[Any, ...], values: dict[str, Any]) -> None:
    for p in params:
        v = values.get(p.name)
        if p.name in SERVER_PATH_PARAMS and v not in (None, "", p.default):
            raise ParameterError(f"{kind} {name!r} parameter {p.name!r} names a server file and cannot be set here")
        # The registry's own default is always allowed (LoTES' max_bins default is above the ceiling).
        if p.type is int and p.max is None and isinstance(v, int) and v > WEB_INT_CEILING and v != p.default:
            raise ParameterError(
                f"{kind} {name!r} parameter {p.name!r} must be at most {WEB_INT_CEILING} here, got {v}"
            )


def check_scenario(scenario: Any) -> dict[str, Any]:
    """Validate a scenario coming from the web (form or API): simcore's checks plus the platform's bounds.

    Returns the normalised scenario; every problem is a SimcoreError naming
    the part, parameter or valid choices.
    """
    from simcore.presets import CLUSTERS, WORKLOADS
    from simcore.schedulers import SCHEDULERS

    try:
        sc = archive.validate_scenario(scenario)
    except SimcoreError:
        raise
    except (TypeError, ValueError, KeyError, AttributeError) as e:  # odd JSON shapes simcore does not expect
        raise ParameterError(f"the scenario is malformed ({type(e).__name__}: {e})") from None
    if sc["load"] > MAX_LOAD:
        raise ParameterError(f"load must be at most {MAX_LOAD:g}, got {sc['load']:g}")
    if sc["hours"] is not None and sc["hours"] > MAX_HOURS:
        raise ParameterError(f"hours must be at most {MAX_HOURS}, got {sc['hours']:g}")
    if len(sc["seeds"]) > MAX_SEEDS or max(sc["seeds"]) > MAX_SEED:
        raise ParameterError(f"seeds: at most {MAX_SEEDS} seeds, each below 2^32")
    n_runs = len(sc["schedulers"]) * len(sc["seeds"])
    if n_runs > settings.SIMCORE_MAX_RUNS:
        raise ParameterError(
            f"seeds: {len(sc['schedulers'])} schedulers x {len(sc['seeds'])} seeds is more than "
            f"the {settings.SIMCORE_MAX_RUNS} runs one experiment may have"
        )
    for part, registry in (("cluster", CLUSTERS), ("workload", WORKLOADS)):
        if "preset" in sc[part]:
            name = sc[part]["preset"]
            _check_web_params(part, name, registry.get(name).params, sc[part]["params"])
    for name in sc["schedulers"]:
        _check_web_params("scheduler", name, SCHEDULERS.get(name).params, sc["scheduler_params"][name])
    if "preset" in sc["cluster"]:
        # Building the cluster is cheap and catches cross-parameter errors now, not in a worker.
        archive.build_cluster(sc)
    return sc


def check_team_choice(owner: User, team: Team | None, visibility: str) -> None:
    """The owner may only put experiments in teams where they run experiments; ``team`` visibility needs a team."""
    from dashboard.access import run_teams

    if visibility not in Visibility.values:
        raise ParameterError(f"visibility must be one of {', '.join(Visibility.values)}, got {visibility!r}")
    if team is not None and not run_teams(owner).filter(pk=team.pk).exists():
        raise ParameterError(f"you cannot run experiments in team {team.name!r} (owners and members can)")
    if visibility == Visibility.TEAM and team is None:
        raise ParameterError("team visibility needs a team")


def check_resources(
    scenario: dict[str, Any], cluster_upload: ClusterUpload | None, trace_upload: TraceUpload | None
) -> None:
    """A trace and a cluster must name the same resources: checked at submission, not found by a worker."""
    if trace_upload is None:
        return  # a generated workload takes the cluster's resources
    wanted = list(trace_upload.info.get("resources") or [])
    if cluster_upload is not None:
        have, cname = list(cluster_upload.info.get("resources") or []), f"cluster upload {cluster_upload.name!r}"
    elif "preset" in scenario["cluster"]:
        from simcore.api import resolve_cluster

        spec = scenario["cluster"]
        have, cname = list(resolve_cluster(spec["preset"], spec["params"]).resources), f"cluster {spec['preset']!r}"
    else:
        return
    if wanted and have and wanted != have:
        raise ParameterError(
            f"trace {trace_upload.name!r} requests resources {wanted} but {cname} has {have}; "
            "choose a cluster with the trace's resources"
        )


def create_experiment(
    owner: User,
    scenario: dict[str, Any],
    *,
    name: str = "",
    cluster_upload: ClusterUpload | None = None,
    trace_upload: TraceUpload | None = None,
    team: Team | None = None,
    visibility: str = Visibility.PRIVATE,
    forked_from: Experiment | None = None,
) -> Experiment:
    """Store an experiment and its runs and enqueue one task per run (after the commit).

    Callers check the scenario (:func:`check_scenario`) and that the uploads
    are the owner's or come from ``forked_from``, which the owner can see.
    """
    scenario = archive.validate_scenario(scenario)
    check_team_choice(owner, team, visibility)
    check_resources(scenario, cluster_upload, trace_upload)
    names = archive.labels_of(scenario)
    with transaction.atomic():
        exp = Experiment.objects.create(
            owner=owner,
            name=name,
            scenario=scenario,
            cluster_upload=cluster_upload,
            trace_upload=trace_upload,
            cluster_label=names["cluster"][:200],
            workload_label=names["workload"][:200],
            team=team,
            visibility=visibility,
            share_token=new_share_token() if visibility == Visibility.PUBLIC else None,
            forked_from=forked_from,
        )
        runs = Run.objects.bulk_create(
            [Run(experiment=exp, scheduler=s, seed=seed) for seed in scenario["seeds"] for s in scenario["schedulers"]]
        )
        ids = (
            [r.pk for r in runs]
            if all(r.pk for r in runs)
            else list(exp.runs.order_by("id").values_list("id", flat=True))
        )
        transaction.on_commit(lambda: setattr(exp, "queued", enqueue(ids)))
    return exp


def new_share_token() -> str:
    """An unguessable public-link secret (256 random bits)."""
    return secrets.token_urlsafe(32)


def set_sharing(experiment: Experiment, *, team: Team | None, visibility: str) -> Experiment:
    """Change an experiment's team and visibility (the caller checked it is the owner's).

    Making it public creates a link if it has none; leaving public revokes the link.
    """
    check_team_choice(experiment.owner, team, visibility)
    experiment.team = team
    experiment.visibility = visibility
    if visibility == Visibility.PUBLIC:
        experiment.share_token = experiment.share_token or new_share_token()
    else:
        experiment.share_token = None
    experiment.save(update_fields=["team", "visibility", "share_token"])
    return experiment


def new_share_link(experiment: Experiment) -> str:
    """Replace the public link by a new one (the old one stops working); makes the experiment public."""
    experiment.visibility = Visibility.PUBLIC
    experiment.share_token = new_share_token()
    experiment.save(update_fields=["visibility", "share_token"])
    return experiment.share_token


def revoke_share_link(experiment: Experiment) -> None:
    """The public link stops working; the experiment stays visible to its team if it has one."""
    set_sharing(
        experiment, team=experiment.team, visibility=Visibility.TEAM if experiment.team_id else Visibility.PRIVATE
    )


def fork_uploads(source: Experiment) -> tuple[ClusterUpload | None, TraceUpload | None]:
    """The uploads a fork of ``source`` may reuse: exactly the ones ``source`` uses."""
    return source.cluster_upload, source.trace_upload


def enqueue(run_ids: list[int]) -> bool:
    """Queue the runs (:mod:`dashboard.queueing`); False when the broker is unreachable (they stay pending)."""
    return queueing.enqueue_runs(run_ids)


def cancel_run(run: Run) -> bool:
    """Cancel a pending or running run; a running one stops at its next progress report."""
    if not run.is_active:
        return False
    return run.transition(Status.CANCELLED, finished_at=timezone.now(), eta_s=None)


def cancel_experiment(experiment: Experiment) -> int:
    n = 0
    for run in experiment.runs.filter(status__in=[Status.PENDING, Status.RUNNING]):
        n += cancel_run(run)
    return n


# ---------------------------------------------------------------------------- execution


class Heartbeat:
    """While a worker runs ``rows`` (one running run or import), stamp their ``heartbeat_at`` every few seconds.

    A daemon thread of the worker process, independent of the simulation's
    progress callbacks: those stop during long phases (building a big
    workload, solving LPs, storing the results), and a live worker must never
    look lost (:func:`dashboard.models.fail_lost_runs`). ``rows`` must filter
    on ``status=running``: once the work left that status (finished,
    cancelled, declared lost) a stamp changes nothing and the thread stops.
    The thread uses its own database connection and closes it.

    Work that left ``running`` while it is still being done (cancelled, or
    declared lost because the worker looked dead) is stopped at once: the
    thread raises :class:`~simcore.errors.Cancelled` in the working thread
    (at its next Python instruction, whatever phase it is in: building the
    cluster or workload, solving LPs, simulating), so a declared-lost run
    never keeps the worker's only slot.
    """

    def __init__(self, rows: QuerySet[Any], every_s: float | None = None) -> None:
        self.rows = rows
        self.every_s = heartbeat_every_s() if every_s is None else every_s
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._worker_thread = threading.get_ident()
        self._thread = threading.Thread(target=self._beat, name="simcore-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        # Inside a transaction (a test calling the worker's code) other connections cannot see the claim
        # yet, so there is nothing to keep alive, and a stamp would only wait for this transaction's locks.
        if not connection.in_atomic_block:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # never interrupt the worker once its work is over
            self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self.every_s):
                try:
                    if not self.rows.update(heartbeat_at=timezone.now()):
                        self._interrupt()
                        return
                except DatabaseError as e:  # a busy or briefly unreachable database: the next beat retries
                    log.warning("heartbeat of %s failed: %s", self.rows.model.__name__, e)
        finally:
            connection.close()

    def _interrupt(self) -> None:
        with self._lock:
            if self._stop.is_set():
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._worker_thread), ctypes.py_object(Cancelled))
            log.warning("work of %s left 'running' while in progress: stopped", self.rows.model.__name__)


class _Reporter:
    """simcore progress callback: writes the run's progress, stops the run when it was cancelled."""

    def __init__(self, run: Run) -> None:
        self.run_id = run.pk
        self.last = 0.0

    def __call__(self, p: Progress) -> None:
        now = time.monotonic()
        if now - self.last < PROGRESS_EVERY_S and p.fraction < 1.0:
            return
        self.last = now
        f = p.fraction
        eta = p.wall_s * (1.0 - f) / f if 0.0 < f < 1.0 else (0.0 if f >= 1.0 else None)
        alive = Run.objects.filter(pk=self.run_id, status=Status.RUNNING).update(
            fraction=f, jobs_done=p.completed, jobs_total=p.jobs, eta_s=eta, heartbeat_at=timezone.now()
        )
        if not alive:
            raise Cancelled(f"run {self.run_id} was cancelled")


def execute_run(run_id: int, worker: str = "") -> str:
    """Claim a pending run, simulate it, store its results; returns the final status.

    A run that is gone, already claimed or cancelled is left alone. Errors
    become the run's message; other runs are untouched.
    """
    run = (
        Run.objects.select_related("experiment", "experiment__cluster_upload", "experiment__trace_upload")
        .filter(pk=run_id)
        .first()
    )
    if run is None or run.status != Status.PENDING:
        return run.status if run else "missing"
    now = timezone.now()
    if not run.transition(
        Status.RUNNING, started_at=now, heartbeat_at=now, worker=worker[:200], code_version=code_version()[:100]
    ):
        return "claimed elsewhere"
    try:
        with Heartbeat(Run.objects.filter(pk=run.pk, status=Status.RUNNING)):
            return _simulate(run)
    except Cancelled:  # raised by the heartbeat outside the simulation's own handler
        return _current_status(run)


def _simulate(run: Run) -> str:
    files: dict[str, Path] = {}
    try:
        with materialised_files(run.experiment) as files:
            outcome = archive.run_scenario(
                run.experiment.scenario, run.scheduler, run.seed, files, progress=_Reporter(run)
            )
    except Cancelled:  # cancelled, or declared lost while this worker was too slow to stamp its heartbeat
        return _current_status(run)
    except SimcoreError as e:
        return _fail(run, _upload_names(str(e), files, run.experiment))
    except MemoryError:
        return _fail(run, "the run needed more memory than the worker has")
    except Exception as e:  # a bug: log the traceback for us, show the user one line
        log.exception("run %s failed", run.pk)
        return _fail(run, f"internal error ({type(e).__name__}): {e}")
    return Status.FINISHED if store_outcome(run, outcome) else _current_status(run)


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
    run.refresh_from_db(fields=["status"])
    if run.status == Status.RUNNING:
        run.transition(Status.FAILED, error=message[:2000], finished_at=timezone.now(), eta_s=None)
    return run.status


def clean_json(x: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null (PostgreSQL's jsonb rejects them)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    if hasattr(x, "item"):  # numpy scalar
        return clean_json(x.item())
    return x


def store_outcome(run: Run, outcome: RunOutcome) -> bool:
    """Write a run's results and mark it finished in one transaction; False if it was cancelled first."""
    blob = archive.pack_jobs(outcome.jobs_columns())
    n = int(outcome.summary.get("jobs", 0))
    with transaction.atomic():
        if not run.transition(
            Status.FINISHED,
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
        RunJobs.objects.create(run=run, n_jobs=n, data=blob)
    return True


# ---------------------------------------------------------------------------- reading results


def runs_with_results(experiment: Experiment) -> list[Run]:
    """The experiment's runs with their small results (never the per-job blob)."""
    return list(experiment.runs.select_related("result").order_by("seed", "id"))


def labelled_series(runs: list[Run]) -> list[tuple[str, dict[str, Any]]]:
    """(label, series) of the finished runs; labels carry the seed only when seeds differ."""
    done = [r for r in runs if r.status == Status.FINISHED and hasattr(r, "result")]
    seeds = {r.seed for r in done}
    return [(r.scheduler if len(seeds) <= 1 else f"{r.scheduler} (seed {r.seed})", r.result.series) for r in done]


def run_jobs(run: Run) -> dict[str, Any]:
    """The per-job columns of a finished run (reads the blob: downloads only)."""
    data = RunJobs.objects.filter(run=run).values_list("data", flat=True).first()
    if data is None:
        raise ParameterError(f"run {run.pk} has no per-job results")
    return archive.unpack_jobs(data)


def progress_payload(experiment: Experiment) -> dict[str, Any]:
    """What the page's progress poller reads."""
    runs = list(
        experiment.runs.order_by("seed", "id").values(
            "id",
            "scheduler",
            "seed",
            "status",
            "fraction",
            "jobs_done",
            "jobs_total",
            "eta_s",
            "error",
            "started_at",
            "finished_at",
        )
    )
    for r in runs:
        for k in ("started_at", "finished_at"):
            when = r[k]
            r[k] = when.isoformat() if when else None  # type: ignore[typeddict-item]  # JSON-ready
    experiment.refresh_from_db(fields=["status"])
    return {"status": experiment.status, "runs": runs}


def archive_runs(experiment: Experiment) -> Iterator[archive.ArchivedRun]:
    """The experiment's runs for an archive, one per-job blob in memory at a time."""
    for run in runs_with_results(experiment):
        res = getattr(run, "result", None) if run.status == Status.FINISHED else None
        blob = RunJobs.objects.filter(run=run).values_list("data", flat=True).first() if res else None
        yield archive.ArchivedRun(
            scheduler=run.scheduler,
            seed=run.seed,
            status=run.status,
            error=run.error,
            summary=res.summary if res else None,
            series=res.series if res else None,
            per_class=res.per_class if res else None,
            offline=res.offline if res else None,
            jobs=bytes(blob) if blob is not None else None,
        )


def write_experiment_archive(experiment: Experiment, target: IO[bytes]) -> None:
    versions = set(experiment.runs.exclude(code_version="").values_list("code_version", flat=True))
    archive.write_archive(
        target,
        experiment.scenario,
        experiment_files(experiment),
        archive_runs(experiment),
        name=experiment.title,
        version=", ".join(sorted(versions)) or None,
    )


def eta_text(seconds: float | None) -> str:
    if seconds is None:
        return ""
    return str(timedelta(seconds=round(seconds)))
