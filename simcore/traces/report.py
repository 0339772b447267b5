"""What an import produced: the workload, its cluster, and a report of every row read, skipped or dropped."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from numpy.typing import NDArray

from simcore.core.model import Cluster, Workload
from simcore.traces._stream import RowErrors


@dataclass
class ImportReport:
    """Counts that account for every input row and every candidate job.

    ``rows_read``: data rows parsed (per stage: ``task_events``, ...).
    ``rows_skipped``: malformed rows skipped under ``on_error="skip"``, by reason.
    ``dropped``: well-formed records that did not become jobs, by reason
    (e.g. a task killed before it was scheduled).
    ``kept_notes``: jobs kept but changed, by reason (e.g. cut at the window's end).
    ``notes``: how the reader interpreted the data (documented choices).
    ``warnings``: what the reader could not see or what makes the result doubtful
    (a truncated log, a window starting mid-trace), shown above the summary.
    ``estimate_bound``: why the utilisation estimate is only a lower bound (None: it is not).
    """

    format: str
    files: dict[str, list[str]] = field(default_factory=dict)
    rows_read: dict[str, int] = field(default_factory=dict)
    rows_skipped: dict[str, int] = field(default_factory=dict)
    skipped_examples: list[str] = field(default_factory=list)
    dropped: dict[str, int] = field(default_factory=dict)
    kept_notes: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    estimate_bound: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    wall_s: float = 0.0
    #: CPU time of the read (all threads of the process), the fair speed measure on a busy machine.
    cpu_s: float = 0.0

    def drop(self, reason: str, n: int = 1) -> None:
        if n:
            self.dropped[reason] = self.dropped.get(reason, 0) + int(n)

    def keep_note(self, reason: str, n: int = 1) -> None:
        if n:
            self.kept_notes[reason] = self.kept_notes.get(reason, 0) + int(n)

    def absorb(self, errors: RowErrors) -> None:
        """Copy the skipped-row counts of a bad-input policy into the report."""
        for k, v in errors.counts.items():
            self.rows_skipped[k] = self.rows_skipped.get(k, 0) + v
        self.skipped_examples.extend(errors.examples[: max(0, 20 - len(self.skipped_examples))])

    def to_dict(self) -> dict[str, Any]:
        rows = sum(self.rows_read.values())
        return {
            "format": self.format,
            "files": self.files,
            "rows_read": self.rows_read,
            "rows_skipped": self.rows_skipped,
            "skipped_examples": self.skipped_examples,
            "dropped": self.dropped,
            "kept_but_changed": self.kept_notes,
            "notes": self.notes,
            # Only when there is something to say: "warnings" absent means none (the page and tests rely on it).
            **({"warnings": list(self.warnings)} if self.warnings else {}),
            **self.extra,
            "wall_s": round(self.wall_s, 3),
            "rows_per_s": round(rows / self.wall_s) if self.wall_s > 0 else None,
            "cpu_s": round(self.cpu_s, 3),
            "rows_per_cpu_s": round(rows / self.cpu_s) if self.cpu_s > 0 else None,
        }


@dataclass
class ImportResult:
    """A reader's output. ``cluster`` is None when the format says nothing about machines."""

    workload: Workload
    cluster: Cluster | None
    report: ImportReport
    #: Each job's priority in its source trace, in the workload's order (Google 2011); None: not recorded.
    priority: NDArray[np.int64] | None = None


def _range(x: np.ndarray) -> dict[str, float | None]:
    if len(x) == 0:
        return {"min": None, "mean": None, "max": None}
    return {"min": float(x.min()), "mean": float(x.mean()), "max": float(x.max())}


def workload_summary(wl: Workload) -> dict[str, Any]:
    """Jobs, time span (s), request and duration ranges of a workload, as JSON-ready numbers."""
    n = wl.n_jobs
    out: dict[str, Any] = {
        "name": wl.name,
        "jobs": n,
        "horizon_s": float(wl.horizon_s),
        "first_submit_s": float(wl.submit[0]) if n else None,
        "last_submit_s": float(wl.submit[-1]) if n else None,
        "jobs_at_time_0": int(np.count_nonzero(wl.submit == 0.0)),
        "requests": {r: _range(wl.request[:, i]) for i, r in enumerate(wl.resources)},
        "duration_s": _range(wl.work),
    }
    if wl.classes is not None:
        counts = np.bincount(wl.job_class[wl.job_class >= 0], minlength=wl.classes.n_classes)
        out["classes"] = [
            {
                "name": name,
                "jobs": int(counts[k]),
                "proportion": float(wl.classes.proportions[k]),
                "mean_request": dict(zip(wl.resources, wl.classes.requests[k].tolist(), strict=True)),
                "mean_duration_s": float(1.0 / wl.classes.rates[k, 0]) if wl.classes.rates[k, 0] > 0 else None,
            }
            for k, name in enumerate(wl.classes.names)
        ]
    return out


def fits_any(request: np.ndarray, cluster: Cluster) -> np.ndarray:
    """Whether each job (rows of ``request``, in the cluster's resource order) fits on some machine."""
    out = np.zeros(len(request), dtype=bool)
    for cap in cluster.capacity[cluster.counts > 0]:
        out |= (request <= cap + 1e-12).all(axis=1)
    return out


#: Below this offered utilisation (every resource) an import warns that the cluster would be nearly idle.
IDLE_UTILISATION = 0.05
#: Above this offered utilisation (any resource) an import warns that the cluster cannot keep up.
OVERLOAD_UTILISATION = 1.0


def utilisation_estimate(wl: Workload, cluster: Cluster) -> dict[str, float]:
    """Offered utilisation per resource: sum(request x duration) / (cluster capacity x window length).

    The window is the workload's horizon (or, for a batch at time 0, until
    the last job could end). What the cluster would be busy with if every
    job ran when it arrived: above 1 it cannot keep up, near 0 every
    scheduler reports zero waits.
    """
    span = float(wl.horizon_s)
    if span <= 0 and wl.n_jobs:
        span = float((wl.submit + wl.work).max())
    total = (cluster.capacity * cluster.counts[:, None]).sum(axis=0)
    out: dict[str, float] = {}
    for i, r in enumerate(cluster.resources):
        if r not in wl.resources or span <= 0 or total[i] <= 0:
            continue
        used = float(wl.request[:, wl.resources.index(r)] @ wl.work)
        out[r] = used / (float(total[i]) * span)
    return out


def idle_warning(estimate: dict[str, float], cluster: Cluster, lower_bound: str | None = None) -> str | None:
    """A warning when the estimate says the simulated cluster would be nearly idle.

    ``lower_bound``: why the estimate is only a lower bound (the warning then says the cluster may be busier).
    """
    if not estimate or max(estimate.values()) >= IDLE_UTILISATION:
        return None
    shown = ", ".join(f"{r} {u:.2g}" for r, u in estimate.items())
    caveat = f" (the estimate is only a lower bound: {lower_bound})" if lower_bound else ""
    return (
        f"the simulated cluster {cluster.name!r} ({cluster.n_machines} machines) would be nearly idle "
        f"(utilisation estimate {shown}){caveat}: every scheduler will report near-zero waits. Use a smaller "
        "cluster (--cluster), a window with more jobs, or replay faster with --load on the run"
    )


def overload_warning(estimate: dict[str, float], cluster: Cluster) -> str | None:
    """A warning when the estimate is above 1 on some resource: the cluster cannot keep up (issue 26).

    Offered work above the capacity means no schedule can finish the jobs in
    the window: every scheduler's queue grows for the whole run, and waits
    measure the window's length more than the scheduler.
    """
    over = {r: u for r, u in estimate.items() if u > OVERLOAD_UTILISATION}
    if not over:
        return None
    shown = ", ".join(f"{r} {u:.3g}" for r, u in over.items())
    return (
        f"the simulated cluster {cluster.name!r} ({cluster.n_machines} machines) cannot keep up "
        f"(utilisation estimate {shown}, above 1): every scheduler will queue without bound. Use a larger "
        "cluster (--cluster), a shorter window, or replay slower with --load below 1 on the run"
    )


def load_warnings(estimate: dict[str, float], cluster: Cluster, lower_bound: str | None = None) -> list[str]:
    """The estimate's warnings: the cluster nearly idle or overloaded (at most one of them)."""
    w = overload_warning(estimate, cluster) or idle_warning(estimate, cluster, lower_bound)
    return [w] if w else []
