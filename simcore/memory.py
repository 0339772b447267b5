"""How much memory a run (a sweep cell) needs at its peak, estimated before it runs from its jobs and machines.

A worker process that runs a cell holds the engine's per-job arrays (arrivals, requests, durations, starts,
ends, machines...), the cluster's per-machine state and, while it stores them, one chunk of packed per-job
records; its resident size peaks near the end of the run. Measured (``bench/memcell.py``: the worker's own
calls in a fresh process, peak ``ru_maxrss``, docs/notes/memcell.md for the table) it grows linearly in the
jobs and the machines, with a fixed part: the interpreter, the libraries and a kernel loaded from numba's
cache. :func:`estimate_mb` is that line, fitted to the measurements and then raised so that it is at or
above every one of them (an estimate that errs low is the one that gets a worker killed).

:func:`cell_size` tells a scenario's jobs and machines without running it: the cluster is built (a
preset's is small), the workload is drawn over a short window scaled to the whole (as the form's scale
check does, :mod:`simcore.scalecheck`), and uploaded files' counts come from the caller, who has them
from the upload's metadata. Pure computation, no I/O, no Django.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simcore.core.errors import SimcoreError

#: The fixed part (MiB): a worker's pool process before it runs anything (150 MiB: Django, Celery, numpy,
#: scipy) plus what a first cell adds whatever its size (simcore's modules, a kernel loaded from numba's
#: cache, the engine's scratch: 131 MiB fitted); plus 100 MiB: the memory a kernel compiled in the process
#: keeps (61-91 MiB measured, when the cache is cold: a new code version before the workers' warm-up has
#: compiled it) and the scatter of the peaks (the allocator gives memory back at varying times), so that the
#: line lies above every measurement, warm or cold. docs/notes/memcell.md.
FIXED_MB = 380.0
#: More fixed memory for some schedulers: LoTES's offline phase (its LPs and bins) held 120-125 MiB more with
#: 10, 30 and 100 machines (none more with 300 or more). Counted at every size, so that the estimate never
#: falls as machines are added: it overstates a large LoTES cell by that much.
SCHEDULER_MB: dict[str, float] = {"lotes": 125.0}
#: Bytes per job at the peak (the engine's per-job arrays and the records being packed): 125-130 fitted
#: for FCFS, Greedy, Tetris and LoTES alike, from 10 thousand to 28 million jobs.
JOB_BYTES = 130.0
#: Bytes per machine at the peak (the cluster's state and the schedulers' per-machine arrays): measured at
#: 100,000 and 1,000,000 machines, where it shows.
MACHINE_BYTES = 460.0
#: Jobs drawn to count a preset workload's jobs (:func:`cell_size`): a Poisson count of this size is
#: within 1% of its mean, and drawing it takes a fraction of a second.
SIZE_SAMPLE_JOBS = 20_000
#: The first window drawn to count jobs (hours); widened to reach SIZE_SAMPLE_JOBS when it holds fewer.
FIRST_WINDOW_H = 0.01


@dataclass(frozen=True)
class Size:
    """A cell's jobs (tasks, for workflow workloads) and machines."""

    jobs: int
    machines: int


def estimate_mb(jobs: int, machines: int, scheduler: str = "") -> int:
    """The peak resident memory (MiB) of a worker process running a cell of ``jobs`` jobs on ``machines``
    machines under ``scheduler``: at or above every measurement of docs/notes/memcell.md, rounded up."""
    if jobs < 0 or machines < 0:
        raise ValueError(f"jobs and machines must be non-negative, got {jobs} and {machines}")
    extra = jobs * JOB_BYTES + machines * MACHINE_BYTES
    return math.ceil(FIXED_MB + SCHEDULER_MB.get(scheduler, 0.0) + extra / 2**20)


def megabytes_text(mb: int) -> str:
    """``4.4 GB`` from 4,500 MiB, ``850 MB`` below a gigabyte: the pages' wording of an estimate."""
    if mb >= 1024:
        return f"{mb / 1024:.1f} GB"
    return f"{mb:,} MB"


def cell_size(scenario: Mapping[str, Any], seed: int, *, jobs: int | None = None, machines: int | None = None) -> Size:
    """The jobs and machines of one cell's validated scenario (``simcore.sweep.scenario.cell_scenario``).

    ``jobs`` / ``machines``: the counts of an uploaded trace / cluster file (the caller read them from the
    upload); a preset's are computed: its cluster is built and its workload drawn over a window holding
    about :data:`SIZE_SAMPLE_JOBS` jobs, the count scaled to the cell's window.
    """
    from simcore.presets import WORKLOADS
    from simcore.scenario import build_cluster, build_workload

    if machines is None or (jobs is None and "preset" in scenario["workload"]):
        if "preset" not in scenario["cluster"]:
            raise ValueError("cell_size: give the machines of a cluster file")
        cluster = build_cluster(scenario)
        machines = cluster.n_machines if machines is None else machines
    if jobs is None:
        if "preset" not in scenario["workload"]:
            raise ValueError("cell_size: give the jobs of a trace file")
        hours = float(scenario.get("hours") or WORKLOADS.get(scenario["workload"]["preset"]).default_hours)
        window = min(hours, FIRST_WINDOW_H)
        while True:
            try:
                drawn = build_workload({**scenario, "hours": window}, cluster, seed).n_jobs
            except SimcoreError:  # too short a window to draw any job: widen it
                if window >= hours:
                    raise
                drawn = 0
            if drawn >= SIZE_SAMPLE_JOBS or window >= hours:
                break
            # Widen to about SIZE_SAMPLE_JOBS (at least tenfold when none arrived yet), never past the cell's.
            window = min(hours, window * (10.0 if drawn == 0 else max(1.5, SIZE_SAMPLE_JOBS / drawn)))
        jobs = round(drawn * hours / window)
    return Size(int(jobs), int(machines))
