"""The project's JSON cluster format, the same as :meth:`Cluster.to_dict`::

    {
      "name": "two-kinds",
      "description": "optional text",
      "resources": ["cpu", "mem"],
      "configurations": [
        {"name": "big", "count": 10, "capacity": {"cpu": 1.0, "mem": 1.0}},
        {"name": "small", "count": 40, "capacity": {"cpu": 0.5, "mem": 0.25},
         "attributes": {"rack": "B"}}
      ]
    }

Capacities are in whatever unit the cluster's workloads use for requests
(the Google presets normalise to the largest machine). ``count`` is the
number of identical machines of the configuration (0 allowed, not all 0).
``attributes`` (optional) is free-form JSON kept with the configuration.
``speed`` (optional, positive, e.g. the clock rate in GHz) makes processing
times machine-dependent: work times ``max(speed) / speed``; give it for every
configuration or none.

Errors raise :class:`~simcore.core.errors.InputError` naming the file and the
JSON path of the offending value, e.g. ``configurations[3].capacity.mem``;
JSON syntax errors name the line and column.
"""

from __future__ import annotations

import io
import json
import math
import os
from typing import IO, Any

import numpy as np

from simcore.core.errors import InputError
from simcore.core.limits import max_machines
from simcore.core.model import Cluster
from simcore.sources import check_tree, read_json

TOP_KEYS = {"name", "description", "resources", "configurations"}
CONFIG_KEYS = {"name", "count", "capacity", "speed", "attributes"}


def read_cluster(source: str | os.PathLike[str] | IO[Any], *, name: str | None = None) -> Cluster:
    """Read a JSON cluster file (path or open file, text or bytes) into a :class:`Cluster`."""
    data, label = read_json(source, "a JSON cluster file")
    return cluster_from_dict(data, label=label, name=name)


def _fail(label: str | None, path: str, message: str) -> InputError:
    return InputError(f"{path}: {message}" if path else message, file=label)


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def cluster_from_dict(data: Any, *, label: str | None = None, name: str | None = None) -> Cluster:
    """Validate a parsed cluster document (see the module docstring) and build the :class:`Cluster`.

    ``label`` names the source in error messages.
    """
    if not isinstance(data, dict):
        raise _fail(label, "", f"the top level must be a JSON object, got {type(data).__name__}")
    check_tree(data, label)  # depth and NUL characters, also for documents not read by read_json
    unknown = sorted(set(data) - TOP_KEYS)
    if unknown:
        raise _fail(label, unknown[0], f"unknown key; allowed keys: {', '.join(sorted(TOP_KEYS))}")
    cname = data.get("name", name or _stem(label))
    if not isinstance(cname, str) or not cname.strip():
        raise _fail(label, "name", "must be a non-empty string")
    description = data.get("description", "")
    if not isinstance(description, str):
        raise _fail(label, "description", "must be a string")
    if "resources" not in data:
        raise _fail(label, "resources", 'missing; e.g. "resources": ["cpu", "mem"]')
    resources = data["resources"]
    if not isinstance(resources, list) or not resources:
        raise _fail(label, "resources", "must be a non-empty list of resource names")
    for i, r in enumerate(resources):
        if not isinstance(r, str) or not r.strip():
            raise _fail(label, f"resources[{i}]", f"must be a non-empty string, got {r!r}")
        if r in resources[:i]:
            raise _fail(label, f"resources[{i}]", f"resource {r!r} is listed twice")
    if "configurations" not in data:
        raise _fail(label, "configurations", "missing; a list of machine configurations")
    configs = data["configurations"]
    if not isinstance(configs, list) or not configs:
        raise _fail(label, "configurations", "must be a non-empty list")
    names: list[str] = []
    counts: list[int] = []
    caps: list[list[float]] = []
    attrs: list[dict[str, Any]] = []
    speeds: list[float | None] = []
    for j, cfg in enumerate(configs):
        at = f"configurations[{j}]"
        if not isinstance(cfg, dict):
            raise _fail(label, at, "must be an object with name, count and capacity")
        unknown = sorted(set(cfg) - CONFIG_KEYS)
        if unknown:
            raise _fail(label, f"{at}.{unknown[0]}", f"unknown key; allowed keys: {', '.join(sorted(CONFIG_KEYS))}")
        for key in ("name", "count", "capacity"):
            if key not in cfg:
                raise _fail(label, f"{at}.{key}", "missing")
        nm = cfg["name"]
        if not isinstance(nm, str) or not nm.strip():
            raise _fail(label, f"{at}.name", f"must be a non-empty string, got {nm!r}")
        if nm in names:
            raise _fail(label, f"{at}.name", f"configuration name {nm!r} is used twice")
        count = cfg["count"]
        if isinstance(count, float) and count.is_integer():
            count = int(count)
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            raise _fail(label, f"{at}.count", f"must be a non-negative integer, got {cfg['count']!r}")
        if count > max_machines():
            raise _fail(
                label,
                f"{at}.count",
                f"{count} exceeds the limit of {max_machines():,} machines per cluster (setting SIMCORE_MAX_MACHINES)",
            )
        cap = cfg["capacity"]
        if not isinstance(cap, dict):
            raise _fail(label, f"{at}.capacity", "must be an object mapping each resource to a number")
        for r in cap:
            if r not in resources:
                raise _fail(label, f"{at}.capacity.{r}", f"not one of the resources ({', '.join(resources)})")
        row = []
        for r in resources:
            if r not in cap:
                raise _fail(label, f"{at}.capacity.{r}", "missing")
            v = cap[r]
            if not _is_number(v) or not math.isfinite(v) or v < 0:
                raise _fail(label, f"{at}.capacity.{r}", f"must be a finite non-negative number, got {v!r}")
            row.append(float(v))
        attributes = cfg.get("attributes", {})
        if not isinstance(attributes, dict):
            raise _fail(label, f"{at}.attributes", "must be an object")
        speed = cfg.get("speed")
        if speed is not None and (not _is_number(speed) or not math.isfinite(speed) or speed <= 0):
            raise _fail(label, f"{at}.speed", f"must be a finite positive number, got {speed!r}")
        if j and (speed is None) != (speeds[0] is None):
            raise _fail(label, f"{at}.speed", "give a speed for every configuration or for none")
        speeds.append(None if speed is None else float(speed))
        names.append(nm)
        counts.append(count)
        caps.append(row)
        attrs.append(attributes)
    if sum(counts) == 0:
        raise _fail(label, "configurations", "every count is 0; the cluster needs at least one machine")
    try:
        return Cluster(
            name=cname,
            resources=tuple(resources),
            config_names=tuple(names),
            counts=np.array(counts, dtype=object),  # the model checks the machine limit before int64
            capacity=np.array(caps, dtype=np.float64),
            attributes=tuple(attrs),
            description=description,
            speed=None if speeds[0] is None else np.array(speeds, dtype=np.float64),
        )
    except InputError as e:  # anything the model still rejects, with the file named
        raise InputError(e.reason, file=label) from None


def _stem(label: str | None) -> str:
    if not label or label.startswith("<"):
        return "cluster"
    base = os.path.basename(label)
    return base[:-5] if base.endswith(".json") else base


def write_cluster(cluster: Cluster, dest: str | os.PathLike[str] | IO[Any]) -> None:
    """Write ``cluster`` as JSON (the format :func:`read_cluster` reads)."""
    doc = cluster.to_dict()
    if cluster.description:
        doc = {"name": doc["name"], "description": cluster.description, **{k: v for k, v in doc.items() if k != "name"}}
    text = json.dumps(doc, indent=2) + "\n"
    if isinstance(dest, (str, os.PathLike)):
        with open(dest, "w", encoding="utf-8") as f:
            f.write(text)
    elif isinstance(dest, io.TextIOBase):
        dest.write(text)
    else:
        dest.write(text.encode("utf-8"))


__all__ = ["cluster_from_dict", "read_cluster", "write_cluster"]
