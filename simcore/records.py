"""Which per-job records a run keeps: all of them, a seeded sample of N jobs, or none.

A run's summary, exact statistics and series are computed from every job
before any selection, so they are the same whatever is kept; only the
per-job records (jobs.csv, the dashboard's stored chunks) follow the policy.

Policies (``--job-records``, the scenario's ``job_records``)::

    "auto"       all records up to AUTO_ALL_UP_TO jobs, a sample of AUTO_SAMPLE above
    "all"        every job's record
    "none"       no per-job record
    "sample:N"   a sample of N jobs (every job when the run has N or fewer),
                 drawn from the run seed's own stream (simcore.core.seeding.records_rng)

The sample's indices are sorted, so kept records stay in job order.
This module must not import Django: it is part of the simulation library.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.seeding import records_rng

#: Runs up to this many jobs keep every record under "auto" (36 bytes a job stored: 360 MB).
AUTO_ALL_UP_TO = 10_000_000
#: Jobs "auto" samples above AUTO_ALL_UP_TO.
AUTO_SAMPLE = 1_000_000
DEFAULT = "auto"
CHOICES = ("auto", "all", "none", "sample:N")


def parse_policy(text: Any, where: str = "job_records") -> str:
    """The policy in canonical form ("sample:1000"); ParameterError naming ``where`` if it is none of CHOICES."""
    s = str(text).strip().lower() if isinstance(text, str) else None
    if s in ("auto", "all", "none"):
        return s
    if s is not None and s.startswith("sample:"):
        n = s.removeprefix("sample:").replace("_", "").replace(",", "")
        if n.isdigit() and int(n) >= 1:
            return f"sample:{int(n)}"
    raise ParameterError(
        f"{where} must be one of auto, all, none or sample:N (N a whole number of jobs, at least 1), got {text!r}"
    )


def keep_records(
    n_jobs: int,
    policy: str,
    seed: int,
    *,
    all_up_to: int = AUTO_ALL_UP_TO,
    auto_sample: int = AUTO_SAMPLE,
) -> np.ndarray | None:
    """The sorted indices of the jobs whose records are kept; None when every job's is (nothing to select).

    ``seed``: the run's seed; the sample is drawn from its records stream, never from global state.
    """
    policy = parse_policy(policy)
    if policy == "auto":
        policy = "all" if n_jobs <= all_up_to else f"sample:{auto_sample}"
    if policy == "all":
        return None
    if policy == "none":
        return np.empty(0, dtype=np.int64)
    size = int(policy.removeprefix("sample:"))
    if size >= n_jobs:
        return None
    idx = records_rng(seed).choice(n_jobs, size=size, replace=False)
    idx.sort()
    return idx.astype(np.int64)


def describe(n_jobs: int, policy: str, seed: int, keep: np.ndarray | None) -> dict[str, Any]:
    """What was kept, for summary.json and the pages: policy, kind (all/sample/none), kept, of, seed."""
    kept = n_jobs if keep is None else len(keep)
    kind = "all" if keep is None else ("none" if kept == 0 else "sample")
    out: dict[str, Any] = {"policy": parse_policy(policy), "kept": kind, "jobs_kept": kept, "of": n_jobs}
    if kind == "sample":
        out["sample_seed"] = int(seed)
    return out


def records_text(records: dict[str, Any] | None) -> str:
    """``all 61,454 kept`` / ``a sample of 1,000 of 61,454 (seed 3)`` / ``not kept``: the pages' wording."""
    if not records:
        return "all kept"
    kind, kept, of = records.get("kept"), int(records.get("jobs_kept", 0)), int(records.get("of", 0))
    if kind == "none":
        return f"not kept (none of {of:,})"
    if kind == "sample":
        return f"a sample of {kept:,} of {of:,} (seed {records.get('sample_seed')})"
    return f"all {of:,} kept"
