"""Clusters and workloads of the profile study, built from a :class:`ProfileTable`.

A machine has one resource, ``slot``, of capacity 1, and every job requests
1 slot, so the engine runs one job per machine at a time. Configurations are
the table's machine types (Table 1's attributes kept in
``Cluster.attributes``); a job's class is its type.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.model import ClassTable, Cluster, Workload
from simcore.profiles.runtime import ProfileRuntime
from simcore.profiles.table import ProfileTable
from simcore.profiles.trace import REDUCED_TYPES, arrival_model, ncbi_trace

RESOURCES = ("slot",)


def profile_cluster(table: ProfileTable, counts: dict[str, int], name: str, description: str = "") -> Cluster:
    """A one-slot-per-machine cluster with ``counts[machine type]`` machines (types in table order)."""
    for mt in counts:
        table.machine_index(mt)
    types = [m for m in table.machine_types if counts.get(m, 0) > 0]
    if not types:
        raise ParameterError("the cluster needs at least one machine")
    attrs = tuple(dict(table.machine_attributes[table.machine_index(m)]) for m in types)
    return Cluster(
        name=name,
        resources=RESOURCES,
        config_names=tuple(types),
        counts=np.array([counts[m] for m in types], dtype=np.int64),
        capacity=np.ones((len(types), 1)),
        attributes=attrs,
        description=description,
    )


def table_for_cluster(table: ProfileTable, cluster: Cluster) -> ProfileTable:
    """The table's columns reordered to the cluster's configurations (matched by name)."""
    if tuple(cluster.resources) != RESOURCES:
        raise InputError(
            f"profile workloads need a cluster with the single resource 'slot' (one job per "
            f"machine); cluster {cluster.name!r} has {list(cluster.resources)}"
        )
    missing = [c for c in cluster.config_names if c not in table.machine_types]
    if missing:
        raise InputError(
            f"cluster {cluster.name!r} has configuration(s) {', '.join(missing)} that the profile "
            f"table does not know; its machine types are {', '.join(table.machine_types)}"
        )
    if np.any(cluster.capacity < 1.0):
        raise InputError(f"every machine of cluster {cluster.name!r} needs at least 1 slot")
    idx = [table.machine_index(c) for c in cluster.config_names]
    return replace(
        table,
        machine_types=tuple(cluster.config_names),
        cpu_s=table.cpu_s[:, idx],
        io_s=table.io_s[:, idx],
        warm_s=table.warm_s[:, idx],
        machine_attributes=tuple(table.machine_attributes[i] for i in idx),
    )


def profile_workload(
    table: ProfileTable,
    cluster: Cluster,
    rng: np.random.Generator,
    hours: float,
    *,
    reduced: bool = False,
    rate_scale: float = 1.0,
    name: str = "ncbi-blast",
) -> Workload:
    """An NCBI-like trace of ``hours`` hours for ``cluster``, run times from ``table``.

    The reduced trace (Figure 13) is the full trace with every job that is
    not blastn or blastp removed, so under one seed it is a subset of the
    full trace and arrives at about 74.6% of its rate.
    """
    arrivals = arrival_model(table)
    submit, kinds = ncbi_trace(table, arrivals, hours, rng, rate_scale)
    used = table
    if reduced:
        missing = [t for t in REDUCED_TYPES if t not in table.job_types]
        if missing:
            raise InputError(
                f"the reduced trace needs job types {', '.join(REDUCED_TYPES)}; the profile table "
                f"lacks {', '.join(missing)}",
                file=table.source,
            )
        keep_idx = [table.job_index(t) for t in REDUCED_TYPES]
        remap = np.full(len(table.job_types), -1, dtype=np.int64)
        remap[keep_idx] = np.arange(len(keep_idx))
        keep = remap[kinds] >= 0
        submit, kinds = submit[keep], remap[kinds[keep]]
        used = table.subset(REDUCED_TYPES)
    local = table_for_cluster(used, cluster)
    cold = local.cold_s
    classes = ClassTable(
        names=local.job_types,
        requests=np.ones((len(local.job_types), 1)),
        rates=1.0 / cold,
        proportions=local.proportions,
    )
    n = len(submit)
    return Workload(
        name=name,
        resources=RESOURCES,
        submit=submit,
        request=np.ones((n, 1)),
        # work: the job's mean cold run time over the cluster's machine types (s), for readers that
        # ignore the runtime model; the engine uses ``runtime``.
        work=cold.mean(axis=1)[kinds] if n else np.zeros(0),
        job_class=kinds,
        horizon_s=hours * 3600.0,
        classes=classes,
        runtime=ProfileRuntime(local, kinds),
        params={
            "hours": hours,
            "rate_scale": rate_scale,
            "reduced": reduced,
            "profile": table.source,
            "arrival_rate": n / (hours * 3600.0) if hours > 0 else 0.0,
        },
    )
