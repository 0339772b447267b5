"""The job-class table file (``classes.json``) that ``simcore import --classes K`` writes, read back.

:func:`simcore.traces.importer.class_table_dict` writes it::

    {
      "resources": ["cpu", "mem"],
      "params": {"k": 4, "window_hours": 24.0, "seed": 0, "use_duration": false},
      "classes": [...],                       # per class, for people to read
      "table": {"names": [...], "requests": [[...]], "rates": [[...]], "proportions": [...]}
    }

Only ``resources`` and ``table`` are read (``table`` is
:meth:`simcore.core.model.ClassTable.to_dict`). A trace whose ``class`` column
holds these class ids and this table together give a
:class:`~simcore.core.model.Workload` with ``classes`` set, which LoTES uses
instead of fitting its own k-means classes.

The table is *aligned to the cluster a run uses*: request columns are
reordered to the cluster's resources (a resource the table lacks is an
error), and machine-independent rates (every column of ``rates`` equal, what
k-means classes of a trace have, since trace durations do not depend on the
machine) are repeated for every configuration of the cluster. Rates that
differ between configurations only fit a cluster with that many
configurations.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping, Sequence
from typing import IO, Any

import numpy as np

from simcore.core.errors import InputError
from simcore.core.model import ClassTable, Cluster, Workload
from simcore.sources import read_json, source_label


def class_table_from_dict(
    data: Any, resources: Sequence[str], n_configs: int, *, label: str = "classes.json"
) -> ClassTable:
    """The class table of a ``classes.json`` dict, aligned to a cluster's ``resources`` and ``n_configs``."""
    if not isinstance(data, Mapping) or not isinstance(data.get("table"), Mapping):
        raise InputError(
            "expected an object with 'resources' and 'table' (simcore import --classes output)", file=label
        )
    table = data["table"]
    file_res = data.get("resources")
    if not isinstance(file_res, list) or not all(isinstance(r, str) for r in file_res):
        raise InputError("'resources' must be a list of resource names", file=label, column="resources")
    if not isinstance(table.get("names"), list):
        raise InputError("'table.names' must be a list of class names", file=label, column="table.names")
    try:
        names = tuple(str(n) for n in table["names"])
        req = np.asarray(table["requests"], dtype=np.float64)
        rates = np.asarray(table["rates"], dtype=np.float64)
        prop = np.asarray(table["proportions"], dtype=np.float64)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(
            f"'table' needs names, requests, rates and proportions as numbers ({e})", file=label, column="table"
        ) from None
    k = len(names)
    if k == 0 or req.shape != (k, len(file_res)) or rates.ndim != 2 or rates.shape[0] != k or prop.shape != (k,):
        raise InputError(
            f"'table' shapes do not match: {k} names, requests {req.shape}, rates {rates.shape}, "
            f"proportions {prop.shape}, {len(file_res)} resources",
            file=label,
            column="table",
        )
    if (
        not (np.isfinite(req).all() and np.isfinite(rates).all() and np.isfinite(prop).all())
        or (req < 0).any()
        or (rates <= 0).any()
        or (prop < 0).any()
    ):
        raise InputError(
            "requests and proportions must be finite and non-negative, rates positive", file=label, column="table"
        )
    missing = [r for r in resources if r not in file_res]
    if missing:
        raise InputError(
            f"the class table has resources {file_res}, not the cluster's {list(resources)} (missing {missing})",
            file=label,
            column="resources",
        )
    req = req[:, [file_res.index(r) for r in resources]]
    if rates.shape[1] != n_configs:
        if not np.all(rates == rates[:, :1]):
            raise InputError(
                f"the class rates differ between {rates.shape[1]} machine configurations; the cluster has {n_configs}",
                file=label,
                column="table.rates",
            )
        rates = np.repeat(rates[:, :1], n_configs, axis=1)
    return ClassTable(names=names, requests=req, rates=rates, proportions=prop)


def read_classes(source: str | os.PathLike[str] | IO[Any], resources: Sequence[str], n_configs: int) -> ClassTable:
    """Read a ``classes.json`` file (path or open file) aligned to a cluster; errors name the file."""
    data, label = read_json(source, "a classes.json file")
    return class_table_from_dict(data, resources, n_configs, label=label)


__all__ = ["class_table_from_dict", "read_classes"]


def with_classes(workload: Workload, source: str | os.PathLike[str] | IO[Any], cluster: Cluster) -> Workload:
    """``workload`` with the class table read from ``source`` attached (its ids must fit the table)."""
    table = read_classes(source, cluster.resources, cluster.n_configs)
    if workload.n_jobs and int(workload.job_class.max()) >= table.n_classes:
        raise InputError(
            f"trace {workload.name!r} has class ids up to {int(workload.job_class.max())} but "
            f"{os.path.basename(source_label(source))!r} defines {table.n_classes} classes"
        )
    return dataclasses.replace(workload, classes=table)
