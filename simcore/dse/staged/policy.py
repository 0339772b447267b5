"""The design space of staged schedulers: stages, atoms, composition, and the policy text users type.

Mastenbroek, Andreadis and Iosup, *Design-space exploration of datacenter
schedulers*, section 2.2: a scheduler is one policy per stage of the
reference architecture; a stage policy is an *atom* (Tables 1-3), possibly
parameterised, or the *composition* ``p1 . p2`` of stage policies, whose
meaning per stage is Table 4:

====== ===========================================  ==========================
stage  what it decides                              composition ``p1 . p2``
====== ===========================================  ==========================
J1     when a scheduling cycle runs                 not supported
J2     which incoming jobs are admitted             admit if both admit
J3     the order of the admitted jobs               order by p1, then by p2
T1     which ready tasks are eligible               admit if both admit
T2     the order of the eligible tasks              order by p1, then by p2
R5     the machine a task is matched with           match by p1, then by p2
====== ===========================================  ==========================

A policy is written as text a user can type and read back::

    J1=Interactive J2=Limit-Active(100) J3=Job-Size(asc).Submission-Time(asc)
    T1=Always T2=Task-Duration(asc) R5=Best-Fit

(one line; stages are separated by white space)

Stages may come in any order and may be left out (they take
:data:`DEFAULT_TEXT`'s atom); :func:`format_policy` writes all six in the
order above, so ``format_policy(parse_policy(t))`` is the canonical form of
``t``. Atom names are case-insensitive on input; numbers are written back in
their shortest form.

This module is the contract between the ``staged`` scheduler (which gives
each atom its behaviour) and the genetic search (which draws, mutates and
prunes policies): it knows the space, not the behaviour.

Parameter ranges. The paper gives the atoms and their parameters but not the
ranges the search draws from (its magnitude estimate assumes about 100
choices per parameter). Ours are in :data:`ATOMS`; each says why. Times are
seconds, probabilities in (0, 1].
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from simcore.core.errors import ParameterError

__all__ = [
    "ATOMS",
    "DEFAULT_TEXT",
    "STAGES",
    "Atom",
    "AtomSpec",
    "ParamSpec",
    "Policy",
    "PolicyText",
    "atoms_of",
    "default_policy",
    "format_policy",
    "parse_policy",
    "prune",
    "random_atom",
    "random_policy",
]

#: The stages the paper makes configurable (section 3.4), in the order a cycle runs them.
STAGES: tuple[str, ...] = ("J1", "J2", "J3", "T1", "T2", "R5")

#: What each stage decides, for messages and pages.
STAGE_TITLES: dict[str, str] = {
    "J1": "incoming jobs (when a cycle runs)",
    "J2": "create list of eligible jobs",
    "J3": "sort jobs on criterion",
    "T1": "create list of eligible tasks",
    "T2": "sort tasks on criterion",
    "R5": "select and allocate resource",
}

#: Stages whose policies may be composed (Table 4: J1 is not).
COMPOSABLE: frozenset[str] = frozenset({"J2", "J3", "T1", "T2", "R5"})

#: Stages whose atoms order things and take a direction, ``(asc)`` or ``(desc)``.
ORDERING: frozenset[str] = frozenset({"J3", "T2"})


@dataclass(frozen=True)
class ParamSpec:
    """A numeric parameter of an atom: its range for the search and its default."""

    name: str
    integer: bool
    low: float
    high: float
    default: float

    def check(self, value: float, where: str) -> float | int:
        if not math.isfinite(value):
            raise ParameterError(f"{where}: {self.name} must be a finite number, got {value!r}")
        if self.integer:
            if value != int(value):
                raise ParameterError(f"{where}: {self.name} must be a whole number, got {_num(value)}")
            value = int(value)
        if not self.low <= value <= self.high:
            raise ParameterError(
                f"{where}: {self.name} must be between {_num(self.low)} and {_num(self.high)}, got {_num(value)}"
            )
        return value

    def draw(self, rng: np.random.Generator) -> float | int:
        """A uniform draw from the range (integers inclusive)."""
        if self.integer:
            return int(rng.integers(int(self.low), int(self.high) + 1))
        return float(rng.uniform(self.low, self.high))

    def nudge(self, value: float, rng: np.random.Generator) -> float | int:
        """Guided mutation (section 3.3): Gaussian around ``value`` (sd a tenth of the range), kept in range."""
        sd = (self.high - self.low) / 10.0
        v = float(np.clip(rng.normal(value, sd), self.low, self.high))
        if self.integer:
            v = float(np.clip(round(v), self.low, self.high))
            if v == value and self.high > self.low:  # a nudge that rounds back is no mutation: step by one
                v = value + (1 if value < self.high else -1)
            return int(v)
        return v


@dataclass(frozen=True)
class AtomSpec:
    """One atom of Tables 1-3: its stage, name, parameters and meaning."""

    stage: str
    name: str
    params: tuple[ParamSpec, ...]
    meaning: str

    @property
    def ordering(self) -> bool:
        """Takes a direction (asc/desc): the sort atoms, except Random."""
        return self.stage in ORDERING and self.name != "Random"


def _p(name: str, integer: bool, low: float, high: float, default: float) -> tuple[ParamSpec, ...]:
    return (ParamSpec(name, integer, low, high, default),)


#: Every atom, per stage, in the paper's table order. Ranges (see the module docstring):
#: - Batch(q): scheduling quantum 1 s .. 1 h (OpenDC's batch mode takes a quantum; 60 s as default);
#: - Limit-Load(t): load is active tasks per machine (OpenDC's definition); 0.1 .. 10 covers idle to
#:   several tasks queued per core of the 2- and 4-core machines of section 4.1.3;
#: - Limit-Active(n): 1 .. 1000 jobs (J2) or tasks (T1), the paper's example being 100;
#: - Limit-Job(n): 1 .. 100 active tasks of one job;
#: - Job-Balance(t): 1 .. 5 times the mean active tasks per job (OpenDC's default tolerance is 1.5);
#: - Random(p): admission probability 0.01 .. 1.
ATOMS: tuple[AtomSpec, ...] = (
    AtomSpec("J1", "Interactive", (), "schedule immediately after submission"),
    AtomSpec("J1", "Batch", _p("q", False, 1.0, 3600.0, 60.0), "schedule every time quantum q (s)"),
    AtomSpec("J1", "Random", (), "schedule after a random duration (0 to 0.2 s, as OpenDC)"),
    AtomSpec("J2", "Always", (), "admit every incoming job"),
    AtomSpec("J2", "Limit-Load", _p("t", False, 0.1, 10.0, 1.0), "admit if total system load does not exceed t"),
    AtomSpec("J2", "Limit-Active", _p("n", True, 1, 1000, 100), "admit if active jobs do not exceed n"),
    AtomSpec("J2", "Random", _p("p", False, 0.01, 1.0, 0.5), "admit with probability p"),
    AtomSpec("J3", "Submission-Time", (), "order by job submission time"),
    AtomSpec("J3", "Job-Size", (), "order by number of tasks in job"),
    AtomSpec("J3", "Job-Duration", (), "order by (estimated) critical path of job"),
    AtomSpec("J3", "Random", (), "order randomly"),
    AtomSpec("T1", "Always", (), "admit every incoming task"),
    AtomSpec("T1", "Limit-Load", _p("t", False, 0.1, 10.0, 1.0), "admit if total system load does not exceed t"),
    AtomSpec("T1", "Limit-Active", _p("n", True, 1, 1000, 100), "admit if active tasks do not exceed n"),
    AtomSpec("T1", "Limit-Job", _p("n", True, 1, 100, 10), "admit if active tasks in the job do not exceed n"),
    AtomSpec(
        "T1",
        "Job-Balance",
        _p("t", False, 1.0, 5.0, 1.5),
        "admit if the job's active tasks over the mean active tasks per job does not exceed t",
    ),
    AtomSpec("T1", "Random", _p("p", False, 0.01, 1.0, 0.5), "admit with probability p"),
    AtomSpec("T2", "Submission-Time", (), "order by task submission time"),
    AtomSpec("T2", "Task-Duration", (), "order by (estimated) duration of task"),
    AtomSpec("T2", "Task-Duration-History", (), "order by average duration of other finished tasks in job"),
    AtomSpec("T2", "Task-Dependencies", (), "order by number of dependencies of a task"),
    AtomSpec("T2", "Task-Dependents", (), "order by number of dependents of a task"),
    AtomSpec("T2", "Active-Per-Job", (), "order by number of active tasks of the job of the task"),
    AtomSpec("T2", "Job-Completion", (), "order by percentage of tasks finished in job"),
    AtomSpec("T2", "Random", (), "order randomly"),
    AtomSpec("R5", "First-Fit", (), "match task with first fitting resource"),
    AtomSpec("R5", "Best-Fit", (), "match task with resource with least processing elements available"),
    AtomSpec("R5", "Worst-Fit", (), "match task with resource with most processing elements available"),
    AtomSpec("R5", "Expensive", (), "match task with most expensive (fastest) resource"),
    AtomSpec("R5", "Cheap", (), "match task with cheapest (slowest) resource"),
    AtomSpec("R5", "Random", (), "match task with random resource"),
)

_BY_KEY: dict[tuple[str, str], AtomSpec] = {(a.stage, a.name.lower()): a for a in ATOMS}


def atoms_of(stage: str) -> tuple[AtomSpec, ...]:
    """The atoms of one stage, in table order."""
    return tuple(a for a in ATOMS if a.stage == stage)


@dataclass(frozen=True)
class Atom:
    """An atom with its arguments: ``Limit-Active(100)``, ``Job-Size(asc)``, ``Best-Fit``."""

    stage: str
    name: str
    args: tuple[float | int, ...] = ()
    #: ``"asc"`` or ``"desc"`` for ordering atoms, else None.
    direction: str | None = None

    @property
    def spec(self) -> AtomSpec:
        return _BY_KEY[(self.stage, self.name.lower())]

    def text(self) -> str:
        inside = [_num(a) for a in self.args]
        if self.direction is not None:
            inside.append(self.direction)
        return f"{self.name}({', '.join(inside)})" if inside else self.name


@dataclass(frozen=True)
class Policy:
    """A scheduler of the design space: per stage, a composition of one or more atoms (applied in order)."""

    J1: tuple[Atom, ...]
    J2: tuple[Atom, ...]
    J3: tuple[Atom, ...]
    T1: tuple[Atom, ...]
    T2: tuple[Atom, ...]
    R5: tuple[Atom, ...]

    def stage(self, name: str) -> tuple[Atom, ...]:
        return tuple(getattr(self, name))

    def replace(self, stage: str, atoms: Iterable[Atom]) -> Policy:
        """This policy with ``stage`` set to ``atoms`` (the explanation step applies one stage's change)."""
        parts = {s: self.stage(s) for s in STAGES}
        parts[stage] = tuple(atoms)
        return Policy(**parts)

    def text(self) -> str:
        return format_policy(self)

    def __str__(self) -> str:
        return self.text()


def format_policy(policy: Policy) -> str:
    """The canonical text of ``policy``: all six stages, compositions joined by ``.``."""
    return " ".join(f"{s}={'.'.join(a.text() for a in policy.stage(s))}" for s in STAGES)


#: The default scheduler: OpenDC's usual configuration, FIFO by submission time on the first fitting machine.
DEFAULT_TEXT = "J1=Interactive J2=Always J3=Submission-Time(asc) T1=Always T2=Submission-Time(asc) R5=First-Fit"

_ATOM_RE = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*(?:\((.*)\))?\s*$")


def _split_atoms(text: str) -> list[str]:
    """Split ``a(1.5).b(asc)`` on the dots that are not inside parentheses (numbers have dots)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        if ch == "." and depth == 0:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


def _parse_atom(stage: str, text: str, where: str) -> Atom:
    m = _ATOM_RE.match(text)
    if not m:
        raise ParameterError(f"{where}: cannot read {text.strip()!r} as an atom such as Limit-Active(100)")
    name, inside = m.group(1), m.group(2)
    spec = _BY_KEY.get((stage, name.lower()))
    if spec is None:
        valid = ", ".join(a.name for a in atoms_of(stage))
        raise ParameterError(f"{where}: unknown atom {name!r} for stage {stage}; valid atoms: {valid}")
    args = [a.strip() for a in inside.split(",")] if inside is not None and inside.strip() else []
    direction = None
    if spec.ordering:
        if args and args[-1].lower() in ("asc", "desc"):
            direction = args.pop().lower()
        else:
            direction = "asc"
    if len(args) != len(spec.params):
        if spec.params:
            want = ", ".join(p.name for p in spec.params)
            raise ParameterError(f"{where}: {spec.name} takes {len(spec.params)} argument(s) ({want}), got {len(args)}")
        extra = " (asc or desc)" if spec.ordering else ""
        raise ParameterError(f"{where}: {spec.name} takes no numeric argument{extra}, got {', '.join(args)!r}")
    values: list[float | int] = []
    for p, a in zip(spec.params, args, strict=True):
        try:
            v = float(a)
        except ValueError:
            raise ParameterError(f"{where}: {spec.name}'s {p.name} must be a number, got {a!r}") from None
        values.append(p.check(v, f"{where}: {spec.name}"))
    return Atom(stage, spec.name, tuple(values), direction)


def parse_policy(text: str) -> Policy:
    """Read a policy text (see the module docstring); errors name the stage and the atom, and list valid ones."""
    if not isinstance(text, str):
        raise ParameterError(f"a policy is text such as {DEFAULT_TEXT!r}, got {type(text).__name__}")
    chosen: dict[str, tuple[Atom, ...]] = {}
    for word in text.split():
        if "=" not in word:
            raise ParameterError(f"policy: {word!r} is not STAGE=ATOM (e.g. T2=Task-Duration(asc))")
        stage, _, body = word.partition("=")
        stage = stage.strip().upper()
        if stage not in STAGES:
            raise ParameterError(f"policy: unknown stage {stage!r}; stages: {', '.join(STAGES)}")
        if stage in chosen:
            raise ParameterError(f"policy: stage {stage} is given twice")
        pieces = _split_atoms(body)
        if len(pieces) > 1 and stage not in COMPOSABLE:
            raise ParameterError(f"policy: stage {stage} cannot compose atoms (Table 4); give one")
        chosen[stage] = tuple(_parse_atom(stage, piece, f"policy stage {stage}") for piece in pieces)
    if text.split() and not chosen:
        raise ParameterError("policy: empty")
    parts = {s: chosen.get(s) or _DEFAULTS[s] for s in STAGES}
    return Policy(**parts)


def _num(v: float) -> str:
    """Shortest text of a number: 100, 1.5, 0.25."""
    if float(v).is_integer():
        return str(int(v))
    return repr(float(v))


# Defined after parse_policy's helpers: the default of every stage.
_DEFAULTS: dict[str, tuple[Atom, ...]] = {}
for _word in DEFAULT_TEXT.split():
    _s, _, _b = _word.partition("=")
    _DEFAULTS[_s] = (_parse_atom(_s, _b, "default"),)


def default_policy() -> Policy:
    return parse_policy(DEFAULT_TEXT)


class PolicyText(str):
    """A policy text checked and written in canonical form: the ``policy`` parameter's type.

    ``PolicyText(" t2=task-duration ")`` is the canonical text of that policy;
    a text that does not read raises :class:`ParameterError` with
    :func:`parse_policy`'s message (stage, atom, valid atoms), which parameter
    validation keeps (:func:`simcore.presets.coerce_params`).
    """

    def __new__(cls, value: object) -> PolicyText:
        if isinstance(value, Policy):
            return super().__new__(cls, format_policy(value))
        if not isinstance(value, str):
            raise ParameterError(f"a policy is text such as {DEFAULT_TEXT!r}, got {type(value).__name__}")
        return super().__new__(cls, format_policy(parse_policy(value)))

    def policy(self) -> Policy:
        return parse_policy(self)


# -- the search's view of the space --------------------------------------------------------------------------


def random_atom(stage: str, rng: np.random.Generator) -> Atom:
    """A uniformly drawn atom of ``stage`` with uniformly drawn arguments and direction."""
    specs = atoms_of(stage)
    spec = specs[int(rng.integers(len(specs)))]
    args = tuple(p.draw(rng) for p in spec.params)
    direction = ("asc", "desc")[int(rng.integers(2))] if spec.ordering else None
    return Atom(stage, spec.name, args, direction)


def random_policy(rng: np.random.Generator) -> Policy:
    """One atom per stage, drawn with :func:`random_atom` (the initial population, section 3.3 step 1)."""
    return Policy(**{s: (random_atom(s, rng),) for s in STAGES})


#: R5 atoms that order machines by the same criterion, in opposite directions.
_R5_CRITERION: dict[str, str] = {"Best-Fit": "free", "Worst-Fit": "free", "Expensive": "speed", "Cheap": "speed"}


def prune(stage: str, atoms: Iterable[Atom]) -> tuple[Atom, ...]:
    """Redundancy pruning (section 3.3): drop compositions that cannot change the stage's decisions.

    - An atom composed with itself adds nothing ("the composition of an
      allocation policy with itself is redundant"): a later copy of an
      identical atom is dropped.
    - Orderings (J3, T2) and matchings (R5): ``p1 . p2`` orders by p1 and
      uses p2 only among ties of p1, so a later atom on the same criterion
      (either direction) can never break a tie and is dropped; so is anything
      after a total order that leaves no ties (Random, and First-Fit, which
      orders machines by number). In R5, Best-Fit and Worst-Fit share one
      criterion (free cores), as do Expensive and Cheap (speed); and a
      First-Fit after other atoms is dropped, since the lowest machine number
      ends every tie anyway (:mod:`simcore.dse.staged.atoms`).
    - Admissions (J2, T1): ``Always`` admits everything, so it is dropped
      from a composition with other atoms.
    - J1 holds one atom (Table 4: no composition); extra ones are dropped.
    """
    out: list[Atom] = []
    seen: set[str] = set()
    for a in atoms:
        if stage == "J1" and out:
            break
        key = a.name if stage in ORDERING or stage == "R5" else a.text()
        if stage == "R5":
            key = _R5_CRITERION.get(a.name, a.name)
            if a.name == "First-Fit" and out:
                break
        if key in seen:
            continue
        seen.add(key)
        out.append(a)
        if (stage in ORDERING or stage == "R5") and a.name in ("Random", "First-Fit"):
            break
    if stage in ("J2", "T1") and len(out) > 1:
        out = [a for a in out if a.name != "Always"] or out[:1]
    return tuple(out)
