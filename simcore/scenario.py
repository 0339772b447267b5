"""The scenario document: what a comparison runs, checked, and run.

A *scenario* is a JSON-ready dict naming everything a comparison needs::

    {"cluster":  {"preset": "google-2011", "params": {}}      # or {"file": "cluster.json"}
     "workload": {"preset": "google-like", "params": {}}      # or {"file": "trace.csv.gz"}
     "load": 0.9, "hours": 24.0, "drain": false,             # hours null: the preset's default
     "schedulers": ["greedy", "lotes"], "scheduler_params": {"lotes": {}},
     "seeds": [0, 1],
     "axes": [{"name": "phi", "values": [0.0, 0.003]}],     # optional: a sweep's grid
     "engine": "python"}                                      # optional: default "compiled" (same schedule)

A scenario with ``axes`` is a sweep: one run per point of the axes'
cartesian product, scheduler and seed (:mod:`simcore.sweep.points` gives
each point's own scenario). Axes are checked by :mod:`simcore.sweep.grammar`,
the rules of ``simcore sweep --vary``.

:func:`validate_scenario` checks a scenario at the boundary (the CLI, the
web form, the API, an archive being re-run) and normalises it;
:func:`build_cluster` and :func:`build_workload` build its parts, and
:func:`run_scenario` runs one scheduler under one seed. The dashboard's
workers and ``simcore rerun`` both call :func:`run_scenario`, so a run gives
the same numbers in a worker and on a colleague's laptop (same seed, same
code version; an experiment archive, :mod:`simcore.archive`, records both).

This module must not import Django: it is part of the simulation library.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from simcore import api
from simcore.core.engine import ENGINES, ProgressCallback
from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster, Workload
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params, workload_provides
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import unmet_needs

#: The keys a scenario may have; anything else is refused by name rather than dropped.
SCENARIO_KEYS = frozenset(
    {"cluster", "workload", "load", "hours", "drain", "schedulers", "scheduler_params", "seeds", "axes", "engine"}
)
SOURCE_KEYS = {
    "cluster": frozenset({"preset", "params", "file", "name"}),
    "workload": frozenset({"preset", "params", "file", "name", "classes"}),
}


def validate_scenario(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """A normalised copy of ``scenario``; raises ParameterError/UnknownNameError naming the bad part."""
    if not isinstance(scenario, Mapping):
        raise ParameterError("scenario must be a JSON object")
    unknown = sorted(set(scenario) - SCENARIO_KEYS)
    if unknown:
        raise ParameterError(f"scenario has unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(SCENARIO_KEYS))}")
    out: dict[str, Any] = {}
    varied = _varied_presets(scenario.get("axes"))
    for part, registry in (("cluster", CLUSTERS), ("workload", WORKLOADS)):
        spec = scenario.get(part)
        if not isinstance(spec, Mapping) or ("preset" in spec) == ("file" in spec):
            raise ParameterError(f"scenario {part} must be an object with either 'preset' or 'file'")
        allowed = SOURCE_KEYS[part]
        extra = sorted(set(spec) - allowed)
        if extra:
            raise ParameterError(
                f"scenario {part} has unknown key {extra[0]!r}; valid keys: {', '.join(sorted(allowed))}"
            )
        if "preset" in spec:
            preset = registry.get(str(spec["preset"]))
            params = spec.get("params") or {}
            if not isinstance(params, Mapping):
                raise ParameterError(f"scenario {part} params must be an object")
            if part in varied:
                # A sweep over presets: each parameter goes to the presets of the axis that take it.
                out[part] = {"preset": preset.name, "params": _varied_params(part, registry, varied[part], params)}
                continue
            out[part] = {
                "preset": preset.name,
                "params": coerce_params(f"{part} {preset.name!r}", preset.params, dict(params)),
            }
            if part == "cluster" and not out[part]["params"].get("profile"):
                # Building a preset cluster is cheap (counts, not machines) and applies the
                # machine limit (SIMCORE_MAX_MACHINES) at submission, as for uploads. A cluster
                # sized from an uploaded profile needs a simulation and is checked when it runs.
                api.resolve_cluster(preset.name, out[part]["params"])
        else:
            name = str(spec["file"])
            if not name or "/" in name or "\\" in name or name.startswith("."):
                raise ParameterError(f"scenario {part} file must be a plain file name, got {name!r}")
            out[part] = {"file": name}
            if spec.get("name"):
                out[part]["name"] = str(spec["name"])
            if part == "workload" and spec.get("classes"):
                # The trace's job-class table (simcore.workloads.classfile), a file beside the trace.
                cname = str(spec["classes"])
                if "/" in cname or "\\" in cname or cname.startswith("."):
                    raise ParameterError(f"scenario workload classes must be a plain file name, got {cname!r}")
                out[part]["classes"] = cname
    load = _number(scenario.get("load", 0.9), "load")
    if load <= 0:
        raise ParameterError(f"load must be a positive number, got {load}")
    hours = scenario.get("hours")
    if hours is not None:
        hours = _number(hours, "hours")
        if hours <= 0:
            raise ParameterError(f"hours must be a positive number, got {hours}")
    out["load"] = load
    out["hours"] = hours
    out["drain"] = bool(scenario.get("drain", False))
    engine = scenario.get("engine", "compiled")
    if engine not in ENGINES:
        raise ParameterError(f"scenario engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    if engine != "compiled":
        # Kept only when it is not the default, so the scenarios (and result-cache keys) of before stay the same.
        out["engine"] = engine
    names = scenario.get("schedulers")
    if not isinstance(names, list) or not names:
        raise ParameterError("scenario needs a non-empty list of schedulers")
    for n in names:
        SCHEDULERS.get(str(n))  # raises UnknownNameError listing the registered schedulers
    out["schedulers"] = [str(n) for n in names]
    if len(set(out["schedulers"])) != len(out["schedulers"]):
        raise ParameterError("scenario lists a scheduler twice")
    provides, workload_name = workload_provides(out["workload"])
    for n in out["schedulers"]:
        why = unmet_needs(SCHEDULERS.get(n), provides, workload_name)
        if why:
            raise ParameterError(why)
    given = scenario.get("scheduler_params") or {}
    if not isinstance(given, Mapping):
        raise ParameterError("scenario scheduler_params must be an object")
    out["scheduler_params"] = {}
    for n in out["schedulers"]:
        cls = SCHEDULERS.get(n)
        out["scheduler_params"][n] = coerce_params(f"scheduler {n!r}", cls.params, dict(given.get(n) or {}))
    seeds = scenario.get("seeds")
    if not isinstance(seeds, list) or not seeds:
        raise ParameterError("scenario needs a non-empty list of seeds")
    for s in seeds:
        if isinstance(s, bool) or not isinstance(s, int) or s < 0:
            raise ParameterError(f"seeds must be non-negative integers, got {s!r}")
    if len(set(seeds)) != len(seeds):
        raise ParameterError("scenario lists a seed twice")
    out["seeds"] = [int(s) for s in seeds]
    if scenario.get("axes"):
        out["axes"] = _check_axes(scenario, out)
    return out


#: Scenario parts a sweep can vary by preset name.
PRESET_AXES_PARTS = ("cluster", "workload")


def _varied_presets(raw_axes: Any) -> dict[str, list[str]]:
    """Parts whose preset a sweep varies -> the preset names (checked later, with the axes)."""
    out: dict[str, list[str]] = {}
    if isinstance(raw_axes, list):
        for a in raw_axes:
            if isinstance(a, Mapping) and a.get("name") in PRESET_AXES_PARTS and isinstance(a.get("values"), list):
                out[str(a["name"])] = [str(v) for v in a["values"]]
    return out


def _varied_params(part: str, registry: Any, names: list[str], params: Mapping[str, Any]) -> dict[str, Any]:
    """The fixed parameters of a varied preset part: each checked by every preset of the axis that takes it."""
    presets = [registry.get(n) for n in names]
    for k, v in params.items():
        takers = [p for p in presets if k in {q.name for q in p.params}]
        if not takers:
            raise ParameterError(
                f"scenario {part} parameter {k!r} is taken by none of {', '.join(repr(p.name) for p in presets)}"
            )
        for p in takers:
            coerce_params(f"{part} {p.name!r}", p.params, {k: v})
    return dict(params)


def _check_axes(raw: Mapping[str, Any], out: dict[str, Any]) -> list[dict[str, Any]]:
    """A sweep's axes, normalised; a varied parameter is taken out of the fixed ones it was defaulted in."""
    from simcore.sweep.grammar import axes_from_values

    axes = axes_from_values(
        raw["axes"], out["cluster"].get("preset") or "file", out["workload"].get("preset") or "file", out["schedulers"]
    )
    raw_sp = raw.get("scheduler_params") if isinstance(raw.get("scheduler_params"), Mapping) else {}
    for ax in axes:
        option = ax.name.replace("_", "-")
        if ax.name in PRESET_AXES_PARTS:
            if "preset" not in out[ax.name]:
                raise ParameterError(f"--vary {option}: the scenario's {ax.name} is a file, not a preset")
            continue
        if ax.name in ("load", "hours"):
            continue
        given = [raw.get(part) for part in PRESET_AXES_PARTS] + list((raw_sp or {}).values())
        if any(isinstance(g, Mapping) and ax.name in (g.get("params", g) or {}) for g in given):
            raise ParameterError(f"--{option} is both fixed and varied; drop --{option} or --vary {option}")
        for part in PRESET_AXES_PARTS:
            if "preset" in out[part]:
                out[part]["params"].pop(ax.name, None)
        for params in out["scheduler_params"].values():
            params.pop(ax.name, None)
    return [{"name": ax.name, "values": list(ax.values)} for ax in axes]


def _number(value: Any, name: str) -> float:
    if isinstance(value, bool):
        raise ParameterError(f"{name} must be a number, got {value!r}")
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ParameterError(f"{name} must be a number, got {value!r}") from None
    if not math.isfinite(x):
        raise ParameterError(f"{name} must be finite, got {value!r}")
    return x


def _file(files: Mapping[str, Path], part: str, name: str) -> str:
    try:
        return str(files[name])
    except KeyError:
        raise InputError(f"scenario {part} names file {name!r}, which is missing") from None


def build_cluster(scenario: Mapping[str, Any], files: Mapping[str, Path] | None = None) -> Cluster:
    """The scenario's cluster: a preset built with its parameters, or a cluster file from ``files``."""
    spec = scenario["cluster"]
    if "preset" in spec:
        return api.resolve_cluster(spec["preset"], spec.get("params") or {})
    return api.resolve_cluster(_file(files or {}, "cluster", spec["file"]))


def build_workload(
    scenario: Mapping[str, Any], cluster: Cluster, seed: int, files: Mapping[str, Path] | None = None
) -> Workload:
    """The scenario's workload under ``seed``: a generated preset or a trace file from ``files``."""
    spec = scenario["workload"]
    name = spec["preset"] if "preset" in spec else _file(files or {}, "workload", spec["file"])
    wl = api.resolve_workload(
        name, cluster, seed, scenario.get("load", 0.9), scenario.get("hours"), spec.get("params") or {}
    )
    if spec.get("classes"):
        from simcore.workloads.classfile import with_classes

        wl = with_classes(wl, _file(files or {}, "workload", spec["classes"]), cluster)
    return wl


def labels_of(scenario: Mapping[str, Any]) -> dict[str, str]:
    """Short names of the scenario's cluster and workload: the preset, or the upload's name or file."""
    c, w = scenario["cluster"], scenario["workload"]
    return {
        "cluster": str(c.get("preset") or c.get("name") or c["file"]),
        "workload": str(w.get("preset") or w.get("name") or w["file"]),
    }


def labels(scenario: Mapping[str, Any], workload: Workload) -> dict[str, Any]:
    """The summary's scenario labels (what the CLI's ``run`` puts there too)."""
    return {**labels_of(scenario), "load": scenario.get("load", 0.9), "hours": workload.horizon_s / 3600.0}


def run_scenario(
    scenario: Mapping[str, Any],
    scheduler: str,
    seed: int,
    files: Mapping[str, Path] | None = None,
    progress: ProgressCallback | None = None,
) -> api.RunOutcome:
    """Run one scheduler under one seed of a (validated) scenario."""
    SCHEDULERS.get(scheduler)
    cluster = build_cluster(scenario, files)
    workload = build_workload(scenario, cluster, seed, files)
    return api.run_objects(
        cluster,
        workload,
        scheduler,
        seed,
        scheduler_params=(scenario.get("scheduler_params") or {}).get(scheduler) or {},
        drain=bool(scenario.get("drain")),
        progress=progress,
        labels=labels(scenario, workload),
        engine=str(scenario.get("engine", "compiled")),
    )
