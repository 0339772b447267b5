"""Experiments as data: the scenario format, the compact per-job format, and experiment archives.

A *scenario* is a JSON-ready dict naming everything a comparison needs::

    {"cluster":  {"preset": "google-2011", "params": {}}      # or {"file": "cluster.json"}
     "workload": {"preset": "google-like", "params": {}}      # or {"file": "trace.csv.gz"}
     "load": 0.9, "hours": 24.0, "drain": false,             # hours null: the preset's default
     "schedulers": ["greedy", "lotes"], "scheduler_params": {"lotes": {}},
     "seeds": [0, 1],
     "axes": [{"name": "phi", "values": [0.0, 0.003]}],     # optional: a sweep's grid
     "engine": "python"}                                      # optional: default "compiled" (same schedule)

A scenario with ``axes`` is a sweep: one run per point of the axes'
cartesian product, scheduler and seed (:mod:`simcore.sweep_scenario` gives
each point's own scenario). Axes are checked by :mod:`simcore.sweep_grammar`,
the rules of ``simcore sweep --vary``.

The dashboard stores it with every experiment and its workers run it through
:func:`run_scenario`; ``simcore rerun`` reads an experiment archive (a zip
written by :func:`write_archive`) and runs the same function, so a run gives
the same numbers in a worker and on a colleague's laptop (same seed, same
code version; the archive records both).

Archive layout::

    scenario.json                      {"format": "simcore-experiment", "format_version": 1,
                                        "code_version": ..., "name": ..., "scenario": {...}}
    files/<name>                       uploaded cluster / trace files the scenario names
    runs/<scheduler>/seed-<seed>/summary.json   (summary, status, error; a sweep's cell adds its point,
                                                 and its folder is seed-<seed>@<point index>)
    runs/<scheduler>/seed-<seed>/series.json    (series, per_class, offline)
    runs/<scheduler>/seed-<seed>/jobs.npz       per-job records, see pack_jobs (a run of at most one chunk)
    runs/<scheduler>/seed-<seed>/jobs/<k>.npz   a larger run's records in chunks k = 000000, 000001, ...
                                                 of consecutive jobs (see job_chunks), never one huge file

This module must not import Django: it is part of the simulation library.
"""

from __future__ import annotations

import io
import json
import math
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from simcore import api
from simcore.engine import ENGINES, ProgressCallback
from simcore.errors import InputError, ParameterError
from simcore.model import Cluster, Workload
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params, workload_provides
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import unmet_needs
from simcore.version import code_version

FORMAT = "simcore-experiment"
FORMAT_VERSION = 1

#: Column names of the per-job records, in download order (as RunOutcome.jobs_columns()).
JOB_COLUMNS = ("job", "submit_s", "class", "machine", "config", "start_s", "finish_s", "response_s", "completion_s")

#: Summary keys that depend on the machine, not on the scenario; ignored when checking a re-run.
VOLATILE_KEYS = frozenset({"wall_s", "jobs_per_s", "version", "compile_s"})

# ---------------------------------------------------------------------------- scenarios


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
                # The trace's job-class table (simcore.classfile), a file beside the trace.
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
    from simcore.sweep_grammar import axes_from_values

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
        from simcore.classfile import with_classes

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


# ---------------------------------------------------------------------------- per-job records

# Stored columns and their on-disk types; job, response and completion are derived on reading
# (the same float operations as RunOutcome.jobs_columns, so values are bit-identical).
_STORED = {
    "submit_s": np.float64,
    "class": np.int32,
    "machine": np.int32,
    "config": np.int32,
    "start_s": np.float64,
    "finish_s": np.float64,
}


def pack_jobs(columns: Mapping[str, np.ndarray]) -> bytes:
    """Per-job columns as one compact binary blob (uncompressed npz, 36 bytes a job).

    Uncompressed on purpose: a million jobs pack in tens of milliseconds; deflate
    would take seconds and gain little on float times.
    """
    buf = io.BytesIO()
    arrays: dict[str, Any] = {k: np.ascontiguousarray(columns[k], dtype=t) for k, t in _STORED.items()}
    np.savez(buf, **arrays)
    return buf.getvalue()


def unpack_jobs(blob: bytes | memoryview, first: int = 0) -> dict[str, np.ndarray]:
    """The columns of :data:`JOB_COLUMNS` from a :func:`pack_jobs` blob.

    ``first``: the index of the blob's first job in its run (a chunk's offset), so ``job`` is the run's numbering.
    """
    with np.load(io.BytesIO(blob), allow_pickle=False) as z:
        raw = {k: z[k] for k in _STORED}
    n = len(raw["submit_s"])
    submit, start, finish = raw["submit_s"], raw["start_s"], raw["finish_s"]
    return {
        "job": np.arange(first, first + n, dtype=np.int64),
        "submit_s": submit,
        "class": raw["class"].astype(np.int64),
        "machine": raw["machine"].astype(np.int64),
        "config": raw["config"].astype(np.int64),
        "start_s": start,
        "finish_s": finish,
        "response_s": start - submit,
        "completion_s": finish - submit,
    }


#: Jobs per stored chunk by default: 36 MB packed, far below any database's limit on one value (1 GB),
#: small against a worker's memory, and few rows (37 for the 37 M jobs of LoTES Figure 11 at paper scale).
JOB_CHUNK = 1_000_000


def job_chunks(outcome: api.RunOutcome, size: int = JOB_CHUNK) -> Iterator[bytes]:
    """A run's per-job records as :func:`pack_jobs` blobs of ``size`` consecutive jobs (the last may be shorter).

    Packed one chunk at a time from the engine's own arrays, so storing a run
    needs one chunk's memory on top of the result, not a copy of every column.
    A run without jobs gives one empty chunk (it has records: none).
    """
    if size < 1:
        raise ParameterError(f"job chunk size must be at least 1, got {size}")
    r = outcome.result
    n = int(r.extra.get("arrived", r.n_jobs))
    for lo in range(0, max(n, 1), size):
        hi = min(n, lo + size)
        machine = r.machine[lo:hi]
        yield pack_jobs(
            {
                "submit_s": r.submit[lo:hi],
                "class": r.job_class[lo:hi],
                "machine": machine,
                "config": np.where(machine >= 0, r.config_of_machine[np.maximum(machine, 0)], -1),
                "start_s": r.start[lo:hi],
                "finish_s": r.finish[lo:hi],
            }
        )


def iter_jobs(blobs: Iterable[bytes | memoryview]) -> Iterator[dict[str, np.ndarray]]:
    """The columns of consecutive chunks, one chunk at a time, ``job`` numbered across them."""
    first = 0
    for blob in blobs:
        cols = unpack_jobs(blob, first)
        first += len(cols["job"])
        yield cols


def concat_jobs(chunks: Iterable[Mapping[str, np.ndarray]]) -> dict[str, np.ndarray]:
    """All chunks' columns as one table (the whole run in memory: small runs and tests only)."""
    parts = list(chunks)
    if not parts:
        return {k: np.array([]) for k in JOB_COLUMNS}
    return {k: np.concatenate([p[k] for p in parts]) for k in JOB_COLUMNS}


# ---------------------------------------------------------------------------- archives


@dataclass
class ArchivedRun:
    scheduler: str
    seed: int
    #: A sweep cell's point ({} outside sweeps); its index in the scenario's points names the folder.
    point: dict[str, Any] = field(default_factory=dict)
    point_index: int | None = None
    status: str = "finished"
    error: str = ""
    summary: dict[str, Any] | None = None
    series: dict[str, Any] | None = None
    per_class: list[dict[str, Any]] | None = None
    offline: dict[str, Any] | None = None
    #: Per-job records: one pack_jobs blob, or the run's consecutive chunks (an iterable, read once by the writer).
    jobs: bytes | Iterable[bytes] | None = None

    @property
    def folder(self) -> str:
        at = "" if self.point_index is None else f"@{self.point_index}"
        return f"runs/{self.scheduler}/seed-{self.seed}{at}"


@dataclass
class ExperimentArchive:
    scenario: dict[str, Any]
    name: str = ""
    code_version: str = ""
    files: dict[str, bytes] = field(default_factory=dict)
    runs: list[ArchivedRun] = field(default_factory=list)


def write_archive(
    target: str | Path | IO[bytes],
    scenario: Mapping[str, Any],
    files: Mapping[str, bytes],
    runs: Iterable[ArchivedRun],
    *,
    name: str = "",
    version: str | None = None,
) -> None:
    """Write an experiment archive (zip) to a path or a binary file object."""
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "code_version": version or code_version(),
        "name": name,
        "scenario": dict(scenario),
    }
    from simcore.sweep_scenario import point_key, points

    index = {point_key(p): i for i, p in enumerate(points(scenario))} if scenario.get("axes") else {}
    with zipfile.ZipFile(target, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        z.writestr("scenario.json", json.dumps(meta, indent=2))
        for fname, content in files.items():
            z.writestr(f"files/{fname}", content, compress_type=zipfile.ZIP_STORED)
        for r in runs:
            if r.point:
                r.point_index = index.get(point_key(r.point), r.point_index)
            record: dict[str, Any] = {"status": r.status, "error": r.error, "summary": r.summary}
            if r.point:
                record["point"] = r.point
            z.writestr(f"{r.folder}/summary.json", json.dumps(record, indent=2))
            if r.series is not None:
                z.writestr(
                    f"{r.folder}/series.json",
                    json.dumps({"series": r.series, "per_class": r.per_class, "offline": r.offline}),
                )
            if r.jobs is not None:
                _write_jobs(z, r.folder, r.jobs)


def _write_jobs(z: zipfile.ZipFile, folder: str, jobs: bytes | Iterable[bytes]) -> None:
    """One run's records: ``jobs.npz`` when they are one chunk (the layout older readers know), else
    ``jobs/<k>.npz`` per chunk, written as they come (two chunks in memory at most)."""
    chunks = iter([jobs] if isinstance(jobs, (bytes, bytearray, memoryview)) else jobs)
    first = next(chunks, None)
    if first is None:
        return
    second = next(chunks, None)
    if second is None:
        z.writestr(f"{folder}/jobs.npz", first, compress_type=zipfile.ZIP_STORED)
        return
    z.writestr(f"{folder}/jobs/{0:06d}.npz", first, compress_type=zipfile.ZIP_STORED)
    del first
    z.writestr(f"{folder}/jobs/{1:06d}.npz", second, compress_type=zipfile.ZIP_STORED)
    del second
    for k, blob in enumerate(chunks, start=2):
        z.writestr(f"{folder}/jobs/{k:06d}.npz", blob, compress_type=zipfile.ZIP_STORED)


def read_archive(source: str | Path | IO[bytes], *, jobs: bool = True) -> ExperimentArchive:
    """Read an archive written by :func:`write_archive`; InputError names what is wrong.

    A run's per-job records come as one blob (``jobs.npz``) or as the list of
    its chunks (``jobs/<k>.npz``, in order); ``jobs=False`` skips them (a
    re-run compares summaries only, and a paper-scale run's records are GBs).
    """
    label = str(source) if isinstance(source, (str, Path)) else "archive"
    try:
        z = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError(f"not a simcore experiment archive ({e})", file=label) from None
    with z:
        names = set(z.namelist())
        if "scenario.json" not in names:
            raise InputError("not a simcore experiment archive (no scenario.json)", file=label)
        try:
            meta = json.loads(z.read("scenario.json"))
        except ValueError as e:
            raise InputError(f"scenario.json is not valid JSON ({e})", file=label) from None
        if not isinstance(meta, dict) or meta.get("format") != FORMAT:
            raise InputError(f"scenario.json is not a {FORMAT} file", file=label)
        if meta.get("format_version") != FORMAT_VERSION:
            raise InputError(
                f"archive format version {meta.get('format_version')!r} is not supported "
                f"(this simcore reads version {FORMAT_VERSION})",
                file=label,
            )
        arch = ExperimentArchive(
            scenario=meta.get("scenario") or {},
            name=meta.get("name") or "",
            code_version=meta.get("code_version") or "",
        )
        for n in sorted(names):
            if n.startswith("files/") and not n.endswith("/"):
                arch.files[n[len("files/") :]] = z.read(n)
        folders = sorted({n.rsplit("/", 1)[0] for n in names if n.startswith("runs/") and n.count("/") == 3})
        for folder in folders:
            _, sched, seed_part = folder.split("/")
            seed_text, _, at = seed_part.removeprefix("seed-").partition("@")
            try:
                seed = int(seed_text)
                point_index = int(at) if at else None
            except ValueError:
                raise InputError(f"bad run folder {folder!r}", file=label) from None
            run = ArchivedRun(scheduler=sched, seed=seed, point_index=point_index)
            if f"{folder}/summary.json" in names:
                s = json.loads(z.read(f"{folder}/summary.json"))
                run.status, run.error, run.summary = s.get("status", ""), s.get("error", ""), s.get("summary")
                run.point = dict(s.get("point") or {})
            if f"{folder}/series.json" in names:
                s = json.loads(z.read(f"{folder}/series.json"))
                run.series, run.per_class, run.offline = s.get("series"), s.get("per_class"), s.get("offline")
            if jobs:
                run.jobs = _read_jobs(z, names, folder)
            arch.runs.append(run)
    return arch


def _read_jobs(z: zipfile.ZipFile, names: set[str], folder: str) -> bytes | list[bytes] | None:
    """A run's records as :func:`_write_jobs` wrote them: one blob, its chunks in order, or None."""
    if f"{folder}/jobs.npz" in names:
        return z.read(f"{folder}/jobs.npz")
    parts = sorted(n for n in names if n.startswith(f"{folder}/jobs/") and n.endswith(".npz"))
    return [z.read(n) for n in parts] or None


def same_numbers(a: Mapping[str, Any], b: Mapping[str, Any], rel: float = 1e-9) -> bool:
    """Whether two summaries agree on every key except the machine-dependent ones."""
    keys = (set(a) | set(b)) - VOLATILE_KEYS
    for k in keys:
        x, y = a.get(k), b.get(k)
        if isinstance(x, dict) and isinstance(y, dict):
            if not same_numbers(x, y, rel):
                return False
        elif isinstance(x, float) and isinstance(y, (int, float)) and not isinstance(y, bool):
            if not (x == y or math.isclose(x, y, rel_tol=rel) or (math.isnan(x) and math.isnan(y))):
                return False
        elif x != y:
            return False
    return True
