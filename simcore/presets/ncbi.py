"""Presets of the profile-driven study (Kontothanassis & Goddeau, HPL-2004-192).

Clusters: ``ncbi-heterogeneous`` (equal numbers of each machine type of
Table 1) and ``ncbi-homogeneous`` (type 6 only, the large-memory machines of
section 5). Workloads: ``ncbi-blast`` (all five Blast job types, Table 2's
mix) and ``ncbi-blast-reduced`` (blastn and blastp only, Figure 13).

Cluster size: ``machines_per_type=0`` (the default) uses the smallest size at
which FCFS keeps up with the trace named by ``sized_for`` (section 5), as
recorded in ``simcore/data/ncbi_profile.json`` for the shipped profile, or
found by :func:`simcore.profiles.sizing.smallest_size` for an uploaded one.
Because a cluster is built before its workload, pass ``--sized-for reduced``
with ``ncbi-blast-reduced`` to get the paper's Figure-13 size.

Arrival rate: fixed by the trace model (a job every 1.14 s on average), so
``--load`` is ignored; ``rate_scale`` multiplies every hourly rate.

``profile``: path of a profile table (JSON or CSV, see
:mod:`simcore.profiles.table`); empty for the shipped, derived table. Both the
cluster and the workload take it, so ``--profile my.csv`` sets both.
"""

from __future__ import annotations

import numpy as np

from simcore.core.model import Cluster, Workload
from simcore.presets import cluster_preset, workload_preset
from simcore.profiles.build import profile_workload
from simcore.profiles.sizing import cluster_for, default_size
from simcore.profiles.table import load_profile
from simcore.schedulers.base import Param

PROFILE = Param(
    "profile", str, "", "profile table file (JSON or CSV); empty: the shipped table derived from the paper's findings"
)
SIZED_FOR = Param(
    "sized_for", str, "full", "trace the automatic cluster size is found for", choices=("full", "reduced")
)
PER_TYPE = Param(
    "machines_per_type",
    int,
    0,
    "machines of each machine type; 0: the smallest size at which FCFS keeps up with the trace (section 5)",
    min=0,
    max=100_000,
)


@cluster_preset(
    "ncbi-heterogeneous",
    "Profile study: equal numbers of the six machine types of Table 1, one job per machine",
    (PER_TYPE, SIZED_FOR, PROFILE),
)
def ncbi_heterogeneous(machines_per_type: int = 0, sized_for: str = "full", profile: str = "") -> Cluster:
    table = load_profile(profile)
    n = machines_per_type or default_size(table, "heterogeneous", sized_for)  # type: ignore[arg-type]
    return cluster_for(table, "heterogeneous", n)


@cluster_preset(
    "ncbi-homogeneous",
    "Profile study: type-6 machines only (525 MHz, 8 GB, SCSI), one job per machine",
    (
        PER_TYPE,
        SIZED_FOR,
        PROFILE,
        Param("machine_type", str, "type6", "the one machine type of the homogeneous cluster"),
    ),
)
def ncbi_homogeneous(
    machines_per_type: int = 0, sized_for: str = "full", profile: str = "", machine_type: str = "type6"
) -> Cluster:
    table = load_profile(profile)
    table.machine_index(machine_type)
    n = machines_per_type or default_size(table, "homogeneous", sized_for, machine_type)  # type: ignore[arg-type]
    return cluster_for(table, "homogeneous", n, machine_type)


RATE = Param(
    "rate_scale",
    float,
    1.0,
    "multiplies the trace's hourly arrival rates (1: a job every 1.14 s on average)",
    min=0.01,
    max=100.0,
)


@workload_preset(
    "ncbi-blast",
    "Profile study: NCBI-like Blast trace, 25 h from 1pm, hourly Poisson rates, Table 2 job mix",
    (RATE, PROFILE),
    default_cluster="ncbi-heterogeneous",
    uses_load=False,
    default_hours=25.0,
    provides=frozenset({"profile"}),
)
def ncbi_blast(
    cluster: Cluster, rng: np.random.Generator, *, load: float, hours: float, rate_scale: float = 1.0, profile: str = ""
) -> Workload:
    return profile_workload(load_profile(profile), cluster, rng, hours, rate_scale=rate_scale, name="ncbi-blast")


@workload_preset(
    "ncbi-blast-reduced",
    "Profile study: the NCBI-like trace with blastn and blastp jobs only (Figure 13)",
    (RATE, PROFILE),
    default_cluster="ncbi-heterogeneous",
    uses_load=False,
    default_hours=25.0,
    provides=frozenset({"profile"}),
)
def ncbi_blast_reduced(
    cluster: Cluster, rng: np.random.Generator, *, load: float, hours: float, rate_scale: float = 1.0, profile: str = ""
) -> Workload:
    return profile_workload(
        load_profile(profile), cluster, rng, hours, reduced=True, rate_scale=rate_scale, name="ncbi-blast-reduced"
    )
