"""Reading results: runs with results, their series and jobs, progress, archives."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import IO, Any

from dashboard.common.models import Status
from dashboard.common.recovery import attempts_note
from dashboard.experiments import memory
from dashboard.experiments.charts import ChartRun
from dashboard.experiments.jobs import has_jobs, job_blobs
from dashboard.experiments.models import Experiment, Run
from dashboard.traces.uploads import experiment_files
from simcore import archive

log = logging.getLogger(__name__)


def runs_with_results(experiment: Experiment, *, page: bool = False) -> list[Run]:
    """The experiment's runs with their small results (never the per-job records); a sweep's in grid order.

    ``page``: what its page shows only, without the series (the charts are stored, dashboard.experiments.aggregates).
    """
    from dashboard.experiments.sweeps import PAGE_DEFERRED, ordered_runs

    if experiment.scenario.get("axes"):
        return ordered_runs(experiment, page=page)
    qs = experiment.runs.select_related("result").order_by("seed", "id")
    return list(qs.defer(*PAGE_DEFERRED) if page else qs)


def chart_runs(runs: list[Run], group: Callable[[Run], str] | None = None) -> list[ChartRun]:
    """The finished runs as the charts read them, grouped by scheduler (or by ``group(run)``).

    Runs of one group are aggregated over their seeds; the order is that of
    ``runs`` (so colours follow the tables).
    """
    key = group or (lambda r: r.scheduler)
    return [
        ChartRun(group=key(r), seed=r.seed, series=r.result.series, summary=r.result.summary, scheduler=r.scheduler)
        for r in runs
        if r.status == Status.FINISHED and hasattr(r, "result")
    ]


def progress_payload(experiment: Experiment) -> dict[str, Any]:
    """What the page's progress poller reads."""
    runs = list(
        experiment.runs.order_by("seed", "id").values(
            "id",
            "scheduler",
            "seed",
            "point",
            "status",
            "fraction",
            "jobs_done",
            "jobs_total",
            "eta_s",
            "error",
            "started_at",
            "finished_at",
            "code_version",
            "attempt",
            "lost_attempts",
            "queued_at",
            "needs_mb",
            "sent_to",
        )
    )
    waits = memory.waiting_notes(
        [(r["status"], r.pop("queued_at"), r.pop("needs_mb"), r.pop("sent_to")) for r in runs]  # type: ignore[misc]
    )
    for r, wait in zip(runs, waits, strict=True):
        r["attempts_note"] = attempts_note(r["attempt"], r["lost_attempts"])  # type: ignore[misc]  # one more key
        r["waiting"] = wait  # type: ignore[misc]  # and one more
        for k in ("started_at", "finished_at"):
            when = r[k]
            r[k] = when.isoformat() if when else None  # type: ignore[typeddict-item]  # JSON-ready
    experiment.refresh_from_db(fields=["status"])
    cancelled = sum(1 for r in runs if r["status"] == Status.CANCELLED)
    return {"status": experiment.status, "status_text": experiment.status_text(cancelled, len(runs)), "runs": runs}


def archive_runs(experiment: Experiment) -> Iterator[archive.ArchivedRun]:
    """The experiment's runs for an archive, one chunk of per-job records in memory at a time."""
    for run in runs_with_results(experiment):
        res = getattr(run, "result", None) if run.status == Status.FINISHED else None
        jobs = job_blobs(run) if res and has_jobs(run) else None
        yield archive.ArchivedRun(
            scheduler=run.scheduler,
            seed=run.seed,
            point=dict(run.point or {}),
            status=run.status,
            error=run.error,
            summary=res.summary if res else None,
            series=res.series if res else None,
            per_class=res.per_class if res else None,
            offline=res.offline if res else None,
            jobs=jobs,
            records=run.records,
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


def load_note(workload: str) -> str:
    """Why ``load`` does not apply to a preset workload that sets its own arrival rate."""
    return f"load does not apply to {workload}: its arrival rates come from the workload's own data"


def _span(values: list[float]) -> tuple[float, float] | None:
    return (min(values), max(values)) if values else None


def what_was_simulated(experiment: Experiment, finished: list[Run]) -> dict[str, Any]:
    """What the finished runs actually simulated, for the page's header.

    ``load_axis``: the values of a sweep's ``load`` axis (None: not swept).
    ``load_applies``: whether the scenario's ``load`` set the arrival rate (a
    preset that generates arrivals at a fraction of lambda*, or an uploaded
    trace replayed at that rate); ``load_note`` says why not when it did not.
    ``arrival``, ``lambda_star`` and ``ratio`` are (lowest, highest) over the
    finished runs (seeds of a generated workload draw different jobs), None
    before any run finished. ``profile``: the workload has a run-time profile
    (the profile study's charts apply).
    """
    from simcore.presets import WORKLOADS, workload_provides

    spec = experiment.scenario.get("workload") or {}
    load_applies, note = True, ""
    if "preset" in spec and spec["preset"] in WORKLOADS:
        preset = WORKLOADS.get(spec["preset"])
        if not preset.uses_load:
            load_applies = False
            note = load_note(preset.name)
    arrivals, lambdas, ratios = [], [], []
    for r in finished:
        s = getattr(r, "result", None)
        s = s.summary if s is not None else {}
        a, lam = s.get("arrival_rate"), s.get("lambda_star")
        if isinstance(a, (int, float)):
            arrivals.append(float(a))
            if isinstance(lam, (int, float)) and lam > 0:
                ratios.append(float(a) / float(lam))
        if isinstance(lam, (int, float)):
            lambdas.append(float(lam))
    provides, _ = workload_provides(spec) if spec else (frozenset(), "")
    load_axis = next((a["values"] for a in experiment.scenario.get("axes") or [] if a["name"] == "load"), None)
    return {
        "load": experiment.scenario.get("load"),
        # A load sweep asks one load per cell: the header says the values swept, not the scenario's base load.
        "load_axis": load_axis,
        "load_applies": load_applies,
        "load_note": note,
        "arrival": _span(arrivals),
        "lambda_star": _span(lambdas),
        "ratio": _span(ratios),
        "profile": "profile" in provides,
    }


def engines_used(exp: Experiment, done: list[Run]) -> dict[str, Any]:
    """The engine the scenario asks for, and which ran: ``{"asked": ..., "ran": [(engine, runs, notes)]}``.

    A compiled run of a scheduler without a kernel (a plugin, a task graph) runs in Python and its
    summary says why (``engine_note``); the page shows those reasons once each.
    """
    ran: dict[str, tuple[int, set[str]]] = {}
    for r in done:
        s = r.result.summary
        eng = str(s.get("engine", "python"))
        n, notes = ran.get(eng, (0, set()))
        if s.get("engine_note"):
            notes.add(str(s["engine_note"]))
        ran[eng] = (n + 1, notes)
    return {
        "asked": exp.scenario.get("engine", "compiled"),
        "ran": [(e, n, sorted(notes)) for e, (n, notes) in sorted(ran.items())],
    }
