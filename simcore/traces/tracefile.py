"""The project's own trace format: one job per CSV row, optionally gzipped.

Format (what :func:`write_trace` writes and :func:`read_trace` reads)::

    # simcore trace v1
    # name: google-like
    # horizon_s: 3600.0
    # classes: class 1,class 2
    submit_s,duration_s,cpu,mem,class
    0.0132,95.2,0.021,0.0094,0
    ...

* Optional comment lines (``#``) before the header; ``# key: value`` lines
  set ``name``, ``horizon_s`` (the arrival window in seconds; default: the
  last submission time) and ``classes`` (comma-separated class names, in
  class-id order). Other keys are ignored. Blank and ``#`` lines among the
  rows are skipped.
* A header naming the columns, in any order: ``submit_s`` (submission time,
  s), ``duration_s`` (processing time, s, the same on every machine), one
  column per resource (same unit as the cluster's capacities; the Google
  presets normalise to the largest machine) and an optional ``class``.
* ``class``: an integer id (``-1`` or empty: unknown) or a class name. Names
  are looked up in the ``# classes:`` list if there is one; otherwise a file
  holds either integer ids or names, and names get ids in order of first
  appearance (``Workload.params["class_names"]``).
* Rows need not be sorted by ``submit_s``: the reader sorts them with a
  stable sort (equal times keep file order) and records
  ``params["sorted_on_read"]``. Job ids are positions after sorting.
* Jobs made of tasks (optional, :mod:`simcore.core.taskgraph`): a ``job`` column
  (a non-negative integer, e.g. Google 2011's job ID) makes every row a
  *task* and groups the rows with the same value into one job (a bag of
  tasks). A ``task`` column (an id unique within its job, without spaces)
  and a ``parents`` column (the ids of the task's parents in its job,
  separated by spaces; empty: none) make the job a DAG::

      submit_s,duration_s,cores,job,task,parents
      0.0,10.0,1,7,split,
      0.0,30.0,2,7,left,split
      0.0,50.0,1,7,right,split
      0.0,5.0,1,7,merge,left right

  Tasks are ordered by submission time, then file order, each moved after
  its parents when listed earlier (:func:`simcore.workloads.taskorder.order_tasks`);
  an unknown parent, a parent submitted after its child, a repeated task id
  or a cycle is an error naming the line. ``params["task_jobs"]`` counts
  the jobs. The tasks of a job may have different submit times (Google
  2011); the job metrics use its first.
* ``priority`` (optional): the task's scheduling priority in its source
  trace (Google 2011: 0-11, production 9-11), an integer, -1 for unknown.
  A simulation ignores it (:func:`read_trace` does not return it); a packing
  snapshot filters on it (:func:`read_trace_with_priority`).
* gzip is detected from the magic bytes, whatever the file is called.
* ``Workload.params`` records ``trace_file``, ``jobs``, ``sorted_on_read``,
  ``class_names`` and, when job z is on line ``first_data_line + z`` (no
  skipped lines, no sorting), ``first_data_line``, so that
  :func:`simcore.core.model.check_compatible` can name the line of a job that
  fits no machine.

Every problem raises :class:`~simcore.core.errors.InputError` naming the file,
line (1-based, counting comment lines) and column; nothing is half-loaded,
the workload is built only after the whole file has been checked.

Speed: rows are parsed in blocks of ``BLOCK_BYTES`` with
:func:`numpy.loadtxt` into arrays (no Python object per job survives a
block). A block that the fast parser rejects, or whose class column holds
names, is re-read with the :mod:`csv` module, which either finds the exact
line and column of the problem or parses it (class names are therefore
slower, about 4x).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import max_request, max_trace_seconds
from simcore.core.model import FixedRuntime, FloatArray, IntArray, Workload
from simcore.core.taskgraph import TaskGraph
from simcore.sources import source_label
from simcore.traces._stream import RowErrors, iter_blocks
from simcore.traces.tracetasks import JOB, PARENTS, TASK, TaskRows, graph_columns, task_graph

SUBMIT = "submit_s"
DURATION = "duration_s"
CLASS = "class"
PRIORITY = "priority"
SPECIAL = (SUBMIT, DURATION, CLASS, PRIORITY, JOB, TASK, PARENTS)
#: Job IDs are read as doubles by the fast parser: integers above 2**53 would lose digits.
MAX_JOB_ID = 2**53
#: The largest priority a row may give (Google 2011's are 0-11; room for other traces' scales).
MAX_PRIORITY = 1_000_000

#: Bytes read (after decompression) per block; a block of 16 MB is about
#: 400,000 rows, whose temporary Python strings take about 60 MB.
BLOCK_BYTES = 16 << 20

#: Rows per block when writing.
WRITE_ROWS = 65_536

GZIP_MAGIC = b"\x1f\x8b"

#: gzip level when writing. On trace text level 1 is 6x faster than 6 and 10x faster than 9 (the
#: default), for files 7% larger (measured: 49% vs 46% of the CSV size).
GZIP_LEVEL = 1

Source = str | os.PathLike[str] | IO[bytes]


# -- reading ------------------------------------------------------------------------------------


@dataclass
class _Layout:
    """Where the columns are and how the class column is read."""

    file: str
    header_line: int
    n_fields: int
    numeric_idx: list[int]  # submit, duration, resources... (file positions)
    numeric_names: list[str]
    class_idx: int | None
    class_names: list[str] = field(default_factory=list)
    declared_names: bool = False
    #: None until the first non-empty class value: "id" or "name".
    class_mode: str | None = None
    #: Jobs made of tasks: the file positions of the job, task and parents columns (None: absent).
    job_idx: int | None = None
    task_idx: int | None = None
    parents_idx: int | None = None
    #: The file position of the priority column (None: absent).
    priority_idx: int | None = None


def _text_blocks(source: Source, label: str) -> Iterator[tuple[int, str]]:
    """``(line number of the first line, text)`` blocks of whole lines, without the last newline.

    The one block reader of every trace format (:func:`simcore.traces._stream.iter_blocks`:
    16 MB blocks, gzip detected from its magic bytes, the size, ratio and line-length bounds
    of :mod:`simcore.core.limits`); a text stream is encoded to UTF-8 first.
    """
    src: Any = source
    if isinstance(source, io.TextIOBase):
        src = source.read().encode("utf-8")
    first = True
    for block in iter_blocks(src, label, RowErrors()):
        if not block.n_lines:
            continue
        yield block.first_line, _decode(block.data[:-1], label, block.first_line, first)
        first = False


def _decode(b: bytes, label: str, line: int, first: bool) -> str:
    try:
        text = b.decode("utf-8-sig" if first else "utf-8")
    except UnicodeDecodeError as e:
        bad_line = line + b[: e.start].count(b"\n")
        raise InputError("not UTF-8 text (is this a CSV trace?)", file=label, line=bad_line) from None
    return text.replace("\r", "") if "\r" in text else text


def _parse_meta(text: str, label: str, line: int, meta: dict[str, Any]) -> None:
    body = text.lstrip("#").strip()
    for sep in (":", "="):
        if sep in body:
            key, _, value = body.partition(sep)
            key, value = key.strip().lower(), value.strip()
            break
    else:
        return
    if key == "horizon_s":
        try:
            h = float(value)
        except ValueError:
            h = math.nan
        if not (math.isfinite(h) and h >= 0):
            raise InputError(
                f"horizon_s must be a non-negative number of seconds, got {value!r}", file=label, line=line
            )
        meta["horizon_s"] = (h, line)
    elif key == "name":
        meta["name"] = value
    elif key == "classes":
        names = [n.strip() for n in next(csv.reader([value]))] if value else []
        if len(set(names)) != len(names) or any(not n for n in names):
            raise InputError("the classes list has an empty or repeated name", file=label, line=line)
        meta["classes"] = names


def _layout(
    header: str, line: int, label: str, resources: Sequence[str] | None, meta: dict[str, Any]
) -> tuple[_Layout, list[str]]:
    cols = [c.strip() for c in next(csv.reader([header]))]
    seen: set[str] = set()
    for c in cols:
        if not c:
            raise InputError("empty column name in the header", file=label, line=line)
        if c in seen:
            raise InputError("column appears twice in the header", file=label, line=line, column=c)
        seen.add(c)
    missing = [c for c in (SUBMIT, DURATION, *(resources or ())) if c not in seen]
    if missing:
        # Every missing column at once, with what is required and what was found (issue 17).
        raise InputError(
            f"missing column(s) {', '.join(missing)}: a trace needs {SUBMIT}, {DURATION} and one column per "
            f"resource{' (' + ', '.join(resources) + ')' if resources else ', e.g. cpu, mem'}; the header has "
            f"{', '.join(cols)} (a file with other column names: map them with simcore import --map, or on the "
            "upload page's 'map its columns')",
            file=label,
            line=line,
            column=missing[0] if len(missing) == 1 else None,
        )
    present = [c for c in cols if c not in SPECIAL]
    if resources is None:
        res = present
        if not res:
            raise InputError("no resource columns (e.g. cpu, mem) in the header", file=label, line=line)
    else:
        res = list(resources)
        for r in res:
            if r not in seen:
                raise InputError(
                    f"missing column: the cluster has resources {', '.join(res)} and every job needs a request "
                    f"for each",
                    file=label,
                    line=line,
                    column=r,
                )
        for c in present:
            if c not in res:
                raise InputError(
                    f"unknown column: not a resource of the cluster ({', '.join(res)}) nor one of {', '.join(SPECIAL)}",
                    file=label,
                    line=line,
                    column=c,
                )
    names = [SUBMIT, DURATION, *res]
    lay = _Layout(
        file=label,
        header_line=line,
        n_fields=len(cols),
        numeric_idx=[cols.index(c) for c in names],
        numeric_names=names,
        class_idx=cols.index(CLASS) if CLASS in seen else None,
    )
    if "classes" in meta:
        lay.class_names = list(meta["classes"])
        lay.declared_names = True
    if PARENTS in seen and TASK not in seen:
        raise InputError("a parents column needs a task column (parents are task ids)", file=label, line=line)
    for c in (TASK, PARENTS):
        if c in seen and JOB not in seen:
            raise InputError(f"a {c} column needs a job column (tasks belong to jobs)", file=label, line=line, column=c)
    lay.job_idx, lay.task_idx, lay.parents_idx = (cols.index(c) if c in seen else None for c in (JOB, TASK, PARENTS))
    lay.priority_idx = cols.index(PRIORITY) if PRIORITY in seen else None
    return lay, res


#: A block's columns: numbers (submit, duration, resources), class, job and priority (None: no such column).
_Block = tuple[FloatArray, FloatArray | IntArray | None, FloatArray | None, FloatArray | None]


def _parse_fast(lines: list[str], lay: _Layout) -> _Block | None:
    """numpy.loadtxt over a block; None when it cannot parse the block exactly (or it has task ids)."""
    if lay.class_mode == "name" or lay.task_idx is not None:
        return None
    try:
        arr = np.loadtxt(lines, delimiter=",", dtype=np.float64, comments=None, ndmin=2)
    except ValueError:
        return None
    if arr.shape != (len(lines), lay.n_fields):
        return None
    cls = arr[:, lay.class_idx] if lay.class_idx is not None else None
    job = arr[:, lay.job_idx] if lay.job_idx is not None else None
    prio = arr[:, lay.priority_idx] if lay.priority_idx is not None else None
    return arr[:, lay.numeric_idx], cls, job, prio


def _number(text: str, lay: _Layout, line: int, col: str) -> float:
    s = text.strip()
    try:
        if "_" in s:  # Python accepts 1_000; the fast parser does not, so neither do we
            raise ValueError
        return float(s)
    except ValueError:
        what = "empty value" if not s else f"not a number: {s!r}"
        raise InputError(what, file=lay.file, line=line, column=col) from None


def _parse_slow(lines: list[str], line_nos: list[int], lay: _Layout, tasks: TaskRows | None = None) -> _Block:
    """The csv module over a block: exact errors, quoted fields, class names, task ids and parents."""
    num = np.empty((len(lines), len(lay.numeric_idx)))
    cls = np.full(len(lines), -1, dtype=np.int64) if lay.class_idx is not None else None
    job = np.empty(len(lines)) if lay.job_idx is not None else None
    prio = np.empty(len(lines)) if lay.priority_idx is not None else None
    name_ids = {n: i for i, n in enumerate(lay.class_names)}
    for r, (row, ln) in enumerate(zip(csv.reader(lines), line_nos, strict=True)):
        if len(row) != lay.n_fields:
            raise InputError(
                f"expected {lay.n_fields} fields like the header, found {len(row)}", file=lay.file, line=ln
            )
        for c, (i, name) in enumerate(zip(lay.numeric_idx, lay.numeric_names, strict=True)):
            num[r, c] = _number(row[i], lay, ln, name)
        if job is not None and lay.job_idx is not None:
            job[r] = _number(row[lay.job_idx], lay, ln, JOB)
        if prio is not None and lay.priority_idx is not None:
            prio[r] = _number(row[lay.priority_idx], lay, ln, PRIORITY)
        if tasks is not None:
            tasks.add(row, ln)
        if cls is None or lay.class_idx is None:
            continue
        v = row[lay.class_idx].strip()
        if not v:
            continue
        cls[r] = _class_value(v, lay, ln, name_ids)
    return num, cls, job, prio


def _class_value(v: str, lay: _Layout, line: int, name_ids: dict[str, int]) -> int:
    as_int: int | None
    try:
        f = float(v) if "_" not in v else math.nan
        as_int = int(f) if f.is_integer() else None
    except ValueError:
        as_int = None
    if lay.declared_names:
        if v in name_ids:
            return name_ids[v]
        if as_int is not None:
            return as_int
        raise InputError(
            f"class {v!r} is not in the '# classes:' list ({', '.join(lay.class_names)})",
            file=lay.file,
            line=line,
            column=CLASS,
        )
    if lay.class_mode is None:
        lay.class_mode = "id" if as_int is not None else "name"
    if lay.class_mode == "id":
        if as_int is None:
            raise InputError(
                f"class {v!r} is not an integer id like the earlier rows (to mix ids and names, list the names "
                f"in a '# classes:' comment)",
                file=lay.file,
                line=line,
                column=CLASS,
            )
        return as_int
    if v not in name_ids:
        name_ids[v] = len(lay.class_names)
        lay.class_names.append(v)
    return name_ids[v]


def _check_block(
    num: FloatArray,
    cls: FloatArray | IntArray | None,
    line_nos: Sequence[int] | None,
    first_line: int,
    lay: _Layout,
    job: FloatArray | None = None,
    prio: FloatArray | None = None,
) -> None:
    """Reject NaN, infinities, negative or absurd values and bad class ids; name the first offending line.

    Times and durations above ``SIMCORE_MAX_TRACE_SECONDS`` (ten years) and requests above
    ``SIMCORE_MAX_REQUEST`` are absurd: a duration of 1e308 s would run and report a mean of 1e308.
    """
    bounds = np.array([_bound(name) for name in lay.numeric_names], dtype=np.float64)
    bad_num = ~np.isfinite(num) | (num < 0) | (num > bounds)
    rows = [int(np.flatnonzero(bad_num.any(axis=1))[0])] if bad_num.any() else []
    if cls is not None:
        bad_cls = ~np.isfinite(cls) | (cls < -1) | (cls != np.floor(cls))
        if lay.declared_names:
            bad_cls |= cls >= len(lay.class_names)
        if bad_cls.any():
            rows.append(int(np.flatnonzero(bad_cls)[0]))
    if job is not None:
        bad_job = ~np.isfinite(job) | (job < 0) | (job != np.floor(job)) | (job >= MAX_JOB_ID)
        if bad_job.any():
            rows.append(int(np.flatnonzero(bad_job)[0]))
    if prio is not None:
        bad_prio = ~np.isfinite(prio) | (prio < -1) | (prio != np.floor(prio)) | (prio > MAX_PRIORITY)
        if bad_prio.any():
            rows.append(int(np.flatnonzero(bad_prio)[0]))
    if not rows:
        return
    r = min(rows)
    ln = line_nos[r] if line_nos is not None else first_line + r
    if prio is not None and not (-1 <= prio[r] <= MAX_PRIORITY and prio[r] == math.floor(prio[r])):
        raise InputError(
            f"priority must be an integer from -1 (unknown) to {MAX_PRIORITY}, got {float(prio[r])!r}",
            file=lay.file,
            line=ln,
            column=PRIORITY,
        )
    if job is not None and not (math.isfinite(job[r]) and 0 <= job[r] < MAX_JOB_ID and job[r] == math.floor(job[r])):
        raise InputError(
            f"job id must be an integer from 0 to 2**53, got {float(job[r])!r}", file=lay.file, line=ln, column=JOB
        )
    for c, name in enumerate(lay.numeric_names):
        v = float(num[r, c])
        if not math.isfinite(v):
            raise InputError(f"not a finite number: {v}", file=lay.file, line=ln, column=name)
        if v < 0:
            raise InputError(f"negative value {v}", file=lay.file, line=ln, column=name)
        if v > _bound(name):
            what = "SIMCORE_MAX_TRACE_SECONDS" if name in (SUBMIT, DURATION) else "SIMCORE_MAX_REQUEST"
            raise InputError(
                f"value {v:g} is larger than the bound {_bound(name):g} (setting {what})",
                file=lay.file,
                line=ln,
                column=name,
            )
    assert cls is not None
    v = cls[r]
    shown = int(v) if np.isfinite(v) and v == np.floor(v) else float(v)
    if lay.declared_names and np.isfinite(v) and v >= len(lay.class_names):
        raise InputError(
            f"class id {shown} but the '# classes:' list names only {len(lay.class_names)} classes",
            file=lay.file,
            line=ln,
            column=CLASS,
        )
    raise InputError(
        f"class id must be an integer >= 0 (or -1 for unknown), got {shown}", file=lay.file, line=ln, column=CLASS
    )


def _bound(column: str) -> float:
    return float(max_trace_seconds() if column in (SUBMIT, DURATION) else max_request())


def read_trace(
    source: Source,
    *,
    resources: Sequence[str] | None = None,
    name: str | None = None,
) -> Workload:
    """Read a trace (see the module docstring for the format) into a :class:`Workload`.

    ``resources``: the cluster's resource names, in the cluster's order;
    each must be a column and no other resource column may appear. ``None``
    takes every non-special column as a resource, in file order. ``name``
    overrides the ``# name:`` comment and the file name. Times are seconds.
    """
    label = source_label(source)
    return _read(_text_blocks(source, label), label, resources, name)


def read_trace_with_priority(
    source: Source,
    *,
    resources: Sequence[str] | None = None,
    name: str | None = None,
) -> tuple[Workload, IntArray | None]:
    """:func:`read_trace`, and the ``priority`` column in the workload's job order (None: the file has none).

    Kept apart from the workload on purpose: the workload's cuts and replays
    (:mod:`simcore.api`) would not carry a per-job column along; a packing
    snapshot filters on it at once (:func:`simcore.packing.sources.from_trace`).
    """
    label = source_label(source)
    rows = _Rows(label, resources)
    for first_line, text in _text_blocks(source, label):
        rows.add(first_line, text)
    wl = _workload(rows, name)
    return wl, rows.priority


def _read(blocks: Iterator[tuple[int, str]], label: str, resources: Sequence[str] | None, name: str | None) -> Workload:
    rows = _Rows(label, resources)
    for first_line, text in blocks:
        rows.add(first_line, text)
    return _workload(rows, name)


@dataclass
class _Rows:
    """A trace as it is read block by block: the comments and header, then the data rows' columns."""

    label: str
    resources: Sequence[str] | None
    meta: dict[str, Any] = field(default_factory=dict)
    lay: _Layout | None = None
    res: list[str] = field(default_factory=list)
    nums: list[FloatArray] = field(default_factory=list)
    classes: list[IntArray] = field(default_factory=list)
    jobs: list[FloatArray] = field(default_factory=list)
    priorities: list[FloatArray] = field(default_factory=list)
    #: The priority column in the workload's order, once :func:`_workload` has read the rows.
    priority: IntArray | None = None
    tasks: TaskRows | None = None
    #: Whether row z of the data is line first_data_line + z (no skipped lines, no sorting).
    one_to_one: bool = True
    first_data_line: int | None = None

    def add(self, first_line: int, text: str) -> None:
        """Read one block of whole lines starting at line ``first_line``."""
        skippable = _has_skippable(text)
        lines = text.split("\n")
        if self.lay is None:
            first_line, lines = self._preamble(first_line, lines)
            if self.lay is None or not lines:
                return
            # The preamble's comments made the whole block look skippable; look again without them.
            skippable = _has_skippable("\n".join(lines))
            lay = self.lay
            self.tasks = TaskRows(self.label, lay.task_idx, lay.parents_idx) if lay.task_idx is not None else None
        if self.first_data_line is None:
            self.first_data_line = first_line
        line_nos: list[int] | None = None
        if skippable:
            keep = [
                (ln, t) for ln, t in enumerate(lines, start=first_line) if t.strip() and not t.lstrip().startswith("#")
            ]
            self.one_to_one = self.one_to_one and len(keep) == len(lines)
            line_nos = [ln for ln, _ in keep]
            lines = [t for _, t in keep]
            if not lines:
                return
        self._parse(lines, line_nos, first_line)

    def _preamble(self, first_line: int, lines: list[str]) -> tuple[int, list[str]]:
        """Comments, then the header: read them, and return where the data starts and its lines."""
        k = 0
        while k < len(lines):
            s = lines[k].strip()
            if s.startswith("#"):
                _parse_meta(s, self.label, first_line + k, self.meta)
            elif s:
                self.lay, self.res = _layout(lines[k], first_line + k, self.label, self.resources, self.meta)
                k += 1
                break
            k += 1
        return first_line + k, lines[k:]

    def _parse(self, lines: list[str], line_nos: list[int] | None, first_line: int) -> None:
        """Parse data lines (fast path, else line by line), check them and keep their columns."""
        lay = self.lay
        assert lay is not None
        fast = _parse_fast(lines, lay)
        cls: FloatArray | IntArray | None
        if fast is not None:
            num, cls, job, prio = fast
        else:
            nos = line_nos or list(range(first_line, first_line + len(lines)))
            num, cls, job, prio = _parse_slow(lines, nos, lay, self.tasks)
        _check_block(num, cls, line_nos, first_line, lay, job, prio)
        self.nums.append(num)
        if job is not None:
            self.jobs.append(job)
        if prio is not None:
            self.priorities.append(prio)
        if cls is not None:
            if fast is not None and lay.class_mode is None and not lay.declared_names and (cls >= 0).any():
                lay.class_mode = "id"
            self.classes.append(cls.astype(np.int64))


def _workload(rows: _Rows, name: str | None) -> Workload:
    """The rows read as a workload, in submission order (or the task graph's order)."""
    label, lay = rows.label, rows.lay
    if lay is None:
        raise InputError("no header line (expected e.g. 'submit_s,duration_s,cpu,mem')", file=label)
    if not rows.nums:
        raise InputError("the trace has a header but no jobs", file=label)
    data = np.concatenate(rows.nums) if len(rows.nums) > 1 else rows.nums[0]
    rows.nums.clear()  # the blocks' arrays are copied into data: let them go
    job_class = np.concatenate(rows.classes) if rows.classes else np.full(len(data), -1, dtype=np.int64)
    if rows.priorities:
        # Carried as a column of data, so that it is ordered with the rows.
        data = np.column_stack((data, np.concatenate(rows.priorities)))
    data, job_class, graph, unsorted = _in_order(data, job_class, rows, label)
    if rows.priorities:
        rows.priority = data[:, -1].astype(np.int64)
        data = data[:, :-1]
    submit = np.ascontiguousarray(data[:, 0])
    last = float(submit[-1])
    horizon = last
    if "horizon_s" in rows.meta:
        horizon, hline = rows.meta["horizon_s"]
        if horizon < last:
            raise InputError(f"horizon_s {horizon} is before the last submission time {last}", file=label, line=hline)
    params: dict[str, Any] = {"trace_file": label, "jobs": int(len(submit)), "sorted_on_read": unsorted}
    if rows.one_to_one and not unsorted and rows.first_data_line is not None:
        # Lets model.check_compatible name the line of a job that fits no machine.
        params["first_data_line"] = rows.first_data_line
    if lay.class_names:
        params["class_names"] = list(lay.class_names)
    if graph is not None:
        params["task_jobs"] = graph.n_jobs
    return Workload(
        name=name or rows.meta.get("name") or _stem(label),
        resources=tuple(rows.res),
        submit=submit,
        request=np.ascontiguousarray(data[:, 2 : 2 + len(rows.res)]),
        work=np.ascontiguousarray(data[:, 1]),
        job_class=job_class,
        horizon_s=horizon,
        params=params,
        graph=graph,
    )


def _in_order(
    data: FloatArray, job_class: IntArray, rows: _Rows, label: str
) -> tuple[FloatArray, IntArray, TaskGraph | None, bool]:
    """Rows sorted by submission (stable), or in the task graph's order; and whether that moved any row."""
    submit = np.ascontiguousarray(data[:, 0])
    unsorted = bool(np.any(np.diff(submit) < 0))
    graph: TaskGraph | None = None
    order: IntArray | None
    if rows.jobs:
        order, graph = task_graph(np.concatenate(rows.jobs), submit, rows.tasks, label)
        unsorted = bool((order != np.arange(len(order))).any())
    else:
        order = np.argsort(submit, kind="stable") if unsorted else None
    if order is not None and unsorted:
        data = data[order]
        job_class = job_class[order]
    return data, job_class, graph, unsorted


#: A newline followed by another, a comment or whitespace: a block that may hold lines to skip.
_SKIPPABLE = re.compile(r"\n[\n# \t]")


def _has_skippable(text: str) -> bool:
    """Whether a block may hold blank or comment lines (such lines are rare, so one regex scan decides).

    Lines starting with a space are flagged too and then checked one by one.
    """
    return not text or text[0] in "# \t" or text[-1] == "\n" or _SKIPPABLE.search(text) is not None


def _stem(label: str) -> str:
    n = Path(label).name
    for ext in (".gz", ".csv"):
        if n.endswith(ext):
            n = n[: -len(ext)]
    return n or "trace"


#: The block reader of :func:`read_trace`, for the other CSV readers (:mod:`simcore.traces.colmap`).
text_blocks = _text_blocks


# -- writing -------------------------------------------------------------------------------------


def write_trace(
    workload: Workload, dest: str | os.PathLike[str] | IO[Any], *, priority: IntArray | None = None
) -> None:
    """Write ``workload`` in the trace format; gzip when ``dest`` is a path ending in ``.gz``.

    Floats are written with :func:`repr`, the shortest text that reads back
    to the same double, so write-then-read gives identical arrays. Only
    machine-independent durations can be written (``duration_s``). A workload
    with a task graph gets a ``job`` column (its ``job_ids`` when it has them)
    and, when the graph has edges, ``task`` (the task's position in its job,
    from 0) and ``parents`` columns. ``priority``: one integer per job, written
    as the ``priority`` column (a Google 2011 import's task priorities).
    """
    if priority is not None and len(priority) != workload.n_jobs:
        raise ParameterError(f"priority has {len(priority)} entries; the workload has {workload.n_jobs} jobs")
    if workload.runtime is not None and not isinstance(workload.runtime, FixedRuntime):
        raise ParameterError(
            f"workload {workload.name!r} has machine-dependent processing times "
            f"({type(workload.runtime).__name__}); the trace format holds one duration per job"
        )
    names = (
        list(workload.classes.names) if workload.classes is not None else list(workload.params.get("class_names") or [])
    )
    with_class = bool(names) or bool((workload.job_class >= 0).any())
    head = ["# simcore trace v1", f"# name: {workload.name}", f"# horizon_s: {float(workload.horizon_s)!r}"]
    if names:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="").writerow(names)
        head.append(f"# classes: {buf.getvalue()}")
    cols = [SUBMIT, DURATION, *workload.resources] + ([CLASS] if with_class else [])
    cols += [] if priority is None else [PRIORITY]
    g = workload.graph
    cols += [] if g is None else [JOB] if g.n_edges == 0 else [JOB, TASK, PARENTS]
    head.append(",".join(cols))
    if isinstance(dest, (str, os.PathLike)):
        path = os.fspath(dest)
        f: IO[Any]
        if path.endswith(".gz"):
            f = gzip.open(path, "wt", compresslevel=GZIP_LEVEL, encoding="utf-8", newline="")
        else:
            f = open(path, "w", encoding="utf-8", newline="")  # noqa: SIM115 - closed just below
        with f:
            _write_rows(f, workload, head, with_class, priority, text=True)
    else:
        _write_rows(dest, workload, head, with_class, priority, text=isinstance(dest, io.TextIOBase))


def _write_rows(
    f: IO[Any], wl: Workload, head: list[str], with_class: bool, priority: IntArray | None, *, text: bool
) -> None:
    def put(s: str) -> None:
        f.write(s if text else s.encode("utf-8"))

    put("\n".join(head) + "\n")
    n = wl.n_jobs
    g = wl.graph
    job_ids: Any = None
    job = task = parents = None
    if g is not None and g.n_edges == 0:
        # Bags of tasks (Google, Alibaba): the job column chunk by chunk, never n Python strings at once.
        job_ids = g.job_ids[g.job_of] if g.job_ids is not None else g.job_of
    elif g is not None:
        job, task, parents = graph_columns(g)
    for lo in range(0, n, WRITE_ROWS):
        hi = min(n, lo + WRITE_ROWS)
        cols: list[list[str]] = [list(map(repr, wl.submit[lo:hi].tolist())), list(map(repr, wl.work[lo:hi].tolist()))]
        cols += [list(map(repr, wl.request[lo:hi, j].tolist())) for j in range(wl.request.shape[1])]
        if with_class:
            cols.append(list(map(str, wl.job_class[lo:hi].tolist())))
        if priority is not None:
            cols.append(list(map(str, priority[lo:hi].tolist())))
        if job_ids is not None:
            cols.append(list(map(str, job_ids[lo:hi].tolist())))
        cols += [c[lo:hi] for c in (job, task, parents) if c is not None]
        put("".join(",".join(row) + "\n" for row in zip(*cols, strict=True)))


__all__ = ["read_trace", "read_trace_with_priority", "write_trace"]
