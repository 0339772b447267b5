"""``simcore packing``: the four techniques of Verma, Korupolu and Wilkes on one snapshot (simcore.packing)."""

from __future__ import annotations

import argparse
import json
from typing import Any

from simcore.cli.argtypes import seed_int, trials_int
from simcore.cli.errors import UsageError, check_out_file
from simcore.core.limits import MAX_TRIALS


def add_parser(subparsers: Any) -> None:
    """``simcore packing <technique>``: the four techniques of Verma, Korupolu and Wilkes on one snapshot."""
    p = subparsers.add_parser("packing", help="packing efficiency of one snapshot (Verma, Korupolu, Wilkes)")
    p.add_argument("technique", choices=("utilisation", "holes", "inflation", "compaction", "compare"))
    p.add_argument("--cluster", default="google-2011", help="cluster preset or file (default google-2011)")
    p.add_argument("--trace", nargs="+", metavar="FILE", help="Google 2011 task_events files: tasks running at --time")
    p.add_argument(
        "--min-priority",
        type=int,
        help="with --trace: keep only tasks of at least this priority (9: production work, priorities 9-11, "
        "as the paper's snapshots held)",
    )
    p.add_argument(
        "--machine-events",
        metavar="FILE",
        help="with --trace and --placed-by as-is: the machines alive at --time and their capacities (default: "
        "the machines the tasks name, given the cluster's configurations, the largest to the most loaded)",
    )
    p.add_argument("--workload", help="workload preset or file: a run's state at --time (with --scheduler)")
    p.add_argument("--scheduler", help="scheduler of the run (with --workload)")
    p.add_argument(
        "--load",
        type=float,
        default=None,
        help="run load: fraction of lambda* for presets (default 0.9), replay rate for trace files (default 1)",
    )
    p.add_argument("--hours", type=float, default=0.1, help="run length in hours (default 0.1)")
    p.add_argument("--time", type=float, default=0.0, help="snapshot time in seconds (default 0)")
    p.add_argument(
        "--placed-by",
        default="arrival",
        help="repack the snapshot first: an ordering (arrival, cpu, mem, sum), a scheduler name, or 'as-is' "
        "(a run's own placement; with --trace, the machines the trace's SCHEDULE rows name) (default arrival)",
    )
    p.add_argument("--ordering", default="arrival", help="ordering inflation and compaction repack with")
    p.add_argument("--units", default="", help="hole unit sizes, fractions of the median machine (default Figure 1's)")
    p.add_argument("--mode", default="horizontal", help="inflation: horizontal or vertical")
    p.add_argument("--conforming", action="store_true", help="inflation: inflate conforming jobs only")
    p.add_argument("--factors", default="", help="inflation scale factors (default 1.0..2.0 step 0.05)")
    p.add_argument("--tau", default="", help="compaction pending thresholds in [0, 1) (default Figure 3's 0..1%%)")
    p.add_argument("--trials", type=trials_int, default=11, help=f"compaction trials, 1 to {MAX_TRIALS} (default 11)")
    p.add_argument("--seed", type=seed_int, default=0, help="seed, 0 to 2^32-1 (default 0)")
    p.add_argument("--out", metavar="FILE.csv", help="write the technique's series as CSV")
    p.set_defaults(_packing=True)


def _floats(text: str, what: str) -> list[float]:
    try:
        return [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise UsageError(f"--{what}: expected comma-separated numbers, got {text!r}") from None


def _packing_snapshot(args: argparse.Namespace) -> Any:
    import numpy as np

    from simcore import api
    from simcore.packing import ORDERINGS, pack, sources

    cluster = api.resolve_cluster(args.cluster)
    if args.machine_events and not (args.trace and args.placed_by == "as-is"):
        raise UsageError("--machine-events applies to --trace with --placed-by as-is")
    if args.trace and args.placed_by == "as-is":
        from simcore.packing.trace_placement import google2011_as_is

        return google2011_as_is(
            list(args.trace),
            cluster,
            args.time,
            machine_events=args.machine_events,
            min_priority=args.min_priority,
        )
    if args.trace:
        snap = sources.from_google2011(list(args.trace), cluster, args.time, min_priority=args.min_priority)
    elif args.min_priority is not None:
        raise UsageError("--min-priority applies to --trace (a Google 2011 snapshot)")
    elif args.workload:
        if not args.scheduler:
            raise UsageError("--workload needs --scheduler (the run whose state at --time is the snapshot)")
        out = api.run(
            api.RunSpec(args.cluster, args.workload, args.scheduler, seed=args.seed, load=args.load, hours=args.hours)
        )
        snap = sources.from_result(out.result, out.workload, out.cluster, args.time)
    else:
        raise UsageError("give a snapshot source: --trace FILE... or --workload NAME --scheduler NAME")
    if args.placed_by == "as-is":
        return snap
    if args.placed_by in ORDERINGS:
        return pack(snap, args.placed_by)
    from simcore.core.model import Workload

    wl = Workload(
        "snapshot",
        snap.resources,
        np.zeros(snap.n_tasks),
        snap.request,
        np.ones(snap.n_tasks),
        np.full(snap.n_tasks, -1),
        1.0,
    )
    return sources.from_policy(cluster, wl, args.placed_by, seed=args.seed)


def _write_rows(path: str, rows: list[dict[str, Any]]) -> None:
    import csv

    from simcore.sweep.report import flatten

    flat = [flatten(r) for r in rows]
    keys = list(dict.fromkeys(k for r in flat for k in r))
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=keys)
        w.writeheader()
        w.writerows(flat)


def run(args: argparse.Namespace) -> int:
    import numpy as np

    from simcore import packing as pk
    from simcore.packing.compaction import FIGURE3_TAUS, check_tau
    from simcore.packing.inflation import FIGURE2_FACTORS, knee
    from simcore.packing.utilisation import FIGURE1_UNITS, check_unit

    if args.out:
        check_out_file(args.out, "packing")
    units = _floats(args.units, "units") or list(FIGURE1_UNITS)
    for u in units:
        check_unit(u)
    taus = _floats(args.tau, "tau") or list(FIGURE3_TAUS)
    for t in taus:
        check_tau(t)
    factors = _floats(args.factors, "factors") or list(FIGURE2_FACTORS)
    if args.ordering not in pk.ORDERINGS:
        raise UsageError(f"unknown ordering {args.ordering!r}; valid orderings: {', '.join(pk.ORDERINGS)}")
    snap = _packing_snapshot(args)
    rng = np.random.default_rng(args.seed)
    head = {
        "technique": args.technique,
        "machines": snap.n_machines,
        "tasks": snap.n_tasks,
        "pending": snap.n_pending,
        "snapshot": snap.meta,
    }
    rows: list[dict[str, Any]]
    if args.technique == "utilisation":
        rows = [pk.aggregate_utilisation(snap)]
        summary = {**head, "utilisation": rows[0]}
    elif args.technique == "holes":
        rows = pk.hole_filling_sweep(snap, units)
        summary = {**head, "utilisation": pk.aggregate_utilisation(snap), "holes": rows}
    elif args.technique == "inflation":
        steps = pk.inflate(
            snap, factors, mode=args.mode, conforming_only=args.conforming, ordering=args.ordering, rng=rng
        )
        rows = [s.to_dict() for s in steps]
        summary = {**head, "mode": args.mode, "conforming_only": args.conforming, "knee": knee(steps), "steps": rows}
    elif args.technique == "compaction":
        res = pk.compact(snap, taus, trials=args.trials, ordering=args.ordering, rng=rng)
        rows = [res.summary(t) for t in res.taus]
        summary = {**head, "copies": res.copies, "compaction": rows}
    else:
        rows = []
        for o in pk.ORDERINGS:
            s = pk.pack(snap, o)
            r = np.random.default_rng(args.seed)
            holes = {str(u): pk.hole_filling(s, u)["utilisation"] for u in (0.05, 0.3, 0.6)}
            hz = knee(pk.inflate(s, factors, ordering=o, conforming_only=True, rng=r))
            vt = knee(pk.inflate(s, factors, ordering=o, mode="vertical", rng=r))
            comp = pk.compact(s, [0.004], trials=args.trials, ordering=o, rng=r).summary(0.004)
            rows.append(
                {
                    "ordering": o,
                    "pending": s.n_pending,
                    "utilisation": pk.aggregate_utilisation(s),
                    "holes": holes,
                    "horizontal_conforming_knee": hz,
                    "vertical_knee": vt,
                    "compaction_tau_0.4%": comp["p90_fraction"],
                }
            )
        summary = {**head, "orderings": rows}
    if args.out:
        _write_rows(args.out, rows)
    print(json.dumps(summary))
    return 0


# -- end packing ---------------------------------------------------------------------------------------
