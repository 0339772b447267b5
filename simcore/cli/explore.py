"""``simcore explore``: the genetic search over staged schedulers (simcore.dse.explore), in local processes.

Prints one progress line per generation on stderr (unless ``--quiet``) and a
JSON summary on stdout; ``--out DIR`` also writes every generation's
individuals and fitness (generations.csv), the elite per generation
(elites.csv) and everything as JSON (search.json). The same seed gives the
same generations whatever ``--workers``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from simcore import sweep
from simcore.cli.argtypes import add_param_options, finite_float, positive_int, seed_int
from simcore.cli.errors import UsageError
from simcore.core.engine import ENGINES
from simcore.dse.explore.fitness import METRIC_NAMES
from simcore.dse.explore.search import DEFAULT_GENERATIONS, DEFAULT_POPULATION, SearchResult, SearchSettings
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers.base import Param


def _preset_params() -> dict[str, Param]:
    out: dict[str, Param] = {}
    for _, cp in CLUSTERS.items():
        for p in cp.params:
            out.setdefault(p.name, p)
    for _, wp in WORKLOADS.items():
        for p in wp.params:
            out.setdefault(p.name, p)
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cluster", required=True, help="cluster preset name or JSON cluster file")
    p.add_argument("--workload", required=True, help="workload preset name or trace file")
    p.add_argument(
        "--metric",
        default="trt",
        choices=METRIC_NAMES,
        help="objective to minimise: mean task response time (trt), job makespan (jms), "
        "normalised job-schedule length (njsl) or job waiting time (jwt); default trt",
    )
    p.add_argument(
        "--population",
        type=positive_int,
        default=DEFAULT_POPULATION,
        help=f"individuals per generation (default {DEFAULT_POPULATION})",
    )
    p.add_argument(
        "--generations",
        type=positive_int,
        default=DEFAULT_GENERATIONS,
        help=f"most generations; the search stops earlier when it converges (default {DEFAULT_GENERATIONS})",
    )
    p.add_argument("--seed", type=seed_int, default=0, help="seed of the search, 0 to 2^32-1 (default 0)")
    p.add_argument(
        "--sim-seed",
        type=seed_int,
        default=None,
        help="seed of the simulations: the generated workload and the Random atoms (default: --seed)",
    )
    p.add_argument(
        "--load",
        type=finite_float,
        default=None,
        help="preset workloads: arrival rate as a fraction of lambda* (default 0.9); trace files: replay rate "
        "(default 1, as recorded), as in simcore run",
    )
    p.add_argument(
        "--hours",
        type=finite_float,
        default=None,
        help="arrival window in hours (default: the preset's; a trace's whole length)",
    )
    p.add_argument("--workers", type=positive_int, default=1, help="local processes evaluating individuals (default 1)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="compiled",
        help="compiled: the staged scheduler's kernel (default); python: its Python specification (the same "
        "results, slower)",
    )
    p.add_argument("--out", metavar="DIR", help="write generations.csv, elites.csv and search.json into DIR")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    add_param_options(p, "preset parameters", _preset_params())


def _source(kind: str, name: str, params: dict[str, Any], files: dict[str, Path]) -> dict[str, Any]:
    """A scenario part: a preset with its parameters, or a file (by plain name, its path in ``files``)."""
    registry = CLUSTERS if kind == "cluster" else WORKLOADS
    if name in registry:
        return {"preset": name, "params": params}
    path = Path(name)
    if params:
        raise UsageError(f"{kind} file {name!r} takes no parameters (got {sorted(params)})")
    key = f"{kind}_{path.name}"
    files[key] = path
    return {"file": key, "name": path.name}


def _route(given: dict[str, Any], cluster: str, workload: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Preset parameters to the cluster's and the workload's; one that neither takes is refused by name."""
    owners = sweep.param_owners(cluster, workload, [])
    out: dict[str, dict[str, Any]] = {"cluster": {}, "workload": {}}
    for k, v in given.items():
        if k not in owners:
            raise UsageError(f"--{k.replace('_', '-')} does not apply to cluster {cluster!r} or workload {workload!r}")
        for o in owners[k]:
            out[o.kind][k] = v
    return out["cluster"], out["workload"]


def _check_out_dir(path: str) -> None:
    if os.path.exists(path) and not os.path.isdir(path):
        raise UsageError(f"--out {path!r} is a file; explore writes a directory of files")
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise UsageError(f"--out {path!r}: directory {parent!r} does not exist")
    if not os.access(parent if not os.path.isdir(path) else path, os.W_OK):
        raise UsageError(f"--out {path!r} is not writable")


def _printer(settings: SearchSettings) -> Any:
    def show(rec: Any, result: SearchResult) -> None:
        prev = result.generations[-2].elite_policy if len(result.generations) > 1 else None
        line = (
            f"[explore] generation {rec.index + 1}/{settings.generations}: elite {settings.metric} "
            f"{rec.elite_fitness:.6g}, {rec.new_evaluations} new simulation(s), {result.wall_s:.1f} s"
        )
        if rec.elite_policy != prev:
            line += f"; elite {rec.elite_policy}"
        if rec.explanation is not None:
            line += f"; {rec.explanation.text()}"
        if result.stop is not None:
            line += f"; stop: {result.stop}"
        print(line, file=sys.stderr, flush=True)

    return show


def main(args: argparse.Namespace) -> int:
    from simcore.dse.explore.pool import LocalEvaluator, check_scenario
    from simcore.dse.explore.report import write_outputs
    from simcore.dse.explore.search import run_search
    from simcore.version import code_version

    settings = SearchSettings(args.metric, args.population, args.generations, args.seed).check()
    if args.out:
        _check_out_dir(args.out)
    for kind, name in (("cluster", args.cluster), ("workload", args.workload)):
        registry = CLUSTERS if kind == "cluster" else WORKLOADS
        if name not in registry and not Path(name).is_file():
            registry.get(name)  # an unknown preset and no such file: the message lists the presets
    given = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_") and v is not None}
    c, w = _route(given, args.cluster, args.workload)
    files: dict[str, Path] = {}
    scenario = {
        "cluster": _source("cluster", args.cluster, c, files),
        "workload": _source("workload", args.workload, w, files),
        # The same defaults as `simcore run`: a trace replays as recorded unless --load says otherwise.
        "load": args.load if args.load is not None else (0.9 if args.workload in WORKLOADS else 1.0),
        "hours": args.hours,
    }
    sim_seed = args.seed if args.sim_seed is None else args.sim_seed
    scenario = check_scenario(scenario, sim_seed)
    holder: dict[str, SearchResult] = {}

    def on_generation(rec: Any, result: SearchResult) -> None:
        holder["result"] = result
        if not args.quiet:
            show(rec, result)

    show = _printer(settings)
    with LocalEvaluator(scenario, sim_seed, args.workers, files, engine=args.engine) as evaluator:
        graph = evaluator.workload.graph
        meta = {
            "cluster": args.cluster,
            "workload": args.workload,
            "load": scenario["load"],
            "hours": evaluator.workload.horizon_s / 3600.0,
            "sim_seed": sim_seed,
            "machines": evaluator.cluster.n_machines,
            "tasks": evaluator.workload.n_jobs,
            "jobs": graph.n_jobs if graph is not None else evaluator.workload.n_jobs,
            "version": code_version(),
        }
        try:
            result = run_search(settings, evaluator, on_generation)
        except KeyboardInterrupt:
            partial = holder.get("result")
            if args.out and partial is not None and partial.generations:
                partial.stop = "interrupted"
                write_outputs(partial, args.out, {**meta, "settings": settings.to_dict()})
            raise
    if args.out:
        write_outputs(result, args.out, {**meta, "settings": settings.to_dict()})
    print(json.dumps({**meta, **result.summary()}))
    return 0
