"""``simcore capacity``: the smallest cluster that meets a service target, per scheduler (simcore.planning).

Progress on stderr (unless ``--quiet``), the plan as one JSON document on
stdout: one entry per scheduler under ``plans`` with at least ``scheduler``
and ``machines``. A target no size up to ``--max-machines`` meets, for any
scheduler, is an error (exit 2) saying so; for some schedulers only, their
entries say ``not reachable up to N machines``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from simcore import sweep
from simcore.cli.argtypes import add_param_options, finite_float, nonneg_int, positive_int
from simcore.cli.errors import UsageError
from simcore.core.engine import ENGINES
from simcore.planning.target import FIXED_STATISTICS
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param


def add_arguments(p: argparse.ArgumentParser) -> None:
    stats = ", ".join([*FIXED_STATISTICS, "pNN_wait_s"])
    p.description = (
        "Find, per scheduler, the fewest machines of a cluster shape on which a workload meets a wait target in "
        "every seed: bisection over cluster sizes from two lower bounds (compaction of a snapshot of the "
        "workload, and lambda*), with verifying runs at the answer and one machine below."
    )
    p.add_argument(
        "--cluster",
        required=True,
        help="cluster preset name or JSON cluster file: the shape, and the given size the saving is measured against",
    )
    p.add_argument(
        "--resize",
        default="all",
        metavar="all|CONFIG",
        help="how the cluster grows or shrinks: 'all' keeps every configuration's proportion (default); a "
        "configuration's name changes that configuration only, the others as given",
    )
    p.add_argument(
        "--workload",
        required=True,
        help="workload preset (its arrival rate fixed at --load x lambda* of the given cluster, whatever the "
        "size) or trace file (replayed as recorded)",
    )
    p.add_argument(
        "--load",
        type=finite_float,
        default=None,
        help="preset workloads: arrival rate as a fraction of lambda* of the given cluster (default 0.9); "
        "trace files: replay rate (default 1, as recorded)",
    )
    p.add_argument(
        "--hours",
        type=finite_float,
        default=None,
        help="arrival window in hours (default: the preset's; a trace's whole length)",
    )
    p.add_argument(
        "--schedulers",
        "--scheduler",
        dest="schedulers",
        required=True,
        help="comma-separated scheduler names, or 'all'",
    )
    p.add_argument(
        "--seeds",
        "--seed",
        dest="seeds",
        default="0",
        help="random seeds: 0, or 0,1,2, or a range 0-4 (default 0); a size meets the target when every seed does",
    )
    p.add_argument(
        "--target",
        required=True,
        help=f"the service target, STATISTIC<=VALUE, e.g. 'p99_wait_s<=60' or 'mean_wait_s<=0.1'. Statistics "
        f"(exact; waits in seconds, of every arrived job, one never started counted as waiting until the run's "
        f"end): {stats}",
    )
    p.add_argument(
        "--max-machines",
        type=positive_int,
        default=None,
        help="largest size to try (default: 4 x the given cluster, within the setting SIMCORE_MAX_MACHINES; "
        "above that setting is an error)",
    )
    p.add_argument(
        "--curve-points",
        type=nonneg_int,
        default=0,
        help="extra sizes per scheduler for the curve, evenly spaced from the lower bound to the given size "
        "(default 0: the curve is the sizes the bisection probed)",
    )
    p.add_argument("--drain", action="store_true", help="after the arrival window, run until every job finished")
    p.add_argument("--workers", type=positive_int, default=1, help="processes probing in parallel (default 1)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="compiled",
        help="compiled: a built-in scheduler's kernel where it has one (default); python: the reference loop",
    )
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument("--out", metavar="FILE.json", help="also write the plan to this file")
    add_param_options(p, "preset and scheduler parameters", _params())


def _params() -> dict[str, Param]:
    """Every preset's and scheduler's parameters by name, as `simcore sweep` takes them."""
    out: dict[str, Param] = {}
    for registry in (CLUSTERS, WORKLOADS, SCHEDULERS):
        for _, item in registry.items():
            for prm in item.params:
                out.setdefault(prm.name, prm)
    return out


def _progress(quiet: bool) -> Any:
    t0 = time.monotonic()

    def say(msg: str) -> None:
        if not quiet:
            print(f"[capacity] {msg} ({time.monotonic() - t0:.0f} s)", file=sys.stderr, flush=True)

    return say


def main(args: argparse.Namespace) -> int:
    from simcore.cli.errors import check_out_file
    from simcore.planning.local import LocalProbes
    from simcore.planning.plan import make_plan
    from simcore.planning.probe import PlanSpec

    if args.out:
        check_out_file(args.out, "capacity")
    names = (
        SCHEDULERS.names() if args.schedulers == "all" else [x.strip() for x in args.schedulers.split(",") if x.strip()]
    )
    if not names:
        raise UsageError("--schedulers needs at least one scheduler name")
    for n in names:
        SCHEDULERS.get(n)
    given = {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_") and v is not None}
    c, w, s = sweep.split_params(given, args.cluster, args.workload, names)
    spec = PlanSpec(
        cluster=args.cluster,
        workload=args.workload,
        schedulers=names,
        target=args.target,
        seeds=sweep.parse_seeds(args.seeds),
        resize=args.resize,
        load=args.load,
        hours=args.hours,
        drain=args.drain,
        max_machines=args.max_machines,
        curve_points=args.curve_points,
        cluster_params=c,
        workload_params=w,
        scheduler_params=s,
        engine=args.engine,
    )
    say = _progress(args.quiet)
    with LocalProbes(spec, args.workers) as run_probes:
        plan = make_plan(spec, run_probes, say)
    plan["workers"] = args.workers
    for p in plan["plans"]:
        if p["machines"] is None:
            print(f"simcore: {p['scheduler']}: {p['note']}", file=sys.stderr)
        if not p["monotone"]:
            print(f"simcore: {p['scheduler']}: {p['note_monotone']}", file=sys.stderr)
    text = json.dumps(plan)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text + "\n")
    print(text)
    return 0
