"""LoTES Stage 1 (section 4.1): the allocation LP and the sets K^j.

The LP itself lives in :func:`simcore.capacity.allocation_lp` (the workload
presets use it for their arrival rates); this module only adapts a class
table to the cluster and reads off K^j, the classes with positive allocation
delta*_jkl on each configuration.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from simcore.capacity import Allocation, allocation_lp
from simcore.errors import ParameterError
from simcore.model import ClassTable, Cluster


@dataclass(frozen=True)
class Stage1:
    """The allocation LP's solution and, per configuration j, the sorted list K^j."""

    allocation: Allocation
    classes_of: tuple[tuple[int, ...], ...]

    @property
    def lambda_star(self) -> float:
        """lambda* of the allocation LP, jobs per second."""
        return self.allocation.lambda_star


def fit_classes(classes: ClassTable, cluster: Cluster) -> ClassTable:
    """``classes`` with rates of shape (K, M) for ``cluster``.

    A table whose rates have a single column (machine-independent processing,
    e.g. from :func:`simcore.classify.kmeans_classes`) is broadcast to every
    configuration.
    """
    rates = classes.rates
    if rates.ndim == 1:
        rates = rates[:, None]
    if rates.shape[1] == 1 and cluster.n_configs != 1:
        rates = np.repeat(rates, cluster.n_configs, axis=1)
    if rates.shape != (classes.n_classes, cluster.n_configs):
        raise ParameterError(
            f"class rates have shape {classes.rates.shape}, expected ({classes.n_classes} classes, "
            f"{cluster.n_configs} configurations of cluster {cluster.name!r})"
        )
    if rates is classes.rates:
        return classes
    return ClassTable(classes.names, classes.requests, rates, classes.proportions)


def solve_stage1(cluster: Cluster, classes: ClassTable) -> Stage1:
    """Solve the allocation LP (eq. 1-5) and collect K^j for every configuration."""
    alloc = allocation_lp(cluster, fit_classes(classes, cluster))
    ks = tuple(tuple(alloc.classes_of(j)) for j in range(cluster.n_configs))
    return Stage1(allocation=alloc, classes_of=ks)
