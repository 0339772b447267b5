"""The cluster size the profile study uses: the smallest at which FCFS keeps up with the trace.

Section 5: "we run several simulation experiments with different cluster
sizes using the FCFS scheduler. Our goal was to discover the cluster size at
which FCFS scheduling could keep up with the rate of job arrival in each job
trace." The paper does not define "keep up"; we use: FCFS's mean waiting
time is at most :data:`WAIT_FRACTION` of its mean run time on the seed-0
trace (Section 5 expects "the queue time to be small" at that size). An
unstable size fails this by a wide margin (its wait grows with the trace),
and one machine more or fewer changes the wait steeply around the
threshold, so the size found is insensitive to the exact fraction.

The search runs FCFS at doubling sizes until one keeps up, then bisects.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from simcore.core.engine import simulate
from simcore.core.metrics import summary
from simcore.core.model import Cluster
from simcore.core.seeding import workload_rng
from simcore.profiles.build import profile_cluster, profile_workload
from simcore.profiles.table import ProfileTable
from simcore.schedulers.fcfs import FCFS

#: FCFS keeps up when its mean wait is at most this fraction of its mean run time.
WAIT_FRACTION = 0.10

Kind = Literal["heterogeneous", "homogeneous"]
Trace = Literal["full", "reduced"]


@dataclass(frozen=True)
class SizeProbe:
    """One FCFS run of the search: machines per type and what FCFS achieved (s)."""

    per_type: int
    mean_wait_s: float
    mean_run_s: float

    @property
    def keeps_up(self) -> bool:
        return self.mean_wait_s <= WAIT_FRACTION * self.mean_run_s


def cluster_for(table: ProfileTable, kind: Kind, per_type: int, homogeneous_type: str = "type6") -> Cluster:
    """Equal numbers of every machine type, or ``per_type`` machines of one type."""
    if kind == "heterogeneous":
        counts = {m: per_type for m in table.machine_types}
        return profile_cluster(
            table, counts, "ncbi-heterogeneous", f"{per_type} machines of each of the {len(counts)} machine types"
        )
    return profile_cluster(
        table, {homogeneous_type: per_type}, "ncbi-homogeneous", f"{per_type} machines of {homogeneous_type}"
    )


def probe(
    table: ProfileTable,
    kind: Kind,
    trace: Trace,
    per_type: int,
    seed: int = 0,
    hours: float | None = None,
    homogeneous_type: str = "type6",
) -> SizeProbe:
    """Run FCFS once on the seed's trace and the given size."""
    from simcore.profiles.trace import arrival_model

    h = arrival_model(table).trace_hours if hours is None else hours
    cluster = cluster_for(table, kind, per_type, homogeneous_type)
    wl = profile_workload(table, cluster, workload_rng(seed), h, reduced=(trace == "reduced"))
    res = simulate(cluster, wl, FCFS(), seed, drain=True, samples=16)
    s = summary(res)
    return SizeProbe(per_type, float(s["mean_response_s"]), float(s["mean_run_s"]))


def smallest_size(
    table: ProfileTable,
    kind: Kind,
    trace: Trace,
    seed: int = 0,
    hours: float | None = None,
    homogeneous_type: str = "type6",
) -> tuple[int, list[SizeProbe]]:
    """Smallest machines-per-type at which FCFS keeps up, and every probe run on the way."""
    probes: dict[int, SizeProbe] = {}

    def ok(n: int) -> bool:
        if n not in probes:
            probes[n] = probe(table, kind, trace, n, seed, hours, homogeneous_type)
        return probes[n].keeps_up

    hi = 1
    while not ok(hi):
        hi *= 2
        if hi > 1 << 16:
            raise RuntimeError("no cluster size up to 65536 machines per type keeps up")  # pragma: no cover
    lo = hi // 2  # fails (or 0)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if ok(mid):
            hi = mid
        else:
            lo = mid
    return hi, [probes[k] for k in sorted(probes)]


#: Sizes found by searches in this process, keyed by (table fingerprint, kind, trace, homogeneous type).
_FOUND: dict[tuple[str, str, str, str], int] = {}


def default_size(table: ProfileTable, kind: Kind, trace: Trace, homogeneous_type: str = "type6") -> int:
    """The recorded size for the shipped table, else a search (seed 0, full length), cached per table."""
    recorded = table.meta.get("cluster_sizes", {})
    key = kind if kind == "heterogeneous" else f"homogeneous-{homogeneous_type}"
    rec = recorded.get(key, {}).get(trace) if isinstance(recorded, dict) else None
    if isinstance(rec, dict) and rec.get("fingerprint") == table.fingerprint():
        return int(rec["machines_per_type"])
    k = (table.fingerprint(), kind, trace, homogeneous_type)
    if k not in _FOUND:
        _FOUND[k] = smallest_size(table, kind, trace, homogeneous_type=homogeneous_type)[0]
    return _FOUND[k]
