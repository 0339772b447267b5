"""Peak resident memory of one cell as a worker runs it, at several sizes: the data behind simcore.memory.

Each point runs in a fresh process that imports what a worker's pool process imports (Django set up), runs
the cell (simcore.scenario.run_scenario, the worker's call) and packs its per-job records as the worker
stores them (simcore.archive.job_chunks), then prints its peak resident size (``VmHWM``) and the jobs
and machines of the cell as one JSON line. Usage::

    PYTHONPATH=. python bench/memcell.py SCHEDULER MACHINES_PER_CONFIG HOURS [RECORDS] [WORKLOAD]
    PYTHONPATH=. python bench/memcell.py --grid > memcell.jsonl   # the grid of docs/notes/memcell.md

Run one point at a time: the peak of each is what is measured, and two at once would only compete for RAM.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time


def peak_kb() -> int:
    """This process's peak resident size (KiB): ``VmHWM``, the high-water mark of its own address space.

    Not ``ru_maxrss``: Linux carries that across fork and exec, so a process started by a large one (a test
    run) would report its parent's size.
    """
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def point(scheduler: str, per_config: int, hours: float, policy: str = "all", workload: str = "lotes-phi") -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    import django

    django.setup()
    from simcore import archive, records
    from simcore.scenario import run_scenario, validate_scenario

    base_kb = peak_kb()
    scenario = validate_scenario(
        {
            "cluster": {"preset": "google-balanced", "params": {"machines_per_config": per_config}},
            "workload": {"preset": workload},
            "hours": hours,
            "schedulers": [scheduler],
            "seeds": [1],
            "job_records": policy,
        }
    )
    t0 = time.process_time()
    outcome = run_scenario(scenario, scheduler, 1)
    n = int(outcome.summary.get("jobs", 0))
    keep = records.keep_records(n, policy, 1)
    stored = sum(len(b) for b in archive.job_chunks(outcome, keep=keep)) if keep is None or len(keep) else 0
    cpu = time.process_time() - t0
    top_kb = peak_kb()
    row = {
        "scheduler": scheduler,
        "workload": workload,
        "machines": per_config * 10,
        "hours": hours,
        "records": policy,
        "jobs": n,
        "base_mb": round(base_kb / 1024, 1),
        "peak_mb": round(top_kb / 1024, 1),
        "stored_mb": round(stored / 2**20, 1),
        "cpu_s": round(cpu, 1),
    }
    print(json.dumps(row), flush=True)


#: (machines per configuration, hours): jobs from about 10k to 3M at 100, 1,000 and 10,000 machines
#: (lotes-phi at load 0.9 brings about 32 jobs per machine-hour).
SIZES = [
    (10, 3.1),
    (10, 31.0),
    (10, 310.0),
    (10, 940.0),
    (100, 0.31),
    (100, 3.1),
    (100, 31.0),
    (100, 94.0),
    (1000, 0.31),
    (1000, 3.1),
    (1000, 9.4),
]
SCHEDULERS = ["greedy", "tetris", "lotes", "fcfs"]


def grid() -> None:
    for scheduler in SCHEDULERS:
        # A first small cell compiles the scheduler's kernel into numba's disk cache (a worker's warm-up does
        # the same at start): the grid measures cells that load it, as a warmed worker's do.
        subprocess.run([sys.executable, __file__, scheduler, "1", "1"], check=False, capture_output=True)
        for per_config, hours in SIZES:
            subprocess.run([sys.executable, __file__, scheduler, str(per_config), str(hours)], check=False)


if __name__ == "__main__":
    if sys.argv[1:] == ["--grid"]:
        grid()
    else:
        a = sys.argv[1:]
        point(a[0], int(a[1]), float(a[2]), *(a[3:5]))
