"""``simcore bench``: how fast each scheduler simulates, and how much memory a run takes.

Scenarios (each scheduler runs each one in a fresh child process, so the
peak memory is that run's own and one failing scheduler cannot stop the
rest):

* ``google``: ``google-balanced`` (``--machines-per-config`` machines in each
  of the 10 Table 1 configurations, 10,000 by default) with ``google-like``
  at ``--load`` x lambda* over ``--hours`` (about 307,000 jobs for 0.1 h).
* ``trace``: a ``--trace-jobs``-job trace (100,000 by default): the first
  jobs of the same ``google-like`` stream written with
  :func:`simcore.traces.tracefile.write_trace` and read back, so it runs as a
  trace does (durations from the file, no class table).
* ``profile``: ``ncbi-blast`` with its own cluster (``ncbi-heterogeneous``).
* ``staged``: the ``staged`` scheduler with each policy of
  :data:`simcore.bench.staged.POLICIES` on the design-space exploration
  paper's cluster (section 4.1.3, ``--staged-machines`` machines) and a
  ``--staged-tasks``-task workload of layered DAGs at ``--load``, drained:
  one evaluation of the genetic search (issue 13 asks 32 of them in 10 s on
  two workers). Rows are ``staged#1``...; the policies are listed below the
  table.

Each scheduler runs every scenario whose workload meets the needs it
declares (``Scheduler.requires``): the profile study's ``affinity`` and
``greedy1..3`` need a run-time profile, so they run the profile scenario
only; every other scheduler runs all three.

Reported per run: jobs simulated per second of wall-clock time and per
second of CPU time (the CPU figure is the honest one on a shared machine),
the simulation's wall and CPU seconds (generation excluded) and the child's
peak resident memory (``ru_maxrss``, generation included). ``--big`` adds a
10-million-job memory check. A run that exceeds ``--max-seconds`` is
stopped and reported with the rate it had reached (status ``timeout``).
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from simcore.core.errors import Cancelled, ParameterError, SimcoreError

GOOGLE_CLUSTER = "google-balanced"
GOOGLE_WORKLOAD = "google-like"
#: Where schedulers that need a run-time profile run (the CLI contract uses the same pair).
PROFILE_CLUSTER = "ncbi-heterogeneous"
PROFILE_WORKLOAD = "ncbi-blast"

#: The 10-million-job memory target.
BIG_JOBS = 10_000_000
#: Issue 16: a 10-million-job run under 1 GB (MiB, as ru_maxrss reports).
MEMORY_TARGET_MB = 1024.0


#: The packing scenarios (simcore.bench.packing): compaction, not one run per scheduler.
PACKING_SCENARIOS = ("packing", "packing-continuous")
#: Scenarios that are not one run per scheduler (see cli.bench).
UNSCHEDULED_SCENARIOS = (*PACKING_SCENARIOS, "staged", "wfcommons", "explore")
SCENARIOS = ("google", "trace", "paper", "month", *UNSCHEDULED_SCENARIOS)
#: Scenarios ``bench`` runs unless ``--scenarios`` names them: the paper-scale point and the month take
#: minutes per scheduler.
OPT_IN_SCENARIOS = ("paper", "month")
DEFAULT_SCENARIOS = tuple(s for s in SCENARIOS if s not in OPT_IN_SCENARIOS)
#: The paper-scale Figure 11 point: LoTES section 5.4's cluster (1,000 machines per configuration),
#: Phi 0.015 at 0.97 of the machine-assignment LP's lambda* (docs/guide/speed.md, "Sweeps at paper scale").
PAPER_WORKLOAD = "lotes-phi"
PAPER_PARAMS = {"phi": 0.015, "load_basis": "assignment"}
PAPER_LOAD = 0.97
#: The month scenario: google-2011 (the trace's cluster) for 30 days with as many jobs as a month of the
#: Google 2011 trace has tasks (about 25 million; issue 16).
MONTH_CLUSTER = "google-2011"
MONTH_HOURS = 720.0
MONTH_JOBS = 25_000_000


@dataclass(frozen=True)
class BenchOptions:
    """What ``simcore bench`` measures (the command line's options, as plain values)."""

    schedulers: str = "all"
    scenarios: str = ",".join(DEFAULT_SCENARIOS)
    hours: float = 0.1
    load: float = 0.9
    machines_per_config: int = 1000
    trace_jobs: int = 100_000
    seed: int = 0
    max_seconds: float = 300.0
    big: bool = False
    big_jobs: int = BIG_JOBS
    big_scheduler: str = "greedy"
    staged_tasks: int = 10_000
    staged_machines: int = 100
    engine: str = "compiled"
    paper_hours: float = 4.0
    month_jobs: int = MONTH_JOBS

    def check(self) -> None:
        checks = [
            ("--hours", self.hours > 0),
            ("--load", self.load > 0),
            ("--machines-per-config", self.machines_per_config >= 1),
            ("--trace-jobs", self.trace_jobs >= 1),
            ("--max-seconds", self.max_seconds > 0),
            ("--big-jobs", self.big_jobs >= 1),
            ("--seed", self.seed >= 0),
            ("--staged-tasks", self.staged_tasks >= 1),
            ("--staged-machines", self.staged_machines >= 2),
            ("--paper-hours", self.paper_hours > 0),
            ("--month-jobs", self.month_jobs >= 1),
        ]
        for flag, ok in checks:
            if not ok:
                raise ParameterError(f"{flag} must be positive, got {getattr(self, flag[2:].replace('-', '_'))}")


def plan_specs(args: BenchOptions) -> list[dict[str, Any]]:
    """The runs ``bench`` makes: one spec per (scenario, scheduler)."""
    from simcore.schedulers import SCHEDULERS

    if args.schedulers == "all":
        names = SCHEDULERS.names()
    else:
        names = [x.strip() for x in args.schedulers.split(",") if x.strip()]
        for n in names:
            SCHEDULERS.get(n)  # unknown name: UnknownNameError listing the valid ones
    scenarios = [x.strip() for x in args.scenarios.split(",") if x.strip()]
    for s in scenarios:
        if s not in SCENARIOS:
            raise ParameterError(f"unknown scenario {s!r}; valid scenarios: {', '.join(SCENARIOS)}")
    base = {
        "seed": args.seed,
        "load": args.load,
        "mpc": args.machines_per_config,
        "max_seconds": args.max_seconds,
        "engine": args.engine,
    }
    from simcore.presets import WORKLOADS

    # Each scheduler runs every scenario whose workload meets its declared needs
    # (Scheduler.requires): the google and trace ones provide no run-time profile, ncbi-blast does.
    google_ok = [n for n in names if not SCHEDULERS.get(n).requires]
    profile_names = []
    if PROFILE_WORKLOAD in WORKLOADS:
        provides = WORKLOADS.get(PROFILE_WORKLOAD).provides
        profile_names = [n for n in names if SCHEDULERS.get(n).requires <= provides]
    specs: list[dict[str, Any]] = []
    # packing, staged, wfcommons and explore are not per scheduler (see cli.bench; staged is per policy).
    for scen in [s for s in scenarios if s not in UNSCHEDULED_SCENARIOS]:
        for n in google_ok:
            if scen == "google":
                specs.append({**base, "scenario": "google", "scheduler": n, "hours": args.hours})
            elif scen == "paper":
                specs.append({**base, "scenario": "paper", "scheduler": n, "hours": args.paper_hours})
            elif scen == "month":
                specs.append(
                    {
                        **base,
                        "scenario": "month",
                        "scheduler": n,
                        "jobs": args.month_jobs,
                        "max_seconds": max(args.max_seconds, 3600.0),
                    }
                )
            else:
                specs.append({**base, "scenario": "trace", "scheduler": n, "jobs": args.trace_jobs})
    specs += [{**base, "scenario": "profile", "scheduler": n} for n in profile_names]
    if "staged" in scenarios and "staged" in names:
        from simcore.bench.staged import POLICIES

        specs += [
            {
                **base,
                "scenario": "staged",
                "scheduler": "staged",
                "label": f"staged#{i}",
                "scheduler_params": {"policy": policy},
                "tasks": args.staged_tasks,
                "machines": args.staged_machines,
                "drain": True,
            }
            for i, policy in enumerate(POLICIES, start=1)
        ]
    if args.big:
        specs.append(
            {
                **base,
                "scenario": "big",
                "scheduler": args.big_scheduler,
                "jobs": args.big_jobs,
                "max_seconds": max(args.max_seconds, 3600.0),
            }
        )

    return specs


# -- one measurement, in a child process ------------------------------------------------------------


def run_child(spec: dict[str, Any]) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "simcore", "bench", "--child", json.dumps(spec)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        err = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        return {"scenario": spec["scenario"], "scheduler": spec["scheduler"], "status": "error", "error": err}
    return json.loads(lines[-1])  # type: ignore[no-any-return]


def child(spec: dict[str, Any]) -> dict[str, Any]:
    """Build the scenario, run the scheduler once, measure; always returns a record."""
    out: dict[str, Any] = {"scenario": spec["scenario"], "scheduler": spec["scheduler"]}
    if "label" in spec:
        out.update(label=spec["label"], scheduler_params=spec.get("scheduler_params", {}))
    try:
        out.update(_measure(spec))
    except SimcoreError as e:
        out.update(status="error", error=str(e))
    out["peak_rss_mb"] = _peak_rss_mb()
    return out


def _measure(spec: dict[str, Any]) -> dict[str, Any]:
    from simcore.api import resolve_cluster, resolve_workload

    name = spec["scheduler"]
    if spec["scenario"] == "staged":
        from simcore.bench.staged import bench_cluster, bench_workload

        t0 = time.perf_counter()
        cluster = bench_cluster(int(spec["machines"]))
        wl = bench_workload(cluster, int(spec["tasks"]), float(spec["load"]), "dag", int(spec["seed"]))
        gen_s = time.perf_counter() - t0
        res = _simulate(cluster, wl, name, spec)
        res.update(cluster=cluster.name, machines=cluster.n_machines, workload=wl.name, generate_s=round(gen_s, 3))
        return res
    if spec["scenario"] == "profile":
        cluster, wl, gen_s = _profile_scenario(spec)
        res = _simulate(cluster, wl, name, spec)
        res.update(cluster=cluster.name, machines=cluster.n_machines, workload=wl.name, generate_s=round(gen_s, 3))
        return res
    if spec["scenario"] == "month":
        cluster = resolve_cluster(MONTH_CLUSTER)
        t0 = time.perf_counter()
        wl = _month_workload(cluster, spec)
        gen_s = time.perf_counter() - t0
        res = _simulate(cluster, wl, name, spec)
        res.update(cluster=cluster.name, machines=cluster.n_machines, workload=wl.name, generate_s=round(gen_s, 3))
        return res
    cluster = resolve_cluster(GOOGLE_CLUSTER, {"machines_per_config": spec["mpc"]})
    t0 = time.perf_counter()
    if spec["scenario"] == "google":
        wl = resolve_workload(GOOGLE_WORKLOAD, cluster, spec["seed"], spec["load"], spec["hours"])
    elif spec["scenario"] == "paper":
        wl = resolve_workload(PAPER_WORKLOAD, cluster, spec["seed"], PAPER_LOAD, spec["hours"], PAPER_PARAMS)
    elif spec["scenario"] == "trace":
        wl = _trace_workload(cluster, spec)
    else:
        wl = _jobs_workload(cluster, spec)
    gen_s = time.perf_counter() - t0
    res = _simulate(cluster, wl, name, spec)
    res.update(cluster=cluster.name, machines=cluster.n_machines, workload=wl.name, generate_s=round(gen_s, 3))
    return res


def _profile_scenario(spec: dict[str, Any]) -> tuple[Any, Any, float]:
    """``ncbi-blast`` (its default 25 hours) on its default cluster."""
    from simcore.api import resolve_cluster, resolve_workload
    from simcore.presets import WORKLOADS

    t0 = time.perf_counter()
    preset = WORKLOADS.get(PROFILE_WORKLOAD)
    cluster = resolve_cluster(preset.default_cluster or PROFILE_CLUSTER)
    wl = resolve_workload(PROFILE_WORKLOAD, cluster, spec["seed"])
    return cluster, wl, time.perf_counter() - t0


def _simulate(cluster: Any, wl: Any, name: str, spec: dict[str, Any]) -> dict[str, Any]:
    from simcore.core.engine import Progress, Simulation
    from simcore.core.seeding import scheduler_rng
    from simcore.schedulers import create

    limit = float(spec["max_seconds"])
    state = {"timeout": False}

    def stop(p: Progress) -> None:
        if p.wall_s > limit:
            state["timeout"] = True
            raise Cancelled(f"stopped after {limit} s")

    sim = Simulation(
        cluster,
        wl,
        create(name, **spec.get("scheduler_params", {})),
        scheduler_rng(spec["seed"]),
        drain=bool(spec.get("drain", False)),
        progress=stop,
        progress_every_s=1.0,
        engine=str(spec.get("engine", "compiled")),
    )
    c0 = time.process_time()
    w0 = time.perf_counter()
    try:
        sim.run()
    except Cancelled:
        pass
    wall = time.perf_counter() - w0
    cpu = time.process_time() - c0
    # The rates leave out the kernel's first call (numba's import and the compile or cache load), reported apart.
    wall_run = max(wall - (sim.compile_s or 0.0), 0.0)
    cpu_run = max(cpu - (sim.compile_cpu_s or 0.0), 0.0)
    jobs = sim.arrived  # jobs the run got through (all of them unless stopped)
    return {
        "status": "timeout" if state["timeout"] else "ok",
        "jobs": int(jobs),
        "completed": int(sim.completed),
        "queued_at_end": int(sim.arrived - sim.started),
        "engine": sim.engine_used,
        "engine_note": sim.engine_note,
        "compile_s": None if sim.compile_s is None else round(sim.compile_s, 3),
        "wall_s": round(wall, 3),
        "cpu_s": round(cpu, 3),
        "jobs_per_s": round(jobs / wall_run, 1) if wall_run > 0 else None,
        "jobs_per_cpu_s": round(jobs / cpu_run, 1) if cpu_run > 0 else None,
    }


def _trace_workload(cluster: Any, spec: dict[str, Any]) -> Any:
    """The first ``jobs`` jobs of google-like, through the trace writer and reader."""
    from simcore.traces.tracefile import read_trace, write_trace

    n = int(spec["jobs"])
    wl = _first_jobs(cluster, spec, n)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "bench-trace.csv.gz")
        write_trace(wl, path)
        return read_trace(path, resources=cluster.resources)


def _jobs_workload(cluster: Any, spec: dict[str, Any]) -> Any:
    return _first_jobs(cluster, spec, int(spec["jobs"]))


def _month_workload(cluster: Any, spec: dict[str, Any]) -> Any:
    """``jobs`` jobs of google-like at ``load`` on ``cluster``, stretched in time to span 30 days.

    google-like at load 0.9 on google-2011 is about a thousand jobs a second (Table 2's classes last
    minutes), so a month of it would be 2.6 billion jobs; the trace's month has about 25 million tasks,
    which last far longer. This keeps the trace's count and the load: the first ``jobs`` jobs of the
    stream, with every arrival time and every duration multiplied by one factor (30 days over their
    span), which leaves the load offered, and every scheduler's decisions, as they were.
    """
    from simcore.core.model import ClassTable, Workload

    wl = _first_jobs(cluster, spec, int(spec["jobs"]))
    span = float(wl.submit[-1]) if wl.n_jobs else 0.0
    k = MONTH_HOURS * 3600.0 / span if span > 0 else 1.0
    # LoTES plans with the class table: its rates (1 / mean processing time) slow down by the same factor.
    classes = wl.classes
    if classes is not None:
        classes = ClassTable(classes.names, classes.requests, classes.rates / k, classes.proportions)
    return Workload(
        name=f"google-like-month-{wl.n_jobs}",
        resources=wl.resources,
        submit=wl.submit * k,
        request=wl.request,
        work=wl.work * k,
        job_class=wl.job_class,
        horizon_s=MONTH_HOURS * 3600.0,
        classes=classes,
        runtime=None,
        params={**wl.params, "time_stretch": k},
    )


def _first_jobs(cluster: Any, spec: dict[str, Any], n: int) -> Any:
    """At least ``n`` jobs of google-like (enough hours for them), cut to exactly ``n``."""
    from simcore.api import resolve_workload
    from simcore.core.model import Workload

    probe = resolve_workload(GOOGLE_WORKLOAD, cluster, spec["seed"], spec["load"], 0.001)
    rate = float(probe.params.get("arrival_rate") or probe.n_jobs / probe.horizon_s)
    hours = 1.02 * n / rate / 3600.0 + 0.01
    wl = resolve_workload(GOOGLE_WORKLOAD, cluster, spec["seed"], spec["load"], hours)
    n = min(n, wl.n_jobs)
    horizon = float(wl.submit[n - 1]) if n else 0.0
    return Workload(
        name=f"{wl.name}-{n}",
        resources=wl.resources,
        submit=wl.submit[:n],
        request=wl.request[:n],
        work=wl.work[:n],
        job_class=wl.job_class[:n],
        horizon_s=horizon,
        classes=wl.classes,
        runtime=None,
        params={**wl.params, "jobs": n},
    )


def _peak_rss_mb() -> float:
    # Linux reports ru_maxrss in KiB.
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)


# -- output ------------------------------------------------------------------------------------------


def print_table(report: dict[str, Any]) -> None:
    head = (
        "scenario",
        "scheduler",
        "engine",
        "machines",
        "jobs",
        "sim wall s",
        "compile s",
        "jobs/s",
        "jobs/CPU-s",
        "peak MB",
        "status",
    )
    rows = []
    for r in report["results"]:
        if r.get("status") == "error":
            rows.append(
                (
                    r["scenario"],
                    r["scheduler"],
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    "",
                    str(r.get("peak_rss_mb", "")),
                    f"error: {r.get('error', '')}",
                )
            )
            continue
        rows.append(
            (
                f"{r['scenario']} ({r.get('cluster')}/{r.get('workload')})",
                r.get("label", r["scheduler"]),
                r.get("engine", ""),
                f"{r.get('machines', 0):,}",
                f"{r['jobs']:,}",
                f"{r['wall_s']:.1f}",
                "" if r.get("compile_s") is None else f"{r['compile_s']:.1f}",
                f"{r['jobs_per_s'] or 0:,.0f}",
                f"{r['jobs_per_cpu_s'] or 0:,.0f}",
                f"{r['peak_rss_mb']:,.0f}",
                r["status"],
            )
        )
    widths = [max(len(str(x)) for x in col) for col in zip(head, *rows, strict=True)]
    line = "  ".join(f"{h:<{w}}" for h, w in zip(head, widths, strict=True))
    print(line)
    print("-" * len(line))
    for row in rows:
        print("  ".join(f"{str(c):<{w}}" for c, w in zip(row, widths, strict=True)))
    lb = ", ".join(f"{x:.2f}" for x in report["load_average_before"])
    la = ", ".join(f"{x:.2f}" for x in report["load_average_after"])
    print(f"\nload average before: {lb}; after: {la} ({report['cpu_count']} CPUs); Python {report['python']}")
    for r in report["results"]:
        if "label" in r:
            print(f"{r['label']}: {r['scheduler_params'].get('policy', '')}")
    big = [r for r in report["results"] if r["scenario"] == "big" and r.get("status") != "error"]
    for r in big:
        verdict = "within" if r["peak_rss_mb"] < MEMORY_TARGET_MB else "OVER"
        print(
            f"{r['jobs']:,}-job run ({r['scheduler']}): peak {r['peak_rss_mb']:,.0f} MB, "
            f"{verdict} the {MEMORY_TARGET_MB:,.0f} MB target"
        )
