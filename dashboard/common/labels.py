"""What a summary key is called on a page: display names, units, whether it can be negative, its definition.

The one place every chart, table and download of the platform reads a metric's name from (issues 26 and 28).
Machine keys (``mean_response_s``, the CSV and JSON columns scripts and the API read) stay as they are; people
read the names here. "Response time" in this project is the LoTES paper's: the wait from a job's arrival until
it starts, so it is called *wait until start* wherever a person reads it, linked to its definition in the docs
(docs/guide/metrics.md, served at /docs/guide/metrics/).

No Django import: the chart builders (pure functions) use it too.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

#: The documentation page that defines every quantity below (the MkDocs site, served at /docs/).
DEFINITIONS_PATH = "/docs/guide/metrics/"
#: The wait until start: the anchor of its definition on :data:`DEFINITIONS_PATH`.
WAIT_ANCHOR = "wait-until-start"
WAIT = "wait until start"


@dataclass(frozen=True)
class Label:
    """A quantity as people read it: ``name`` (no unit), ``unit`` ("s", "%", "" ...), its definition's anchor."""

    name: str
    unit: str = ""
    anchor: str = ""
    #: Never below 0 (times, counts, fractions): an interval drawn for it stops at 0.
    nonnegative: bool = True

    @property
    def title(self) -> str:
        """The name with its unit: ``Mean wait until start (s)``."""
        return f"{self.name} ({self.unit})" if self.unit else self.name

    @property
    def definition(self) -> str:
        """Where the quantity is defined (a path of the documentation site, with its anchor)."""
        return f"{DEFINITIONS_PATH}#{self.anchor}" if self.anchor else DEFINITIONS_PATH


def _wait(stat: str) -> Label:
    return Label(f"{stat} {WAIT}", "s", WAIT_ANCHOR)


#: Summary keys (simcore.core.metrics.summary, dotted as simcore.sweep.report.flatten names them).
LABELS: dict[str, Label] = {
    "mean_response_s": _wait("Mean"),
    "p50_response_s": _wait("Median (p50)"),
    "p90_response_s": _wait("p90"),
    "p99_response_s": _wait("p99"),
    "max_response_s": _wait("Max"),
    "mean_response_lower_s": Label(f"Mean {WAIT}, lower bound counting jobs not started", "s", "not-started"),
    "mean_completion_s": Label("Mean completion time", "s", "completion-time"),
    "p99_completion_s": Label("p99 completion time", "s", "completion-time"),
    "mean_run_s": Label("Mean run time", "s", "run-time"),
    "mean_wait_s": Label(f"Mean {WAIT}", "s", WAIT_ANCHOR),
    # Capacity plans' statistics (simcore.planning.target): over every arrived job, never-started ones included.
    "max_wait_s": Label(f"Longest {WAIT}", "s", WAIT_ANCHOR),
    "unstarted_fraction": Label("Fraction of jobs never started", "", "not-started"),
    "jobs": Label("Jobs arrived", "", "jobs"),
    "started": Label("Jobs started", "", "jobs"),
    "completed": Label("Jobs completed", "", "jobs"),
    "queued_at_end": Label("Jobs not started by the end", "", "not-started"),
    "running_at_end": Label("Jobs running at the end", "", "jobs"),
    "mean_queue_len": Label("Mean queue length", "jobs", "queue-length"),
    "max_queue_len": Label("Max queue length", "jobs", "queue-length"),
    "mean_running": Label("Mean jobs running", "jobs", "queue-length"),
    "lambda_star": Label("\u03bb*", "jobs/s", "lambda-star"),
    "arrival_rate": Label("Arrival rate", "jobs/s", "lambda-star"),
    "load": Label("Load", "of \u03bb*", "lambda-star"),
    "hours": Label("Arrival window", "h"),
    "window_start_s": Label("Measured from", "s", "utilisation"),
    "window_end_s": Label("Measured until", "s", "utilisation"),
    "measured_from_s": Label("Series measured from", "s", "utilisation"),
    "simulated_s": Label("Simulated time", "s"),
    "wall_s": Label("Wall-clock time", "s"),
    "compile_s": Label("Kernel compile time", "s"),
    "jobs_per_s": Label("Simulation speed", "jobs/s"),
    "samples": Label("Series samples"),
    # Sweep axes (simcore.sweep.grammar): the LoTES paper's names.
    "phi": Label("\u03a6 (phi: spread of the class mean requests)"),
    "omega": Label("\u03a9 (omega: spread of the rates per configuration)"),
    "cluster": Label("cluster", nonnegative=False),
    "workload": Label("workload", nonnegative=False),
    "machines_per_config": Label("machines per configuration"),
    # Per-job columns (jobs.csv, jobs.parquet; simcore.archive.JOB_COLUMNS).
    "job": Label("Job number", anchor="per-job-columns"),
    "submit_s": Label("Arrival time", "s", "per-job-columns"),
    "class": Label("Job class", anchor="per-job-columns"),
    "machine": Label("Machine it ran on", anchor="per-job-columns"),
    "config": Label("Machine configuration", anchor="per-job-columns"),
    "start_s": Label("Start time", "s", "per-job-columns"),
    "finish_s": Label("Finish time", "s", "per-job-columns"),
    "response_s": Label("Wait until start", "s", WAIT_ANCHOR),
    "completion_s": Label("Completion time", "s", "completion-time"),
}

_UTIL = re.compile(r"^utilization\.(.+)$")
#: A capacity plan's wait percentile (simcore.planning.target): every arrived job, a never-started one waiting
#: until the run's end.
_WAIT_PERCENTILE = re.compile(r"^p(\d+(?:\.\d+)?)_wait_s$")


def _ordinal(number: str) -> str:
    """``99``: ``99th``; ``99.9``: ``99.9th``; ``1``: ``1st``; ``12``: ``12th``."""
    if "." in number:
        return f"{number}th"
    n = int(number)
    suffix = "th" if n % 100 in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def label(key: str) -> Label:
    """The label of a summary key; a key not listed reads as its words
    (``utilization.cpu``: ``Utilisation of cpu``, ``mean_foo_s``: ``mean foo (s)``)."""
    if key in LABELS:
        return LABELS[key]
    m = _WAIT_PERCENTILE.match(key)
    if m:
        return Label(f"{_ordinal(m.group(1))} percentile {WAIT}", "s", WAIT_ANCHOR)
    m = _UTIL.match(key)
    if m:
        return Label(f"Utilisation of {m.group(1)}", "fraction of capacity", "utilisation")
    words = key.replace(".", " ").replace("_", " ").strip()
    unit = ""
    if key.endswith("_s"):
        words, unit = words[:-2].strip(), "s"
    return Label(words, unit, nonnegative=False)


def title(key: str) -> str:
    """``Mean wait until start (s)``: a key's name and unit, for axes and table headers."""
    return label(key).title


def name(key: str) -> str:
    """``Mean wait until start``: a key's name without its unit, for sentences and chart titles."""
    return label(key).name


def nonnegative(key: str) -> bool:
    """Whether the quantity is never below 0 (an interval drawn for it stops at 0)."""
    return label(key).nonnegative


def definition(key: str) -> str:
    return label(key).definition


def columns(keys: list[str]) -> dict[str, dict[str, str]]:
    """A data dictionary of download columns: per key its name, unit and definition (the docs' page)."""
    out = {}
    for k in keys:
        lab = label(k)
        out[k] = {"name": lab.name, "unit": lab.unit, "definition": lab.definition}
    return out
