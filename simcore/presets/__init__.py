"""Named clusters and workloads ("presets"), found through registries.

Each module in this package registers its presets with the decorators
below. A cluster preset builds a :class:`~simcore.core.model.Cluster` from its
parameters; a workload preset builds a :class:`~simcore.core.model.Workload` for a
given cluster (the arrival rate is a fraction ``load`` of the cluster's
allocation-LP bound lambda*), a random generator, and a horizon in hours.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.model import Cluster, Workload
from simcore.core.registry import Registry
from simcore.schedulers.base import Param
from simcore.sources import looks_like_file

ClusterBuilder = Callable[..., Cluster]
#: build(cluster, rng, load, hours, **params) -> Workload
WorkloadBuilder = Callable[..., Workload]


@dataclass(frozen=True)
class ClusterPreset:
    name: str
    description: str
    build: ClusterBuilder
    params: tuple[Param, ...] = ()


@dataclass(frozen=True)
class WorkloadPreset:
    name: str
    description: str
    build: WorkloadBuilder
    params: tuple[Param, ...] = ()
    #: The cluster to use when the user names none (e.g. ncbi-blast -> ncbi-heterogeneous).
    default_cluster: str | None = None
    #: False for workloads whose arrival rate is fixed by the data (load is ignored).
    uses_load: bool = True
    default_hours: float = 24.0
    #: What the workload offers schedulers (keys of simcore.schedulers.base.REQUIREMENTS).
    provides: frozenset[str] = frozenset()


CLUSTERS: Registry[ClusterPreset] = Registry("cluster", __name__)
WORKLOADS: Registry[WorkloadPreset] = Registry("workload", __name__)


def cluster_preset(
    name: str, description: str, params: tuple[Param, ...] = ()
) -> Callable[[ClusterBuilder], ClusterBuilder]:
    def deco(fn: ClusterBuilder) -> ClusterBuilder:
        CLUSTERS.register(name)(ClusterPreset(name, description, fn, params))
        return fn

    return deco


def workload_preset(
    name: str,
    description: str,
    params: tuple[Param, ...] = (),
    *,
    default_cluster: str | None = None,
    uses_load: bool = True,
    default_hours: float = 24.0,
    provides: frozenset[str] = frozenset(),
) -> Callable[[WorkloadBuilder], WorkloadBuilder]:
    def deco(fn: WorkloadBuilder) -> WorkloadBuilder:
        WORKLOADS.register(name)(
            WorkloadPreset(name, description, fn, params, default_cluster, uses_load, default_hours, provides)
        )
        return fn

    return deco


def workload_provides(spec: Mapping[str, Any]) -> tuple[frozenset[str], str]:
    """What a scenario's workload part (``{"preset": ...}`` or ``{"file": ...}``) offers schedulers, and its name.

    A trace file offers nothing beyond jobs (no run-time profile).
    """
    if "preset" in spec:
        preset = WORKLOADS.get(str(spec["preset"]))
        return preset.provides, preset.name
    return frozenset(), str(spec.get("name") or spec.get("file") or "trace")


def coerce_params(kind: str, params: tuple[Param, ...], given: dict[str, Any]) -> dict[str, Any]:
    """Validate ``given`` against ``params``; fill defaults; name the bad one on error."""
    known = {p.name: p for p in params}
    out: dict[str, Any] = {}
    for key in given:
        if key not in known:
            valid = ", ".join(sorted(known)) or "none"
            raise ParameterError(f"{kind} has no parameter {key!r}; valid parameters: {valid}")
    for p in params:
        value = given.get(p.name)
        if value is None:  # not given, or null in a JSON scenario: the default
            value = p.default
        if value is None:
            out[p.name] = None
            continue
        try:
            value = p.type(value)
        except ParameterError as e:
            # A converter that checks its text (a policy) says what is wrong; keep its message.
            raise ParameterError(f"{kind} parameter {p.name!r}: {e}") from None
        except (TypeError, ValueError):
            raise ParameterError(f"{kind} parameter {p.name!r} must be {p.type.__name__}, got {value!r}") from None
        if isinstance(value, float) and not np.isfinite(value):
            raise ParameterError(f"{kind} parameter {p.name!r} must be finite, got {value!r}")
        if p.min is not None and value < p.min:
            raise ParameterError(f"{kind} parameter {p.name!r} must be at least {p.min}, got {value}")
        if p.max is not None and value > p.max:
            raise ParameterError(f"{kind} parameter {p.name!r} must be at most {p.max}, got {value}")
        if p.choices is not None and value not in p.choices:
            raise ParameterError(f"{kind} parameter {p.name!r} must be one of {list(p.choices)}, got {value!r}")
        out[p.name] = value
    return out


def resolve_cluster(name: str, params: dict[str, Any] | None = None) -> Cluster:
    """A cluster from a preset name (built with ``params``) or a JSON cluster file."""
    params = dict(params or {})
    if name in CLUSTERS:
        preset = CLUSTERS.get(name)
        return preset.build(**coerce_params(f"cluster {name!r}", preset.params, params))
    if looks_like_file(name):
        if params:
            raise ParameterError(f"cluster file {name!r} takes no parameters (got {sorted(params)})")
        from simcore.clusterfile import read_cluster

        return read_cluster(name)
    CLUSTERS.get(name)  # raises UnknownNameError listing the presets
    raise AssertionError  # pragma: no cover


__all__ = [
    "CLUSTERS",
    "WORKLOADS",
    "ClusterPreset",
    "WorkloadPreset",
    "cluster_preset",
    "coerce_params",
    "resolve_cluster",
    "workload_preset",
]
