"""``python manage.py bench_web``: the web platform's speed figures (issue 5).

1. Submit to results shown: an experiment of about ``--jobs`` jobs with three
   schedulers, run by a real Celery worker process started here, timed from
   the submit until its page renders with the results.
2. Store and download a big run (a million jobs by default, ``--big-jobs``):
   simulate it in this process, then time :func:`store_outcome` (the per-job
   records as one Parquet object in the records storage, row groups of
   SIMCORE_JOB_CHUNK jobs) and full downloads (CSV
   streamed, Parquet, the experiment archive) through Django's request
   handling, with the process's peak resident memory in each step, the
   object's bytes a job and the database bytes the run's records row takes.
3. Experiment page server time with that run stored (median of 10 GETs).
4. Pages under load (``--pages``, issue 25): a 90-cell sweep (10 loads x 3
   schedulers x 3 seeds) and a 10-run experiment (2 schedulers x 5 seeds),
   every result stored through :func:`store_outcome` as a worker stores it
   (nine distinct simulated outcomes serve the sweep's ten points); the server
   time of each page (median of ``--repeat`` GETs, with ``--profile`` the top
   of cProfile), and with ``--load-url`` a bounded load test of a running
   server (``--clients`` threads for ``--load-seconds`` each, loopback only):
   requests/s and median latency per page. ``--pages-keep`` keeps the data for
   the load test; a later ``--pages`` reuses what it finds.

Uses the configured database and broker (DATABASE_URL / REDIS_URL or the
embedded default); everything it creates belongs to the user ``bench`` and is
deleted at the end unless ``--keep``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.contrib.auth.models import User
from django.core.management.base import BaseCommand
from django.db import connection
from django.db.models import BigIntegerField, F, Func, Sum
from django.db.models.functions import Length
from django.test import Client
from django.urls import reverse

from dashboard.celery import READY_FILE_ENV, both_queues
from dashboard.common.models import Status
from dashboard.experiments.execution import store_outcome
from dashboard.experiments.models import Experiment, Run, RunJobsChunk, RunRecordsObject
from dashboard.experiments.services import create_experiment
from simcore.scenario import run_scenario, validate_scenario

ROOT = Path(__file__).resolve().parents[3]


def _scenario(machines_per_config: int, hours: float, schedulers: list[str]) -> dict[str, Any]:
    return {
        "cluster": {"preset": "google-balanced", "params": {"machines_per_config": machines_per_config}},
        "workload": {"preset": "google-like", "params": {}},
        "load": 0.9,
        "hours": hours,
        "schedulers": schedulers,
        "seeds": [0],
    }


def _rss_mb() -> float:
    """This process's resident memory (MB); 0 where /proc is missing."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return 0.0


class _Peak:
    """Highest resident memory while the block runs, sampled every 10 ms: ``start`` and ``peak`` in MB."""

    def __enter__(self) -> _Peak:
        self.start = self.peak = _rss_mb()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def _sample(self) -> None:
        while not self._stop.wait(0.01):
            self.peak = max(self.peak, _rss_mb())

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.peak = max(self.peak, _rss_mb())

    def __str__(self) -> str:
        return f"peak RSS {self.peak:,.0f} MB (+{self.peak - self.start:,.0f} MB over the step's start)"


def _stored_bytes(run: Run) -> int:
    """Bytes the run's per-job records take in the database: its RunRecordsObject row (its text columns as
    PostgreSQL stores them plus the fixed-width ones and a tuple header), or the chunks of runs stored before
    objects (after TOAST's compression). Through the ORM only, as everything in dashboard/."""
    text = ("key", "sha256")
    if connection.vendor == "postgresql":
        sizes = {c: Sum(Func(F(c), function="pg_column_size", output_field=BigIntegerField())) for c in text}
    else:
        sizes = {c: Sum(Length(c)) for c in text}
    rows = RunRecordsObject.objects.filter(run=run)
    n = rows.count()
    # rows, row_groups, size (8 bytes each), layout (2), created_at (8), run_id (8), id (8), header (24).
    row = n * (3 * 8 + 2 + 8 + 8 + 8 + 24) + sum(int(v or 0) for v in rows.aggregate(**sizes).values())
    size: Func = (
        Func(F("data"), function="pg_column_size", output_field=BigIntegerField())
        if connection.vendor == "postgresql"
        else Length("data")
    )
    return row + int(RunJobsChunk.objects.filter(run=run).aggregate(b=Sum(size))["b"] or 0)


class Command(BaseCommand):
    help = __doc__.splitlines()[0] if __doc__ else ""

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--jobs", type=int, default=100_000, help="jobs of the submit-to-results experiment")
        parser.add_argument("--big-jobs", type=int, default=1_000_000, help="jobs of the stored run")
        parser.add_argument("--schedulers", default="greedy,tetris,lotes")
        parser.add_argument("--worker-concurrency", type=int, default=1)
        parser.add_argument("--skip-submit", action="store_true")
        parser.add_argument("--skip-big", action="store_true")
        parser.add_argument("--keep", action="store_true", help="keep what the benchmark created")
        parser.add_argument("--pages", action="store_true", help="only the pages-under-load figures (4)")
        parser.add_argument("--pages-keep", action="store_true", help="keep the pages' data (for --load-url)")
        parser.add_argument("--repeat", type=int, default=10, help="GETs per page for its median server time")
        parser.add_argument("--profile", action="store_true", help="print cProfile's top functions per page")
        parser.add_argument("--load-url", default="", help="a running server (http://127.0.0.1:PORT) to load")
        parser.add_argument("--clients", type=int, default=25)
        parser.add_argument("--load-seconds", type=float, default=30.0)
        parser.add_argument(
            "--download-run",
            type=int,
            metavar="RUN",
            help="only time the downloads of this stored run (a fresh process: its memory is the web process's)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        user, _ = User.objects.get_or_create(username="bench")
        # Requests as a browser would send them to this deployment: an allowed host, HTTPS when it redirects there.
        host = next((h for h in settings.ALLOWED_HOSTS if h != "*" and not h.startswith(".")), "localhost")
        scheme: dict[str, Any] = {"wsgi.url_scheme": "https" if settings.SECURE_SSL_REDIRECT else "http"}
        client = Client(HTTP_HOST=host, **scheme)
        client.force_login(user)
        self.stdout.write(f"database: {connection.vendor}; broker: {settings.CELERY_BROKER_URL.split(':')[0]}")
        if opts["download_run"]:
            self.downloads(client, Run.objects.get(pk=opts["download_run"]))
            return
        if opts["pages"]:
            self.pages(user, client, opts)
            return
        created: list[int] = []
        try:
            if not opts["skip_submit"]:
                created.append(self.submit_to_results(user, client, opts))
            if not opts["skip_big"]:
                created.append(self.big_run(user, client, opts["big_jobs"]))
        finally:
            if not opts["keep"]:
                Experiment.objects.filter(pk__in=created).delete()

    # -- 1 ----------------------------------------------------------------------------
    def submit_to_results(self, user: User, client: Client, opts: dict[str, Any]) -> int:
        schedulers = [s.strip() for s in opts["schedulers"].split(",") if s.strip()]
        # 20 machines (2 per configuration) see ~6,230 jobs an hour at load 0.9; scale machines, keep 4 h.
        mpc = max(1, round(2 * opts["jobs"] / (6230 * 4)))
        scenario = _scenario(mpc, 4.0 * 2 * opts["jobs"] / (6230 * 4 * mpc), schedulers)
        queue = f"bench-{os.getpid()}"
        from dashboard.celery import app

        app.conf.task_default_queue = queue
        with tempfile.TemporaryDirectory() as tmp:
            ready = Path(tmp) / "ready"
            env = {**os.environ, READY_FILE_ENV: str(ready)}
            proc = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "celery",
                    "-A",
                    "dashboard",
                    "worker",
                    "-Q",
                    ",".join(both_queues(queue)),
                    "--concurrency",
                    str(opts["worker_concurrency"]),
                    "--without-gossip",
                    "--without-mingle",
                    "--loglevel",
                    "WARNING",
                ],
                cwd=ROOT,
                env=env,
            )
            try:
                while not ready.exists():
                    if proc.poll() is not None:
                        raise RuntimeError("worker exited")
                    time.sleep(0.1)
                t0 = time.perf_counter()
                exp = create_experiment(user, scenario, name="bench submit-to-results")
                t_submit = time.perf_counter() - t0
                while True:
                    exp.refresh_from_db()
                    if exp.status not in (Status.PENDING, Status.RUNNING):
                        break
                    time.sleep(0.2)
                t_done = time.perf_counter() - t0
                resp = client.get(exp.get_absolute_url())
                t_shown = time.perf_counter() - t0
            finally:
                proc.terminate()
                proc.wait(timeout=60)
        runs = list(exp.runs.select_related("result"))
        jobs = runs[0].result.summary["jobs"] if runs and hasattr(runs[0], "result") else 0
        sim = ", ".join(f"{r.scheduler} {r.result.summary['wall_s']:.1f} s" for r in runs if hasattr(r, "result"))
        self.stdout.write(
            f"[1] {jobs:,} jobs x {len(schedulers)} schedulers ({exp.status}), "
            f"worker concurrency {opts['worker_concurrency']}: submit {t_submit * 1000:.0f} ms, "
            f"all runs finished {t_done:.1f} s, page with results {t_shown:.1f} s "
            f"(status {resp.status_code}); simulation wall time: {sim}"
        )
        return exp.pk

    # -- 2 and 3 ----------------------------------------------------------------------
    def big_run(self, user: User, client: Client, n_jobs: int) -> int:
        # ~62,300 jobs an hour on 200 machines (20 per configuration) at load 0.9.
        hours = n_jobs / 62_300
        scenario = validate_scenario(_scenario(20, hours, ["greedy"]))
        t0 = time.perf_counter()
        with _Peak() as sim_mem:
            outcome = run_scenario(scenario, "greedy", 0)
        t_sim = time.perf_counter() - t0
        exp = Experiment.objects.create(
            owner=user,
            name="bench big run",
            scenario=scenario,
            cluster_label="google-balanced",
            workload_label="google-like",
        )
        run = Run.objects.create(experiment=exp, scheduler="greedy", seed=0)
        run.transition(Status.RUNNING)
        t0 = time.perf_counter()
        with _Peak() as store_mem:
            store_outcome(run, outcome)
        t_store = time.perf_counter() - t0
        exp.refresh_status()
        n = outcome.summary["jobs"]
        obj = RunRecordsObject.objects.get(run=run)
        grown = _stored_bytes(run)
        self.stdout.write(
            f"[2] run of {n:,} jobs simulated in {t_sim:.1f} s ({sim_mem}); stored in {t_store:.2f} s "
            f"({store_mem}): one object of {obj.row_groups} row groups of at most {settings.SIMCORE_JOB_CHUNK:,} "
            f"jobs, {obj.size / 1e6:,.0f} MB ({obj.size / max(n, 1):.1f} bytes a job) in the records storage, "
            f"{grown:,} bytes in the database"
        )
        del outcome
        self.downloads(client, run)
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            resp = client.get(exp.get_absolute_url())
            assert resp.status_code == 200
            times.append(time.perf_counter() - t0)
        median = statistics.median(times) * 1000
        self.stdout.write(
            f"[3] experiment page with the {n:,}-job run stored: median {median:.0f}"
            f" ms, max {max(times) * 1000:.0f} ms over 10 requests ({len(resp.content) / 1e3:.0f} kB)"
        )
        return exp.pk

    def pages(self, user: User, client: Client, opts: dict[str, Any]) -> None:
        _pages(self.stdout, user, client, opts)

    def downloads(self, client: Client, run: Run) -> None:
        exp = run.experiment_id
        for kind, url in (
            ("jobs.csv", reverse("run-download", args=[exp, run.pk, "jobs.csv"])),
            ("jobs.parquet", reverse("run-download", args=[exp, run.pk, "jobs.parquet"])),
            ("archive.zip", reverse("experiment-download", args=[exp, "archive.zip"])),
        ):
            t0 = time.perf_counter()
            with _Peak() as mem:
                resp = client.get(url)
                size = sum(len(chunk) for chunk in cast(Any, resp).streaming_content)
                resp.close()
            dt = time.perf_counter() - t0
            self.stdout.write(f"    download {kind}: {size / 1e6:,.0f} MB in {dt:.1f} s ({mem})")


# -- 4: pages under load ------------------------------------------------------------------------------------------

PAGES_SWEEP = "bench pages: 90-cell sweep"
PAGES_EXPERIMENT = "bench pages: 10-run experiment"
SWEEP_LOADS = [0.5, 0.55, 0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95]
PAGES_HOURS = 1.0


def _pages_scenario(
    schedulers: list[str], seeds: list[int], axes: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    sc = _scenario(2, PAGES_HOURS, schedulers)
    sc["seeds"] = seeds
    if axes:
        sc["axes"] = axes
    return validate_scenario(sc)


class _Outcomes:
    """Simulated outcomes by (scheduler, seed), each simulated once (the sweep's points share them)."""

    def __init__(self) -> None:
        self.scenario = _pages_scenario(["greedy"], [0])
        self.done: dict[tuple[str, int], Any] = {}

    def get(self, scheduler: str, seed: int) -> Any:
        if (scheduler, seed) not in self.done:
            self.done[(scheduler, seed)] = run_scenario(self.scenario, scheduler, seed)
        return self.done[(scheduler, seed)]


def _store_runs(exp: Experiment, cells: list[tuple[dict[str, Any], str, int]], outcomes: _Outcomes) -> None:
    from simcore.sweep import scenario as sweep_scenario

    for point, scheduler, seed in cells:
        run = Run.objects.create(
            experiment=exp, scheduler=scheduler, seed=seed, point=point, point_key=sweep_scenario.point_key(point)
        )
        run.transition(Status.RUNNING)
        store_outcome(run, outcomes.get(scheduler, seed))
    exp.refresh_status()


def _pages_data(user: User) -> tuple[Experiment, Experiment]:
    """The 90-cell sweep and the 10-run experiment, created (as a worker stores results) unless they exist."""
    from simcore.sweep import scenario as sweep_scenario

    found = {e.name: e for e in Experiment.objects.filter(owner=user, name__in=[PAGES_SWEEP, PAGES_EXPERIMENT])}
    outcomes = _Outcomes()
    if PAGES_SWEEP not in found:
        sc = _pages_scenario(["greedy", "tetris", "fcfs"], [0, 1, 2], [{"name": "load", "values": SWEEP_LOADS}])
        exp = Experiment.objects.create(
            owner=user, name=PAGES_SWEEP, scenario=sc, cluster_label="google-balanced", workload_label="google-like"
        )
        _store_runs(exp, sweep_scenario.cells(sc), outcomes)
        found[PAGES_SWEEP] = exp
    if PAGES_EXPERIMENT not in found:
        sc = _pages_scenario(["greedy", "tetris"], [0, 1, 2, 3, 4])
        exp = Experiment.objects.create(
            owner=user,
            name=PAGES_EXPERIMENT,
            scenario=sc,
            cluster_label="google-balanced",
            workload_label="google-like",
        )
        _store_runs(exp, sweep_scenario.cells(sc), outcomes)
        found[PAGES_EXPERIMENT] = exp
    return found[PAGES_SWEEP], found[PAGES_EXPERIMENT]


def _load(url: str, cookie: str, clients: int, seconds: float) -> tuple[int, int, float, list[float]]:
    """``clients`` threads GET ``url`` back to back for ``seconds``: (ok, errors, wall s, latencies s)."""
    import urllib.request

    lat: list[float] = []
    errors = [0]
    lock = threading.Lock()
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            req = urllib.request.Request(url, headers={"Cookie": cookie})
            t0 = time.perf_counter()
            try:
                with urllib.request.urlopen(req, timeout=300) as resp:
                    resp.read()
                    ok = resp.status == 200
            except OSError:
                ok = False
            dt = time.perf_counter() - t0
            with lock:
                if ok:
                    lat.append(dt)
                else:
                    errors[0] += 1

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client, daemon=True) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return len(lat), errors[0], time.perf_counter() - t0, lat


def _pages(out: Any, user: User, client: Client, opts: dict[str, Any]) -> None:
    import cProfile
    import pstats

    sweep, exp = _pages_data(user)
    out.write(f"[4] sweep #{sweep.pk} ({sweep.runs.count()} cells), experiment #{exp.pk} ({exp.runs.count()} runs)")
    for label, e in (("90-cell sweep page", sweep), ("10-run experiment page", exp)):
        url = e.get_absolute_url()
        resp = client.get(url)  # warm: templates, imports
        assert resp.status_code == 200, resp.status_code
        times = []
        for _ in range(opts["repeat"]):
            t0 = time.perf_counter()
            resp = client.get(url)
            times.append(time.perf_counter() - t0)
        out.write(
            f"    {label}: server time median {statistics.median(times) * 1000:.0f} ms, "
            f"min {min(times) * 1000:.0f} ms over {len(times)} GETs ({len(resp.content) / 1e3:.0f} kB)"
        )
        if opts["profile"]:
            prof = cProfile.Profile()
            prof.enable()
            client.get(url)
            prof.disable()
            buf = __import__("io").StringIO()
            pstats.Stats(prof, stream=buf).sort_stats("cumulative").print_stats(25)
            out.write(buf.getvalue())
    if opts["load_url"]:
        cookie = f"{settings.SESSION_COOKIE_NAME}={client.cookies[settings.SESSION_COOKIE_NAME].value}"
        base = opts["load_url"].rstrip("/")
        if not base.startswith(("http://127.0.0.1", "http://localhost", "http://[::1]")):
            raise ValueError("--load-url: loopback only (http://127.0.0.1:PORT)")
        for label, e in (("sweep page", sweep), ("experiment page", exp)):
            ok, err, wall, lat = _load(base + e.get_absolute_url(), cookie, opts["clients"], opts["load_seconds"])
            med = statistics.median(lat) if lat else float("nan")
            p90 = sorted(lat)[int(0.9 * (len(lat) - 1))] if lat else float("nan")
            out.write(
                f"    load, {label}: {opts['clients']} clients for {opts['load_seconds']:.0f} s: {ok} OK, {err} errors "
                f"in {wall:.1f} s = {ok / wall:.2f} requests/s; latency median {med:.2f} s, p90 {p90:.2f} s"
            )
    if not opts["pages_keep"]:
        Experiment.objects.filter(pk__in=[sweep.pk, exp.pk]).delete()
