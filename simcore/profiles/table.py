"""Profile tables: run time per job type and machine type, cold and warm, loaded and validated.

The profile-driven study (Kontothanassis & Goddeau, HPL-2004-192) measures,
for every job type (Blast executable + database) and machine type, the run
time split into a CPU part and an I/O part (its Figures 1-5) and the run time
when the machine's file cache is warm from a previous run of the same job
type (its Figures 6-7). A :class:`ProfileTable` holds exactly that, in
seconds, plus the job-type mix and the machine types' attributes.

Two file formats are accepted (see ``docs`` in :func:`load_profile`):

JSON (the shipped ``simcore/data/ncbi_profile.json`` is an example)::

    {"machine_types": [{"name": "type1", "cpu_mhz": 733, "memory_mb": 256, "disk": "IDE"}, ...],
     "job_types": [{"name": "blastn", "proportion": 0.558, "database": "nt"}, ...],
     "runtimes": [{"job_type": "blastn", "machine_type": "type1",
                   "cpu_s": 60.0, "io_s": 40.0, "warm_s": 100.0}, ...]}

CSV, one row per (job type, machine type)::

    job_type,machine_type,cpu_s,io_s,warm_s,proportion,database
    blastn,type1,60.0,40.0,,0.558,nt

``warm_s`` (run time with a warm cache) is optional and defaults to the cold
time ``cpu_s + io_s``; ``proportion`` is optional when every job type is one
of the paper's five (Table 2's mix is then used), and must be the same on
every row of a job type. ``database`` (optional, the same on every row of a
job type) names the database the job type searches; the Affinity scheduler
counts a machine that last ran a job on the same database as a cache hit.
Without any, the paper's five job types search the paper's databases (nt or
nr) and any other job type its own.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Annotated, Any

import numpy as np
from pydantic import BeforeValidator, ConfigDict, Field

from simcore.core.errors import InputError
from simcore.core.limits import max_json_depth
from simcore.core.model import FloatArray
from simcore.documents import Document, fail, parse, says
from simcore.sources import check_tree

#: The paper's Table 2: percentage of each job type in the NCBI trace.
TABLE2_MIX: dict[str, float] = {
    "blastn": 0.558,
    "blastp": 0.188,
    "blastx": 0.212,
    "tblastn": 0.014,
    "tblastx": 0.028,
}

SHIPPED = Path(__file__).resolve().parent.parent / "data" / "ncbi_profile.json"

CSV_REQUIRED = ("job_type", "machine_type", "cpu_s", "io_s")
CSV_OPTIONAL = ("warm_s", "proportion", "database")

#: The database each of the paper's job types searches (section 2: "The (nr) database is used by the blastp
#: and blastx executables, while blastn, tblastn, and tblastx searches are run against the nt database").
PAPER_DATABASES: dict[str, str] = {
    "blastn": "nt",
    "blastp": "nr",
    "blastx": "nr",
    "tblastn": "nt",
    "tblastx": "nt",
}


@dataclass(frozen=True)
class ProfileTable:
    """Run times (s) per job type ``k`` and machine type ``j``.

    ``cpu_s[k, j]`` and ``io_s[k, j]``: the two parts of a cold run (the
    paper's Figures 1-5); ``cold_s = cpu_s + io_s``. ``warm_s[k, j]``: run time
    when the machine last ran job type ``k`` (Figures 6-7); equal to
    ``cold_s`` where the paper saw no affinity effect. ``proportions[k]``: the
    job mix (Table 2), summing to 1.
    """

    job_types: tuple[str, ...]
    machine_types: tuple[str, ...]
    cpu_s: FloatArray
    io_s: FloatArray
    warm_s: FloatArray
    proportions: FloatArray
    machine_attributes: tuple[dict[str, Any], ...] = ()
    meta: dict[str, Any] = field(default_factory=dict)
    source: str = ""
    #: Database searched by each job type (the Affinity scheduler's notion of a cache hit); empty: every job
    #: type its own database.
    databases: tuple[str, ...] = ()

    def database_groups(self) -> list[int]:
        """Per job type, the index of its database among the distinct databases (job types sharing one
        database share a group)."""
        names = self.databases or self.job_types
        order = list(dict.fromkeys(names))
        return [order.index(n) for n in names]

    @property
    def cold_s(self) -> FloatArray:
        """Cold run time (s), shape ``(job types, machine types)``."""
        return self.cpu_s + self.io_s

    @property
    def io_share(self) -> FloatArray:
        """I/O fraction of the cold run time."""
        return self.io_s / self.cold_s

    @property
    def affinity_gain(self) -> FloatArray:
        """Relative saving of a warm run, ``1 - warm / cold``."""
        return 1.0 - self.warm_s / self.cold_s

    def job_index(self, name: str) -> int:
        try:
            return self.job_types.index(name)
        except ValueError:
            raise InputError(f"unknown job type {name!r}; this profile has {', '.join(self.job_types)}") from None

    def machine_index(self, name: str) -> int:
        try:
            return self.machine_types.index(name)
        except ValueError:
            raise InputError(
                f"unknown machine type {name!r}; this profile has {', '.join(self.machine_types)}"
            ) from None

    def subset(self, job_types: tuple[str, ...]) -> ProfileTable:
        """The table restricted to ``job_types``, with the mix renormalised (the reduced trace)."""
        idx = [self.job_index(n) for n in job_types]
        p = self.proportions[idx]
        return replace(
            self,
            job_types=tuple(job_types),
            cpu_s=self.cpu_s[idx],
            io_s=self.io_s[idx],
            warm_s=self.warm_s[idx],
            proportions=p / p.sum(),
            databases=tuple(self.databases[i] for i in idx) if self.databases else (),
        )

    def fingerprint(self) -> str:
        """A short stable digest of the numbers (keys caches of derived results)."""
        import hashlib

        h = hashlib.sha256()
        h.update(repr((self.job_types, self.machine_types)).encode())
        for a in (self.cpu_s, self.io_s, self.warm_s, self.proportions):
            h.update(np.ascontiguousarray(a, dtype=np.float64).tobytes())
        return h.hexdigest()[:16]


def load_profile(path: str | Path | None = None) -> ProfileTable:
    """Read a profile table from a JSON or CSV file (``None`` or ``""``: the shipped table).

    Raises :class:`InputError` naming the file, line and column of the first problem.
    """
    if path is None or str(path) == "":
        return _shipped()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise InputError(f"cannot read profile table: {e.strerror or e}", file=str(p)) from None
    except UnicodeDecodeError:
        raise InputError("profile table is not UTF-8 text", file=str(p)) from None
    return parse_profile(text, name=str(p))


def parse_profile(text: str, name: str = "<profile>") -> ProfileTable:
    """Parse a profile table given as text: JSON if it starts with ``{``, CSV otherwise."""
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except RecursionError:  # as the other JSON readers (simcore.sources): a message, not a traceback
            raise InputError(f"JSON nested too deeply (the limit is {max_json_depth()} levels)", file=name) from None
        except json.JSONDecodeError as e:
            raise InputError(f"invalid JSON: {e.msg}", file=name, line=e.lineno) from None
        check_tree(data, name)  # SIMCORE_MAX_JSON_DEPTH and NUL characters, as for clusters
        return profile_from_dict(data, name=name)
    return _parse_csv(text, name)


_SHIPPED_CACHE: list[ProfileTable] = []


def _shipped() -> ProfileTable:
    if not _SHIPPED_CACHE:
        _SHIPPED_CACHE.append(load_profile(SHIPPED))
    return _SHIPPED_CACHE[0]


def _as_number(value: Any, *, positive: bool = False) -> float:
    """A finite non-negative (or positive) float as ``float()`` reads it; ValueError says what it must be."""
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError("a number") from None
    if not math.isfinite(x) or x < 0 or (positive and x == 0):
        raise ValueError(f"a finite {'positive' if positive else 'non-negative'} number")
    return x


def _number(value: Any, what: str, name: str, line: int | None = None, *, positive: bool = False) -> float:
    """A finite non-negative (or positive) float, or an InputError naming ``what``."""
    try:
        return _as_number(value, positive=positive)
    except ValueError as e:
        raise InputError(f"{what} must be {e}, got {value!r}", file=name, line=line) from None


def _seconds(*, positive: bool = False, optional: bool = False) -> BeforeValidator:
    """A profile number (a string such as "60" too, as the CSV form reads them); ``optional``: null is none."""

    def convert(value: Any) -> float | None:
        if value is None and optional:
            return None
        try:
            return _as_number(value, positive=positive)
        except ValueError as e:
            raise fail(f"{{path}} must be {e}, got {{got}}", got=value) from None

    return BeforeValidator(convert)


def _database(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise fail("{path} must be a non-empty string")
    return value.strip()


_NAMED = "{parent} needs a string 'name'"
_RUNTIMES = "'runtimes' must be a non-empty list of {job_type, machine_type, cpu_s, io_s[, warm_s]} objects"


class _Declared(Document):
    """A declared machine or job type: a string ``name`` and attributes (any other keys)."""

    model_config = ConfigDict(extra="allow")
    NOT_OBJECT = "{path} needs a string 'name'"
    MISSING = _NAMED

    name: Annotated[str, says(_NAMED)]


class MachineTypeDoc(_Declared):
    """A machine type; its other keys (``cpu_mhz``, ``memory_mb``, ...) are its attributes."""


class JobTypeDoc(_Declared):
    """A job type with its share of the mix and the database it searches (both optional)."""

    proportion: Annotated[float | None, _seconds()] = None
    database: Annotated[str | None, BeforeValidator(_database)] = None


class RuntimeDoc(Document):
    """The run time of one job type on one machine type, in seconds (other keys are ignored)."""

    model_config = ConfigDict(extra="allow")
    NOT_OBJECT = "{path} must be an object"
    MISSING = "{parent} has no {key!r}"

    job_type: Annotated[str, BeforeValidator(str)]
    machine_type: Annotated[str, BeforeValidator(str)]
    cpu_s: Annotated[float, _seconds()]
    io_s: Annotated[float, _seconds()]
    warm_s: Annotated[float | None, _seconds(positive=True, optional=True)] = None


class ProfileDoc(Document):
    """The JSON profile table (module docstring); other top-level keys are kept as the table's ``meta``."""

    model_config = ConfigDict(extra="allow")
    NOT_OBJECT = "a JSON profile must be an object with 'runtimes'"
    MISSING_KEY = {"runtimes": _RUNTIMES}

    runtimes: Annotated[list[RuntimeDoc], Field(min_length=1), says(_RUNTIMES)]
    machine_types: Annotated[
        list[MachineTypeDoc] | None, says("'machine_types' must be a list of objects with a 'name'")
    ] = None
    job_types: Annotated[list[JobTypeDoc] | None, says("'job_types' must be a list of objects with a 'name'")] = None


def profile_from_dict(data: Any, name: str = "<profile>") -> ProfileTable:
    """Build and validate a table from the JSON format's parsed object."""
    doc = parse(ProfileDoc, data, lambda p: InputError(p.message, file=name))
    mtypes, jtypes = doc.machine_types or [], doc.job_types or []
    keys = {"job_type", "machine_type", "cpu_s", "io_s", "warm_s"}  # a row's other keys are ignored
    records = [
        {**r.model_dump(include=keys), "where": f"runtimes[{i}]", "line": None} for i, r in enumerate(doc.runtimes)
    ]
    return _assemble(
        records,
        {jt.name: jt.proportion for jt in jtypes if jt.proportion is not None},
        {m.name: {k: v for k, v in (m.model_extra or {}).items() if k != "source"} for m in mtypes},
        name,
        dict(doc.model_extra or {}),
        {jt.name: jt.database for jt in jtypes if jt.database is not None},
        job_order=[j.name for j in jtypes] or None,
        machine_order=[m.name for m in mtypes] or None,
    )


def _parse_csv(text: str, name: str) -> ProfileTable:
    reader = csv.reader(io.StringIO(text))
    try:
        header = [h.strip() for h in next(reader)]
    except StopIteration:
        raise InputError("empty profile table", file=name) from None
    missing = [c for c in CSV_REQUIRED if c not in header]
    if missing:
        raise InputError(
            f"missing column(s) {', '.join(missing)}; a profile CSV needs "
            f"{', '.join(CSV_REQUIRED)} (optional: {', '.join(CSV_OPTIONAL)})",
            file=name,
            line=1,
        )
    unknown = [c for c in header if c not in CSV_REQUIRED + CSV_OPTIONAL]
    if unknown:
        raise InputError(f"unknown column(s) {', '.join(unknown)}", file=name, line=1)
    col = {c: header.index(c) for c in header}
    records = []
    mix: dict[str, float] = {}
    dbs: dict[str, str] = {}
    for lineno, row in enumerate(reader, start=2):
        if not row or all(not c.strip() for c in row):
            continue
        if len(row) != len(header):
            raise InputError(f"expected {len(header)} fields, found {len(row)}", file=name, line=lineno)

        def num(c: str, *, positive: bool = False, _row: list[str] = row, _line: int = lineno) -> float:
            try:
                return _number(_row[col[c]].strip(), c, name, _line, positive=positive)
            except InputError as e:
                raise InputError(e.reason, file=name, line=_line, column=c) from None

        jt = row[col["job_type"]].strip()
        mt = row[col["machine_type"]].strip()
        if not jt:
            raise InputError("empty job type", file=name, line=lineno, column="job_type")
        if not mt:
            raise InputError("empty machine type", file=name, line=lineno, column="machine_type")
        warm = None
        if "warm_s" in col and row[col["warm_s"]].strip():
            warm = num("warm_s", positive=True)
        if "proportion" in col and row[col["proportion"]].strip():
            p = num("proportion")
            if jt in mix and mix[jt] != p:
                raise InputError(
                    f"job type {jt!r} has proportion {p} here but {mix[jt]} on an earlier row",
                    file=name,
                    line=lineno,
                    column="proportion",
                )
            mix[jt] = p
        if "database" in col and row[col["database"]].strip():
            db = row[col["database"]].strip()
            if jt in dbs and dbs[jt] != db:
                raise InputError(
                    f"job type {jt!r} searches database {db!r} here but {dbs[jt]!r} on an earlier row",
                    file=name,
                    line=lineno,
                    column="database",
                )
            dbs[jt] = db
        records.append(
            {
                "job_type": jt,
                "machine_type": mt,
                "cpu_s": num("cpu_s"),
                "io_s": num("io_s"),
                "warm_s": warm,
                "where": f"row for ({jt}, {mt})",
                "line": lineno,
            }
        )
    if not records:
        raise InputError("the profile table has no rows", file=name)
    return _assemble(records, mix, {}, name, {}, dbs)


def _assemble(
    records: list[dict[str, Any]],
    mix: dict[str, float],
    attrs: dict[str, dict[str, Any]],
    name: str,
    meta: dict[str, Any],
    dbs: dict[str, str],
    job_order: list[str] | None = None,
    machine_order: list[str] | None = None,
) -> ProfileTable:
    jobs = job_order or list(dict.fromkeys(r["job_type"] for r in records))
    machines = machine_order or list(dict.fromkeys(r["machine_type"] for r in records))
    if len(set(jobs)) != len(jobs):
        raise InputError("duplicate job type names", file=name)
    if len(set(machines)) != len(machines):
        raise InputError("duplicate machine type names", file=name)
    cpu, iot, warm = _runtime_grid(records, jobs, machines, name)
    p = _proportions(jobs, mix, name)
    unknown_db = [jt for jt in dbs if jt not in jobs]
    if unknown_db:
        raise InputError(f"database given for undeclared job type(s) {', '.join(unknown_db)}", file=name)
    # Databases: as given; a job type without one searches its own. With none given at all, the paper's five
    # job types get the paper's databases (nt / nr).
    databases = tuple(dbs.get(jt, jt) if dbs else PAPER_DATABASES.get(jt, jt) for jt in jobs)
    return ProfileTable(
        job_types=tuple(jobs),
        machine_types=tuple(machines),
        cpu_s=cpu,
        io_s=iot,
        warm_s=warm,
        proportions=p / p.sum(),
        machine_attributes=tuple(attrs.get(m, {}) for m in machines),
        meta=meta,
        source=name,
        databases=databases,
    )


def _runtime_grid(
    records: list[dict[str, Any]], jobs: list[str], machines: list[str], name: str
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """The (job type x machine type) cpu, io and warm seconds; every pair exactly once."""
    ji = {n: i for i, n in enumerate(jobs)}
    mi = {n: i for i, n in enumerate(machines)}
    cpu = np.full((len(jobs), len(machines)), np.nan)
    iot = np.full_like(cpu, np.nan)
    warm = np.full_like(cpu, np.nan)
    for r in records:
        if r["job_type"] not in ji:
            raise InputError(
                f"{r['where']}: job type {r['job_type']!r} is not declared in job_types",
                file=name,
                line=r["line"],
                column="job_type",
            )
        if r["machine_type"] not in mi:
            raise InputError(
                f"{r['where']}: machine type {r['machine_type']!r} is not declared in machine_types",
                file=name,
                line=r["line"],
                column="machine_type",
            )
        k, j = ji[r["job_type"]], mi[r["machine_type"]]
        if not np.isnan(cpu[k, j]):
            raise InputError(f"({r['job_type']}, {r['machine_type']}) appears twice", file=name, line=r["line"])
        cold = r["cpu_s"] + r["io_s"]
        if cold <= 0:
            raise InputError(
                f"({r['job_type']}, {r['machine_type']}): cpu_s + io_s must be positive",
                file=name,
                line=r["line"],
                column="cpu_s",
            )
        cpu[k, j], iot[k, j] = r["cpu_s"], r["io_s"]
        warm[k, j] = cold if r["warm_s"] is None else r["warm_s"]
    gaps = [f"({jobs[k]}, {machines[j]})" for k, j in zip(*np.nonzero(np.isnan(cpu)), strict=True)]
    if gaps:
        raise InputError(
            f"missing run time(s) for {', '.join(gaps[:6])}{' ...' if len(gaps) > 6 else ''}; "
            "every job type needs a row for every machine type",
            file=name,
        )
    return cpu, iot, warm


def _proportions(jobs: list[str], mix: dict[str, float], name: str) -> FloatArray:
    """Each job type's share as given, or the paper's Table 2 when none is given and all are the paper's."""
    props = []
    for jt in jobs:
        if jt in mix:
            props.append(mix[jt])
        elif jt in TABLE2_MIX and not mix:
            props.append(TABLE2_MIX[jt])
        else:
            raise InputError(
                f"no proportion for job type {jt!r} (give a 'proportion' for every job type "
                "unless all are the paper's five)",
                file=name,
            )
    p = np.array(props, dtype=np.float64)
    if p.sum() <= 0:
        raise InputError("job type proportions must not all be zero", file=name)
    return p
