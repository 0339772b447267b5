"""``python manage.py bench_reproduction``: a paper figure through the platform, against ``simcore sweep`` (issue 29).

Runs one reproduction (default Figure 11, ``lotes-fig11``) at the scale given, the way a user's click does:
the experiment is made by the same service the *Reproduce papers* page calls, and its cells run on
``--workers`` real Celery worker processes started here (one cell at a time each, on a queue of their own),
through the broker and database configured (DATABASE_URL / REDIS_URL, or the embedded default). Then,
unless ``--no-cli``, the same grid runs as ``simcore sweep --workers N`` in the same sitting. It prints:

* the platform's wall time from the submit until every cell finished, and the command line's;
* the database's size before and after (PostgreSQL's ``pg_database_size``, SQLite's file);
* each worker's peak resident memory (sampled every second over the worker and its children);
* whether every cell's mean wait until start is the same number on both sides (the chart's numbers are
  these cells' means over seeds).

The kernels are compiled (or loaded) before either side starts. Nothing is reused from earlier results
(the result cache is off for this experiment), and the experiment is deleted at the end unless ``--keep``.
Figure 11 at paper scale (1,000 machines per configuration, 100 h, 5 seeds: 90 cells, about 2.5 billion
jobs) takes about 40 minutes a side on two cores.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psutil
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand, CommandError
from django.db import connection
from django.db.models import BigIntegerField, Func

from dashboard.celery import READY_FILE_ENV, both_queues
from dashboard.common.models import Status
from dashboard.experiments.models import Experiment
from dashboard.experiments.services import create_experiment, reproduction_scenario
from simcore import records, reproductions
from simcore.core.errors import SimcoreError

ROOT = Path(__file__).resolve().parents[3]
METRIC = "mean_response_s"


def parse_scale(text: str) -> dict[str, Any]:
    """``machines_per_config=1000,hours=100,seeds=5`` as a dict (values checked by the reproduction)."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        name, sep, value = part.partition("=")
        if not sep or not name.strip():
            raise CommandError(f"--scale: {part!r} is not NAME=VALUE")
        out[name.strip()] = value.strip()
    return out


def database_bytes(user: User) -> int:
    """The database's size: PostgreSQL's ``pg_database_size`` through the ORM (on any row), or SQLite's file."""
    if connection.vendor == "postgresql":
        size = Func(Func(function="current_database"), function="pg_database_size", output_field=BigIntegerField())
        return int(User.objects.filter(pk=user.pk).annotate(size=size).values_list("size", flat=True).get())
    name = str(settings.DATABASES["default"]["NAME"])
    return sum(Path(p).stat().st_size for p in (name, name + "-wal") if Path(p).exists())


class PeakMemory:
    """The largest resident set of a process and its children together, sampled every second in a thread."""

    def __init__(self, pid: int) -> None:
        self.proc = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            try:
                procs = [self.proc, *self.proc.children(recursive=True)]
                self.peak = max(self.peak, sum(p.memory_info().rss for p in procs if p.is_running()))
            except psutil.Error:
                pass

    def stop(self) -> int:
        self._stop.set()
        self._thread.join()
        return self.peak


def this_database_url() -> str | None:
    """The database this process uses, as DATABASE_URL, for the workers it starts (None: the environment's).

    The workers must write where this process reads: under a test runner that is the test database, whose
    name the environment's DATABASE_URL does not carry.
    """
    name = str(connection.settings_dict["NAME"])
    if connection.vendor == "sqlite":
        return f"sqlite:///{name}"
    url = os.environ.get("DATABASE_URL")
    if not url:
        return None
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, f"/{name}", parts.query, parts.fragment))


def cell_key(point: dict[str, Any], scheduler: str, seed: int) -> tuple[str, str, int]:
    return (",".join(f"{k}={float(v):g}" for k, v in sorted(point.items())), scheduler, int(seed))


class Command(BaseCommand):
    help = __doc__.splitlines()[0]

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("name", nargs="?", default="lotes-fig11", help="the reproduction (default lotes-fig11)")
        parser.add_argument(
            "--scale",
            default="machines_per_config=1000,hours=100,seeds=5",
            help="its scale knobs, NAME=VALUE,... (default: Figure 11's paper scale)",
        )
        parser.add_argument("--workers", type=int, default=2, help="worker processes, and simcore sweep's --workers")
        parser.add_argument("--job-records", default="none", help="what each cell keeps of its jobs (default none)")
        parser.add_argument("--no-cli", action="store_true", help="skip the simcore sweep side")
        parser.add_argument("--keep", action="store_true", help="keep the experiment")

    def handle(self, *args: Any, **opts: Any) -> None:
        rep = reproductions.REPRODUCTIONS.get(opts["name"])
        if rep is None:
            raise CommandError(f"no reproduction {opts['name']!r}; valid: {', '.join(reproductions.REPRODUCTIONS)}")
        try:
            scale = rep.scale_values(parse_scale(opts["scale"]))
            policy = records.parse_policy(opts["job_records"], "--job-records")
            scenario = reproduction_scenario(rep, scale, policy)
        except SimcoreError as e:
            raise CommandError(str(e)) from None
        user, _ = User.objects.get_or_create(username="bench")
        out = self.stdout
        out.write(f"{rep.label} at {scale}, per-job records {policy}, {opts['workers']} worker processes")

        # Compile (or load) the kernels first, into the cache the workers and the command line share: neither
        # side's time should include a compile the other skips.
        from simcore.cli.warm import warm_one

        t0 = time.perf_counter()
        for name in scenario["schedulers"]:
            warm_one(name)
        out.write(f"kernels of {', '.join(scenario['schedulers'])} ready in {time.perf_counter() - t0:.1f} s")
        before = database_bytes(user)
        exp, wall, peaks = self.platform(user, rep, scale, scenario, opts["workers"])
        after = database_bytes(user)
        finished = exp.runs.filter(status=Status.FINISHED).count()
        out.write(
            f"platform: {finished}/{exp.runs.count()} cells finished ({exp.status}) in {wall:.1f} s; "
            f"database {before / 1e6:.1f} MB before, {after / 1e6:.1f} MB after "
            f"(+{(after - before) / 1e6:.2f} MB, {(after - before) / max(finished, 1) / 1e3:.1f} kB a cell); "
            f"worker peak memory {', '.join(f'{p / 2**20:.0f} MiB' for p in peaks)}"
        )
        ours = {
            cell_key(r.point or {}, r.scheduler, r.seed): r.result.summary.get(METRIC)
            for r in exp.runs.select_related("result")
            if r.status == Status.FINISHED
        }
        if not opts["no_cli"]:
            self.compare(rep, scale, opts["workers"], ours, wall)
        if not opts["keep"]:
            Experiment.objects.filter(pk=exp.pk).delete()

    def platform(
        self, user: User, rep: Any, scale: dict[str, Any], scenario: dict[str, Any], workers: int
    ) -> tuple[Experiment, float, list[int]]:
        """Start the workers, submit, wait for every cell; the experiment, wall seconds and peak memory."""
        from dashboard.celery import app

        queue = f"bench-{os.getpid()}"
        # This process's tasks go to its own workers' queue, and back to where they went after (a test runner
        # has a worker of its own on another queue).
        saved_queue = app.conf.task_default_queue
        app.conf.task_default_queue = queue
        with tempfile.TemporaryDirectory() as tmp:
            procs: list[subprocess.Popen[bytes]] = []
            monitors: list[PeakMemory] = []
            try:
                db = this_database_url()
                for i in range(workers):
                    ready = Path(tmp) / f"ready-{i}"
                    env = {**os.environ, READY_FILE_ENV: str(ready), "SIMCORE_TASK_QUEUE": queue}
                    if db:
                        env["DATABASE_URL"] = db
                    cmd = [sys.executable, "-m", "celery", "-A", "dashboard", "worker", "-Q"]
                    cmd += [",".join(both_queues(queue)), "-n", f"bench{i}-{os.getpid()}@%h", "--concurrency", "1"]
                    cmd += ["--without-gossip", "--without-mingle", "--loglevel", "WARNING"]
                    procs.append(subprocess.Popen(cmd, cwd=ROOT, env=env))
                for i, proc in enumerate(procs):
                    while not (Path(tmp) / f"ready-{i}").exists():
                        if proc.poll() is not None:
                            raise CommandError(f"worker {i} exited with {proc.returncode} before it was ready")
                        time.sleep(0.2)
                    monitors.append(PeakMemory(proc.pid))
                t0 = time.perf_counter()
                reproduction = {"name": rep.name, "scale": scale}
                exp = create_experiment(
                    user, scenario, name=f"bench {rep.label}", reproduction=reproduction, reuse=False
                )
                last = 0.0
                while True:
                    exp.refresh_from_db()
                    if exp.status not in (Status.PENDING, Status.RUNNING):
                        break
                    if time.perf_counter() - last >= 60:
                        last = time.perf_counter()
                        done = exp.runs.filter(status=Status.FINISHED).count()
                        self.stdout.write(f"  {last - t0:7.0f} s: {done}/{exp.runs.count()} cells finished")
                    time.sleep(1.0)
                wall = time.perf_counter() - t0
            finally:
                peaks = [m.stop() for m in monitors]
                for proc in procs:
                    proc.terminate()
                for proc in procs:
                    proc.wait(timeout=120)
                app.conf.task_default_queue = saved_queue
        return exp, wall, peaks

    def compare(self, rep: Any, scale: dict[str, Any], workers: int, ours: dict[Any, Any], wall: float) -> None:
        """Run the grid with ``simcore sweep --workers N``; its wall time and every cell against the platform's."""
        argv = rep.command(scale).split()[1:]  # "sweep --cluster ... --table": drop "simcore" and the table
        argv = [a for a in argv if a != "--table"]
        with tempfile.TemporaryDirectory() as tmp:
            csv_path = Path(tmp) / "cells.csv"
            cmd = [sys.executable, "-m", "simcore", *argv, "--workers", str(workers), "--out", str(csv_path)]
            t0 = time.perf_counter()
            proc = subprocess.run(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            cli_wall = time.perf_counter() - t0
            if proc.returncode != 0:
                raise CommandError(f"simcore sweep failed: {proc.stderr.strip().splitlines()[-1:]}")
            with csv_path.open(newline="") as f:
                rows = list(csv.DictReader(f))
        theirs = {}
        for row in rows:
            point = {k.removeprefix("point."): v for k, v in row.items() if k.startswith("point.")}
            value = row[METRIC]
            theirs[cell_key(point, row["scheduler"], int(row["seed"]))] = float(value) if value != "" else None
        differ = [k for k in theirs if k not in ours or ours[k] != theirs[k]]
        nonzero = sum(1 for v in theirs.values() if v)
        self.stdout.write(
            f"simcore sweep --workers {workers}: {len(rows)} cells in {cli_wall:.1f} s; platform/CLI wall "
            f"{wall / cli_wall:.3f}; {METRIC} equal in {len(theirs) - len(differ)} of {len(theirs)} cells "
            f"({nonzero} not 0)" + (f"; differ: {differ[:5]}" if differ else "")
        )
