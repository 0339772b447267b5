"""A cluster shape resized to a machine count: every configuration in proportion, or one configuration alone.

Proportional sizes are apportioned by the Sainte-Lague (Webster) divisor
method with one machine per configuration first: the seats of size ``n + 1``
are those of size ``n`` plus one (the method is *house-monotone*), so a
larger cluster always contains a smaller one, and "more machines" never
means fewer of some configuration, which largest-remainder rounding can give
(the Alabama paradox). A bisection over sizes then compares nested clusters.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, IntArray

#: ``resize`` value for proportional scaling of every configuration.
ALL = "all"


def check_mode(cluster: Cluster, mode: str) -> None:
    """``mode`` is ``all`` or the name of one of ``cluster``'s configurations."""
    if mode != ALL and mode not in cluster.config_names:
        raise ParameterError(
            f"--resize {mode!r}: give 'all' (every configuration in proportion) or one configuration of "
            f"{cluster.name!r}: {', '.join(cluster.config_names)}"
        )


def smallest_size(cluster: Cluster, mode: str) -> int:
    """The fewest machines a resized ``cluster`` may have.

    Proportional: one machine per configuration the cluster has (fewer cannot keep its mix).
    One configuration: the others as given, that one at 0, but at least one machine in all.
    """
    if mode == ALL:
        return int(np.count_nonzero(cluster.counts))
    j = cluster.config_names.index(mode)
    rest = int(cluster.n_machines - cluster.counts[j])
    return max(rest, 1)


def counts_at(cluster: Cluster, machines: int, mode: str) -> IntArray:
    """Machines per configuration of ``cluster`` resized to ``machines`` in all (see the module's note)."""
    floor = smallest_size(cluster, mode)
    if machines < floor:
        raise ParameterError(
            f"{machines} machines is below the smallest {mode!r} resize of {cluster.name!r} ({floor} machines)"
        )
    if mode != ALL:
        j = cluster.config_names.index(mode)
        counts = cluster.counts.copy()
        counts[j] = machines - (cluster.n_machines - cluster.counts[j])
        return counts
    weights = cluster.counts.astype(np.float64) / cluster.n_machines
    present = np.flatnonzero(cluster.counts > 0)
    counts = np.zeros(cluster.n_configs, dtype=np.int64)
    counts[present] = 1
    extra = machines - len(present)
    if extra == 0:
        return counts
    # Seat k >= 1 of configuration j has priority w_j / (k + 1/2); the first `extra` seats in one fixed
    # order (priority, then configuration, then k) are taken. Webster's seats stay within one of the
    # quota w_j * extra; twice that plus three candidates per configuration is ample.
    cand_j: list[IntArray] = []
    cand_k: list[IntArray] = []
    for c in present.tolist():
        k = np.arange(1, int(2 * weights[c] * extra) + 4, dtype=np.int64)
        cand_j.append(np.full(len(k), c, dtype=np.int64))
        cand_k.append(k)
    cj = np.concatenate(cand_j)
    ck = np.concatenate(cand_k)
    priority = weights[cj] / (ck + 0.5)
    order = np.lexsort((ck, cj, -priority))[:extra]
    np.add.at(counts, cj[order], 1)
    return counts


def resize(cluster: Cluster, machines: int, mode: str = ALL) -> Cluster:
    """``cluster`` with ``machines`` machines in all, by ``mode`` (``all`` or a configuration's name).

    The cluster's own checks apply: more than ``SIMCORE_MAX_MACHINES`` is refused.
    """
    counts = counts_at(cluster, machines, mode)
    return dataclasses.replace(
        cluster, counts=counts, name=f"{cluster.name} x{machines}", description=f"{cluster.name} resized to {machines}"
    )
