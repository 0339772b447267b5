"""NCBI-like Blast traces: a Poisson process whose rate changes every hour, job types from Table 2.

Section 3.3 of the profile study: the trace runs 25 hours from 1:00pm; jobs
are independent; inter-arrival times are approximately exponential, a job
arriving every 1.14 s on average; within each hour the distribution has the
same shape and only its mean changes (Figure 9). The authors' generator of
similar traces "simply used the job percentages and hourly inter-arrival
times of the NCBI trace to drive a simulated Poisson process with different
initial random seeds" -- which is what :func:`ncbi_trace` does. The real
trace is not public, so every trace here, including seed 0's, is generated.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import FloatArray, IntArray
from simcore.profiles.table import ProfileTable

#: The blastn/blastp-only trace of Figure 13.
REDUCED_TYPES = ("blastn", "blastp")


@dataclass(frozen=True)
class ArrivalModel:
    """Hourly mean inter-arrival times (s) indexed by clock hour 0-23, and the trace's start hour."""

    hourly_mean_interarrival_s: tuple[float, ...]
    start_clock_hour: int = 13
    trace_hours: float = 25.0

    def rate(self, hour_index: int) -> float:
        """Arrival rate (jobs/s) in hour ``hour_index`` counted from the trace's start."""
        return 1.0 / self.hourly_mean_interarrival_s[(self.start_clock_hour + hour_index) % 24]

    def mean_interarrival(self, hours: float) -> float:
        """Expected mean inter-arrival time (s) over the first ``hours`` hours."""
        jobs = sum(self.rate(i) * 3600.0 * min(1.0, hours - i) for i in range(math.ceil(hours)))
        return hours * 3600.0 / jobs


def arrival_model(table: ProfileTable) -> ArrivalModel:
    """The table's ``arrivals`` block (the shipped table's if it has none)."""
    arr = table.meta.get("arrivals")
    if arr is None:
        from simcore.profiles.table import load_profile

        shipped = load_profile(None)
        if shipped is table or "arrivals" not in shipped.meta:
            raise InputError("the profile table has no 'arrivals' block")
        arr = shipped.meta["arrivals"]
    try:
        hourly = tuple(float(x) for x in arr["hourly_mean_interarrival_s"])
        start = int(arr.get("start_clock_hour", 13))
        hours = float(arr.get("trace_hours", 25.0))
    except (KeyError, TypeError, ValueError):
        raise InputError(
            "'arrivals' needs 'hourly_mean_interarrival_s': 24 positive numbers (s), "
            "optional 'start_clock_hour' (0-23) and 'trace_hours'",
            file=table.source,
        ) from None
    if len(hourly) != 24 or not all(math.isfinite(x) and x > 0 for x in hourly):
        raise InputError(
            "'arrivals.hourly_mean_interarrival_s' must hold 24 positive numbers (s), one per clock hour",
            file=table.source,
        )
    if not 0 <= start <= 23:
        raise InputError("'arrivals.start_clock_hour' must be 0-23", file=table.source)
    return ArrivalModel(hourly, start, hours)


def ncbi_trace(
    table: ProfileTable, arrivals: ArrivalModel, hours: float, rng: np.random.Generator, rate_scale: float = 1.0
) -> tuple[FloatArray, IntArray]:
    """Submission times (s, sorted) and job types (indices into ``table.job_types``).

    Hour ``i`` is a homogeneous Poisson process of rate
    ``rate_scale / hourly_mean[clock hour]``: a Poisson count of arrivals,
    placed uniformly in the hour (equivalent to exponential gaps). Job types
    are drawn independently with the table's proportions.
    """
    if not (hours > 0 and math.isfinite(hours)):
        raise ParameterError(f"hours must be a positive number, got {hours}")
    if not (rate_scale > 0 and math.isfinite(rate_scale)):
        raise ParameterError(f"rate_scale must be a positive number, got {rate_scale}")
    parts = []
    for i in range(math.ceil(hours)):
        length = 3600.0 * min(1.0, hours - i)
        n = int(rng.poisson(arrivals.rate(i) * rate_scale * length))
        parts.append(3600.0 * i + np.sort(rng.uniform(0.0, length, size=n)))
    submit = np.concatenate(parts) if parts else np.zeros(0)
    kinds = rng.choice(len(table.job_types), size=len(submit), p=table.proportions).astype(np.int64)
    return submit, kinds
