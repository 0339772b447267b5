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


def make_plan(spec: PlanSpec, run_probes: RunProbes, progress: Progress | None = None) -> dict[str, Any]:
    """Plan ``spec``: one entry per scheduler under ``plans`` (see the module's note). Units: machines, seconds."""
    t0 = time.monotonic()
    say = progress or (lambda _msg: None)
    check_spec(spec)
    target = parse_target(spec.target)
    cluster = base_cluster(spec)
    check_mode(cluster, spec.resize)
    given = cluster.n_machines
    floor = smallest_size(cluster, spec.resize)
    ceiling = ceiling_of(spec, given)
    if ceiling < floor:
        raise ParameterError(f"--max-machines {ceiling} is below the smallest resize of the cluster ({floor})")
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
    searches = {name: Search(floor, ceiling, low, high) for name in spec.schedulers}
    store = _Store(spec.seeds)
    rounds = 0

    def run_round(wanted: dict[int, list[str]]) -> None:
        requests = [
            ProbeRequest(size, seed, tuple(names)) for size, names in sorted(wanted.items()) for seed in spec.seeds
        ]
        for r in run_probes(requests):
            store.add(r)

    while True:
        wanted: dict[int, list[str]] = {}
        for name, s in searches.items():
            for size in s.next_sizes():
                if store.complete(name, size):
                    s.record(size, store.met(name, size))
                else:
                    wanted.setdefault(size, []).append(name)
        if not wanted:
            if all(s.done for s in searches.values()):
                break
            continue
        rounds += 1
        say(f"round {rounds}: " + ", ".join(f"{size:,} ({', '.join(names)})" for size, names in sorted(wanted.items())))
        run_round(wanted)
        for size, names in wanted.items():
            for name in names:
                searches[name].record(size, store.met(name, size))
    if spec.curve_points:
        top = max(given, high, *(s.answer or 0 for s in searches.values()))
        grid = sorted({round(x) for x in np.linspace(max(low, floor), top, spec.curve_points)})
        extra = {m: [n for n in spec.schedulers if not store.complete(n, m)] for m in grid}
        extra = {m: ns for m, ns in extra.items() if ns}
        if extra:
            say(f"curve: {len(extra)} more sizes")
            run_round(extra)
    plans = [_entry(name, searches[name], store, cluster, spec, given) for name in spec.schedulers]
    out = {
        "target": target.text(),
        "statistic": target.statistic,
        "cluster": spec.cluster,
        "resize": spec.resize,
        "workload": spec.workload,
        "load": spec.load,
        "hours": workload.horizon_s / 3600.0,
        "jobs": workload.n_jobs,
        "arrival_rate": lam["arrival_rate"] if lam else None,
        "seeds": list(spec.seeds),
        "given_machines": given,
        "smallest_size": floor,
        "max_machines": ceiling,
        "bounds": {"compaction": compaction, "lambda_star": lam},
        "plans": plans,
        "rounds": rounds,
        "probes": sum(len(v) for v in store.by.values()),
        "wall_s": time.monotonic() - t0,
        "version": code_version(),
    }
    if all(p["machines"] is None for p in plans):
        worst = "; ".join(f"{p['scheduler']}: {p['note']}" for p in plans)
        raise Unreachable(f"target {target.text()} is not reachable up to {ceiling:,} machines: {worst}")
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
