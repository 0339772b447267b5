"""The scenario document: what a comparison runs, checked, and run.

A *scenario* is a JSON-ready dict naming everything a comparison needs::

    {"cluster":  {"preset": "google-2011", "params": {}}      # or {"file": "cluster.json"}
     "workload": {"preset": "google-like", "params": {}}      # or {"file": "trace.csv.gz"}
     "load": 0.9, "hours": 24.0, "drain": false,             # hours null: the preset's default
     "schedulers": ["greedy", "lotes"], "scheduler_params": {"lotes": {}},
     "seeds": [0, 1],
     "axes": [{"name": "phi", "values": [0.0, 0.003]}],     # optional: a sweep's grid
     "engine": "python",                                      # optional: default "compiled" (same schedule)
     "job_records": "sample:1000"}                            # optional: default "auto" (simcore.records)

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
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Field, field_validator, model_validator

from simcore import api, records
from simcore.core.engine import ENGINES, ProgressCallback
from simcore.core.errors import InputError, ParameterError
from simcore.core.model import Cluster, Workload
from simcore.documents import Document, fail, parse, says
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params, workload_provides
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import unmet_needs


def _lax_number(name: str) -> BeforeValidator:
    """A number as ``float()`` reads it (``"0.9"`` too, as scenarios always allowed), never a boolean."""

    def convert(value: Any) -> float:
        if isinstance(value, bool):
            raise fail(f"{name} must be a number, got {{got}}")
        try:
            x = float(value)
        except (TypeError, ValueError):
            raise fail(f"{name} must be a number, got {{got}}") from None
        if not math.isfinite(x):
            raise fail(f"{name} must be finite, got {{got}}")
        if x <= 0:
            raise fail(f"{name} must be a positive number, got {{x}}", x=x)
        return x

    return BeforeValidator(convert)


def _plain_name(what: str, *, empty: bool = False) -> AfterValidator:
    """A file name beside the scenario's other files: no folders, nothing hidden (``empty``: "" passes)."""

    def check(name: str) -> str:
        if (not name and not empty) or "/" in name or "\\" in name or name.startswith("."):
            raise fail(f"scenario {{parent}} {what} must be a plain file name, got {{name!r}}", name=name)
        return name

    return AfterValidator(check)


_Text = BeforeValidator(str)  # names in a scenario were always read with str(), so 3 names "3"
_OrEmpty = BeforeValidator(lambda v: v or {})  # an empty or null object is no parameters


class ClusterSpec(Document):
    """A scenario's cluster: a preset with its parameters, or an uploaded file."""

    NOT_OBJECT = "scenario {path} must be an object with either 'preset' or 'file'"
    UNKNOWN = "scenario {parent} has unknown key {key!r}; valid keys: {allowed}"

    # Exactly one of preset and file is given (precheck); "" stands for the one that is not.
    preset: Annotated[str, _Text] = ""
    params: Annotated[dict[str, Any], _OrEmpty, says("scenario {parent} params must be an object")] = {}
    file: Annotated[str, _plain_name("file"), _Text] = ""
    name: Any = None

    @classmethod
    def precheck(cls, data: dict[str, Any]) -> None:
        if ("preset" in data) == ("file" in data):
            raise fail(cls.NOT_OBJECT)


class WorkloadSpec(ClusterSpec):
    """A scenario's workload; a trace file may come with its job-class table (``classes``, simcore.classfile)."""

    classes: Annotated[str, _plain_name("classes", empty=True), BeforeValidator(lambda v: str(v) if v else "")] = ""


class ScenarioDoc(Document):
    """The scenario document (module docstring); names are checked against the registries afterwards."""

    NOT_OBJECT = "scenario must be a JSON object"
    UNKNOWN = "scenario has unknown key {key!r}; valid keys: {allowed}"
    MISSING_KEY = {
        "cluster": "scenario cluster must be an object with either 'preset' or 'file'",
        "workload": "scenario workload must be an object with either 'preset' or 'file'",
        "schedulers": "scenario needs a non-empty list of schedulers",
        "seeds": "scenario needs a non-empty list of seeds",
    }

    cluster: ClusterSpec
    workload: WorkloadSpec
    load: Annotated[float, _lax_number("load")] = 0.9
    hours: Annotated[float, _lax_number("hours")] | None = None
    drain: Annotated[bool, BeforeValidator(bool)] = False
    schedulers: Annotated[
        list[Annotated[str, _Text]], Field(min_length=1), says("scenario needs a non-empty list of schedulers")
    ]
    scheduler_params: Annotated[
        dict[str, Annotated[dict[str, Any], _OrEmpty, says("scenario scheduler_params.{key} must be an object")]],
        _OrEmpty,
        says("scenario scheduler_params must be an object"),
    ] = {}
    seeds: Annotated[
        list[Annotated[int, Field(ge=0), says("seeds must be non-negative integers, got {got}")]],
        Field(min_length=1),
        says("scenario needs a non-empty list of seeds"),
    ]
    axes: Any = None  # a sweep's grid, checked by simcore.sweep.grammar once the presets and schedulers are known
    engine: Any = "compiled"
    job_records: Any = "auto"

    @field_validator("engine")
    @classmethod
    def _known_engine(cls, engine: Any) -> Any:
        if engine not in ENGINES:
            raise fail(f"scenario engine must be one of {', '.join(ENGINES)}, got {{got}}", got=engine)
        return engine

    @field_validator("job_records")
    @classmethod
    def _known_policy(cls, policy: Any) -> Any:
        try:
            return records.parse_policy(policy, "scenario job_records")
        except ParameterError as e:
            raise fail(str(e).replace("{", "{{").replace("}", "}}")) from None

    @model_validator(mode="after")
    def _no_repeats(self) -> ScenarioDoc:
        if len(set(self.schedulers)) != len(self.schedulers):
            raise fail("scenario lists a scheduler twice")
        if len(set(self.seeds)) != len(self.seeds):
            raise fail("scenario lists a seed twice")
        return self


def validate_scenario(scenario: Mapping[str, Any]) -> dict[str, Any]:
    """A normalised copy of ``scenario``; raises ParameterError/UnknownNameError naming the bad part."""
    raw = dict(scenario) if isinstance(scenario, Mapping) else scenario
    doc = parse(ScenarioDoc, raw, lambda p: ParameterError(p.message))
    varied = _varied_presets(doc.axes)
    out: dict[str, Any] = {
        "cluster": _source("cluster", doc.cluster, CLUSTERS, varied),
        "workload": _source("workload", doc.workload, WORKLOADS, varied),
        "load": doc.load,
        "hours": doc.hours,
        "drain": doc.drain,
    }
    if doc.engine != "compiled":
        # Kept only when it is not the default, so the scenarios (and result-cache keys) of before stay the same.
        out["engine"] = doc.engine
    if doc.job_records != records.DEFAULT:
        out["job_records"] = doc.job_records  # likewise: only a choice other than the default is recorded
    for n in doc.schedulers:
        SCHEDULERS.get(n)  # raises UnknownNameError listing the registered schedulers
    out["schedulers"] = list(doc.schedulers)
    provides, workload_name = workload_provides(out["workload"])
    for n in out["schedulers"]:
        why = unmet_needs(SCHEDULERS.get(n), provides, workload_name)
        if why:
            raise ParameterError(why)
    out["scheduler_params"] = {
        n: coerce_params(f"scheduler {n!r}", SCHEDULERS.get(n).params, dict(doc.scheduler_params.get(n, {})))
        for n in out["schedulers"]
    }
    out["seeds"] = list(doc.seeds)
    if doc.axes:
        out["axes"] = _check_axes(raw, out)
    return out


def _source(part: str, spec: ClusterSpec, registry: Any, varied: dict[str, list[str]]) -> dict[str, Any]:
    """The normalised cluster or workload of a scenario: its preset's parameters checked, or its file names."""
    if "preset" not in spec.model_fields_set:
        out: dict[str, Any] = {"file": spec.file}
        if spec.name:
            out["name"] = str(spec.name)
        if isinstance(spec, WorkloadSpec) and spec.classes:
            # The trace's job-class table (simcore.classfile), a file beside the trace.
            out["classes"] = spec.classes
        return out
    preset = registry.get(spec.preset)
    if part in varied:
        # A sweep over presets: each parameter goes to the presets of the axis that take it.
        return {"preset": preset.name, "params": _varied_params(part, registry, varied[part], spec.params)}
    params = coerce_params(f"{part} {preset.name!r}", preset.params, dict(spec.params))
    if part == "cluster" and not params.get("profile"):
        # Building a preset cluster is cheap (counts, not machines) and applies the
        # machine limit (SIMCORE_MAX_MACHINES) at submission, as for uploads. A cluster
        # sized from an uploaded profile needs a simulation and is checked when it runs.
        api.resolve_cluster(preset.name, params)
    return {"preset": preset.name, "params": params}


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
