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
import os
from typing import IO, Annotated, Any

import numpy as np
from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from simcore.core.errors import InputError
from simcore.core.limits import max_machines
from simcore.core.model import Cluster
from simcore.documents import Document, Loc, fail, finite, non_blank, parse, says
from simcore.sources import check_tree, read_json

TOP_KEYS = {"name", "description", "resources", "configurations"}
CONFIG_KEYS = {"name", "count", "capacity", "speed", "attributes"}


def read_cluster(source: str | os.PathLike[str] | IO[Any], *, name: str | None = None) -> Cluster:
    """Read a JSON cluster file (path or open file, text or bytes) into a :class:`Cluster`."""
    data, label = read_json(source, "a JSON cluster file")
    return cluster_from_dict(data, label=label, name=name)


def _fail(label: str | None, path: str, message: str) -> InputError:
    return InputError(f"{path}: {message}" if path else message, file=label)


def _integral(value: Any) -> Any:
    # A count written 2.0 is 2 (some tools write every number as a float); 2.5 stays a float and is refused.
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _within_machine_limit(count: int) -> int:
    if count > max_machines():
        limit = f"the limit of {max_machines():,} machines per cluster (setting SIMCORE_MAX_MACHINES)"
        raise fail(f"{count} exceeds {limit}")
    return count


def _unique(values: list[str]) -> list[str]:
    for i, v in enumerate(values):
        if v in values[:i]:
            raise fail("resource {name!r} is listed twice", at=(i,), name=v)
    return values


NonEmpty = Annotated[str, AfterValidator(non_blank)]
Count = Annotated[
    int,
    Field(ge=0),
    BeforeValidator(_integral),
    says("must be a non-negative integer, got {got}"),
    AfterValidator(_within_machine_limit),
]
Amount = Annotated[float, AfterValidator(finite), Field(ge=0), says("must be a finite non-negative number, got {got}")]
Speed = Annotated[float, AfterValidator(finite), Field(gt=0), says("must be a finite positive number, got {got}")]


class ConfigurationDoc(Document):
    """One machine configuration: ``count`` identical machines of ``capacity``."""

    NOT_OBJECT = "must be an object with name, count and capacity"

    name: Annotated[NonEmpty, says("must be a non-empty string, got {got}")]
    count: Count
    capacity: Annotated[dict[str, Amount], says("must be an object mapping each resource to a number")]
    speed: Speed | None = None
    attributes: Annotated[dict[str, Any], says("must be an object")] = {}


class ClusterDoc(Document):
    """A cluster document (see the module docstring); capacities are checked against ``resources`` here."""

    MISSING_KEY = {
        "resources": 'missing; e.g. "resources": ["cpu", "mem"]',
        "configurations": "missing; a list of machine configurations",
    }

    name: Annotated[NonEmpty, says("must be a non-empty string")] = ""  # "": not given (a given "" is refused)
    description: Annotated[str, says("must be a string")] = ""
    resources: Annotated[
        list[Annotated[NonEmpty, says("must be a non-empty string, got {got}")]],
        Field(min_length=1),
        says("must be a non-empty list of resource names"),
        AfterValidator(_unique),
    ]
    configurations: Annotated[list[ConfigurationDoc], Field(min_length=1), says("must be a non-empty list")]

    @model_validator(mode="after")
    def _configurations_fit(self) -> ClusterDoc:
        """Names unique, capacities for exactly the resources, a speed for every configuration or none."""
        listed = ", ".join(self.resources)
        for j, cfg in enumerate(self.configurations):
            at: Loc = ("configurations", j)
            if any(c.name == cfg.name for c in self.configurations[:j]):
                raise fail("configuration name {name!r} is used twice", at=(*at, "name"), name=cfg.name)
            for r in cfg.capacity:
                if r not in self.resources:
                    raise fail("not one of the resources ({listed})", at=(*at, "capacity", r), listed=listed)
            for r in self.resources:
                if r not in cfg.capacity:
                    raise fail("missing", at=(*at, "capacity", r))
            if j and (cfg.speed is None) != (self.configurations[0].speed is None):
                raise fail("give a speed for every configuration or for none", at=(*at, "speed"))
        if sum(c.count for c in self.configurations) == 0:
            raise fail("every count is 0; the cluster needs at least one machine", at=("configurations",))
        return self


def cluster_from_dict(data: Any, *, label: str | None = None, name: str | None = None) -> Cluster:
    """Validate a parsed cluster document (see the module docstring) and build the :class:`Cluster`.

    ``label`` names the source in error messages.
    """
    if not isinstance(data, dict):
        raise _fail(label, "", f"the top level must be a JSON object, got {type(data).__name__}")
    check_tree(data, label)  # depth and NUL characters, also for documents not read by read_json
    doc = parse(ClusterDoc, data, lambda p: _fail(label, p.path, p.message))
    configs = doc.configurations
    speeds = [c.speed for c in configs]
    try:
        return Cluster(
            name=doc.name or name or _stem(label),
            resources=tuple(doc.resources),
            config_names=tuple(c.name for c in configs),
            counts=np.array([c.count for c in configs], dtype=object),  # the model checks the limit before int64
            capacity=np.array([[c.capacity[r] for r in doc.resources] for c in configs], dtype=np.float64),
            attributes=tuple(c.attributes for c in configs),
            description=doc.description,
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
