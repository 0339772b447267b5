"""Column mapping: a CSV with other column names (a public cluster trace's table) read as jobs.

The one place that reads a *foreign* CSV: the command line (``simcore import
--format csv --map ... --where ...``), the dashboard's upload page and the API
all parse the same text with :func:`parse_map` / :func:`parse_where` and read
the file with :func:`read_mapped`.

Grammar of a map (``--map``)::

    map    := item ("," item)*
    item   := target "=" expr
    expr   := column | column shift | column scale | "(" column shift ")" scale
    shift  := "-" column | "-" number | "+" number
    scale  := ("*" | "/") number

``target`` is ``submit_s`` (s), ``duration_s`` (s), ``job`` (an integer job
id: rows with the same id are the tasks of one job), ``count`` (a
non-negative integer: the row becomes that many identical jobs, e.g. an
Alibaba v2017 ``batch_task`` row's ``number_of_instances``; a row of count 0
becomes none, counted) or a resource name (any other name, e.g. ``cpu``,
``mem``: one column per resource, in map order). ``submit_s`` and
``duration_s`` are required. The total count is held to
``SIMCORE_MAX_JOBS`` before any copy is made. Examples::

    submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem/100
    submit_s=(task_create_time-1500000000)/1000,...
    submit_s=task_create_time+1078,...,count=number_of_instances

An added constant (``+1078``) keeps the rows before a trace's zero (negative
times, which are refused): it moves the zero earlier. A negative window
start is refused instead, so that every arrival stays a time >= 0.

A difference is scaled only in parentheses (``a-b/100`` is refused: it would
read as ``a-(b/100)``), and a map refuses a column minus itself (``end-end``:
always 0). Column names are letters, digits, ``_``, ``.``, ``:`` and spaces
inside; they are matched exactly against the header.

Grammar of a filter (``--where``): ``column=value[|value...]`` items
separated by ``,``; a row is kept when every item holds (the field, without
surrounding spaces, is one of the values), e.g. ``status=Terminated``.
Filtered rows are counted in the report (``dropped``), not errors.

Rows: one per line (no quoted newlines), blank and ``#`` lines skipped. A row
with the wrong number of fields, an empty or non-numeric field a target uses,
or a target value that is negative, infinite or above the bounds of
:mod:`simcore.core.limits` is an error naming the file, line and every bad field
at once; with ``on_error="skip"`` it is skipped and counted by reason.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from simcore.core.errors import InputError, ParameterError
from simcore.core.limits import check_jobs, max_jobs, max_request, max_trace_seconds
from simcore.core.model import FloatArray, IntArray, Workload
from simcore.sources import source_label
from simcore.traces._stream import RowErrors

SUBMIT = "submit_s"
DURATION = "duration_s"
JOB = "job"
COUNT = "count"
REQUIRED = (SUBMIT, DURATION)
#: Targets that are not resources.
SPECIAL = (SUBMIT, DURATION, JOB, COUNT)
#: Targets whose values must be whole numbers.
INTEGER = (JOB, COUNT)
#: Lines per parsing chunk: the csv module's rows are Python lists, so a chunk bounds the memory they take
#: (65,536 rows of 9 short fields: about 40 MB).
CHUNK_LINES = 65_536
#: Rows shown by :func:`preview`.
PREVIEW_ROWS = 10

_NAME = r"[A-Za-z_][A-Za-z0-9_.:]*(?: +[A-Za-z0-9_.:]+)*"
_NUM = r"[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?"
_TARGET = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOKEN = re.compile(rf"\s*(?:(?P<num>{_NUM})|(?P<name>{_NAME})|(?P<op>[-+*/()]))")


# -- the grammar -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expr:
    """``column`` [``- minus``] [``op factor``]: a column, a difference, a scaled column or scaled difference.

    ``minus`` is a column name or a number (a constant offset, e.g. the trace's epoch); an added
    constant (``column+1078``) is a negative ``minus``.
    """

    column: str
    minus: str | float | None = None
    op: str | None = None  # "*" or "/"
    factor: float | None = None

    def columns(self) -> list[str]:
        return [self.column] + ([self.minus] if isinstance(self.minus, str) else [])

    def text(self) -> str:
        s = self.column
        if isinstance(self.minus, str):
            s += "-" + self.minus
        elif self.minus is not None:
            s += ("+" + _num(-self.minus)) if self.minus < 0 else ("-" + _num(self.minus))
        if self.op is not None and self.factor is not None:
            s = (f"({s})" if self.minus is not None else s) + self.op + _num(self.factor)
        return s


@dataclass(frozen=True)
class Mapping:
    """Targets (``submit_s``, ``duration_s``, ``job``, resources) and the expression of each, in map order."""

    items: tuple[tuple[str, Expr], ...]

    def text(self) -> str:
        return ",".join(f"{t}={e.text()}" for t, e in self.items)

    @property
    def targets(self) -> list[str]:
        return [t for t, _ in self.items]

    @property
    def resources(self) -> list[str]:
        return [t for t, _ in self.items if t not in SPECIAL]

    def expr(self, target: str) -> Expr | None:
        return next((e for t, e in self.items if t == target), None)

    def columns(self) -> list[str]:
        out: list[str] = []
        for _, e in self.items:
            out += [c for c in e.columns() if c not in out]
        return out


@dataclass(frozen=True)
class Where:
    """Keep a row when every ``(column, values)`` holds: the stripped field is one of the values."""

    conds: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def text(self) -> str:
        return ",".join(f"{c}={'|'.join(v)}" for c, v in self.conds)

    def columns(self) -> list[str]:
        return [c for c, _ in self.conds]


def _num(x: float) -> str:
    """The shortest text of a number that parses back to it (``100`` rather than ``100.0``)."""
    return str(int(x)) if x.is_integer() and abs(x) < 1e15 else repr(x)


def _tokens(text: str, item: str) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    pos = 0
    text = text.rstrip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise ParameterError(f"--map {item!r}: cannot read {text[pos:].strip()!r}")
        kind = m.lastgroup or ""
        out.append((kind, m.group(kind)))
        pos = m.end()
    return out


def _number(tok: tuple[str, str], item: str) -> float:
    kind, v = tok
    if kind != "num":
        raise ParameterError(f"--map {item!r}: expected a number after * or /, got {v!r}")
    x = float(v)
    if not math.isfinite(x):
        raise ParameterError(f"--map {item!r}: the number {v} is too large")
    return x


def parse_expr(text: str, item: str | None = None) -> Expr:
    """One expression (see the module docstring); ParameterError names the item and what is wrong."""
    item = item if item is not None else text
    toks = _tokens(text, item)
    if not toks:
        raise ParameterError(f"--map {item!r}: no expression after '='")
    paren = toks[0] == ("op", "(")
    body = toks[1:] if paren else toks
    if paren:
        close = next((i for i, t in enumerate(body) if t == ("op", ")")), None)
        if close is None:
            raise ParameterError(f"--map {item!r}: '(' without ')'")
        inner, rest = body[:close], body[close + 1 :]
    else:
        cut = next((i for i, t in enumerate(body) if t in (("op", "*"), ("op", "/"))), len(body))
        inner, rest = body[:cut], body[cut:]
    if not inner or inner[0][0] != "name":
        got = inner[0][1] if inner else "nothing"
        raise ParameterError(f"--map {item!r}: expected a column name, got {got!r}")
    column = inner[0][1]
    minus: str | float | None = None
    if len(inner) > 1 and inner[1] == ("op", "+"):
        minus = -_added_constant(inner, item)
    elif len(inner) > 1:
        if inner[1] != ("op", "-") or len(inner) != 3 or inner[2][0] not in ("name", "num"):
            raise ParameterError(
                f"--map {item!r}: expected 'column', 'column-column', 'column-number', 'column+number' or a "
                "scaled one ('column/100', '(a-b)/1000')"
            )
        minus = inner[2][1] if inner[2][0] == "name" else _number(inner[2], item)
    if paren and minus is None:
        raise ParameterError(f"--map {item!r}: parentheses hold a difference, e.g. '(end-start)/1000'")
    op: str | None = None
    factor: float | None = None
    if rest:
        if len(rest) != 2 or rest[0] not in (("op", "*"), ("op", "/")):
            extra = " ".join(v for _, v in rest)
            raise ParameterError(f"--map {item!r}: unexpected {extra!r} (one '* number' or '/ number' at the end)")
        if minus is not None and not paren:
            raise ParameterError(f"--map {item!r}: put a scaled difference in parentheses, e.g. '(a-b)/1000'")
        op, factor = rest[0][1], _number(rest[1], item)
        if op == "/" and factor == 0:
            raise ParameterError(f"--map {item!r}: divide by zero")
    elif paren:
        raise ParameterError(f"--map {item!r}: a difference in parentheses needs a scale, e.g. '(a-b)/1000'")
    return Expr(column, minus, op, factor)


def _added_constant(inner: list[tuple[str, str]], item: str) -> float:
    """The number of ``column+number``; a missing, non-numeric or trailing part is named in the message.

    Messages repeat the item after the first ': ', which is all the API shows.
    """
    column = inner[0][1]
    if len(inner) == 2:
        raise ParameterError(f"--map {item!r}: {item}: '+' needs a number after it, e.g. {column}+1078")
    kind, v = inner[2]
    if kind != "num":
        raise ParameterError(
            f"--map {item!r}: {item}: '+' adds a constant (a number of the column's unit), got {v!r}; "
            f"e.g. {column}+1078 (subtract a column with '-')"
        )
    if len(inner) > 3:
        extra = "".join(t for _, t in inner[3:])
        raise ParameterError(f"--map {item!r}: {item}: unexpected {extra!r} after {column}+{v} (one constant only)")
    x = float(v)
    if not math.isfinite(x):
        raise ParameterError(f"--map {item!r}: {item}: the constant {v} is too large")
    return x


def parse_map(text: str) -> Mapping:
    """Parse ``target=expr,...``; ParameterError (one line) for an empty, repeated or bad item."""
    items: list[tuple[str, Expr]] = []
    seen: set[str] = set()
    parts = [p.strip() for p in text.split(",")]
    if not any(parts):
        raise ParameterError("--map is empty; e.g. submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu")
    for part in parts:
        if not part:
            raise ParameterError(f"--map {text!r}: an empty item (two commas in a row, or a trailing comma)")
        target, eq, expr = part.partition("=")
        target = target.strip()
        if not eq:
            raise ParameterError(f"--map {part!r}: expected target=expression, e.g. cpu=plan_cpu/100")
        if not _TARGET.match(target):
            raise ParameterError(f"--map {part!r}: the target {target!r} is not a name (letters, digits, _)")
        if target in seen:
            raise ParameterError(f"--map {part!r}: {target} is mapped twice")
        seen.add(target)
        e = parse_expr(expr, part)
        if e.minus == e.column:
            # Always 0: a slip for another column (end-start), never a field anyone means. The reason
            # repeats the target and expression: the API shows only the text after the first ': '.
            raise ParameterError(
                f"--map {part!r}: {target} = {e.text()} is always 0 ({e.column} minus itself); subtract another column"
            )
        items.append((target, e))
    missing = [t for t in REQUIRED if t not in seen]
    if missing:
        raise ParameterError(f"--map {text!r}: missing {' and '.join(missing)} (required: {', '.join(REQUIRED)})")
    if len(seen) == len([t for t in seen if t in SPECIAL]):
        raise ParameterError(f"--map {text!r}: no resource (e.g. cpu=plan_cpu); every job requests at least one")
    return Mapping(tuple(items))


def parse_where(text: str) -> Where:
    """Parse ``column=value[|value...],...``; ParameterError for a bad item."""
    conds: list[tuple[str, tuple[str, ...]]] = []
    for part in (p.strip() for p in text.split(",")):
        col, eq, vals = part.partition("=")
        col = col.strip()
        values = tuple(v.strip() for v in vals.split("|"))
        if not eq or not col or not all(values):
            raise ParameterError(f"--where {part!r}: expected column=value or column=value1|value2")
        if any(c == col for c, _ in conds):
            raise ParameterError(f"--where {part!r}: {col} is filtered twice (list the values with |)")
        conds.append((col, values))
    return Where(tuple(conds))


def identity_map(header: Sequence[str]) -> Mapping:
    """The map of a project-format header (``submit_s``, ``duration_s``, resources, ``job``) onto itself."""
    cols = [c.strip() for c in header]
    missing = [c for c in REQUIRED if c not in cols]
    if missing:
        raise ParameterError(f"missing column(s) {', '.join(missing)}; the header has {', '.join(cols)}")
    unsupported = [c for c in cols if c in ("task", "parents", "class")]
    if unsupported:
        raise ParameterError(
            f"on_error=skip reads a CSV without {', '.join(unsupported)} columns (read it strictly, or map it)"
        )
    return Mapping(tuple((c, Expr(c)) for c in cols))


# -- reading --------------------------------------------------------------------------------------


@dataclass
class Bound:
    """A map and filter checked against a header: the file position of every column they use."""

    mapping: Mapping
    where: Where
    header: list[str]
    index: dict[str, int]


def bind(mapping: Mapping, where: Where, header: Sequence[str], label: str, line: int | None = None) -> Bound:
    """Check that every column the map and the filter use is in the header; list every missing one at once."""
    cols = [c.strip() for c in header]
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise InputError(f"column(s) {', '.join(dup)} appear twice in the header", file=label, line=line)
    used = mapping.columns() + [c for c in where.columns() if c not in mapping.columns()]
    missing = [c for c in used if c not in cols]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)} (used by the map {mapping.text()!r}"
            + (f" and the filter {where.text()!r}" if where.conds else "")
            + f"); the header has {', '.join(cols)}",
            file=label,
            line=line,
        )
    return Bound(mapping, where, cols, {c: cols.index(c) for c in used})


@dataclass
class Mapped:
    """The jobs of a mapped CSV and what happened to every row."""

    workload: Workload
    rows_read: int
    errors: RowErrors
    filtered: int
    header: list[str]
    notes: list[str] = field(default_factory=list)
    #: With a ``count`` target: the rows kept (before copying) and those of count 0 (no job).
    count_rows: int = 0
    zero_count: int = 0


def _floats(strs: list[str]) -> tuple[FloatArray, list[str | None] | None]:
    """The fields as numbers; with a problem per field (None: fine) when some are empty or not numbers."""
    try:
        return np.array(strs, dtype=np.float64), None
    except ValueError:
        pass
    out = np.empty(len(strs))
    why: list[str | None] = []
    for i, s in enumerate(strs):
        t = s.strip()
        try:
            if "_" in t:
                raise ValueError
            out[i] = float(t)
            why.append(None)
        except ValueError:
            out[i] = math.nan
            why.append("empty" if not t else f"not a number: {t!r}")
    return out, why


def _bound(target: str) -> float:
    if target == COUNT:
        return float(max_jobs())
    return float(max_trace_seconds() if target in (SUBMIT, DURATION) else max_request())


def _evaluate(e: Expr, cols: dict[str, FloatArray]) -> FloatArray:
    v = cols[e.column]
    if e.minus is not None:
        v = v - (cols[e.minus] if isinstance(e.minus, str) else e.minus)
    if e.op == "*" and e.factor is not None:
        v = v * e.factor
    elif e.op == "/" and e.factor is not None:
        v = v / e.factor
    return np.asarray(v, dtype=np.float64)


def _shift_hint(e: Expr, v: float) -> str:
    """For a negative submission time: the added constant (in the column's unit) that would keep the row."""
    if isinstance(e.minus, str):
        return ""  # a difference of two columns: a constant is not the fix
    need = -v * (e.factor or 1.0) if e.op == "/" else -v / (e.factor or 1.0) if e.op == "*" else -v
    shifted = Expr(e.column, (e.minus or 0.0) - math.ceil(need), e.op, e.factor)
    return f" (a row before the trace's zero: an added constant keeps it, e.g. submit_s={shifted.text()})"


class _Chunks:
    """Converts chunks of lines to target arrays; keeps the per-reason counts and the output arrays."""

    def __init__(self, bound: Bound, label: str, errors: RowErrors) -> None:
        self.b = bound
        self.label = label
        self.errors = errors
        self.n_fields = len(bound.header)
        self.targets = bound.mapping.targets
        self.out: list[FloatArray] = []
        self.rows_read = 0
        self.filtered = 0

    def add(self, lines: list[str], first_line: int) -> None:
        rows = list(csv.reader(lines))
        if len(rows) != len(lines):
            raise InputError("a quoted field spans lines (one row per line, please)", file=self.label, line=first_line)
        keep: list[int] = []
        for i, row in enumerate(rows):
            if not row or (len(row) == 1 and not row[0].strip()) or row[0].lstrip().startswith("#"):
                continue
            self.rows_read += 1
            if len(row) != self.n_fields:
                self.errors.bad(
                    "wrong number of fields",
                    f"expected {self.n_fields} fields like the header, found {len(row)}",
                    file=self.label,
                    line=first_line + i,
                )
                continue
            keep.append(i)
        for col, wanted in self.b.where.conds:
            k = self.b.index[col]
            allowed = set(wanted)
            before = len(keep)
            keep = [i for i in keep if rows[i][k].strip() in allowed]
            self.filtered += before - len(keep)
        if not keep:
            return
        cols: dict[str, FloatArray] = {}
        bad = np.zeros(len(keep), dtype=bool)
        problems: dict[int, list[tuple[str, str]]] = {}
        for c in self.b.mapping.columns():
            k = self.b.index[c]
            arr, why = _floats([rows[i][k] for i in keep])
            cols[c] = arr
            if why is not None:
                for j, w in enumerate(why):
                    if w is not None:
                        bad[j] = True
                        kind = "empty" if w == "empty" else "not a number"
                        problems.setdefault(j, []).append((f"{c}: {kind}", f"{c}: {w}"))
        values = np.empty((len(keep), len(self.targets)))
        with np.errstate(all="ignore"):
            for t, (_, e) in enumerate(self.b.mapping.items):
                values[:, t] = _evaluate(e, cols)
        limit = np.array([_bound(t) for t in self.targets])
        wrong = ~bad[:, None] & (~np.isfinite(values) | (values < 0) | (values > limit))
        for t in (self.targets.index(x) for x in INTEGER if x in self.targets):
            iv = values[:, t]
            wrong[:, t] |= ~bad & np.isfinite(iv) & (iv != np.floor(iv))
        for j in np.flatnonzero(wrong.any(axis=1)).tolist():
            for t in np.flatnonzero(wrong[j]).tolist():
                v = float(values[j, t])
                what = (
                    "not a finite number"
                    if not math.isfinite(v)
                    else "negative"
                    if v < 0
                    else "not an integer"
                    if v <= limit[t]
                    else f"above the bound {limit[t]:g}"
                )
                kind = what.split(" ")[0] if what.startswith("above") else what
                target, expr = self.b.mapping.items[t]
                hint = _shift_hint(expr, v) if target == SUBMIT and what == "negative" else ""
                problems.setdefault(j, []).append(
                    (f"{target} {kind}", f"{target}={expr.text()} is {what} ({v:g}){hint}")
                )
            bad[j] = True
        for j in sorted(problems):
            found = problems[j]
            key = "; ".join(sorted({k for k, _ in found}))
            self.errors.bad(key, "; ".join(d for _, d in found), file=self.label, line=first_line + keep[j])
        self.out.append(values[~bad] if bad.any() else values)


def _lines(source: Any, label: str) -> Iterator[tuple[int, str]]:
    from simcore.traces.tracefile import text_blocks

    yield from text_blocks(source, label)


def _header(blocks: Iterator[tuple[int, str]]) -> tuple[list[str], int, list[str], int] | None:
    """(header fields, its line, the remaining lines of its block, their first line number)."""
    for first_line, text in blocks:
        lines = text.split("\n")
        for k, s in enumerate(lines):
            if s.strip() and not s.lstrip().startswith("#"):
                return next(csv.reader([s])), first_line + k, lines[k + 1 :], first_line + k + 1
    return None


def read_mapped(
    source: Any,
    mapping: Mapping | None,
    where: Where | None = None,
    *,
    on_error: str = "raise",
    name: str | None = None,
    label: str | None = None,
) -> Mapped:
    """Read a CSV through a map (None: the project header onto itself) into a workload (times in s).

    Rows are sorted by submission time (stable). ``on_error="skip"`` skips and
    counts bad rows (:class:`RowErrors`); rows the filter rejects are counted
    in ``filtered``.
    """
    label = label or source_label(source)
    errors = RowErrors(on_error)  # type: ignore[arg-type]
    blocks = _lines(source, label)
    head = _header(blocks)
    if head is None:
        raise InputError("no header line", file=label)
    header, hline, rest, rest_line = head
    if mapping is None:
        mapping = identity_map(header)
    bound = bind(mapping, where or Where(), header, label, hline)
    chunks = _Chunks(bound, label, errors)
    for first, lines in _pieces(rest, rest_line, blocks):
        chunks.add(lines, first)
    if not chunks.out or not sum(len(a) for a in chunks.out):
        why = "no row passed the filter" if chunks.filtered and not errors.skipped else "no jobs"
        raise InputError(f"{why} ({chunks.rows_read} rows read, {errors.skipped} skipped)", file=label)
    data = np.concatenate(chunks.out)
    rows, zero = len(data), 0
    if COUNT in mapping.targets:
        data, zero = _copies(data, mapping, label)
    got = Mapped(_workload(data, mapping, label, name), chunks.rows_read, errors, chunks.filtered, header)
    got.count_rows, got.zero_count = (rows, zero) if COUNT in mapping.targets else (0, 0)
    return got


def _copies(data: FloatArray, mapping: Mapping, label: str) -> tuple[FloatArray, int]:
    """Each row repeated ``count`` times (adjacent, so a stable sort keeps the copies together); rows of count 0 go.

    The total is checked against ``SIMCORE_MAX_JOBS`` *before* the copies are
    made: one row claiming 10^12 instances must be a message, not an
    allocation that takes the worker down.
    """
    ci = mapping.targets.index(COUNT)
    counts = data[:, ci].astype(np.int64)
    total = int(counts.sum())
    check_jobs(total, f"count={mapping.items[ci][1].text()}: the {len(data):,} rows of {label} make {total:,} jobs")
    zero = int(np.count_nonzero(counts == 0))
    if total == 0:
        raise InputError(f"every row has count 0: no jobs ({len(data):,} rows)", file=label)
    return np.repeat(data, counts, axis=0), zero


def _pieces(rest: list[str], rest_line: int, blocks: Iterable[tuple[int, str]]) -> Iterator[tuple[int, list[str]]]:
    def split(first: int, lines: list[str]) -> Iterator[tuple[int, list[str]]]:
        for lo in range(0, len(lines), CHUNK_LINES):
            yield first + lo, lines[lo : lo + CHUNK_LINES]

    yield from split(rest_line, rest)
    for first, text in blocks:
        yield from split(first, text.split("\n"))


def _workload(data: FloatArray, mapping: Mapping, label: str, name: str | None) -> Workload:
    t = mapping.targets
    submit = np.ascontiguousarray(data[:, t.index(SUBMIT)])
    res_idx = [t.index(r) for r in mapping.resources]
    graph = None
    unsorted = bool(np.any(np.diff(submit) < 0))
    order: IntArray | None = np.argsort(submit, kind="stable") if unsorted else None
    if JOB in t:
        from simcore.traces.tracetasks import task_graph

        order, graph = task_graph(data[:, t.index(JOB)], submit, None, label)
        unsorted = bool((order != np.arange(len(order))).any())
    if order is not None and unsorted:
        data = data[order]
        submit = np.ascontiguousarray(data[:, t.index(SUBMIT)])
    params: dict[str, Any] = {"trace_file": label, "jobs": int(len(submit)), "sorted_on_read": unsorted}
    params["column_map"] = mapping.text()
    if graph is not None:
        params["task_jobs"] = graph.n_jobs
    stem = label.rsplit("/", 1)[-1]
    for ext in (".gz", ".csv"):
        stem = stem[: -len(ext)] if stem.endswith(ext) else stem
    return Workload(
        name=name or stem or "trace",
        resources=tuple(mapping.resources),
        submit=submit,
        request=np.ascontiguousarray(data[:, res_idx]),
        work=np.ascontiguousarray(data[:, t.index(DURATION)]),
        job_class=np.full(len(submit), -1, dtype=np.int64),
        horizon_s=float(submit.max()),
        params=params,
        graph=graph,
    )


# -- what the upload page shows -------------------------------------------------------------------


@dataclass
class Preview:
    """The head of a file, and (with a map) the jobs its first rows become, or why they do not."""

    header: list[str]
    rows: list[list[str]]
    jobs: list[dict[str, float]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    filtered: int = 0


def sniff(text: str, n: int = PREVIEW_ROWS) -> Preview:
    """The header and the first ``n`` rows of a CSV's text (blank and ``#`` lines skipped)."""
    lines = [s for s in text.split("\n") if s.strip() and not s.lstrip().startswith("#")]
    if not lines:
        raise InputError("the file has no header line")
    parsed = list(csv.reader(lines[: n + 1]))
    return Preview([c.strip() for c in parsed[0]], parsed[1:])


def preview(
    text: str, mapping: Mapping, where: Where | None = None, n: int = PREVIEW_ROWS, label: str = "the file"
) -> Preview:
    """The first rows of ``text`` through the map: the converted jobs and each bad row's problem.

    Line numbers count from the header (line 1) and assume no blank or comment lines before it.
    """
    p = sniff(text, n)
    bound = bind(mapping, where or Where(), p.header, label, 1)
    errors = RowErrors("skip")
    chunks = _Chunks(bound, label, errors)
    chunks.add([_row_text(r) for r in p.rows], 2)
    p.problems = list(errors.examples)
    p.filtered = chunks.filtered
    if chunks.out:
        data = np.concatenate(chunks.out)
        p.jobs = [dict(zip(mapping.targets, map(float, row), strict=True)) for row in data.tolist()]
    return p


def _row_text(row: list[str]) -> str:
    import io

    buf = io.StringIO()
    csv.writer(buf, lineterminator="").writerow(row)
    return buf.getvalue()


__all__ = [
    "Expr",
    "Mapped",
    "Mapping",
    "Preview",
    "Where",
    "bind",
    "identity_map",
    "parse_expr",
    "parse_map",
    "parse_where",
    "preview",
    "read_mapped",
    "sniff",
]
