"""Time storing a paper-scale run's per-job records (issue 29 target: 33 M jobs in under 30 s).

The write path of dashboard.experiments.jobs.write_jobs on synthetic engine arrays of N jobs with the real
column set (submit, class, machine, start, finish, and config from the machine): pieces of SIMCORE_JOB_CHUNK
jobs from simcore.archive.job_column_chunks, Parquet row groups (zstd), SHA-256 as written, handed to the
"records" storage (SIMCORE_STORAGE_URL; a rename into place on a local filesystem). Then one read of every
row group (a download's reading, without the CSV).

    DEBUG=1 SIMCORE_STORAGE_URL=file:///tmp/bench-records PYTHONPATH=. python bench/records_store.py 33000000
"""

from __future__ import annotations

import os
import resource
import sys
import time
from types import SimpleNamespace

import django
import numpy as np

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django.setup()

from django.conf import settings  # noqa: E402

from dashboard.experiments import storage  # noqa: E402
from simcore import archive  # noqa: E402


def synthetic_result(n: int, machines: int = 3000, seed: int = 0) -> SimpleNamespace:
    """Engine-like arrays: Poisson arrivals, waits mostly zero, log-normal run times, 5% never started."""
    rng = np.random.default_rng(seed)
    submit = np.cumsum(rng.exponential(360_000.0 / n, n))
    wait = np.where(rng.random(n) < 0.7, 0.0, rng.exponential(30.0, n))
    start = submit + wait
    finish = start + rng.lognormal(5.0, 1.5, n)
    machine = rng.integers(0, machines, n).astype(np.int32)
    unstarted = rng.random(n) < 0.05
    start[unstarted] = np.nan
    finish[unstarted] = np.nan
    machine[unstarted] = -1
    return SimpleNamespace(
        submit=submit,
        job_class=rng.integers(0, 4, n).astype(np.int32),
        machine=machine,
        config_of_machine=(np.arange(machines) % 3).astype(np.int32),
        start=start,
        finish=finish,
        extra={"arrived": n},
        n_jobs=n,
    )


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 33_000_000
    outcome = SimpleNamespace(result=synthetic_result(n))
    ru0, t0 = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    stored = storage.write_records(
        0,
        0,
        1,
        archive.job_column_chunks(outcome, settings.SIMCORE_JOB_CHUNK),
        sampled=False,  # type: ignore[arg-type]
    )
    wall = time.perf_counter() - t0
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    print(
        f"write: {n:,} jobs, {stored.row_groups} row groups, {stored.size / 1e6:.1f} MB "
        f"({stored.size / n:.1f} B/job, npz {36 * n / 1e6:.0f} MB): wall {wall:.1f} s, cpu {cpu:.1f} s, "
        f"load {os.getloadavg()[0]:.1f}"
    )
    t0, ru0 = time.perf_counter(), resource.getrusage(resource.RUSAGE_SELF)
    rows = sum(len(c["job"]) for c in storage.read_records(stored.key, "bench"))
    ru1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (ru1.ru_utime - ru0.ru_utime) + (ru1.ru_stime - ru0.ru_stime)
    print(f"read: {rows:,} rows: wall {time.perf_counter() - t0:.1f} s, cpu {cpu:.1f} s, load {os.getloadavg()[0]:.1f}")
    print(f"peak RSS {ru1.ru_maxrss / 1024:.0f} MB (the synthetic arrays alone: {n * 36 / 1e6:.0f} MB)")
    storage.discard(stored.key)


if __name__ == "__main__":
    main()
