"""Everything registered, described for people and programs (`simcore presets --json`, the API)."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import REQUIREMENTS, Param


def describe_params(params: tuple[Param, ...], exclude: Collection[str] = ()) -> list[dict[str, Any]]:
    """JSON-ready descriptions of ``params``, leaving out the names in ``exclude``."""
    return [
        {
            "name": p.name,
            "type": p.type.__name__,
            "default": p.default,
            "help": p.help,
            "min": p.min,
            "max": p.max,
            "choices": list(p.choices) if p.choices else None,
        }
        for p in params
        if p.name not in exclude
    ]


def catalog(exclude_params: Collection[str] = ()) -> dict[str, list[dict[str, Any]]]:
    """Cluster and workload presets and schedulers with descriptions and parameters."""

    def params(ps: tuple[Param, ...]) -> list[dict[str, Any]]:
        return describe_params(ps, exclude_params)

    return {
        "clusters": [
            {"name": n, "description": p.description, "params": params(p.params)} for n, p in CLUSTERS.items()
        ],
        "workloads": [
            {
                "name": n,
                "description": p.description,
                "params": params(p.params),
                "default_cluster": p.default_cluster,
                "provides": sorted(p.provides),
            }
            for n, p in WORKLOADS.items()
        ],
        "schedulers": [
            {
                "name": n,
                "description": c.description,
                "params": params(c.params),
                "requires": [{"need": r, "description": REQUIREMENTS.get(r, r)} for r in sorted(c.requires)],
            }
            for n, c in SCHEDULERS.items()
        ],
    }
