"""A packing analysis: the four techniques on one snapshot, and policies side by side (Figures 1-4).

What the platform runs on a worker (``dashboard.packing.services``): a
pure function from a :class:`~simcore.packing.snapshot.Snapshot` and an
:class:`AnalysisSpec` to a JSON-ready dict of series, plus
:func:`series_tables`, the same series as flat rows (CSV and Parquet
downloads).

* ``utilisation`` and ``holes`` (Figure 1) read the snapshot placed by
  ``placed_by``: ``as-is`` (a run's own placement), an ordering (first fit),
  or a scheduler's own arrival rule (:mod:`~simcore.packing.policy`).
* ``inflation`` (Figure 2: horizontal and vertical, all or conforming jobs)
  and ``compaction`` (Figure 3) reschedule from scratch with ``repack_with``,
  an ordering or a scheduler.
* ``compare`` (Figure 4): each of ``orderings`` and ``schedulers`` places the
  snapshot (hole filling over ``units``) and reschedules it under horizontal
  inflation of conforming jobs, vertical inflation of all jobs (the choices
  of ``simcore packing compare``) and compaction over ``taus``.

Trials and ranges. The paper runs eleven trials per point and draws the full
range as error bars; so does every series here: each value is a *point*
(the 90th percentile over trials for compaction, as the paper reports; the
median elsewhere) with the *min* and *max* over trials. What varies between
trials: the machine permutation of compaction, which single-task jobs get
a fractional clone in horizontal inflation, and a scheduler's seed (random
tie-breaks). Everything else (first fit of a fixed order, vertical
inflation by an ordering, an as-is placement) is deterministic, is computed
once and has a zero range.

Randomness: every part (technique, policy, trial) draws from its own
generator seeded with ``(seed, part, policy, trial)``, so adding a technique
or a policy leaves the other numbers unchanged, and the same spec gives the
same numbers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from typing import Any

import numpy as np

from simcore.core import limits
from simcore.core.errors import ParameterError, UnknownNameError
from simcore.packing.compaction import FIGURE3_TAUS, CompactionResult, check_tau, compact
from simcore.packing.inflation import FIGURE2_FACTORS, InflationStep, PackedOriginals, inflate, knee, pack_originals
from simcore.packing.placement import ORDERINGS, pack
from simcore.packing.policy import (
    check_scheduler,
    check_scheduler_params,
    compact_by,
    inflate_by,
    placed_by,
    scheduler_placer,
)
from simcore.packing.snapshot import Snapshot
from simcore.packing.utilisation import FIGURE1_UNITS, aggregate_utilisation, check_unit, hole_filling

TECHNIQUES: dict[str, str] = {
    "utilisation": "aggregate utilisation of the placed snapshot",
    "holes": "hole filling over unit sizes (Figure 1)",
    "inflation": "workload inflation, Algorithm 1, four schemes (Figure 2)",
    "compaction": "cluster compaction, Algorithm 3, over tau (Figure 3)",
    "compare": "orderings and schedulers side by side under each technique (Figure 4)",
}
#: Figure 2's four schemes: (name, mode, conforming only).
SCHEMES: tuple[tuple[str, str, bool], ...] = (
    ("horizontal-all", "horizontal", False),
    ("horizontal-conforming", "horizontal", True),
    ("vertical-all", "vertical", False),
    ("vertical-conforming", "vertical", True),
)
#: Upper bounds a request may ask for (a web form must not book a worker for days); trials and seeds are
#: simcore.core.limits' (the command line's too).
MAX_TRIALS = limits.MAX_TRIALS
MAX_POINTS = 200
AS_IS = "as-is"

Band = dict[str, Any]
Progress = Callable[[str, float], None]


def _floats(name: str, values: Any) -> tuple[float, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ParameterError(f"{name} must be a list of numbers")
    out = []
    for v in values:
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise ParameterError(f"{name}: {v!r} is not a number")
        if not np.isfinite(v):
            raise ParameterError(f"{name}: {v!r} is not a finite number")
        out.append(float(v))
    if not out:
        raise ParameterError(f"{name}: give at least one value")
    if len(out) > MAX_POINTS:
        raise ParameterError(f"{name}: at most {MAX_POINTS} values, got {len(out)}")
    return tuple(out)


def _names(name: str, values: Any) -> tuple[str, ...]:
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise ParameterError(f"{name} must be a list of names")
    out = tuple(str(v) for v in values)
    if len(set(out)) != len(out):
        raise ParameterError(f"{name} lists a name twice")
    return out


def _policy_kind(name: str, what: str, *, as_is: bool = False) -> str:
    """``ordering`` or ``scheduler``; raises naming the valid choices."""
    if as_is and name == AS_IS:
        return AS_IS
    if name in ORDERINGS:
        return "ordering"
    try:
        check_scheduler(name)
    except UnknownNameError:
        raise ParameterError(
            f"{what} {name!r} is neither {'as-is, ' if as_is else ''}an ordering ({', '.join(ORDERINGS)}) "
            "nor a registered scheduler"
        ) from None
    return "scheduler"


@dataclass(frozen=True)
class AnalysisSpec:
    """What to compute. Fractions in [0, 1]; tau in [0, 1); units > 0; factors >= 1."""

    techniques: tuple[str, ...] = tuple(TECHNIQUES)
    placed_by: str = AS_IS
    repack_with: str = "arrival"
    orderings: tuple[str, ...] = tuple(ORDERINGS)
    schedulers: tuple[str, ...] = ()
    units: tuple[float, ...] = FIGURE1_UNITS
    factors: tuple[float, ...] = FIGURE2_FACTORS
    taus: tuple[float, ...] = FIGURE3_TAUS
    trials: int = 11
    seed: int = 0
    size_threshold: float = 0.6
    fit_threshold: float = 0.6
    scheduler_params: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AnalysisSpec:
        """A checked spec from JSON-like data; unknown keys are refused by name."""
        if not isinstance(data, Mapping):
            raise ParameterError("the analysis spec must be an object")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ParameterError(f"unknown key {unknown[0]!r}; valid keys: {', '.join(sorted(known))}")
        d = dict(data)
        for k in ("techniques", "orderings", "schedulers"):
            if k in d:
                d[k] = _names(k, d[k])
        for k in ("units", "factors", "taus"):
            if k in d:
                d[k] = _floats(k, d[k])
        if "scheduler_params" in d:
            d["scheduler_params"] = check_scheduler_params(d["scheduler_params"])
        return cls(**d).checked()

    def checked(self) -> AnalysisSpec:
        """``self`` if every field is valid; else ParameterError naming the field and what to fix."""
        if not self.techniques:
            raise ParameterError("techniques: choose at least one")
        for t in self.techniques:
            if t not in TECHNIQUES:
                raise ParameterError(f"unknown technique {t!r}; valid techniques: {', '.join(TECHNIQUES)}")
        _policy_kind(self.placed_by, "placed_by", as_is=True)
        _policy_kind(self.repack_with, "repack_with")
        for o in self.orderings:
            if o not in ORDERINGS:
                raise ParameterError(f"unknown ordering {o!r}; valid orderings: {', '.join(ORDERINGS)}")
        for s in self.schedulers:
            check_scheduler(s)
        check_scheduler_params(self.scheduler_params)  # an unknown key is refused by name, as in experiments
        if "compare" in self.techniques and not (self.orderings or self.schedulers):
            raise ParameterError("compare needs at least one ordering or scheduler")
        for u in self.units:
            check_unit(u)
        for f in self.factors:
            if not f >= 1:
                raise ParameterError(f"scale factors must be >= 1, got {f}")
        for tau in self.taus:
            check_tau(tau)
        for name, v in (("size_threshold", self.size_threshold), ("fit_threshold", self.fit_threshold)):
            if not (0 < v <= 1):
                raise ParameterError(f"{name} must be in (0, 1], got {v}")
        if isinstance(self.trials, bool) or not isinstance(self.trials, int) or not 1 <= self.trials <= MAX_TRIALS:
            raise ParameterError(f"trials must be an integer from 1 to {MAX_TRIALS}, got {self.trials!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or not 0 <= self.seed <= limits.MAX_SEED:
            raise ParameterError(f"seed must be an integer from 0 to 2^32 - 1, got {self.seed!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("techniques", "orderings", "schedulers", "units", "factors", "taus"):
            d[k] = list(d[k])
        return d

    def policies(self) -> list[tuple[str, str]]:
        """Figure 4's policies as (name, kind): the orderings, then the schedulers."""
        return [(o, "ordering") for o in self.orderings] + [(s, "scheduler") for s in self.schedulers]


# ---------------------------------------------------------------------------- statistics


def _stat(values: np.ndarray, point: str) -> np.ndarray:
    return np.asarray(np.percentile(values, 90, axis=0) if point == "p90" else np.median(values, axis=0))


def band(values: Sequence[Sequence[float]], point: str = "median") -> Band:
    """Per x: the point (median or 90th percentile over trials) and the full range; rows = trials."""
    a = np.asarray(values, dtype=np.float64)
    return {"p": _stat(a, point).tolist(), "lo": a.min(axis=0).tolist(), "hi": a.max(axis=0).tolist()}


def band1(values: Sequence[float], point: str = "median") -> Band:
    """:func:`band` of a scalar per trial."""
    b = band([[v] for v in values], point)
    return {k: v[0] for k, v in b.items()}


class _Work:
    """Progress over the analysis' parts, in units of one pack (or one placement)."""

    def __init__(self, total: float, progress: Progress | None) -> None:
        self.total, self.done, self.progress = max(total, 1.0), 0.0, progress

    def step(self, stage: str, units: float = 1.0) -> None:
        self.done += units
        if self.progress is not None:
            self.progress(stage, min(1.0, self.done / self.total))


# ---------------------------------------------------------------------------- the analysis


class _Analysis:
    def __init__(self, snap: Snapshot, spec: AnalysisSpec, progress: Progress | None) -> None:
        self.snap, self.spec = snap, spec
        self.work = _Work(self._units(), progress)
        #: Per ordering, the snapshot's tasks first-fit once: every horizontal inflation (each factor of each
        #: trial, each scheme) places its clones after them, so they are placed once, not once per factor.
        self._originals: dict[str, PackedOriginals] = {}

    def originals(self, ordering: str) -> PackedOriginals:
        if ordering not in self._originals:
            self._originals[ordering] = pack_originals(self.snap, ordering)
        return self._originals[ordering]

    def rng(self, *key: int) -> np.random.Generator:
        return np.random.default_rng([self.spec.seed, *key])

    def _random_pack(self, name: str) -> bool:
        return _policy_kind(name, "policy", as_is=True) == "scheduler"

    def _units(self) -> float:
        s, t = self.spec, self.spec.trials
        per = {n: (t if self._random_pack(n) else 1) for n in {s.placed_by, s.repack_with, *s.schedulers, *s.orderings}}
        units = 0.0
        if "utilisation" in s.techniques or "holes" in s.techniques:
            units += per[s.placed_by]
        if "inflation" in s.techniques:
            units += len(s.factors) * (2 * t + 2 * per[s.repack_with])
        if "compaction" in s.techniques:
            units += t + 1
        if "compare" in s.techniques:
            for name, _ in s.policies():
                units += per[name] * (1 + len(s.factors)) + t * len(s.factors) + t + 1
        return units

    # Placement, inflation and compaction by one policy (an ordering or a scheduler).

    def placements(self, name: str, part: int) -> list[Snapshot]:
        """The snapshot placed by ``name``: one per trial when the placement is random, else one."""
        snap = self.snap
        if name == AS_IS:
            return [snap]
        if name in ORDERINGS:
            return [pack(snap, name)]
        placer = scheduler_placer(snap.resources, name, self.spec.scheduler_params.get(name))
        seeds = [int(self.rng(part, k).integers(0, 2**31 - 1)) for k in range(self.spec.trials)]
        return [placed_by(snap, placer, sd, f"{name} (seed {sd})") for sd in seeds]

    def inflation(self, name: str, mode: str, conforming: bool, part: int, stage: str) -> list[list[InflationStep]]:
        """Algorithm 1 per trial (once when deterministic: vertical inflation by an ordering)."""
        s = self.spec
        runs = 1 if (mode == "vertical" and name in ORDERINGS) else s.trials
        out = []
        for k in range(runs):
            rng = self.rng(part, k)
            kw: dict[str, Any] = {
                "mode": mode,
                "conforming_only": conforming,
                "size_threshold": s.size_threshold,
                "fit_threshold": s.fit_threshold,
                "rng": rng,
                "progress": lambda _: self.work.step(stage),
            }
            if name in ORDERINGS:
                if mode == "horizontal":
                    kw["originals"] = self.originals(name)
                out.append(inflate(self.snap, s.factors, ordering=name, **kw))
            else:
                placer = scheduler_placer(self.snap.resources, name, s.scheduler_params.get(name))
                out.append(inflate_by(self.snap, placer, s.factors, **kw))
        return out

    def compaction(self, name: str, part: int, stage: str) -> CompactionResult:
        s = self.spec
        rng = self.rng(part, 0)
        tick = lambda _: self.work.step(stage)  # noqa: E731 - a one-line callback
        if name in ORDERINGS:
            res = compact(self.snap, s.taus, trials=s.trials, ordering=name, rng=rng, progress=tick)
        else:
            placer = scheduler_placer(self.snap.resources, name, s.scheduler_params.get(name))
            res = compact_by(self.snap, placer, s.taus, trials=s.trials, rng=rng, progress=tick)
        self.work.step(stage)
        return res

    # Series.

    def utilisation_of(self, placed: list[Snapshot]) -> dict[str, Any]:
        util = [aggregate_utilisation(p) for p in placed]
        return {
            "pending": band1([p.n_pending for p in placed]),
            "utilisation": {r: band1([u[r] for u in util]) for r in self.snap.resources},
        }

    def holes_of(self, placed: list[Snapshot]) -> dict[str, Any]:
        rows = [[hole_filling(p, u) for u in self.spec.units] for p in placed]
        return {
            "unit": list(self.spec.units),
            "utilisation": {r: band([[h["utilisation"][r] for h in hs] for hs in rows]) for r in self.snap.resources},
            "units": band([[h["units"] for h in hs] for hs in rows]),
        }

    def inflation_series(self, trials: list[list[InflationStep]]) -> dict[str, Any]:
        return {
            "pending": band([[st.pending for st in steps] for steps in trials]),
            "pending_fraction": band([[st.pending_fraction for st in steps] for steps in trials]),
            "utilisation": {
                r: band([[st.utilisation[r] for st in steps] for steps in trials]) for r in self.snap.resources
            },
            "knee": band1([knee(steps) for steps in trials]),
        }

    def compaction_series(self, res: CompactionResult) -> dict[str, Any]:
        per_trial = [[res.sizes[t][k] for t in res.taus] for k in range(self.spec.trials)]
        n = self.snap.n_machines
        return {
            "tau": list(res.taus),
            "machines": band(per_trial, "p90"),
            "fraction": band([[m / n for m in row] for row in per_trial], "p90"),
            "trials": [list(map(int, res.sizes[t])) for t in res.taus],
            "copies": res.copies,
        }

    def run(self) -> dict[str, Any]:
        s, snap = self.spec, self.snap
        out: dict[str, Any] = {
            "format": 1,
            "spec": s.to_dict(),
            "snapshot": {
                "machines": snap.n_machines,
                "tasks": snap.n_tasks,
                "pending": snap.n_pending,
                "resources": list(snap.resources),
                "meta": snap.meta,
            },
            "statistics": {
                "point": "median over trials; compaction: 90th percentile over trials (the paper's)",
                "range": "min and max over trials (zero where the computation is deterministic)",
                "trials": s.trials,
            },
        }
        # Part ids: fixed per technique, policy index added for Figure 4 (stable random streams).
        if "utilisation" in s.techniques or "holes" in s.techniques:
            placed = self.placements(s.placed_by, 1)
            self.work.step("placing the snapshot", len(placed))
            if "utilisation" in s.techniques:
                out["utilisation"] = {"placed_by": s.placed_by, **self.utilisation_of(placed)}
            if "holes" in s.techniques:
                out["holes"] = {"placed_by": s.placed_by, **self.holes_of(placed)}
        if "inflation" in s.techniques:
            schemes = {}
            for i, (scheme, mode, conforming) in enumerate(SCHEMES):
                trials = self.inflation(s.repack_with, mode, conforming, 10 + i, f"inflation, {scheme}")
                schemes[scheme] = self.inflation_series(trials)
            out["inflation"] = {"repack_with": s.repack_with, "factor": list(s.factors), "schemes": schemes}
        if "compaction" in s.techniques:
            res = self.compaction(s.repack_with, 20, "compaction")
            out["compaction"] = {"repack_with": s.repack_with, **self.compaction_series(res)}
        if "compare" in s.techniques:
            results = {}
            for i, (name, _) in enumerate(s.policies()):
                base = 100 * (i + 1)
                placed = self.placements(name, base)
                self.work.step(f"{name}: placing", len(placed))
                hz = self.inflation(name, "horizontal", True, base + 1, f"{name}: horizontal inflation")
                vt = self.inflation(name, "vertical", False, base + 2, f"{name}: vertical inflation")
                comp = self.compaction(name, base + 3, f"{name}: compaction")
                results[name] = {
                    **self.utilisation_of(placed),
                    "holes": self.holes_of(placed)["utilisation"],
                    "horizontal": self.inflation_series(hz),
                    "vertical": self.inflation_series(vt),
                    "compaction": self.compaction_series(comp),
                }
            out["compare"] = {
                "policies": [{"name": n, "kind": k} for n, k in s.policies()],
                "unit": list(s.units),
                "factor": list(s.factors),
                "tau": list(s.taus),
                "horizontal": "conforming jobs only",
                "vertical": "all jobs",
                "results": results,
            }
        return out


def analyse(snap: Snapshot, spec: AnalysisSpec, progress: Progress | None = None) -> dict[str, Any]:
    """Run ``spec``'s techniques on ``snap``; ``progress(stage, fraction 0..1)`` after each pack.

    Returns a JSON-ready dict (see the module docstring; :func:`series_tables`
    flattens it). Utilisations are fractions 0..1 of total capacity.
    """
    spec.checked()
    return _Analysis(snap, spec, progress).run()


# ---------------------------------------------------------------------------- flat tables


def _rows(b: Band, xs: Sequence[Any], **keys: Any) -> list[dict[str, Any]]:
    return [
        {**keys, "x": x, "point": p, "min": lo, "max": hi}
        for x, p, lo, hi in zip(xs, b["p"], b["lo"], b["hi"], strict=True)
    ]


def _one(b: Band, **keys: Any) -> dict[str, Any]:
    return {**keys, "point": b["p"], "min": b["lo"], "max": b["hi"]}


def series_tables(results: Mapping[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Every series of an analysis as flat rows, one table per technique (what the downloads hold).

    Columns: what the row is (resource, scheme, policy, metric...), ``x``
    (unit size, scale factor or tau, fractions), and ``point``, ``min``,
    ``max`` (see the module docstring). Utilisations are fractions 0..1.
    """
    out: dict[str, list[dict[str, Any]]] = {}
    if "utilisation" in results:
        u = results["utilisation"]
        out["utilisation"] = [_one(u["pending"], metric="pending_tasks")] + [
            _one(b, metric=f"utilisation_{r}") for r, b in u["utilisation"].items()
        ]
    if "holes" in results:
        h = results["holes"]
        rows = []
        for r, b in h["utilisation"].items():
            rows += _rows(b, h["unit"], metric=f"utilisation_{r}")
        rows += _rows(h["units"], h["unit"], metric="units_placed")
        out["holes"] = [{"x_name": "unit", **r} for r in rows]
    if "inflation" in results:
        inf = results["inflation"]
        rows = []
        for scheme, sr in inf["schemes"].items():
            rows += _inflation_rows(sr, inf["factor"], scheme=scheme)
        out["inflation"] = rows
    if "compaction" in results:
        c = results["compaction"]
        out["compaction"] = _rows(c["machines"], c["tau"], x_name="tau", metric="machines") + _rows(
            c["fraction"], c["tau"], x_name="tau", metric="fraction_of_machines"
        )
        out["compaction_trials"] = [
            {"tau": t, "trial": k, "machines": m}
            for t, sizes in zip(c["tau"], c["trials"], strict=True)
            for k, m in enumerate(sizes)
        ]
    if "compare" in results:
        cmp_ = results["compare"]
        rows = []
        for pol in cmp_["policies"]:
            name, kind = pol["name"], pol["kind"]
            r = cmp_["results"][name]
            keys = {"policy": name, "kind": kind}
            rows.append({**_one(r["pending"], **keys, technique="placement", metric="pending_tasks"), "x_name": ""})
            for res, b in r["utilisation"].items():
                rows.append({**_one(b, **keys, technique="placement", metric=f"utilisation_{res}"), "x_name": ""})
            for res, b in r["holes"].items():
                rows += _rows(b, cmp_["unit"], **keys, technique="holes", x_name="unit", metric=f"utilisation_{res}")
            for tech in ("horizontal", "vertical"):
                rows += _inflation_rows(r[tech], cmp_["factor"], **keys, technique=f"{tech} inflation")
            rows += _rows(
                r["compaction"]["fraction"],
                cmp_["tau"],
                **keys,
                technique="compaction",
                x_name="tau",
                metric="fraction_of_machines",
            )
        out["compare"] = rows
    return out


def _inflation_rows(sr: Mapping[str, Any], factors: Sequence[float], **keys: Any) -> list[dict[str, Any]]:
    rows = _rows(sr["pending"], factors, **keys, x_name="factor", metric="pending_tasks")
    rows += _rows(sr["pending_fraction"], factors, **keys, x_name="factor", metric="pending_fraction")
    for r, b in sr["utilisation"].items():
        rows += _rows(b, factors, **keys, x_name="factor", metric=f"utilisation_{r}")
    rows.append({**_one(sr["knee"], **keys, x_name="factor", metric="knee"), "x": None})
    return rows
