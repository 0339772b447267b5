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
from collections.abc import Sequence
from typing import IO, Annotated, Any

import numpy as np
from pydantic import BeforeValidator, ConfigDict

from simcore.core.errors import InputError
from simcore.core.model import ClassTable, Cluster, FloatArray, Workload
from simcore.documents import Document, fail, parse, says
from simcore.sources import read_json, source_label

_OBJECT = "expected an object with 'resources' and 'table' (simcore import --classes output)"
_RESOURCES = "'resources' must be a list of resource names"
_NAMES = "'table.names' must be a list of class names"
_NUMBERS = "'table' needs names, requests, rates and proportions as numbers ({path} is {got})"

# np.asarray(dtype=float64) read these tables before, so a number may be written "0.1" (or true, as 1.0).
_Number = Annotated[float, BeforeValidator(lambda v: float(v) if isinstance(v, (bool, str)) else v), says(_NUMBERS)]
_Row = Annotated[list[_Number], says(_NUMBERS)]


class TableDoc(Document):
    """:meth:`ClassTable.to_dict`: names, per-class requests (class x resource) and rates (class x config)."""

    model_config = ConfigDict(extra="ignore")
    NOT_OBJECT = _OBJECT
    MISSING = "'table' needs names, requests, rates and proportions as numbers ({path} is missing)"
    MISSING_KEY = {"names": _NAMES}

    names: Annotated[list[Annotated[str, BeforeValidator(str)]], says(_NAMES)]
    requests: Annotated[list[_Row], says(_NUMBERS)]
    rates: Annotated[list[_Row], says(_NUMBERS)]
    proportions: Annotated[list[_Number], says(_NUMBERS)]


class ClassesDoc(Document):
    """A ``classes.json`` file; only ``resources`` and ``table`` are read (the rest is for people)."""

    model_config = ConfigDict(extra="ignore")
    NOT_OBJECT = _OBJECT
    MISSING_KEY = {"resources": _RESOURCES, "table": _OBJECT}

    resources: Annotated[list[Annotated[str, says(_RESOURCES)]], says(_RESOURCES)]
    table: TableDoc

    @classmethod
    def precheck(cls, data: dict[str, Any]) -> None:
        if not isinstance(data.get("table"), dict):
            raise fail(_OBJECT)


def _column(path: str) -> str | None:
    """The part of the file an error's column names: resources, table.names or table (as before)."""
    for part in ("resources", "table.names", "table"):
        if path.startswith(part):
            return part
    return None


def _matrix(rows: list[list[float]], what: str, label: str) -> FloatArray:
    if len({len(r) for r in rows}) > 1:
        raise InputError(
            f"'table' shapes do not match: the rows of {what} differ in length", file=label, column="table"
        )
    return np.asarray(rows, dtype=np.float64)


def class_table_from_dict(
    data: Any, resources: Sequence[str], n_configs: int, *, label: str = "classes.json"
) -> ClassTable:
    """The class table of a ``classes.json`` dict, aligned to a cluster's ``resources`` and ``n_configs``."""
    doc = parse(ClassesDoc, data, lambda p: InputError(p.message, file=label, column=_column(p.path)))
    file_res, table = doc.resources, doc.table
    names = tuple(table.names)
    req = _matrix(table.requests, "requests", label)
    rates = _matrix(table.rates, "rates", label)
    prop = np.asarray(table.proportions, dtype=np.float64)
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
