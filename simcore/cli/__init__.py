"""The ``simcore`` command line: run, compare, sweep, presets, bench, import, rerun, explore, capacity, packing.

Every user error ends as a one-line message on stderr and exit status 2,
never a traceback. Options for preset and scheduler parameters (``--phi``,
``--omega``, ``--machines-per-config``...) are generated from the
registries, so a new preset's parameters appear here by themselves.
"""

from __future__ import annotations

import argparse
import importlib
import json
import sys
import time
from collections.abc import Sequence
from contextlib import closing
from typing import Any, NoReturn

from simcore import sweep
from simcore.cli import packing
from simcore.cli.argtypes import add_param_options, finite_float, positive_int, seed_int
from simcore.cli.errors import UsageError, check_out_file
from simcore.cli.progress import progress_printer
from simcore.core.engine import DEFAULT_SAMPLES, ENGINES
from simcore.core.errors import SchedulingError, SimcoreError
from simcore.presets import CLUSTERS, WORKLOADS, workload_provides
from simcore.schedulers import SCHEDULERS
from simcore.schedulers.base import Param, unmet_needs
from simcore.sweep import report as sweep_report


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _all_params() -> dict[str, Param]:
    out: dict[str, Param] = {}
    for _, cp in CLUSTERS.items():
        for p in cp.params:
            out.setdefault(p.name, p)
    for _, wp in WORKLOADS.items():
        for p in wp.params:
            out.setdefault(p.name, p)
    for _, sc in SCHEDULERS.items():
        for p in sc.params:
            out.setdefault(p.name, p)
    return out


def _add_scenario_args(p: argparse.ArgumentParser, params: dict[str, Param], *, many_seeds: bool = False) -> None:
    # A sweep may vary the presets instead (--vary cluster=A,B), so there they are checked in _cmd_sweep.
    p.add_argument("--cluster", required=not many_seeds, help="cluster preset name or JSON cluster file")
    p.add_argument(
        "--workload", required=not many_seeds, help="workload preset name or trace file (CSV, optionally .gz)"
    )
    if many_seeds:
        p.add_argument(
            "--seeds", "--seed", dest="seeds", default="0", help="random seeds: 0, or 0,1,2, or a range 0-4 (default 0)"
        )
    else:
        p.add_argument("--seed", type=seed_int, default=0, help="random seed, 0 to 2^32-1 (default 0)")
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="compiled",
        help="compiled: a built-in scheduler's kernel where it has one (default); python: the reference "
        "Python loop (the same schedule, slower)",
    )
    p.add_argument(
        "--load",
        type=finite_float,
        default=None,
        help="preset workloads: arrival rate as a fraction of the allocation LP bound lambda* (default 0.9); "
        "trace files: replay rate, inter-arrival times divided by it (1.2 = the same trace at 1.2x; "
        "default 1, as recorded)",
    )
    p.add_argument(
        "--hours",
        type=finite_float,
        default=None,
        help="arrival window in hours (default: the workload preset's; whole trace for files)",
    )
    p.add_argument(
        "--drain", action="store_true", help="after the arrival window, keep simulating until every job has finished"
    )
    p.add_argument(
        "--progress",
        action="store_true",
        help="print progress to stderr" + (" (runs done, elapsed time)" if many_seeds else ""),
    )
    add_param_options(p, "preset and scheduler parameters", params)


def _job_records(text: str) -> str:
    from simcore.records import parse_policy

    try:
        return parse_policy(text, "--job-records")
    except SimcoreError as e:
        raise argparse.ArgumentTypeError(str(e).removeprefix("--job-records ")) from None


def _add_job_records_arg(p: argparse.ArgumentParser) -> None:
    from simcore.records import AUTO_ALL_UP_TO, AUTO_SAMPLE

    p.add_argument(
        "--job-records",
        type=_job_records,
        default="auto",
        metavar="{auto,all,none,sample:N}",
        help=f"which per-job records jobs.csv keeps: all, a seeded sample of N jobs, or none (no jobs.csv); "
        f"default auto: all up to {AUTO_ALL_UP_TO:,} jobs, a sample of {AUTO_SAMPLE:,} above. The summary and "
        f"series are computed from every job whatever is kept; summary.json's records entry says what was",
    )


def _add_samples_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--samples",
        type=samples_int,
        default=DEFAULT_SAMPLES,
        help=f"samples of the queue-length and utilisation series (queue.csv, utilization.csv; default "
        f"{DEFAULT_SAMPLES}); charts only: the summary's utilisation and queue lengths are exact",
    )


def samples_int(text: str) -> int:
    """A sample count (argparse ``type=``): an integer from 2 (the series' two ends) to api.MAX_SAMPLES."""
    from simcore.api import MAX_SAMPLES

    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"samples must be an integer, got {text!r}") from None
    if not 2 <= n <= MAX_SAMPLES:
        raise argparse.ArgumentTypeError(f"samples must be between 2 and {MAX_SAMPLES:,}, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    params = _all_params()
    parser = _Parser(prog="simcore", description="Simulate schedulers on heterogeneous datacenter clusters.")
    from simcore.version import code_version

    parser.add_argument("--version", action="version", version=f"simcore {code_version()}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    run = sub.add_parser("run", help="run one scheduler and print a JSON summary")
    _add_scenario_args(run, params)
    run.add_argument("--scheduler", required=True, help="scheduler name (see `simcore presets`)")
    run.add_argument("--out", help="directory for per-job results and series (CSV and JSON)")
    _add_samples_arg(run)
    _add_job_records_arg(run)

    cmp_ = sub.add_parser("compare", help="run several schedulers on the same workload; one JSON line each")
    _add_scenario_args(cmp_, params)
    cmp_.add_argument(
        "--schedulers",
        "--scheduler",
        dest="schedulers",
        required=True,
        help="comma-separated scheduler names, or 'all'",
    )
    cmp_.add_argument("--out", help="directory; results go to DIR/<scheduler>/")
    _add_samples_arg(cmp_)
    _add_job_records_arg(cmp_)

    swp = sub.add_parser("sweep", help="run a grid of parameter values x schedulers x seeds; one JSON line each")
    _add_scenario_args(swp, params, many_seeds=True)
    swp.add_argument(
        "--schedulers",
        "--scheduler",
        dest="schedulers",
        required=True,
        help="comma-separated scheduler names, or 'all'",
    )
    swp.add_argument(
        "--vary",
        action="append",
        default=[],
        metavar="NAME=V1,V2,...",
        help="a parameter and its values (load, hours, cluster, workload, or any preset or scheduler parameter): "
        "a list (phi=0,0.003,0.006), a range START:STOP:STEP (phi=0:0.015:0.003) or START:STOP:xFACTOR "
        "(hours=1:100:x10); repeat for a grid",
    )
    swp.add_argument("--workers", type=positive_int, default=1, help="processes to run in (default 1)")
    swp.add_argument(
        "--table",
        action="store_true",
        help="print a table (mean/min/max over seeds per point and scheduler) instead of JSON lines",
    )
    swp.add_argument(
        "--metric",
        help="summary key the table shows (default mean_response_s; nested keys dotted, e.g. utilization.cpu)",
    )
    swp.add_argument("--out", metavar="FILE.csv", help="also write every run's summary as a CSV row")

    pre = sub.add_parser("presets", help="list clusters, workloads and schedulers")
    pre.add_argument("--json", action="store_true", help="machine-readable output")

    for name, module, text in (
        ("bench", "simcore.cli.bench", "print simulation speed per scheduler"),
        ("import", "simcore.cli.importer", "convert a real trace to the project's format"),
        ("rerun", "simcore.cli.archive", "re-run an experiment archive"),
        ("explore", "simcore.cli.explore", "search the design space of staged schedulers (genetic search)"),
        ("capacity", "simcore.cli.capacity", "the smallest cluster that meets a wait target, per scheduler"),
    ):
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        sp = sub.add_parser(name, help=text)
        mod.add_arguments(sp)
        sp.set_defaults(_module=mod)
    packing.add_parser(sub)
    return parser


def _given_params(args: argparse.Namespace) -> dict[str, Any]:
    return {k[len("param_") :]: v for k, v in vars(args).items() if k.startswith("param_") and v is not None}


def _split_params(
    args: argparse.Namespace, cluster: str, workload: str, schedulers: list[str]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    return sweep.split_params(_given_params(args), cluster, workload, schedulers)


def _run_one(
    args: argparse.Namespace, scheduler: str, c: dict[str, Any], w: dict[str, Any], s: dict[str, Any], out: str | None
) -> dict[str, Any]:
    from simcore import api

    spec = api.RunSpec(
        cluster=args.cluster,
        workload=args.workload,
        scheduler=scheduler,
        seed=args.seed,
        load=args.load,
        hours=args.hours,
        drain=args.drain,
        cluster_params=c,
        workload_params=w,
        scheduler_params=s,
        engine=args.engine,
        samples=args.samples,
    )
    outcome = api.run(spec, progress=progress_printer(scheduler) if args.progress else None)
    if out:
        outcome.write(out, args.job_records)
    return outcome.summary


def _cmd_run(args: argparse.Namespace) -> int:
    SCHEDULERS.get(args.scheduler)
    c, w, s = _split_params(args, args.cluster, args.workload, [args.scheduler])
    print(json.dumps(_run_one(args, args.scheduler, c, w, s, args.out)))
    return 0


def _scheduler_names(text: str) -> list[str]:
    names = SCHEDULERS.names() if text == "all" else [x.strip() for x in text.split(",") if x.strip()]
    if not names:
        raise UsageError("--schedulers needs at least one scheduler name")
    for n in names:
        SCHEDULERS.get(n)
    return names


def _able_schedulers(args: argparse.Namespace, names: list[str]) -> list[str]:
    """``names`` without the schedulers whose declared needs the workload does not meet.

    With ``--schedulers all`` those are skipped with the reason; a scheduler named
    explicitly is an error with the reason.
    """
    if args.workload in WORKLOADS:
        provides, wname = workload_provides({"preset": args.workload})
    else:
        provides, wname = workload_provides({"file": args.workload})
    out = []
    for n in names:
        why = unmet_needs(SCHEDULERS.get(n), provides, wname)
        if why is None:
            out.append(n)
        elif args.schedulers == "all":
            print(f"simcore: skipping {n}: {why}", file=sys.stderr)
        else:
            raise UsageError(why)
    return out


def _cmd_compare(args: argparse.Namespace) -> int:
    names = _able_schedulers(args, _scheduler_names(args.schedulers))
    c, w, s = _split_params(args, args.cluster, args.workload, names)
    ran = 0
    for n in names:
        out = f"{args.out}/{n}" if args.out else None
        try:
            summary = _run_one(args, n, c, w, s, out)
        except SimcoreError as e:
            # 'all' includes schedulers built for another setting (the profile study's need
            # run-time profiles): skip those with the reason rather than stop the comparison.
            if args.schedulers != "all":
                raise
            print(f"simcore: skipping {n}: {e}", file=sys.stderr)
            continue
        print(json.dumps(summary), flush=True)
        ran += 1
    if ran == 0:
        raise UsageError("no scheduler could run this scenario")
    return 0


def _sweep_progress() -> Any:
    t0 = time.monotonic()

    def show(done: int, total: int) -> None:
        elapsed = time.monotonic() - t0
        eta = f", ETA {elapsed * (total - done) / done:.0f}s" if 0 < done < total else ""
        print(f"[sweep] {done}/{total} runs done, {elapsed:.0f}s elapsed{eta}", file=sys.stderr, flush=True)

    return show


def _sweep_presets(args: argparse.Namespace) -> tuple[str, str]:
    """--cluster and --workload, or the first value of a ``--vary cluster=``/``workload=`` axis."""
    out = []
    for name in ("cluster", "workload"):
        given = getattr(args, name)
        varied = [t for t in args.vary if t.partition("=")[0].strip() == name]
        if given is not None and varied:
            raise UsageError(f"--{name} is both fixed and varied; drop --{name} or --vary {name}")
        if given is None and not varied:
            raise UsageError(f"the following arguments are required: --{name} (or --vary {name}=A,B)")
        out.append(given if given is not None else varied[0].partition("=")[2].split(",")[0].strip())
    return out[0], out[1]


def sweep_plan(args: argparse.Namespace) -> sweep.Sweep:
    """The grid of parsed ``simcore sweep`` arguments (a reproduction page's command line parses to its grid)."""
    names = _scheduler_names(args.schedulers)
    cluster, workload = _sweep_presets(args)
    seeds = sweep.parse_seeds(args.seeds)
    return sweep.Sweep(
        cluster=cluster,
        workload=workload,
        schedulers=names,
        seeds=seeds,
        # The grid's size (SIMCORE_MAX_RUNS, as on the platform) is checked here, before any axis is expanded.
        axes=sweep.parse_axes(args.vary, cluster, workload, names, seeds=len(seeds)),
        # Default: 0.9 of lambda* for a preset, the recorded rate (1) for a trace file.
        load=args.load if args.load is not None else (0.9 if workload in WORKLOADS else 1.0),
        hours=args.hours,
        drain=args.drain,
        params=_given_params(args),
        engine=args.engine,
    )


def _cmd_sweep(args: argparse.Namespace) -> int:
    if args.metric is not None and not args.table:
        raise UsageError("--metric applies only with --table")
    metric = args.metric or "mean_response_s"
    if args.out:
        check_out_file(args.out)
    plan = sweep_plan(args)
    tasks = plan.tasks()
    summaries: list[dict[str, Any]] = []
    skipped: set[tuple[str, str]] = set()
    on_done = _sweep_progress() if args.progress else None
    with closing(sweep.execute(tasks, args.workers, on_done)) as results:
        for task, result in results:
            if result.summary is None:
                error = result.error or "failed"
                if result.broke_engine_rule:
                    raise SchedulingError(f"{sweep.describe(task)}: {error}")
                # As in `compare`: 'all' includes schedulers built for another setting; skip
                # them with the reason (once per reason), an explicit list fails.
                if args.schedulers != "all":
                    raise UsageError(f"{sweep.describe(task)}: {error}")
                if (task.scheduler, error) not in skipped:
                    skipped.add((task.scheduler, error))
                    print(f"simcore: skipping {task.scheduler}: {error}", file=sys.stderr)
                continue
            summary = {**result.summary, "point": task.point}
            if args.table and not summaries:
                sweep_report.check_metric(summary, metric)
            summaries.append(summary)
            if not args.table:
                print(json.dumps(summary), flush=True)
    if not summaries:
        raise UsageError("no scheduler could run this scenario")
    if args.out:
        sweep_report.write_csv(args.out, summaries)
    if args.table:
        print(sweep_report.format_table(sweep_report.aggregate(summaries, metric), metric, plan.seeds), end="")
    return 0


def _cmd_presets(args: argparse.Namespace) -> int:
    from simcore.catalog import catalog

    data = catalog()
    if args.json:
        print(json.dumps(data, indent=2))
        return 0
    for title, key in (("Clusters", "clusters"), ("Workloads", "workloads"), ("Schedulers", "schedulers")):
        print(f"{title}:")
        for item in data[key]:
            print(f"  {item['name']:<22} {item['description']}")
        print()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    try:
        parser = build_parser()
        args = parser.parse_args(argv)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "sweep":
            return _cmd_sweep(args)
        if args.command == "presets":
            return _cmd_presets(args)
        if args.command == "packing":
            return packing.run(args)
        return int(args._module.main(args))
    except SimcoreError as e:
        print(f"simcore: error: {e}", file=sys.stderr)
        return 2
    except SchedulingError as e:
        # A scheduler broke an engine rule: a bug or a scenario it cannot handle, not bad input.
        print(f"simcore: error: the scheduler made an invalid decision: {e}", file=sys.stderr)
        return 1
    except OSError as e:
        print(f"simcore: error: {e.filename or ''}: {e.strerror or e}", file=sys.stderr)
        return 2
    except MemoryError as e:
        # numpy names the allocation ("Unable to allocate 7.45 GiB ..."); the inputs' bounds (docs, "Limits")
        # refuse the known cases first, this is the rest: one line, not a traceback.
        print(f"simcore: error: out of memory{f' ({e})' if str(e) else ''}: ask for less work", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("simcore: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
