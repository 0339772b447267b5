"""``simcore bench``: its options, and the report it prints (the measuring is simcore.bench.runs)."""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import fields
from typing import Any

from simcore.bench import runs


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--schedulers",
        "--scheduler",
        dest="schedulers",
        default="all",
        help="comma-separated scheduler names, or 'all' (default)",
    )
    p.add_argument(
        "--scenarios",
        default=",".join(runs.DEFAULT_SCENARIOS),
        help="comma-separated: google, trace, paper (one paper-scale LoTES Figure 11 point: 1,000 machines per "
        "configuration, Phi 0.015, --paper-hours; only when named), month (google-2011 for 30 days with "
        "--month-jobs jobs, a month of the Google 2011 trace's task count; only when named), packing, "
        "packing-continuous (compaction "
        "with quantised / continuous requests, simcore.bench.packing), staged (the staged scheduler's policies "
        "on 10,000 DAG tasks; simcore.bench.staged), wfcommons (reading a 100,000-task instance, simulating "
        "workflows on dse-2020; simcore.bench.workflows), explore (one generation of the design-space search, "
        "simcore.bench.explore); default all but paper and month",
    )
    p.add_argument(
        "--hours",
        type=float,
        default=0.1,
        help="arrival window of the google scenario in hours (default 0.1: ~307,000 jobs)",
    )
    p.add_argument("--load", type=float, default=0.9, help="load as a fraction of lambda* (default 0.9)")
    p.add_argument(
        "--machines-per-config",
        type=int,
        default=1000,
        help="machines per configuration of google-balanced (default 1000: 10,000 machines)",
    )
    p.add_argument("--trace-jobs", type=int, default=100_000, help="jobs in the trace scenario (default 100,000)")
    p.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    p.add_argument(
        "--max-seconds",
        type=float,
        default=300.0,
        help="stop a run after this many wall seconds and report its rate so far (default 300)",
    )
    p.add_argument(
        "--big", action="store_true", help=f"also run the {runs.BIG_JOBS:,}-job memory check (several minutes)"
    )
    p.add_argument(
        "--big-jobs", type=int, default=runs.BIG_JOBS, help=f"jobs in the --big check (default {runs.BIG_JOBS:,})"
    )
    p.add_argument("--big-scheduler", default="greedy", help="scheduler of the --big check (default greedy)")
    p.add_argument(
        "--staged-tasks", type=int, default=10_000, help="tasks in the staged scenario's workload (default 10,000)"
    )
    p.add_argument(
        "--staged-machines", type=int, default=100, help="machines of the staged scenario's cluster (default 100)"
    )
    p.add_argument(
        "--paper-hours",
        type=float,
        default=4.0,
        help="arrival window of the paper scenario in hours (default 4: ~1.3 million jobs; the figure uses 100)",
    )
    p.add_argument(
        "--month-jobs",
        type=int,
        default=runs.MONTH_JOBS,
        help=f"jobs in the month scenario (default {runs.MONTH_JOBS:,}: the Google 2011 trace's tasks in a month)",
    )
    p.add_argument(
        "--engine",
        choices=("compiled", "python"),
        default="compiled",
        help="compiled (a built-in's kernel where it has one; default) or python (the reference loop)",
    )
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.add_argument(
        "--save",
        metavar="FILE",
        help="also write the results as JSON to FILE, with the date, command, code version and load "
        "(make bench: bench/results.json, which the documentation's speed tables are made from)",
    )
    p.add_argument("--child", help=argparse.SUPPRESS)


def main(args: argparse.Namespace) -> int:
    if args.child:
        print(json.dumps(runs.child(json.loads(args.child))), flush=True)
        return 0
    opts = runs.BenchOptions(**{f.name: getattr(args, f.name) for f in fields(runs.BenchOptions)})
    opts.check()
    specs = runs.plan_specs(opts)
    load_before = os.getloadavg()
    results = []
    for spec in specs:
        if not args.json:
            print(
                f"running {spec['scenario']:<7} {spec.get('label', spec['scheduler']):<10} ...",
                file=sys.stderr,
                flush=True,
            )
        results.append(runs.run_child(spec))
    load_after = os.getloadavg()
    report: dict[str, Any] = {
        "results": results,
        "load_average_before": list(load_before),
        "load_average_after": list(load_after),
        "cpu_count": os.cpu_count(),
        "python": sys.version.split()[0],
    }
    chosen = opts.scenarios.split(",")
    if "packing" in chosen:  # issue 11: Algorithm 3, 10,000 machines, 100,000 tasks, 11 trials
        from simcore.bench.packing import compaction_benchmark

        report["packing"] = compaction_benchmark(machines_per_config=opts.machines_per_config)
    if "wfcommons" in chosen:  # issue 13: WfCommons read speed, workflow simulation speed
        from simcore.bench.workflows import wfcommons_benchmark

        report["wfcommons"] = wfcommons_benchmark(seed=opts.seed)
    if "packing-continuous" in chosen:  # the same with every task its own request (a Tetris run's state)
        from simcore.bench.packing import continuous_benchmark

        report["packing-continuous"] = continuous_benchmark(seed=opts.seed)
    if "explore" in chosen:  # issue 13: 32 individuals, 100 machines, 10,000 tasks, 2 workers
        from simcore.bench.explore import generation_benchmark

        report["explore"] = generation_benchmark()
    if args.save:
        from simcore.bench.report import save

        saved = save(report, args.save, opts)
        print(f"results saved to {saved}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        runs.print_table(report)
        for key in ("packing", "packing-continuous"):
            if key in report:
                print(f"{key} compaction: {json.dumps(report[key])}")
        if "wfcommons" in report:
            print(f"wfcommons: {json.dumps(report['wfcommons'])}")
        if "explore" in report:
            print(f"explore generation: {json.dumps(report['explore'])}")
    return 0
