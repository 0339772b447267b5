"""A sweep as a stored scenario: its points, each point's own scenario (a cell), and the grid in both forms.

The dashboard keeps a sweep as one :mod:`simcore.archive` scenario with
``axes``; a worker runs one cell (point x scheduler x seed) through
:func:`simcore.scenario.run_scenario` on :func:`cell_scenario`. The command
line keeps it as a :class:`simcore.sweep.Sweep`. :func:`scenario_of` turns
the one into the other, and a test checks that a cell run either way gives
the same numbers.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

from simcore.presets import CLUSTERS, WORKLOADS
from simcore.scenario import validate_scenario
from simcore.sweep.grammar import PRESET_AXES, RUN_SETTINGS, Axis, param_owners
from simcore.sweep.run import Sweep

Point = dict[str, Any]


def axes_of(scenario: Mapping[str, Any]) -> list[Axis]:
    """The (validated) scenario's axes; none for an ordinary experiment."""
    return [Axis(str(a["name"]), tuple(a["values"])) for a in scenario.get("axes") or []]


def is_sweep(scenario: Mapping[str, Any]) -> bool:
    return bool(scenario.get("axes"))


def points(scenario: Mapping[str, Any]) -> list[Point]:
    """The cartesian product of the axes, the first axis varying slowest; one empty point without axes."""
    axes = axes_of(scenario)
    names = [ax.name for ax in axes]
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*(ax.values for ax in axes))]


def point_key(point: Mapping[str, Any]) -> str:
    """A point as canonical text (one per point; the empty point is ``""``), for database keys."""
    return json.dumps([[k, point[k]] for k in point], separators=(",", ":")) if point else ""


def point_from_key(key: str) -> Point:
    return {str(k): v for k, v in json.loads(key)} if key else {}


def point_label(point: Mapping[str, Any]) -> str:
    """'phi=0.003, load=0.9' for pages and messages; '' for the empty point."""
    return ", ".join(f"{k}={v}" for k, v in point.items())


def cell_scenario(scenario: Mapping[str, Any], point: Mapping[str, Any]) -> dict[str, Any]:
    """The ordinary scenario (no axes) of one point of a validated sweep scenario, validated in turn.

    ``load``/``hours`` replace the scenario's; ``cluster``/``workload`` replace the preset (keeping the
    fixed parameters the new preset takes); any other value goes to every preset and scheduler of the
    point that takes it, as ``simcore sweep`` routes it.
    """
    sc: dict[str, Any] = {k: v for k, v in scenario.items() if k != "axes"}
    sc["cluster"] = dict(sc["cluster"])
    sc["workload"] = dict(sc["workload"])
    sc["scheduler_params"] = {s: dict(p) for s, p in (sc.get("scheduler_params") or {}).items()}
    for part, registry in (("cluster", CLUSTERS), ("workload", WORKLOADS)):
        if part in point:
            name = str(point[part])
            takes = {p.name for p in registry.get(name).params}
            params = {k: v for k, v in (sc[part].get("params") or {}).items() if k in takes}
            sc[part] = {"preset": name, "params": params}
        elif "preset" in sc[part]:
            sc[part]["params"] = dict(sc[part].get("params") or {})
    for k in RUN_SETTINGS:
        if k in point:
            sc[k] = point[k]
    cluster = str(sc["cluster"].get("preset", ""))
    workload = str(sc["workload"].get("preset", ""))
    owners = param_owners(cluster, workload, sc["schedulers"])
    for k, v in point.items():
        if k in RUN_SETTINGS or k in PRESET_AXES:
            continue
        for o in owners.get(k, []):
            if o.kind == "scheduler":
                sc["scheduler_params"].setdefault(o.name, {})[k] = v
            else:
                sc[o.kind]["params"][k] = v
    return validate_scenario(sc)


def cells(scenario: Mapping[str, Any]) -> list[tuple[Point, str, int]]:
    """Every (point, scheduler, seed) of the grid, in its one order: points, then schedulers, then seeds."""
    return [(p, s, seed) for p in points(scenario) for s in scenario["schedulers"] for seed in scenario["seeds"]]


def scenario_of(plan: Sweep) -> dict[str, Any]:
    """The stored scenario of a command-line grid (preset clusters and workloads), validated.

    Fixed parameters go to the presets and schedulers of the grid that take them, as
    :meth:`simcore.sweep.Sweep.spec` routes them.
    """
    owners = param_owners(plan.clusters(), plan.workloads(), plan.schedulers)
    cluster_params: dict[str, Any] = {}
    workload_params: dict[str, Any] = {}
    scheduler_params: dict[str, dict[str, Any]] = {s: {} for s in plan.schedulers}
    for k, v in plan.params.items():
        for o in owners.get(k, []):
            if o.kind == "cluster":
                cluster_params[k] = v
            elif o.kind == "workload":
                workload_params[k] = v
            else:
                scheduler_params[o.name][k] = v
    sc: dict[str, Any] = {
        "cluster": {"preset": plan.clusters()[0], "params": cluster_params},
        "workload": {"preset": plan.workloads()[0], "params": workload_params},
        "load": plan.load,
        "hours": plan.hours,
        "drain": plan.drain,
        "schedulers": list(plan.schedulers),
        "scheduler_params": scheduler_params,
        "seeds": list(plan.seeds),
    }
    if plan.axes:
        sc["axes"] = [{"name": ax.name, "values": list(ax.values)} for ax in plan.axes]
    return validate_scenario(sc)


def sweep_of(scenario: Mapping[str, Any]) -> Sweep:
    """The command-line grid of a stored preset scenario (what :meth:`Sweep.command_line` prints)."""
    axes = axes_of(scenario)
    varied = {ax.name for ax in axes}
    params: dict[str, Any] = {}
    for part, registry in (("cluster", CLUSTERS), ("workload", WORKLOADS)):
        spec = scenario[part]
        defaults = {p.name: p.default for p in registry.get(spec["preset"]).params} if part not in varied else {}
        for k, v in (spec.get("params") or {}).items():
            if k not in varied and (k not in defaults or defaults[k] != v):
                params[k] = v
    for name, sp in (scenario.get("scheduler_params") or {}).items():
        from simcore.schedulers import SCHEDULERS

        defaults = {p.name: p.default for p in SCHEDULERS.get(name).params}
        for k, v in sp.items():
            if k not in varied and defaults.get(k) != v:
                params[k] = v
    return Sweep(
        cluster=scenario["cluster"]["preset"],
        workload=scenario["workload"]["preset"],
        schedulers=list(scenario["schedulers"]),
        seeds=list(scenario["seeds"]),
        axes=axes,
        load=float(scenario["load"]),
        hours=scenario.get("hours"),
        drain=bool(scenario.get("drain")),
        params=params,
        engine=str(scenario.get("engine", "compiled")),
    )
