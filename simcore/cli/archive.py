"""``simcore rerun``: re-run an experiment archive downloaded from the dashboard."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from simcore.archive import read_archive, same_numbers
from simcore.cli.progress import progress_printer
from simcore.core.errors import ParameterError
from simcore.scenario import run_scenario, validate_scenario
from simcore.sweep.scenario import cell_scenario, point_key, points
from simcore.version import code_version


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("archive", help="experiment archive (.zip) downloaded from the dashboard")
    parser.add_argument(
        "--out",
        help="directory; results go to DIR/<scheduler>/seed-<seed>/ (a sweep: DIR/<point index>/<scheduler>/...)",
    )
    parser.add_argument("--schedulers", help="comma-separated subset of the archive's schedulers")
    parser.add_argument("--progress", action="store_true", help="print progress to stderr")


def main(args: argparse.Namespace) -> int:
    """Re-run every scheduler x seed (x point of a sweep) of an archive; one JSON summary line each.

    Each line carries ``matches_archive``: true when every number but the
    machine-dependent ones (wall time, speed, version) equals the archived
    run's, null when the archive holds no finished result for that run.
    Exit status 1 when a re-run disagrees with its archived result.
    """
    arch = read_archive(args.archive, jobs=False)
    scenario = validate_scenario(arch.scenario)
    chosen = scenario["schedulers"]
    if args.schedulers:
        chosen = [s.strip() for s in args.schedulers.split(",") if s.strip()]
        for s in chosen:
            if s not in scenario["schedulers"]:
                have = ", ".join(scenario["schedulers"])
                raise ParameterError(f"scheduler {s!r} is not in the archive; it has {have}")
    stored = {(point_key(r.point), r.scheduler, r.seed): r for r in arch.runs}
    grid = points(scenario) if scenario.get("axes") else [{}]
    if arch.code_version and arch.code_version != code_version():
        print(
            f"simcore: note: archive written by {arch.code_version}, re-running with {code_version()}", file=sys.stderr
        )
    mismatches = 0
    with tempfile.TemporaryDirectory(prefix="simcore-rerun-") as tmp:
        paths: dict[str, Path] = {}
        for fname, content in arch.files.items():
            p = Path(tmp) / fname
            p.write_bytes(content)
            paths[fname] = p
        for i, point in enumerate(grid):
            cell = cell_scenario(scenario, point) if point else scenario
            for seed in scenario["seeds"]:
                for sched in chosen:
                    where = ", ".join(f"{k}={v}" for k, v in point.items())
                    progress = None
                    if args.progress:
                        progress = progress_printer(f"{sched} seed {seed}" + (f" {where}" if where else ""))
                    outcome = run_scenario(cell, sched, seed, paths, progress)
                    if args.out:
                        outcome.write(
                            Path(args.out, *([str(i)] if point else []), sched, f"seed-{seed}"),
                            cell.get("job_records", "auto"),
                        )
                    old = stored.get((point_key(point), sched, seed))
                    match = None
                    if old is not None and old.status == "finished" and old.summary is not None:
                        match = same_numbers(old.summary, outcome.summary)
                        mismatches += not match
                    line = {**outcome.summary, **({"point": point} if point else {}), "matches_archive": match}
                    print(json.dumps(line), flush=True)
    return 1 if mismatches else 0
