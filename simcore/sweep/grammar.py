"""The one grammar of a sweep's grid: seeds, ``--vary NAME=VALUES`` axes, and where each parameter goes.

The command line (``simcore sweep``), the dashboard's form and its REST API
all read a grid through these functions, so they accept the same text and
refuse bad input with the same message.

Grammar of one axis: ``NAME=ITEM[,ITEM...]``. ``NAME`` is ``load``,
``hours``, ``cluster``, ``workload`` (preset names) or a parameter of the
grid's cluster, workload or schedulers, spelled like its option
(``machines-per-config``) or its parameter (``machines_per_config``). An
``ITEM`` is a value, or for a numeric axis a range:

* ``START:STOP:STEP``: START, START+STEP, ... up to STOP included (``0:0.015:0.003``
  is 0, 0.003, 0.006, 0.009, 0.012, 0.015);
* ``START:STOP:xFACTOR``: START, START*FACTOR, ... up to STOP included
  (``1:100:x10`` is 1, 10, 100), for log-spaced axes.

Range values are rounded to 12 significant digits, so ``0.1 * 3`` is 0.3.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from simcore.convert import BadValue, boolean, finite_float, positive_float
from simcore.core import limits
from simcore.core.errors import ParameterError, SimcoreError
from simcore.documents import Document, parse, says
from simcore.presets import CLUSTERS, WORKLOADS, coerce_params
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param

#: Most seeds a grid may list, the platform's bound too (a range's length is checked before it is expanded).
MAX_SEEDS = limits.MAX_SEEDS
#: Most values one axis may have (a range with a tiny step is a typo, not a grid).
MAX_AXIS_VALUES = 1_000
#: Run-level settings that can be varied besides the preset and scheduler parameters.
RUN_SETTINGS = ("load", "hours")
#: Axes whose values are preset names.
PRESET_AXES = ("cluster", "workload")


def param_converter(p: Param) -> Callable[[str], Any]:
    """The converter for a registry parameter's text value (the command line wraps it as an argparse type)."""
    if p.type is bool:
        return boolean
    if p.type is float:
        return finite_float
    return p.type


def _names(x: str | Sequence[str]) -> list[str]:
    return [x] if isinstance(x, str) else list(x)


# -- which preset or scheduler takes a parameter -------------------------------------------------------------


@dataclass(frozen=True)
class Owner:
    """A preset or scheduler that takes a parameter; ``label`` is how the API's messages name it."""

    kind: str  # "cluster", "workload" or "scheduler"
    label: str
    name: str
    param: Param
    params: tuple[Param, ...]


def param_owners(
    cluster: str | Sequence[str], workload: str | Sequence[str], schedulers: Sequence[str]
) -> dict[str, list[Owner]]:
    """Parameter name -> the presets and schedulers of this grid that take it.

    ``cluster`` and ``workload`` are one name or, when a sweep varies them, all the names of the grid. A
    cluster or trace file has no parameters; a name can belong to several owners (it then goes to each).
    """
    groups: list[tuple[str, str, str, tuple[Param, ...]]] = []
    for c in _names(cluster):
        if c in CLUSTERS:
            groups.append(("cluster", f"cluster {c!r}", c, CLUSTERS.get(c).params))
    for w in _names(workload):
        if w in WORKLOADS:
            groups.append(("workload", f"workload {w!r}", w, WORKLOADS.get(w).params))
    for s in schedulers:
        groups.append(("scheduler", f"scheduler {s!r}", s, SCHEDULERS.get(s).params))
    owners: dict[str, list[Owner]] = {}
    for kind, label, name, params in groups:
        for p in params:
            owners.setdefault(p.name, []).append(Owner(kind, label, name, p, params))
    return owners


def _does_not_apply(
    option: str, cluster: str | Sequence[str], workload: str | Sequence[str], schedulers: Sequence[str]
) -> str:
    cs, ws = _names(cluster), _names(workload)
    return (
        f"{option} does not apply to cluster {'/'.join(repr(c) for c in cs)}, "
        f"workload {'/'.join(repr(w) for w in ws)} or scheduler(s) {', '.join(schedulers)}"
    )


def split_params(
    given: dict[str, Any], cluster: str, workload: str, schedulers: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """Route ``--name value`` options to (cluster, workload, scheduler) parameters; refuse those nobody takes."""
    owners = param_owners(cluster, workload, schedulers)
    for k in given:
        if k not in owners:
            raise ParameterError(_does_not_apply(f"--{k.replace('_', '-')}", cluster, workload, schedulers))
    return route_params(given, cluster, workload, schedulers)


def route_params(
    given: Mapping[str, Any], cluster: str, workload: str, schedulers: Sequence[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """(cluster, workload, scheduler) parameters of one point of a grid; parameters nobody there takes are left out.

    A grid that varies the cluster preset has parameters only some of its clusters take (the
    homogeneous cluster's ``machine_type``): each point gets those of its own presets.
    """
    owners = param_owners(cluster, workload, schedulers)
    out: dict[str, dict[str, Any]] = {"cluster": {}, "workload": {}, "scheduler": {}}
    for k, v in given.items():
        for o in owners.get(k, []):
            out[o.kind][k] = v
    return out["cluster"], out["workload"], out["scheduler"]


def check_fixed_params(
    given: Mapping[str, Any], clusters: Sequence[str], workloads: Sequence[str], schedulers: Sequence[str]
) -> None:
    """Refuse a fixed parameter no preset or scheduler of the grid takes, or a value one of them refuses."""
    owners = param_owners(clusters, workloads, schedulers)
    for k, v in given.items():
        if k not in owners:
            raise ParameterError(_does_not_apply(f"--{k.replace('_', '-')}", clusters, workloads, schedulers))
        for o in owners[k]:
            coerce_params(o.label, o.params, {k: v})


# -- seeds -----------------------------------------------------------------------------------------------------


def _seed(digits: str) -> int:
    # Python refuses int() of over 4,300 digits with a ValueError: a seed that long is out of range anyway.
    if len(digits) > 20:
        raise ParameterError(f"--seeds: seed {digits[:20]}... is outside 0 to 2^32-1 ({limits.MAX_SEED:,})")
    return limits.check_seed(int(digits), "--seeds")


def parse_seeds(text: str) -> list[int]:
    """'0', '0,1,5' or '0-4' -> the seeds in the order given (as the dashboard's form reads them).

    At most ``MAX_SEEDS`` seeds, each from 0 to 2^32-1 (``simcore.core.limits``, the platform's bounds too).
    """
    seeds: list[int] = []
    for part in [x.strip() for x in (text or "").split(",") if x.strip()]:
        m = re.fullmatch(r"(\d+)\s*-\s*(\d+)", part)
        if m:
            lo, hi = _seed(m.group(1)), _seed(m.group(2))
            if hi < lo:
                raise ParameterError(f"--seeds: range {part!r} goes backwards")
            if hi - lo + 1 > MAX_SEEDS:  # before the range is expanded
                raise ParameterError(f"--seeds: range {part!r} has {hi - lo + 1:,} seeds; at most {MAX_SEEDS}")
            seeds.extend(range(lo, hi + 1))
        elif re.fullmatch(r"\d+", part):
            seeds.append(_seed(part))
        else:
            raise ParameterError(
                f"--seeds: {part!r} is not a non-negative integer or a range like 0-4 (e.g. 0 or 0,1,2 or 0-4)"
            )
        if len(seeds) > MAX_SEEDS:
            raise ParameterError(f"--seeds: more than {MAX_SEEDS} seeds, the most a grid may have")
    if not seeds:
        raise ParameterError("--seeds: give at least one seed, e.g. 0 or 0,1,2 or 0-4")
    seen: set[int] = set()
    for x in seeds:
        if x in seen:
            raise ParameterError(f"--seeds: seed {x} is listed twice")
        seen.add(x)
    return seeds


def seeds_text(seeds: Sequence[int]) -> str:
    """[0, 1, 2, 5] -> '0-2,5' (sorted)."""
    ss, out, i = sorted(seeds), [], 0
    while i < len(ss):
        j = i
        while j + 1 < len(ss) and ss[j + 1] == ss[j] + 1:
            j += 1
        out.append(str(ss[i]) if i == j else f"{ss[i]}-{ss[j]}")
        i = j + 1
    return ",".join(out)


# -- axes ------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Axis:
    """One varied parameter: its canonical name (``load``, ``hours``, ``cluster``, ``workload`` or a Param name)."""

    name: str
    values: tuple[Any, ...]

    def text(self) -> str:
        """The axis in the grammar, as ``--vary`` takes it (``phi=0,0.003``)."""
        return f"{self.name.replace('_', '-')}={','.join(_value_text(v) for v in self.values)}"


def _value_text(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    return repr(v) if isinstance(v, float) else str(v)


def _round(x: float) -> float:
    return float(f"{x:.12g}")


def _range_parts(item: str, shown: str) -> tuple[float, float, float, bool] | None:
    """``START:STOP:STEP`` or ``START:STOP:xFACTOR`` -> (start, stop, step or factor, geometric), checked; None if
    ``item`` is not a range."""
    parts = item.split(":")
    if len(parts) == 1:
        return None
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise ParameterError(
            f"--vary {shown}: range {item!r} must be START:STOP:STEP or START:STOP:xFACTOR (e.g. 0:0.015:0.003)"
        )
    raw_start, raw_stop, raw_step = (p.strip() for p in parts)
    geometric = raw_step[0] in "x*"
    try:
        start, stop = finite_float(raw_start), finite_float(raw_stop)
        step = finite_float(raw_step[1:] if geometric else raw_step)
    except BadValue as e:
        raise ParameterError(f"--vary {shown}: range {item!r}: {e}") from None
    if stop < start:
        raise ParameterError(f"--vary {shown}: range {item!r} goes backwards")
    if geometric and not (start > 0 and step > 1):
        raise ParameterError(f"--vary {shown}: range {item!r}: a factor range needs START > 0 and FACTOR > 1")
    if not geometric and step <= 0:
        raise ParameterError(f"--vary {shown}: range {item!r}: STEP must be positive")
    return start, stop, step, geometric


#: Lengths are capped here: any larger count is refused anyway, and ``math.prod`` stays cheap.
_LENGTH_CAP = 10**18


def _range_length(start: float, stop: float, step: float, geometric: bool) -> int:
    """How many values a checked range has, by arithmetic (nothing is built); STOP is included within 1e-9."""
    if geometric:
        q = math.log(stop * (1 + 1e-9) / start) / math.log(step)
    else:
        q = (stop - start) / step + 1e-9
    # A tiny step over a wide range can overflow to inf: it is refused either way.
    return math.floor(min(q, _LENGTH_CAP)) + 1


def _count(n: int) -> str:
    return f"{n:,}" if n <= _LENGTH_CAP else f"over {_LENGTH_CAP:.0e}".replace("e+", "e")


def _range_values(r: tuple[float, float, float, bool], n: int) -> list[float]:
    start, _, step, geometric = r
    if geometric:
        return [_round(start * step**i) for i in range(n)]
    return [_round(start + i * step) for i in range(n)]


def _expand_range(item: str, shown: str, integer: bool) -> list[str] | None:
    """``START:STOP:STEP`` or ``START:STOP:xFACTOR`` -> the values as text; None if ``item`` is not a range."""
    r = _range_parts(item, shown)
    if r is None:
        return None
    n = _range_length(*r)
    if n > MAX_AXIS_VALUES:  # before a list is built: 0:1:1e-12 would be a trillion values
        raise ParameterError(
            f"--vary {shown}: range {item!r} has {_count(n)} values; at most {MAX_AXIS_VALUES:,} an axis"
        )
    values = _range_values(r, n)
    if integer:
        if any(v != int(v) for v in values):
            raise ParameterError(f"--vary {shown}: range {item!r} gives values that are not integers")
        return [str(int(v)) for v in values]
    return [repr(v) for v in values]


def _items(text: str) -> tuple[str, list[str]]:
    """``NAME=v1,v2`` -> (the name as given, the items stripped)."""
    raw_name, _, raw_values = text.partition("=")
    return raw_name.strip() or text, [v.strip() for v in raw_values.split(",")]


def axis_length(text: str) -> int:
    """How many values an axis text has, ranges counted by arithmetic, without converting or expanding anything.

    Lenient: an item that is not a well-formed range counts as one value (parsing the axis refuses it later with
    its own message), so this bounds a grid before the work of reading it.
    """
    shown, items = _items(text)
    n = 0
    for item in items:
        try:
            r = _range_parts(item, shown)
        except ParameterError:
            r = None
        n += 1 if r is None else _range_length(*r)
    return min(n, _LENGTH_CAP + 1)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}" + ("" if n == 1 else "s")


def check_grid_size(axis_lengths: Sequence[int], schedulers: int, seeds: int, max_runs: int | None = None) -> int:
    """Refuse a grid of more than ``max_runs`` runs (default: setting ``SIMCORE_MAX_RUNS``); returns its runs.

    The one check of a grid's size, for the command line, the form and the API alike: it takes the axes'
    lengths, so it runs before any axis is expanded or any point built (a grid of 10^9 points is refused in
    microseconds, not after gigabytes).
    """
    limit = limits.max_runs() if max_runs is None else max_runs
    runs = math.prod(axis_lengths) * schedulers * seeds
    if runs > limit:
        if axis_lengths:
            shown = [f"{n:,}" for n in axis_lengths]
            listed = shown[0] if len(shown) == 1 else f"{', '.join(shown[:-1])} and {shown[-1]}"
            grid = f"{len(axis_lengths)} {'axis' if len(axis_lengths) == 1 else 'axes'} of {listed} values x "
        else:
            grid = ""
        raise ParameterError(
            f"the grid has {runs:,} runs ({grid}{_plural(schedulers, 'scheduler')} x {_plural(seeds, 'seed')}); "
            f"at most {limit:,} (setting SIMCORE_MAX_RUNS)"
        )
    return runs


class Grid:
    """The names a grid's parameters are checked against: its clusters, workloads and schedulers."""

    def __init__(self, cluster: str, workload: str, schedulers: Sequence[str]) -> None:
        self.clusters = [cluster]
        self.workloads = [workload]
        self.schedulers = list(schedulers)

    def owners(self) -> dict[str, list[Owner]]:
        return param_owners(self.clusters, self.workloads, self.schedulers)

    def add_presets(self, axis: Axis) -> None:
        if axis.name == "cluster":
            self.clusters = list(axis.values)
        elif axis.name == "workload":
            self.workloads = list(axis.values)


def _canonical_name(raw: str) -> str:
    return raw.strip().replace("-", "_")


def _check_name(name: str, shown: str, grid: Grid) -> dict[str, list[Owner]]:
    if name == "seed":
        raise ParameterError("--vary seed: give seeds with --seeds, e.g. --seeds 0-4")
    owners = grid.owners()
    if name not in RUN_SETTINGS and name not in PRESET_AXES and name not in owners:
        valid = ", ".join(n.replace("_", "-") for n in [*RUN_SETTINGS, *PRESET_AXES, *sorted(owners)])
        raise ParameterError(
            f"{_does_not_apply(f'--vary {shown}', grid.clusters, grid.workloads, grid.schedulers)}; "
            f"parameters that do: {valid}"
        )
    return owners


def _check_value(name: str, shown: str, v: Any, owners: dict[str, list[Owner]]) -> Any:
    """Range-check one converted value against every owner (a preset name against its registry)."""
    if name in PRESET_AXES:
        registry = CLUSTERS if name == "cluster" else WORKLOADS
        try:
            return registry.get(str(v)).name
        except SimcoreError as e:
            raise ParameterError(f"--vary {shown}: {e}") from None
    if name in RUN_SETTINGS:
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (math.isfinite(v) and v > 0):
            raise ParameterError(f"--vary {shown}: expected a positive number, got {v!r}")
        return float(v)
    out = v
    for o in owners.get(name, []):
        try:
            out = coerce_params(o.label, o.params, {name: v})[name]
        except ParameterError as e:
            raise ParameterError(f"--vary {shown}: {e}") from None
    return out


def _no_repeats(shown: str, values: list[Any], items: Sequence[str]) -> None:
    seen: list[Any] = []
    for v, item in zip(values, items, strict=True):
        if v in seen:
            raise ParameterError(f"--vary {shown}: value {item!r} is listed twice")
        seen.append(v)


def _parse_axis_in(text: str, grid: Grid) -> Axis:
    raw_name, eq, raw_values = text.partition("=")
    name = _canonical_name(raw_name)
    shown = raw_name.strip() or text
    if not eq or not name:
        raise ParameterError(f"--vary {text!r}: expected NAME=VALUE[,VALUE...], e.g. phi=0,0.003,0.006")
    owners = _check_name(name, shown, grid)
    items = [v.strip() for v in raw_values.split(",")]
    if not raw_values.strip():
        raise ParameterError(f"--vary {shown}: no values; give a list such as {shown}=1,2,3")
    if "" in items:
        raise ParameterError(f"--vary {shown}: empty value in {raw_values!r}")
    param = owners[name][0].param if name in owners and name not in RUN_SETTINGS else None
    if name in PRESET_AXES:
        convert: Callable[[str], Any] = str
    elif name in RUN_SETTINGS:
        convert = positive_float
    else:
        assert param is not None
        convert = param_converter(param)
    numeric = name in RUN_SETTINGS or (param is not None and param.type in (int, float) and param.choices is None)
    ranges = [_range_parts(item, shown) if numeric else None for item in items]
    n = sum(1 if r is None else _range_length(*r) for r in ranges)
    if n > MAX_AXIS_VALUES:  # counted, not built
        raise ParameterError(f"--vary {shown} has {_count(n)} values; at most {MAX_AXIS_VALUES:,} an axis")
    expanded: list[str] = []
    for item in items:
        rng = _expand_range(item, shown, integer=param is not None and param.type is int) if numeric else None
        expanded.extend(rng if rng is not None else [item])
    values: list[Any] = []
    for item in expanded:
        try:
            v = convert(item)
        except (BadValue, ParameterError) as e:  # ParameterError: a checked text (a staged policy)
            raise ParameterError(f"--vary {shown}: {e}") from None
        except (TypeError, ValueError):
            type_name = param.type.__name__ if param is not None else "a value"
            raise ParameterError(f"--vary {shown}: expected {type_name}, got {item!r}") from None
        values.append(_check_value(name, shown, v, owners))
    _no_repeats(shown, values, expanded)
    return Axis(name, tuple(values))


def parse_axis(text: str, cluster: str, workload: str, schedulers: Sequence[str]) -> Axis:
    """``NAME=v1,v2,...`` -> an :class:`Axis`, every value converted and range-checked now (see the module doc)."""
    return _parse_axis_in(text, Grid(cluster, workload, schedulers))


def parse_axes(
    texts: Iterable[str],
    cluster: str,
    workload: str,
    schedulers: Sequence[str],
    *,
    seeds: int = 1,
    max_runs: int | None = None,
) -> list[Axis]:
    """Every ``--vary`` text of a grid; ``cluster=``/``workload=`` axes first, so that the parameters of the
    other axes are checked against all the presets the grid runs.

    The grid's size (axes x ``schedulers`` x ``seeds`` runs) is checked against ``max_runs`` (default: setting
    ``SIMCORE_MAX_RUNS``) first, from the axes' lengths, before any axis is expanded or converted.
    """
    texts = list(texts)
    lengths = [axis_length(t) for t in texts]
    for text, n in zip(texts, lengths, strict=True):
        if n > MAX_AXIS_VALUES:  # each axis's own bound first: its message names the axis
            raise ParameterError(
                f"--vary {_items(text)[0]} has {_count(n)} values; at most {MAX_AXIS_VALUES:,} an axis"
            )
    check_grid_size(lengths, len(schedulers), seeds, max_runs)
    grid = Grid(cluster, workload, schedulers)
    order = sorted(range(len(texts)), key=lambda i: _canonical_name(texts[i].partition("=")[0]) not in PRESET_AXES)
    parsed: dict[int, Axis] = {}
    for i in order:
        ax = _parse_axis_in(texts[i], grid)
        grid.add_presets(ax)
        parsed[i] = ax
    axes = [parsed[i] for i in range(len(texts))]
    check_axes_distinct(axes, {})
    return axes


_AXIS = "scenario {parent} must be an object with 'name' and a list 'values'"


class AxisDoc(Document):
    """One axis of a grid kept as data: ``{"name": "phi", "values": [0, 0.003]}``."""

    NOT_OBJECT = _AXIS.replace("{parent}", "{path}")
    UNKNOWN = MISSING = _AXIS

    name: Annotated[str, BeforeValidator(str)]
    values: Annotated[list[Any], says(_AXIS)]


class GridDoc(Document):
    """A grid's axes as a scenario keeps them; the names and values are checked by the grammar's rules."""

    axes: Annotated[list[AxisDoc], says("scenario axes must be a list of {'name': ..., 'values': [...]} objects")]


def axes_from_values(
    raw: Any, cluster: str, workload: str, schedulers: Sequence[str], fixed: Mapping[str, Any] | None = None
) -> list[Axis]:
    """Axes stored as data (``[{"name": "phi", "values": [0, 0.003]}]``, as a scenario keeps them), checked with
    the same rules as the text form."""
    if raw is None:
        return []
    doc = parse(GridDoc, {"axes": raw}, lambda p: ParameterError(p.message))
    grid = Grid(cluster, workload, schedulers)
    out: dict[int, Axis] = {}
    # Preset axes first: the presets they name decide which parameters the other axes may vary.
    for i, a in sorted(enumerate(doc.axes), key=lambda t: _canonical_name(t[1].name) not in PRESET_AXES):
        name = _canonical_name(a.name)
        shown = name.replace("_", "-")
        owners = _check_name(name, shown, grid)
        if not a.values:
            raise ParameterError(f"--vary {shown}: no values")
        if len(a.values) > MAX_AXIS_VALUES:
            raise ParameterError(f"--vary {shown}: more than {MAX_AXIS_VALUES} values")
        checked = [_check_value(name, shown, v, owners) for v in a.values]
        _no_repeats(shown, checked, [_value_text(v) for v in a.values])
        ax = Axis(name, tuple(checked))
        grid.add_presets(ax)
        out[i] = ax
    axes = [out[i] for i in range(len(doc.axes))]
    check_axes_distinct(axes, fixed or {})
    return axes


def check_axes_distinct(axes: Sequence[Axis], fixed: Mapping[str, Any]) -> None:
    """An axis at most once, never both fixed and varied, never empty."""
    seen: set[str] = set()
    for ax in axes:
        option = ax.name.replace("_", "-")
        if ax.name in seen:
            raise ParameterError(f"--vary {option} is given twice; list all its values in one --vary")
        if ax.name in fixed:
            raise ParameterError(f"--{option} is both fixed and varied; drop --{option} or --vary {option}")
        seen.add(ax.name)
        if not ax.values:
            raise ParameterError(f"--vary {option}: no values")
