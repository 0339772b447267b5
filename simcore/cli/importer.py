"""``simcore import``: its options and progress line; the conversion is simcore.traces.importer."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from simcore.cli.argtypes import finite_float, nonneg_int, nonneg_seconds, positive_float, positive_int, seed_int
from simcore.core.errors import InputError, ParameterError
from simcore.traces import ImportProgress, ProgressFn
from simcore.traces.importer import FORMATS, classify, import_trace, stream_google2011, summary, write_outputs


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The ``simcore import`` options: the common ones, then one group per format, then job classes."""
    p.description = (
        "Convert a real trace into the project's trace CSV and JSON cluster files "
        "(DIR/trace.csv, DIR/cluster.json, DIR/classes.json with --classes) and print a JSON summary."
    )
    _common_options(p)
    _csv_options(p.add_argument_group("CSV with other column names (simcore.traces.colmap)"))
    p.add_argument("--progress", action="store_true", help="print progress to stderr")
    _google_options(p.add_argument_group("Google 2011"))
    _azure_options(p.add_argument_group("Azure"))
    _swf_options(p.add_argument_group("SWF"))
    _wfcommons_options(p.add_argument_group("WfCommons (one job per instance; tasks, parents and runtimes)"))
    _class_options(p.add_argument_group("job classes (k-means, LoTES section 5.3.2)"))


def _common_options(p: argparse.ArgumentParser) -> None:
    """The format, inputs and outputs, the cluster, the window and bad rows."""
    p.add_argument(
        "--format",
        required=True,
        choices=FORMATS,
        help="google2011: task_events parts in time order (or the dataset directory); "
        "swf: Parallel Workloads Archive file; csv: the project's trace format; "
        "wfcommons: WfCommons workflow instances (WfFormat JSON, one job each); "
        "alibaba: cluster-trace-v2018 batch_task or batch_instance files; "
        "azure: the Azure Packing Trace 2020 SQLite database",
    )
    p.add_argument("inputs", nargs="+", metavar="INPUT", help="input files (.gz or plain)")
    p.add_argument("--out", default=".", metavar="DIR", help="output directory (default: current directory)")
    p.add_argument("--name", help="workload name (default: from the input)")
    p.add_argument(
        "--cluster",
        help="cluster preset or JSON file to normalise against and write "
        "(default: machine events or google-2011 for Google; google-2011 for a CSV requesting cpu and mem, "
        "else none; one machine for SWF; the assumed alibaba-2018 cluster for Alibaba; the trace's machine "
        "types for Azure)",
    )
    p.add_argument(
        "--start",
        # Checked in main(): a negative start gets a message that points a CSV at the map's added constant.
        type=finite_float,
        default=None,
        metavar="S",
        help="window start in seconds (Google: trace time minus the 600 s offset); default: the first event "
        "(Google, SWF, Alibaba), the trace's start (Azure), 0 (CSV)",
    )
    p.add_argument(
        "--running-at-start",
        choices=("keep", "drop"),
        default="keep",
        help="jobs already running when the window starts (Google, Alibaba, Azure): keep them as an initial "
        "batch with their remaining durations (default) or drop them",
    )
    p.add_argument(
        "--end", type=nonneg_seconds, default=None, metavar="S", help="window end in seconds (default: trace end)"
    )
    p.add_argument(
        "--on-error",
        choices=("raise", "skip"),
        default="raise",
        help="malformed rows: stop with an error naming file, line and column (default), "
        "or skip them and count them in the summary",
    )
    p.add_argument("--gzip", action="store_true", help="write DIR/trace.csv.gz")


def _csv_options(m: argparse._ArgumentGroup) -> None:
    m.add_argument(
        "--map",
        dest="column_map",
        metavar="MAP",
        help="target=expression items separated by commas: a column, a difference of two (end-start), "
        "a column plus a constant (task_create_time+1078: keeps rows before the trace's zero), "
        "a scaled one (plan_cpu/100, (end-start)/1000); targets submit_s, duration_s, resources, job, "
        "count (each row becomes that many identical jobs, e.g. count=number_of_instances). "
        "e.g. submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem",
    )
    m.add_argument(
        "--where",
        metavar="FILTER",
        help="keep rows whose column holds one of the values: column=value[|value...][,column=value...], "
        "e.g. status=Terminated (the others are counted as dropped)",
    )


def _google_options(g: argparse._ArgumentGroup) -> None:
    g.add_argument(
        "--job-events",
        nargs="+",
        default=[],
        metavar="FILE",
        help="job_events parts, cross-checked against the task events (give INPUT first)",
    )
    g.add_argument(
        "--machine-events",
        metavar="FILE",
        help="machine_events file: machine configurations from the initial machines (LoTES Table 1)",
    )
    g.add_argument(
        "--unfinished",
        choices=("cut", "drop"),
        default="cut",
        help="tasks running at the window's end (Google, Alibaba, Azure): cut their duration there (default) "
        "or drop them",
    )


def _azure_options(a: argparse._ArgumentGroup) -> None:
    a.add_argument(
        "--machines-per-type",
        type=positive_int,
        default=100,
        metavar="N",
        help="machines of each machine type in the assumed cluster (the trace has no counts; default 100)",
    )


def _swf_options(s: argparse._ArgumentGroup) -> None:
    s.add_argument(
        "--procs",
        choices=("allocated", "requested"),
        default="allocated",
        help="processor field used for the cpu request (default allocated)",
    )
    s.add_argument(
        "--memory",
        choices=("requested", "used"),
        default="requested",
        help="memory field used for the mem request (default requested)",
    )
    s.add_argument(
        "--machine-procs",
        type=positive_float,
        metavar="N",
        help="processors of the largest machine (default: header MaxProcs, else MaxNodes)",
    )
    s.add_argument(
        "--machine-mem-kb",
        type=positive_float,
        metavar="KB",
        help="memory of the largest machine in KB (default: the largest job's memory)",
    )


def _wfcommons_options(w: argparse._ArgumentGroup) -> None:
    w.add_argument(
        "--jobs",
        type=nonneg_int,
        default=0,
        metavar="N",
        help="jobs in the stream, job k replaying instance k mod (number of inputs); default: one per input",
    )
    w.add_argument(
        "--arrival",
        choices=("together", "fixed", "poisson"),
        default="together",
        help="job arrivals: all at 0 (default), every --interarrival seconds, or Poisson with that mean gap "
        "(drawn under --seed)",
    )
    w.add_argument(
        "--interarrival", type=positive_float, default=None, metavar="S", help="mean seconds between job arrivals"
    )


def _class_options(c: argparse._ArgumentGroup) -> None:
    c.add_argument("--classes", type=positive_int, metavar="K", help="cluster the jobs into K classes")
    c.add_argument(
        "--class-window-hours",
        type=positive_float,
        default=24.0,
        metavar="H",
        help="learn the classes on the jobs of the first H hours (default 24)",
    )
    c.add_argument("--class-duration", action="store_true", help="use durations as well as requests")
    c.add_argument(
        "--seed", type=seed_int, default=0, help="k-means seed, and of Poisson arrivals, 0 to 2^32-1 (default 0)"
    )


def _expand_google(args: argparse.Namespace) -> tuple[list[str], list[str], str | None]:
    """Directories as inputs: DIR/task_events/*, and job/machine events beside them unless given."""
    tasks: list[str] = []
    jobs = list(args.job_events)
    machines = args.machine_events
    for inp in args.inputs:
        p = Path(inp)
        if not p.is_dir():
            tasks.append(inp)
            continue
        sub = p / "task_events"
        if sub.is_dir():
            tasks += sorted(str(f) for f in sub.iterdir() if f.is_file())
            if not args.job_events and (p / "job_events").is_dir():
                jobs += sorted(str(f) for f in (p / "job_events").iterdir() if f.is_file())
            me = sorted((p / "machine_events").glob("*")) if (p / "machine_events").is_dir() else []
            if machines is None and me:
                machines = str(me[0])
        else:
            tasks += sorted(str(f) for f in p.iterdir() if f.is_file())
    if not tasks:
        raise InputError("no task_events files found", file=", ".join(args.inputs))
    return tasks, jobs, machines


def _check_start(args: argparse.Namespace) -> None:
    """A negative --start is refused: arrivals are times >= 0. A CSV's rows before its zero take a constant instead."""
    if args.start is None or args.start >= 0:
        return
    hint = (
        "; to keep a CSV's rows before its zero, add a constant in --map instead, e.g. "
        f"submit_s=task_create_time+{-args.start:g}"
        if args.format == "csv"
        else ""
    )
    raise ParameterError(f"--start must be a non-negative number of seconds, got {args.start:g}{hint}")


def _printer() -> ProgressFn:
    last = [0.0]

    def show(p: ImportProgress) -> None:
        now = time.perf_counter()
        if now - last[0] < 0.5 and p.bytes_done != p.bytes_total:
            return
        last[0] = now
        print(
            f"[import {p.stage}] file {p.file_index + 1}/{p.n_files} {100 * p.fraction:5.1f}%, {p.rows:,} rows",
            file=sys.stderr,
            flush=True,
        )

    return show


def main(args: argparse.Namespace) -> int:
    """Run ``simcore import``; prints the JSON summary. Errors propagate as SimcoreError (exit 2)."""
    cpu0 = time.process_time()
    _check_start(args)
    if args.end is not None and args.start is not None and args.end <= args.start:
        raise ParameterError(f"--end ({args.end}) must be after --start ({args.start})")
    inputs: list[str] = list(args.inputs)
    jobs: list[str] = list(args.job_events)
    machines = args.machine_events
    if args.format == "google2011":
        inputs, jobs, machines = _expand_google(args)
    if args.format != "wfcommons" and (args.jobs or args.arrival != "together" or args.interarrival is not None):
        raise ParameterError("--jobs, --arrival and --interarrival apply to --format wfcommons only")
    if args.arrival != "together" and args.interarrival is None:
        raise ParameterError(f"--arrival {args.arrival} needs --interarrival (mean seconds between jobs)")
    if args.format == "google2011" and args.classes is None:
        # Streamed to the output: memory stays bounded whatever the number of parts (issue 17).
        out = stream_google2011(
            inputs,
            args.out,
            gzip=args.gzip,
            job_events=jobs,
            machine_events=machines,
            cluster=args.cluster,
            start_s=args.start,
            end_s=args.end,
            unfinished=args.unfinished,
            running_at_start=args.running_at_start,
            on_error=args.on_error,
            name=args.name,
            progress=_printer() if args.progress else None,
        )
        out["total_cpu_s"] = round(time.process_time() - cpu0, 3)
        print(json.dumps(out, indent=2))
        return 0
    result = import_trace(
        args.format,
        inputs,
        job_events=jobs,
        machine_events=machines,
        cluster=args.cluster,
        start_s=args.start,
        end_s=args.end,
        unfinished=args.unfinished,
        running_at_start=args.running_at_start,
        machines_per_type=args.machines_per_type,
        on_error=args.on_error,
        procs=args.procs,
        memory=args.memory,
        machine_procs=args.machine_procs,
        machine_mem_kb=args.machine_mem_kb,
        name=args.name,
        progress=_printer() if args.progress else None,
        jobs=args.jobs,
        arrival=args.arrival,
        interarrival_s=args.interarrival or 0.0,
        seed=args.seed,
        column_map=args.column_map,
        where=args.where,
    )
    if args.classes is not None:
        result = classify(
            result, args.classes, window_hours=args.class_window_hours, seed=args.seed, use_duration=args.class_duration
        )
    files = write_outputs(result, args.out, gzip=args.gzip)
    out = summary(result, files)
    out["total_cpu_s"] = round(time.process_time() - cpu0, 3)
    print(json.dumps(out, indent=2))
    return 0
