"""The plan driver: per scheduler, the smallest cluster that meets the target in every seed.

:func:`make_plan` checks the spec, computes the two lower bounds
(:mod:`simcore.planning.bounds`), then runs every scheduler's
:class:`~simcore.planning.bisect.Search` in rounds. Each round's probes go to
``run_probes``, a callable from a list of :class:`ProbeRequest` to their
:class:`~simcore.planning.probe.ProbeResult` (in any order): local processes
(:mod:`simcore.planning.local`) on the command line, tasks on the platform.
Probes of one size and seed carry every scheduler that wants that size, so they
share one cluster and one workload.

A size *meets* the target for a scheduler when every seed's run meets it. The
plan reports, per scheduler: the answer, the verifying probes at the answer and
one machine below, the saving against the given cluster, the curve of the
statistic against size with its seed interval, and every place where a larger
size failed although a smaller one met (not monotone).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.core.errors import ParameterError
from simcore.core.limits import MAX_SEEDS, check_seed, max_machines
from simcore.planning.bisect import Search, violations
from simcore.planning.bounds import compaction_bound, lambda_bound
from simcore.planning.probe import PlanSpec, ProbeResult, base_cluster, plan_workload
from simcore.planning.shape import check_mode, counts_at, smallest_size
from simcore.planning.target import parse_target
from simcore.schedulers import SCHEDULERS
from simcore.sweep.report import t_interval
from simcore.version import code_version

#: Default search ceiling: this many times the given cluster (within SIMCORE_MAX_MACHINES).
DEFAULT_CEILING_FACTOR = 4
#: Most extra curve points per scheduler.
MAX_CURVE_POINTS = 50


@dataclass(frozen=True)
class ProbeRequest:
    """Run ``schedulers`` at ``machines`` under ``seed``: the arguments of :func:`~simcore.planning.probe.probe`."""

    machines: int
    seed: int
    schedulers: tuple[str, ...]


RunProbes = Callable[[list[ProbeRequest]], Iterable[ProbeResult]]
Progress = Callable[[str], None]


class Unreachable(ParameterError):
    """No size up to the search's ceiling meets the target, for any scheduler."""


def ceiling_of(spec: PlanSpec, given: int) -> int:
    """The largest size the search may probe; a ``max_machines`` above SIMCORE_MAX_MACHINES is refused."""
    limit = max_machines()
    if spec.max_machines is None:
        return min(DEFAULT_CEILING_FACTOR * given, limit)
    if spec.max_machines > limit:
        raise ParameterError(
            f"--max-machines {spec.max_machines:,} is above the limit of {limit:,} machines per cluster "
            "(setting SIMCORE_MAX_MACHINES)"
        )
    return spec.max_machines


def check_spec(spec: PlanSpec) -> None:
    """Refuse a bad spec before any work: target, schedulers, seeds, resize mode, size limit, curve points."""
    parse_target(spec.target)
    if not spec.schedulers:
        raise ParameterError("--schedulers needs at least one scheduler name")
    for name in spec.schedulers:
        SCHEDULERS.get(name)
    if not spec.seeds:
        raise ParameterError("--seeds: give at least one seed")
    if len(spec.seeds) > MAX_SEEDS:
        raise ParameterError(f"--seeds: at most {MAX_SEEDS} seeds, got {len(spec.seeds)}")
    for s in spec.seeds:
        check_seed(s, "--seeds")
    if not 0 <= spec.curve_points <= MAX_CURVE_POINTS:
        raise ParameterError(f"--curve-points must be between 0 and {MAX_CURVE_POINTS}, got {spec.curve_points}")
    if spec.max_machines is not None and spec.max_machines < 1:
        raise ParameterError(f"--max-machines must be at least 1, got {spec.max_machines}")


def _interval(xs: list[float]) -> dict[str, float | None]:
    if not xs:
        return {"mean": None, "min": None, "max": None, "ci_low": None, "ci_high": None}
    _, lo, hi = t_interval(xs)
    return {"mean": float(np.mean(xs)), "min": min(xs), "max": max(xs), "ci_low": lo, "ci_high": hi}


class _Store:
    """Probe results by (scheduler, size), one per seed."""

    def __init__(self, seeds: list[int]) -> None:
        self.seeds = seeds
        self.by: dict[tuple[str, int], dict[int, ProbeResult]] = {}

    def add(self, r: ProbeResult) -> None:
        for name in r.met:
            self.by.setdefault((name, r.machines), {})[r.seed] = r

    def complete(self, name: str, size: int) -> bool:
        return len(self.by.get((name, size), {})) == len(self.seeds)

    def met(self, name: str, size: int) -> bool:
        return all(r.met[name] for r in self.by[(name, size)].values())

    def point(self, name: str, size: int) -> dict[str, Any]:
        rs = self.by[(name, size)]
        values = {str(s): rs[s].values[name] for s in self.seeds}
        nums = [float(v) for v in values.values() if v is not None]
        errors = {str(s): rs[s].errors[name] for s in self.seeds if name in rs[s].errors}
        out: dict[str, Any] = {"machines": size, "met": self.met(name, size), **_interval(nums), "values": values}
        if errors:
            out["errors"] = errors
        return out


def check_plan(spec: PlanSpec) -> tuple[int, int, int]:
    """Every check of a plan that needs no workload (:func:`check_spec`, the cluster, its resize, the size
    limit); returns the given size and the sizes the searches may probe, ``(given, floor, ceiling)``."""
    check_spec(spec)
    cluster = base_cluster(spec)
    check_mode(cluster, spec.resize)
    given = cluster.n_machines
    floor = smallest_size(cluster, spec.resize)
    ceiling = ceiling_of(spec, given)
    if ceiling < floor:
        raise ParameterError(f"--max-machines {ceiling} is below the smallest resize of the cluster ({floor})")
    return given, floor, ceiling


def prepare(spec: PlanSpec, progress: Progress | None = None) -> dict[str, Any]:
    """Check ``spec`` and compute where the searches start: the plan's *bounds*, plain JSON-able data.

    The one expensive step before the probes (it builds the workload of the first seed, packs its
    snapshot and solves the allocation LP): the platform runs it once, in the plan's first task, and
    stores it. ``given``, ``floor`` and ``ceiling`` bound the sizes; ``low`` (lambda*'s size) and ``high``
    (compaction's) are the searches' starts.
    """
    say = progress or (lambda _msg: None)
    given, floor, ceiling = check_plan(spec)
    cluster = base_cluster(spec)
    workload = plan_workload(spec, spec.seeds[0])
    say(f"{workload.n_jobs:,} jobs, {given:,} machines given; computing the lower bounds")
    compaction = compaction_bound(cluster, workload, spec.seeds[0])
    lam = lambda_bound(cluster, workload, spec.resize, floor, ceiling)
    # lambda* is where the search starts from below (smaller clusters cannot keep up with the arrivals),
    # compaction's no-queueing size from above (there, next to no job waits); the given size without it.
    low = lam["machines"] if lam is not None and lam["machines"] is not None else floor
    high = compaction["machines"] if compaction is not None else given
    say(
        f"lower bounds: compaction {compaction and compaction['machines']}, lambda* {lam and lam['machines']}; "
        f"starting from {low:,} and {high:,} in {floor:,}..{ceiling:,}"
    )
    return {
        "given": given,
        "floor": floor,
        "ceiling": ceiling,
        "low": low,
        "high": high,
        "compaction": compaction,
        "lambda_star": lam,
        "jobs": workload.n_jobs,
        "horizon_s": workload.horizon_s,
    }


@dataclass
class Step:
    """Where a plan stands, given its bounds and the probe results so far (:func:`next_requests`).

    ``requests`` are the probes to run next (empty when ``done``); ``phase`` says what they are for:
    ``search`` (a round of the bisections, the ``rounds``-th), ``curve`` (the extra curve sizes) or ``done``.
    """

    phase: str
    requests: list[ProbeRequest]
    rounds: int
    #: The searches' wanted sizes this round, as the progress line names them: size -> schedulers.
    wanted: dict[int, list[str]]
    searches: dict[str, Search]
    store: _Store

    @property
    def done(self) -> bool:
        return self.phase == "done"


def _requests(spec: PlanSpec, wanted: dict[int, list[str]]) -> list[ProbeRequest]:
    return [ProbeRequest(size, seed, tuple(names)) for size, names in sorted(wanted.items()) for seed in spec.seeds]


def next_requests(spec: PlanSpec, bounds: dict[str, Any], results: Iterable[ProbeResult]) -> Step:
    """The probes a plan needs next, from its bounds and every probe result stored so far (in any order).

    A pure function: every scheduler's :class:`Search` is replayed from the stored results (each asks
    one size a round; a size already stored is recorded at once), in the lockstep rounds of
    :func:`make_plan`, until some search wants a size not stored yet: those sizes, one request per size
    and seed carrying every scheduler that wants it, are the next round. Once every search is done, the
    curve's extra sizes (``spec.curve_points``) are one more round; then the plan is ``done``
    (:func:`finish`). So a plan can be resumed from its stored probes, by anyone, at any time.
    """
    store = _Store(spec.seeds)
    for r in results:
        store.add(r)
    floor, ceiling, low, high = bounds["floor"], bounds["ceiling"], bounds["low"], bounds["high"]
    searches = {name: Search(floor, ceiling, low, high) for name in spec.schedulers}
    rounds = 0
    while True:
        wanted: dict[int, list[str]] = {}
        stored = False
        for name, s in searches.items():
            for size in s.next_sizes():
                if store.complete(name, size):
                    s.record(size, store.met(name, size))
                    stored = True
                else:
                    wanted.setdefault(size, []).append(name)
        if wanted:
            return Step("search", _requests(spec, wanted), rounds + 1, wanted, searches, store)
        if not stored:  # no search asked for a size: every one is done
            break
        # A round whose probes were all stored (a round of make_plan, replayed).
        rounds += 1
    if spec.curve_points:
        top = max(bounds["given"], high, *(s.answer or 0 for s in searches.values()))
        grid = sorted({round(x) for x in np.linspace(max(low, floor), top, spec.curve_points)})
        extra = {m: [n for n in spec.schedulers if not store.complete(n, m)] for m in grid}
        extra = {m: ns for m, ns in extra.items() if ns}
        if extra:
            return Step("curve", _requests(spec, extra), rounds, extra, searches, store)
    return Step("done", [], rounds, {}, searches, store)


def finish(spec: PlanSpec, bounds: dict[str, Any], results: Iterable[ProbeResult], wall_s: float) -> dict[str, Any]:
    """The plan (see the module's note) from its bounds and every probe result, once :func:`next_requests` is done.

    Schedulers that reach the target nowhere up to the ceiling get ``machines`` None and a note saying
    "not reachable up to N machines"; :func:`unreachable` says whether none reached it.
    """
    step = next_requests(spec, bounds, results)
    if not step.done:
        raise ParameterError(f"the plan is not finished: {len(step.requests)} probes of its {step.phase} are missing")
    target = parse_target(spec.target)
    cluster = base_cluster(spec)
    given = bounds["given"]
    lam = bounds["lambda_star"]
    plans = [_entry(name, step.searches[name], step.store, cluster, spec, given) for name in spec.schedulers]
    return {
        "target": target.text(),
        "statistic": target.statistic,
        "cluster": spec.cluster,
        "resize": spec.resize,
        "workload": spec.workload,
        "load": spec.load,
        "hours": bounds["horizon_s"] / 3600.0,
        "jobs": bounds["jobs"],
        "arrival_rate": lam["arrival_rate"] if lam else None,
        "seeds": list(spec.seeds),
        "given_machines": given,
        "smallest_size": bounds["floor"],
        "max_machines": bounds["ceiling"],
        "bounds": {"compaction": bounds["compaction"], "lambda_star": lam},
        "plans": plans,
        "rounds": step.rounds,
        "probes": sum(len(v) for v in step.store.by.values()),
        "wall_s": wall_s,
        "version": code_version(),
    }


def unreachable(plan: dict[str, Any]) -> str | None:
    """The message when no scheduler of a finished plan reaches its target ("not reachable up to N machines")."""
    if any(p["machines"] is not None for p in plan["plans"]):
        return None
    worst = "; ".join(f"{p['scheduler']}: {p['note']}" for p in plan["plans"])
    return f"target {plan['target']} is not reachable up to {plan['max_machines']:,} machines: {worst}"


def make_plan(spec: PlanSpec, run_probes: RunProbes, progress: Progress | None = None) -> dict[str, Any]:
    """Plan ``spec``: one entry per scheduler under ``plans`` (see the module's note). Units: machines, seconds.

    :func:`prepare`, then :func:`next_requests` and ``run_probes`` until done, then :func:`finish`: the
    steps the platform takes one task at a time. Raises :class:`Unreachable` when no scheduler reaches the target.
    """
    t0 = time.monotonic()
    say = progress or (lambda _msg: None)
    bounds = prepare(spec, say)
    results: list[ProbeResult] = []
    while not (step := next_requests(spec, bounds, results)).done:
        if step.phase == "curve":
            say(f"curve: {len(step.wanted)} more sizes")
        else:
            say(
                f"round {step.rounds}: "
                + ", ".join(f"{size:,} ({', '.join(names)})" for size, names in sorted(step.wanted.items()))
            )
        results.extend(run_probes(step.requests))
    out = finish(spec, bounds, results, time.monotonic() - t0)
    why = unreachable(out)
    if why is not None:
        raise Unreachable(why)
    return out


def _entry(name: str, s: Search, store: _Store, cluster: Any, spec: PlanSpec, given: int) -> dict[str, Any]:
    sizes = sorted(m for (n, m) in store.by if n == name)
    curve = [store.point(name, m) for m in sizes]
    met = {m: store.met(name, m) for m in sizes}
    bad = violations(met)
    answer = s.answer
    entry: dict[str, Any] = {"scheduler": name, "machines": answer, "reachable": answer is not None}
    if answer is None:
        last = store.point(name, s.ceiling)
        why = last.get("errors")
        entry["note"] = (
            f"not reachable up to {s.ceiling:,} machines ({last['max']} at {s.ceiling:,})"
            if not why
            else f"not reachable up to {s.ceiling:,} machines: {next(iter(why.values()))}"
        )
    else:
        entry["counts"] = dict(zip(cluster.config_names, counts_at(cluster, answer, spec.resize).tolist(), strict=True))
        entry["saving_machines"] = given - answer
        entry["saving_fraction"] = (given - answer) / given
        entry["verification"] = {
            "at_answer": store.point(name, answer),
            "one_below": store.point(name, answer - 1) if (name, answer - 1) in store.by else None,
        }
    entry["monotone"] = not bad
    if bad:
        entry["not_monotone"] = bad
        entry["note_monotone"] = (
            "meeting the target is not monotone in size: "
            + "; ".join(f"{v['met']:,} met but {v['failed']:,} failed" for v in bad)
            + " (the answer is the bisection's; a smaller size may also meet)"
        )
    entry["curve"] = curve
    return entry
