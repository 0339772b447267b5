"""The result cache: a cell whose inputs and code version equal a stored run's reuses that run's result.

What determines a result (:func:`cell_key`): the cell's own scenario (cluster,
workload and their parameters, load, hours, drain, the scheduler's
parameters), the scheduler, the seed, and the content of any uploaded file
(its SHA-256 and, for a trace, its job-class table). Runs store this key; a
new cell with the same key and a finished run of the same code version
(:func:`simcore.version.code_version`, which changes with every commit and
every uncommitted edit of ``simcore/``) becomes finished at once with a copy
of that run's summary and series, and reads its per-job records from there
(``Run.cached_from``). The simulation is deterministic under its seed, so
the copy is exactly what running it again would give.

Only runs of experiments the new experiment's owner can see are reused, so a
cache hit never tells anyone that someone else ran the same thing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from typing import Any

from django.contrib.auth.models import User
from django.utils import timezone

from dashboard.common.models import Status
from dashboard.experiments.models import Run, RunResult
from dashboard.traces.models import ClusterUpload, TraceUpload
from simcore.version import code_version

#: What ``Run.worker`` says for a cell served from the cache.
CACHE_WORKER = "result cache"


def current_version() -> str:
    """The code version new results are recorded with (a function, so tests can pin it)."""
    return code_version()


def _files_fingerprint(cluster: ClusterUpload | None, trace: TraceUpload | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if cluster is not None:
        out["cluster"] = cluster.sha256
    if trace is not None:
        out["trace"] = trace.sha256
        if trace.classes:
            out["classes"] = hashlib.sha256(json.dumps(trace.classes, sort_keys=True).encode()).hexdigest()
    return out


def cell_key(
    cell: Mapping[str, Any],
    scheduler: str,
    seed: int,
    cluster: ClusterUpload | None = None,
    trace: TraceUpload | None = None,
) -> str:
    """SHA-256 of everything that determines one cell's result but the code version (``cell``: validated)."""
    payload = {
        "cluster": cell["cluster"],
        "workload": cell["workload"],
        "load": cell["load"],
        "hours": cell["hours"],
        "drain": cell["drain"],
        "scheduler": scheduler,
        "scheduler_params": (cell.get("scheduler_params") or {}).get(scheduler) or {},
        "seed": int(seed),
        "files": _files_fingerprint(cluster, trace),
    }
    if cell.get("job_records", "auto") != "auto":
        # Which records a cell keeps is part of what it reuses; only a non-default choice is in the key,
        # so the keys of cells stored before the choice existed stay the same.
        payload["job_records"] = cell["job_records"]
    return hashlib.sha256(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def sources(owner: User, keys: Iterable[str]) -> dict[str, Run]:
    """For each key, a finished run of the current code version the owner can see (its original, not a copy)."""
    from dashboard.experiments.access import visible_experiments

    keys = [k for k in set(keys) if k]
    if not keys:
        return {}
    found = (
        Run.objects.filter(
            cache_key__in=keys,
            status=Status.FINISHED,
            code_version=current_version(),
            experiment__in=visible_experiments(owner),
            result__isnull=False,
        )
        .order_by("id")
        .values_list("cache_key", "id", "cached_from_id")
    )
    first: dict[str, int] = {}
    for key, pk, origin in found:
        first.setdefault(key, origin or pk)
    rows = Run.objects.select_related("result").in_bulk(list(set(first.values())))
    return {k: rows[pk] for k, pk in first.items() if pk in rows and hasattr(rows[pk], "result")}


def reuse(run: Run, source: Run) -> None:
    """Make the new (unsaved) ``run`` a finished copy of ``source``'s result; the caller saves both rows."""
    now = timezone.now()
    run.status = Status.FINISHED
    run.cached_from = source
    run.fraction = 1.0
    run.jobs_done = source.jobs_done
    run.jobs_total = source.jobs_total
    run.eta_s = 0.0
    run.started_at = now
    run.finished_at = now
    run.worker = CACHE_WORKER
    run.code_version = source.code_version
    run.records = source.records


def copy_result(run: Run, source: Run) -> RunResult:
    """The small result rows of ``source`` for ``run`` (saved); per-job records stay with the source."""
    r = source.result
    return RunResult.objects.create(
        run=run, summary=r.summary, series=r.series, per_class=r.per_class, offline=r.offline
    )


def is_cached(run: Run) -> bool:
    return run.worker == CACHE_WORKER
