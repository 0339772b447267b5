"""WfCommons workflow instances (WfFormat JSON) as jobs made of tasks.

A WfCommons *instance* records one execution of a scientific workflow: its
tasks, their precedence constraints and how long each ran
(https://github.com/wfcommons/WfFormat, ``wfcommons-schema.json``). One
instance becomes one job (a DAG) of the design-space paper's model (section
2.1); several instances, or one instance replayed, become a stream of jobs.

Versions read (``schemaVersion``), and where each keeps what we use:

* **1.5 and 1.6**: ``workflow.specification.tasks[]`` holds the structure
  (``id``; ``parents`` and ``children``, lists of task ids) and
  ``workflow.execution.tasks[]`` the measurements (``id``,
  ``runtimeInSeconds``, optional ``coreCount``, at least 1, possibly
  fractional). 1.6 only adds optional ``metrics`` objects.
* **1.3 and 1.4**: ``workflow.tasks[]`` holds both: ``name``, ``id`` (from
  1.2), ``parents``/``children``, ``runtime`` (1.3) or ``runtimeInSeconds``
  (1.4), optional ``cores``.
* **1.0 to 1.2**: the same in ``workflow.jobs[]``.

Up to 1.4 a task refers to another by its ``name`` (WfFormat's own
migration tool says so); an ``id`` is accepted too, names first. From 1.5 on,
references are ids. ``parents`` and ``children`` may each be given on one
end only, so an edge is the union of both (as the migration tool does), and
duplicates count once.

What becomes of a task:

* **duration** = its recorded runtime, taken as its processing time on the
  cluster's fastest machines (slower ones scale it, :class:`simcore.core.model.SpeedRuntime`).
  Transfer and auxiliary tasks of old versions are tasks like the others.
* **request** = ``coreCount`` (or ``cores``) cores in the resource
  ``cores``, 1 when absent. ``max_cores`` clips larger requests to the
  largest machine (counted in ``params["cores_clipped"]``): a DAG cannot drop
  a task the way a bag of jobs drops one that fits nowhere.
* Memory (``memoryInBytes``, the resident set measured) is not a request and
  is not read; neither are files, machines or energy.

Tasks are numbered parents first (:func:`simcore.workloads.taskorder.order_tasks`: file
order, each task moved after its parents when the file lists it earlier).

Errors name the file and the JSON path (``workflow.execution.tasks[3].runtimeInSeconds:
missing``): a missing or negative runtime, an unknown parent or child, a
duplicate id, a task without an execution record, a cycle spelled out task by
task, an unknown ``schemaVersion``.

Streams (:func:`wfcommons_workload`): job ``k`` replays instance ``k mod n``;
jobs arrive together at 0, at a fixed interval, or as a Poisson process
whose gaps come from the injected generator; every task of a job is
submitted with it. ``horizon_s`` is the arrival window (jobs times the mean
gap, or the last arrival if later; 0 when all arrive at 0, and a run then
lasts until every job finished, see :func:`simcore.api.run_objects`).

Speed: the JSON parser (the standard library's, in C), one Python pass
over the tasks and one over their references, edges deduplicated with numpy;
the document is walked for NUL characters (which PostgreSQL cannot store in
an error message) only when its text holds one. ``simcore bench --scenarios
wfcommons`` reads a generated 100,000-task, 274,000-edge instance (18 MB):
about 1.1 CPU seconds, a third of it in ``json.loads``.
"""

from __future__ import annotations

import io
import json
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from simcore.core import limits
from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import DecompressionGuard, max_json_depth, max_trace_seconds
from simcore.core.model import FloatArray, IntArray, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.sources import check_tree
from simcore.traces._stream import ProgressFn, RowErrors, Source, _decompressed, _open, source_name
from simcore.traces.report import ImportReport, ImportResult
from simcore.workloads.taskorder import order_tasks

__all__ = [
    "RESOURCE",
    "VERSIONS",
    "Instance",
    "instance_dict",
    "read_instance",
    "read_wfcommons",
    "wfcommons_workload",
]

#: The resource a task's cores are requested in (the ``dse-2020`` cluster's).
RESOURCE = "cores"
#: The schema versions this reader knows (WfFormat 1.0 to 1.6).
VERSIONS = ("1.0", "1.1", "1.2", "1.3", "1.4", "1.5", "1.6")

Arrival = Literal["together", "fixed", "poisson"]
ARRIVALS: tuple[str, ...] = ("together", "fixed", "poisson")


@dataclass(frozen=True)
class Instance:
    """One workflow instance, tasks numbered parents first (one job: ``graph.job_of`` is all 0)."""

    name: str
    file: str
    version: str
    task_ids: list[str]
    runtime_s: FloatArray
    cores: FloatArray
    graph: TaskGraph
    #: The makespan the instance recorded (s), if it did.
    makespan_s: float | None = None
    cores_clipped: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def n_tasks(self) -> int:
        return len(self.runtime_s)

    @property
    def critical_path_s(self) -> float:
        """The longest chain of recorded runtimes (s): the instance's shortest possible makespan."""
        return float(self.graph.critical_path(self.runtime_s)[0]) if self.n_tasks else 0.0


# -- reading one file -------------------------------------------------------------------------------------------


def _load(src: Source, label: str) -> Any:
    """The JSON document in ``src`` (gzip recognised by its magic bytes), size and ratio bounded."""
    f, _, close = _open(src, label)
    guard = DecompressionGuard(label)
    chunks: list[bytes] = []
    status: dict[str, bool] = {}
    try:
        for chunk, consumed in _decompressed(f, label, RowErrors("raise"), lambda: 0, status):
            chunks.append(chunk)
            guard.add(len(chunk), consumed if status.get("gzip") else None, 1)
    except OSError as e:
        raise InputError(f"cannot read: {e.strerror or e}", file=label) from None
    finally:
        if close:
            f.close()
    raw = b"".join(chunks)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InputError("not UTF-8 text (is this a WfCommons JSON instance?)", file=label) from None

    def reject(token: str) -> Any:
        raise ValueError(f"{token} is not allowed in a WfCommons instance (numbers must be finite)")

    try:
        data = json.loads(text, parse_constant=reject)
    except RecursionError:
        raise InputError(f"JSON nested too deeply (the limit is {max_json_depth()} levels)", file=label) from None
    except json.JSONDecodeError as e:
        raise InputError(
            f"invalid JSON: {e.msg} (line {e.lineno}, column {e.colno})", file=label, line=e.lineno
        ) from None
    except ValueError as e:
        raise InputError(str(e), file=label) from None
    if "\x00" in text or "\\u0000" in text:
        # Rare enough to walk the document for its path (the walk costs a third of a large read).
        check_tree(data, label)
    return data


class _Fail:
    """Builds the errors of one file: ``path: message``, the file named."""

    def __init__(self, label: str) -> None:
        self.label = label

    def __call__(self, path: str, message: str) -> InputError:
        return InputError(f"{path}: {message}" if path else message, file=self.label)


_KIND: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _get(obj: dict[str, Any], key: str, path: str, kind: type, fail: _Fail, what: str) -> Any:
    """``obj[key]``, which must be there and of type ``kind``; the error names ``path.key`` and what it is for."""
    at = f"{path}.{key}" if path else key
    if key not in obj:
        raise fail(at, f"missing ({what})")
    v = obj[key]
    if not isinstance(v, kind):
        raise fail(at, f"must be {_KIND[kind]} ({what}), got {type(v).__name__}")
    return v


def _number(v: Any, path: str, fail: _Fail, *, lo: float, what: str, hi: float | None = None) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise fail(path, f"must be a number ({what}), got {v!r}")
    x = float(v)
    if not math.isfinite(x) or x < lo:
        raise fail(path, f"must be {'at least ' + format(lo, 'g') if lo else 'non-negative'} ({what}), got {v!r}")
    if hi is not None and x > hi:
        raise fail(path, f"{x:g} is larger than the bound {hi:g} (setting SIMCORE_MAX_TRACE_SECONDS)")
    return x


def read_instance(source: Source, *, max_cores: float | None = None, name: str | None = None) -> Instance:
    """Read one WfCommons instance (a path, bytes, or a binary file; gzip or plain) into an :class:`Instance`.

    ``max_cores``: clip core requests above it (the largest machine's cores),
    counting them; None keeps them (a request larger than every machine is
    then refused when the run starts).
    """
    label = source_name(source, "instance.json")
    fail = _Fail(label)
    doc = _load(source, label)
    if not isinstance(doc, dict):
        raise fail("", f"a WfCommons instance is a JSON object, got {type(doc).__name__}")
    version = doc.get("schemaVersion")
    if version is not None and (not isinstance(version, str) or version not in VERSIONS):
        raise fail("schemaVersion", f"{version!r} is not a WfFormat version this reader knows ({', '.join(VERSIONS)})")
    wf = _get(doc, "workflow", "", dict, fail, "the workflow object")
    inst_name = name or (doc["name"] if isinstance(doc.get("name"), str) and doc["name"] else _stem(label))
    if "specification" in wf:
        rows = _rows_v15(wf, fail)
        layout = "1.5"
    elif "tasks" in wf or "jobs" in wf:
        rows = _rows_old(wf, fail)
        layout = "1.3" if "tasks" in wf else "1.0"
    else:
        raise fail("workflow", "has no specification (WfFormat 1.5+), tasks (1.3-1.4) or jobs (1.0-1.2)")
    if version is None:
        version = layout
    ids, runtime, cores, parents, paths = rows
    n = len(ids)
    rt = np.asarray(runtime, dtype=np.float64)
    cr = np.asarray(cores, dtype=np.float64)
    clipped = 0
    if max_cores is not None:
        over = cr > max_cores
        clipped = int(np.count_nonzero(over))
        cr[over] = max_cores

    def fail_row(r: int, message: str) -> InputError:
        return fail(f"{paths[r][0]} (id {ids[r]!r})", message)

    def describe(r: int) -> str:
        return repr(ids[r])

    order, graph = order_tasks(np.zeros(n, dtype=np.int64), np.zeros(n), parents, fail_row, describe)
    makespan = _makespan(wf)
    return Instance(
        name=inst_name,
        file=label,
        version=version,
        task_ids=[ids[r] for r in order.tolist()],
        runtime_s=rt[order],
        cores=cr[order],
        graph=TaskGraph(graph.job_of, graph.parent_ptr, graph.parents),
        makespan_s=makespan,
        cores_clipped=clipped,
        extra={"runtime_system": _runtime_system(doc)},
    )


_Rows = tuple[list[str], list[float], list[float], tuple[IntArray, IntArray], list[tuple[str, str]]]


def _rows_v15(wf: dict[str, Any], fail: _Fail) -> _Rows:
    """Tasks of WfFormat 1.5/1.6: structure from the specification, runtimes from the execution."""
    spec = _get(wf, "specification", "workflow", dict, fail, "tasks and their dependencies")
    tasks = _get(spec, "tasks", "workflow.specification", list, fail, "the list of tasks")
    if not tasks:
        raise fail("workflow.specification.tasks", "is empty: a workflow needs at least one task")
    if "execution" not in wf:
        raise fail(
            "workflow.execution",
            "missing: this instance describes the workflow only; simulating it needs the runtimes an execution "
            "recorded (workflow.execution.tasks[].runtimeInSeconds)",
        )
    ex = _get(wf, "execution", "workflow", dict, fail, "the recorded execution")
    ex_tasks = _get(ex, "tasks", "workflow.execution", list, fail, "the tasks' runtimes")
    ids: list[str] = []
    index: dict[str, int] = {}
    for i, t in enumerate(tasks):
        path = f"workflow.specification.tasks[{i}]"
        if not isinstance(t, dict):
            raise fail(path, f"must be an object, got {type(t).__name__}")
        tid = _get(t, "id", path, str, fail, "the task's unique id")
        if not tid:
            raise fail(f"{path}.id", "is empty")
        if tid in index:
            raise fail(f"{path}.id", f"{tid!r} is also the id of workflow.specification.tasks[{index[tid]}]")
        index[tid] = i
        ids.append(tid)
    n = len(ids)
    runtime: list[float | None] = [None] * n
    cores = [1.0] * n
    where: list[str] = [""] * n
    bound = float(max_trace_seconds())
    for j, e in enumerate(ex_tasks):
        path = f"workflow.execution.tasks[{j}]"
        if not isinstance(e, dict):
            raise fail(path, f"must be an object, got {type(e).__name__}")
        tid = _get(e, "id", path, str, fail, "the id of a task of the specification")
        found = index.get(tid)
        if found is None:
            raise fail(f"{path}.id", f"{tid!r} is not the id of any task of workflow.specification.tasks")
        i = found
        if runtime[i] is not None:
            raise fail(f"{path}.id", f"a second execution record of task {tid!r} (the first is {where[i]})")
        if "runtimeInSeconds" not in e:
            raise fail(f"{path}.runtimeInSeconds", f"missing (the runtime of task {tid!r} in seconds)")
        runtime[i] = _number(e["runtimeInSeconds"], f"{path}.runtimeInSeconds", fail, lo=0.0, what="seconds", hi=bound)
        if e.get("coreCount") is not None:
            cores[i] = _number(e["coreCount"], f"{path}.coreCount", fail, lo=1.0, what="cores")
        where[i] = path
    for i, r in enumerate(runtime):
        if r is None:
            raise fail(
                f"workflow.specification.tasks[{i}]",
                f"task {ids[i]!r} has no runtime: workflow.execution.tasks has no record with its id",
            )
    parents = _edges(tasks, index, "workflow.specification.tasks", fail)
    paths = [(f"workflow.specification.tasks[{i}]", f"{where[i]}.runtimeInSeconds") for i in range(n)]
    return ids, [float(r) for r in runtime if r is not None], cores, parents, paths


def _rows_old(wf: dict[str, Any], fail: _Fail) -> _Rows:
    """Tasks of WfFormat 1.0-1.4: one list holding structure and measurements; references by name (or id)."""
    key = "tasks" if "tasks" in wf else "jobs"
    base = f"workflow.{key}"
    tasks = _get(wf, key, "workflow", list, fail, "the list of tasks")
    if not tasks:
        raise fail(base, "is empty: a workflow needs at least one task")
    ids: list[str] = []
    names: dict[str, int] = {}
    by_id: dict[str, int] = {}
    runtime: list[float] = []
    cores: list[float] = []
    paths: list[tuple[str, str]] = []
    bound = float(max_trace_seconds())
    for i, t in enumerate(tasks):
        path = f"{base}[{i}]"
        if not isinstance(t, dict):
            raise fail(path, f"must be an object, got {type(t).__name__}")
        nm = _get(t, "name", path, str, fail, "the task's name")
        if not nm:
            raise fail(f"{path}.name", "is empty")
        tid = t.get("id")
        if tid is not None and (not isinstance(tid, str) or not tid):
            raise fail(f"{path}.id", f"must be a non-empty string, got {tid!r}")
        if tid is not None:
            if tid in by_id:
                raise fail(f"{path}.id", f"{tid!r} is also the id of {base}[{by_id[tid]}]")
            by_id[tid] = i
        if nm in names and tid is None:
            raise fail(f"{path}.name", f"{nm!r} is also the name of {base}[{names[nm]}] (and neither has an id)")
        names.setdefault(nm, i)
        # Messages name a task by its name, or by its id when another task has the same name.
        ids.append(nm if names[nm] == i else str(tid))
        rkey = "runtimeInSeconds" if "runtimeInSeconds" in t else "runtime"
        if rkey not in t:
            raise fail(
                f"{path}.runtimeInSeconds", f"missing (the runtime of task {nm!r} in seconds; 'runtime' before 1.4)"
            )
        runtime.append(_number(t[rkey], f"{path}.{rkey}", fail, lo=0.0, what="seconds", hi=bound))
        ckey = "cores" if "cores" in t else "coreCount"
        cores.append(1.0 if t.get(ckey) is None else _number(t[ckey], f"{path}.{ckey}", fail, lo=1.0, what="cores"))
        paths.append((path, f"{path}.{rkey}"))
    # References: names first, then ids (WfFormat up to 1.4 refers to tasks by name).
    index = dict(by_id)
    index.update(names)
    parents = _edges(tasks, index, base, fail, "name or id")
    return ids, runtime, cores, parents, paths


def _edges(
    tasks: list[Any], index: dict[str, int], base: str, fail: _Fail, by: str = "id"
) -> tuple[IntArray, IntArray]:
    """Parent rows of every task as CSR: its ``parents`` and the tasks naming it among their ``children``, once each.

    The references are resolved in one Python pass; duplicates (an edge given at both ends) are removed with
    numpy, keeping each task's parents in the order they were first met.
    """
    n = len(tasks)
    par: list[int] = []
    chi: list[int] = []
    get = index.get
    for i, t in enumerate(tasks):
        for key in ("parents", "children"):
            refs = t.get(key)
            if refs is None:
                continue
            if not isinstance(refs, list):
                raise fail(f"{base}[{i}].{key}", f"must be a list of task ids, got {type(refs).__name__}")
            if not refs:
                continue
            rows = [get(r) for r in refs] if all(type(r) is str for r in refs) else None
            if rows is None or None in rows:
                _bad_ref(refs, index, f"{base}[{i}].{key}", base, by, fail)
            if key == "parents":
                par.extend(rows)  # type: ignore[arg-type]
                chi.extend([i] * len(refs))
            else:
                par.extend([i] * len(refs))
                chi.extend(rows)  # type: ignore[arg-type]
    p = np.asarray(par, dtype=np.int64)
    c = np.asarray(chi, dtype=np.int64)
    _, first = np.unique(c * n + p, return_index=True)
    first.sort()  # distinct edges, in the order met
    p, c = p[first], c[first]
    by_child = np.argsort(c, kind="stable")
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(c, minlength=n), out=ptr[1:])
    return ptr, p[by_child]


def _bad_ref(refs: list[Any], index: dict[str, int], path: str, base: str, by: str, fail: _Fail) -> None:
    """Raise the error about the first reference in ``refs`` that is not a string or names no task."""
    for k, r in enumerate(refs):
        if not isinstance(r, str):
            raise fail(f"{path}[{k}]", f"must be a task id (a string), got {r!r}")
        if r not in index:
            raise fail(f"{path}[{k}]", f"unknown task {r!r}: no task of {base} has that {by}")


def _makespan(wf: dict[str, Any]) -> float | None:
    ex = wf.get("execution")
    for obj, key in ((ex, "makespanInSeconds"), (wf, "makespanInSeconds"), (wf, "makespan")):
        if isinstance(obj, dict):
            v = obj.get(key)
            if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
                return float(v)
    return None


def _runtime_system(doc: dict[str, Any]) -> str | None:
    rs = doc.get("runtimeSystem") or doc.get("wms")
    if isinstance(rs, dict) and isinstance(rs.get("name"), str):
        return str(rs["name"])
    return None


def _stem(label: str) -> str:
    base = label.replace("\\", "/").rsplit("/", 1)[-1]
    for ext in (".gz", ".json"):
        if base.lower().endswith(ext):
            base = base[: -len(ext)]
    return base or "workflow"


# -- streams of instances ---------------------------------------------------------------------------------------


def arrival_times(
    n_jobs: int, arrival: str, interarrival_s: float, rng: np.random.Generator | None
) -> tuple[FloatArray, float]:
    """Arrival time of each job (s) and the arrival window ``horizon_s``: together, fixed gaps or Poisson."""
    if arrival not in ARRIVALS:
        raise ParameterError(f"arrival must be one of {', '.join(ARRIVALS)}, got {arrival!r}")
    if arrival == "together":
        return np.zeros(n_jobs), 0.0
    if not (math.isfinite(interarrival_s) and interarrival_s > 0):
        raise ParameterError(f"arrival {arrival!r} needs a positive interarrival time in seconds, got {interarrival_s}")
    if arrival == "fixed":
        return np.arange(n_jobs, dtype=np.float64) * interarrival_s, n_jobs * interarrival_s
    if rng is None:
        raise ParameterError("Poisson arrivals need a random generator (a seed)")
    gaps = rng.exponential(interarrival_s, size=max(n_jobs - 1, 0))
    t = np.concatenate(([0.0], np.cumsum(gaps)))
    return t, max(n_jobs * interarrival_s, float(t[-1]))


def wfcommons_workload(
    instances: Sequence[Instance],
    *,
    jobs: int = 0,
    arrival: Arrival = "together",
    interarrival_s: float = 0.0,
    rng: np.random.Generator | None = None,
    name: str | None = None,
) -> Workload:
    """A stream of jobs replaying ``instances``: job ``k`` is instance ``k mod len(instances)``.

    ``jobs``: how many jobs (0: one per instance). ``arrival``: ``together``
    (all at 0), ``fixed`` (every ``interarrival_s`` s from 0) or ``poisson``
    (exponential gaps of mean ``interarrival_s``, drawn from ``rng``; the
    first job at 0). Requests are in the resource ``cores``.
    """
    if not instances:
        raise ParameterError("no WfCommons instance given")
    if jobs < 0:
        raise ParameterError(f"jobs must be 0 (one per instance) or more, got {jobs}")
    n_jobs = jobs or len(instances)
    # Bounded before anything is allocated: --jobs 1e9 asked numpy for 7.45 GiB and failed with a traceback.
    limits.check_jobs(n_jobs, f"jobs: {n_jobs:,} jobs")
    rounds, rest = divmod(n_jobs, len(instances))
    n_tasks = rounds * sum(p.n_tasks for p in instances) + sum(p.n_tasks for p in instances[:rest])
    limits.check_jobs(n_tasks, f"jobs: {n_jobs:,} jobs of {len(instances)} instance(s) are {n_tasks:,} tasks")
    submit_job, horizon = arrival_times(n_jobs, arrival, interarrival_s, rng)
    pick = [instances[k % len(instances)] for k in range(n_jobs)]
    sizes = np.array([p.n_tasks for p in pick], dtype=np.int64)
    base = np.zeros(n_jobs + 1, dtype=np.int64)
    np.cumsum(sizes, out=base[1:])
    n = int(base[-1])
    submit = np.repeat(submit_job, sizes)
    work = np.concatenate([p.runtime_s for p in pick]) if n else np.zeros(0)
    cores = np.concatenate([p.cores for p in pick]) if n else np.zeros(0)
    job_of = np.repeat(np.arange(n_jobs, dtype=np.int64), sizes)
    counts = np.concatenate([p.graph.n_parents for p in pick]) if n else np.zeros(0, dtype=np.int64)
    ptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    flat = np.concatenate([p.graph.parents + base[k] for k, p in enumerate(pick)]) if n else np.zeros(0, dtype=np.int64)
    graph = TaskGraph(job_of, ptr, flat)
    clipped = sum(p.cores_clipped for p in pick)
    used = {id(p): p for p in pick}
    return Workload(
        name=name or (instances[0].name if len(instances) == 1 else "wfcommons"),
        resources=(RESOURCE,),
        submit=submit,
        request=cores[:, None],
        work=work,
        job_class=np.full(n, -1, dtype=np.int64),
        horizon_s=float(horizon),
        graph=graph,
        params={
            "source": "wfcommons",
            "instances": [
                {
                    "name": p.name,
                    "file": p.file,
                    "schema_version": p.version,
                    "tasks": p.n_tasks,
                    "edges": p.graph.n_edges,
                    "critical_path_s": p.critical_path_s,
                    "recorded_makespan_s": p.makespan_s,
                }
                for p in used.values()
            ],
            "jobs": int(n_jobs),
            "tasks": n,
            "arrival": arrival,
            "interarrival_s": float(interarrival_s),
            "cores_clipped": int(clipped),
        },
    )


def read_wfcommons(
    sources: Sequence[Source],
    *,
    jobs: int = 0,
    arrival: Arrival = "together",
    interarrival_s: float = 0.0,
    rng: np.random.Generator | None = None,
    max_cores: float | None = None,
    name: str | None = None,
    progress: ProgressFn | None = None,
) -> ImportResult:
    """Read WfCommons instances and replay them as a stream of jobs (see :func:`wfcommons_workload`).

    Returns the workload (resource ``cores``), no cluster, and a report
    (tasks and edges per instance, critical paths, clipped requests).
    """
    from simcore.traces._stream import ImportProgress

    if not sources:
        raise ParameterError("at least one WfCommons instance file is needed")
    t0, c0 = time.perf_counter(), time.process_time()
    report = ImportReport("wfcommons")
    insts: list[Instance] = []
    for i, src in enumerate(sources):
        label = source_name(src, f"instance[{i}].json")
        if isinstance(src, (bytes, bytearray, memoryview)):
            named = io.BytesIO(bytes(src))
            named.name = label
            src = named
        inst = read_instance(src, max_cores=max_cores)
        insts.append(inst)
        if progress is not None:
            progress(ImportProgress("wfcommons", label, i, len(sources), 1, 1, sum(x.n_tasks for x in insts)))
    wl = wfcommons_workload(insts, jobs=jobs, arrival=arrival, interarrival_s=interarrival_s, rng=rng, name=name)
    report.files["wfcommons"] = [x.file for x in insts]
    report.rows_read["wfcommons"] = sum(x.n_tasks for x in insts)
    report.extra["instances"] = wl.params["instances"]
    report.extra["task_jobs"] = int(wl.params["jobs"])
    if wl.params["cores_clipped"]:
        report.keep_note("asked for more cores than the largest machine: clipped to it", wl.params["cores_clipped"])
    report.notes.extend(
        [
            "one job per instance replayed; every task of a job is submitted with it",
            "duration = the recorded runtime (s), taken as the time on the cluster's fastest machines",
            f"request = coreCount (cores before 1.5), 1 when absent, in resource {RESOURCE!r}",
            f"arrivals: {arrival}" + (f", mean gap {interarrival_s:g} s" if arrival != "together" else ""),
        ]
    )
    report.wall_s, report.cpu_s = time.perf_counter() - t0, time.process_time() - c0
    return ImportResult(wl, None, report)


# -- writing (benchmarks, exports) --------------------------------------------------------------------------------


def instance_dict(
    graph: TaskGraph,
    runtime_s: FloatArray,
    cores: FloatArray | None = None,
    *,
    name: str = "simcore-workflow",
    job: int = 0,
) -> dict[str, Any]:
    """Job ``job`` of a task graph as a WfFormat 1.5 instance (ids ``t<number>``), e.g. to export or benchmark."""
    tasks = np.flatnonzero(graph.job_of == job)
    local = {int(t): k for k, t in enumerate(tasks.tolist())}
    spec, exe = [], []
    for t in tasks.tolist():
        tid = f"t{local[t]}"
        spec.append(
            {
                "name": tid,
                "id": tid,
                "parents": [f"t{local[int(p)]}" for p in graph.parents_of(t).tolist()],
                "children": [f"t{local[int(c)]}" for c in graph.children_of(t).tolist()],
            }
        )
        rec: dict[str, Any] = {"id": tid, "runtimeInSeconds": float(runtime_s[t])}
        if cores is not None:
            rec["coreCount"] = float(cores[t])
        exe.append(rec)
    return {
        "name": name,
        "schemaVersion": "1.5",
        "workflow": {
            "specification": {"tasks": spec, "files": []},
            "execution": {"makespanInSeconds": 0.0, "executedAt": "1970-01-01T00:00:00Z", "tasks": exe},
        },
    }
