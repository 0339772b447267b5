"""``make run``: migrate, then run the web server and two Celery workers (short and long queue); Ctrl-C stops all.

Uses the environment like everything else: the embedded default (SQLite and
the filesystem broker under var/) when DATABASE_URL and REDIS_URL are unset,
the real servers when they are set. ``make run`` asks for DEBUG (DEBUG=1;
it is off unless asked for); with DEBUG on this also creates or resets the
user ``demo`` (password ``demo``) and prints the credentials; with DEBUG off
create users with ``python manage.py createsuperuser`` (then invite others
from a team page).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEMO_USER = DEMO_PASSWORD = "demo"


def _setup() -> bool:
    """Migrate, collect static files and create the demo user (DEBUG); returns DEBUG.

    Static files are collected and served as in production (hashed names,
    compressed, cached for a year; SIMCORE_STATIC_COLLECTED), DEBUG or not:
    the embedded default is what newcomers meet, and Plotly's 4.8 MB script
    must not be sent uncompressed and uncached on every page. Edits to
    static/ show after a restart.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
    os.environ.setdefault("SIMCORE_STATIC_COLLECTED", "1")  # read by the settings, inherited by gunicorn
    import django
    from django.conf import settings
    from django.core.management import call_command

    django.setup()
    # collectstatic (hashing and compressing ~50 MB) in a second process while this one migrates: the
    # two take 6 and 14 CPU seconds on a fresh clone, and the first page waits for both (issue 28).
    collect = None
    if settings.SIMCORE_STATIC_COLLECTED:
        cmd = [sys.executable, str(ROOT / "manage.py"), "collectstatic", "--noinput", "-v0"]
        collect = subprocess.Popen(cmd, cwd=ROOT)
    call_command("migrate", interactive=False, verbosity=0)
    if collect is not None and collect.wait() != 0:
        raise SystemExit(f"collectstatic failed with status {collect.returncode} (its message is above)")
    if settings.DEBUG:
        from django.contrib.auth.models import User

        user, _ = User.objects.get_or_create(username=DEMO_USER, defaults={"is_staff": True, "is_superuser": True})
        user.set_password(DEMO_PASSWORD)
        user.save()
    return bool(settings.DEBUG)


def commands(host: str, port: int, workers: int, long_workers: int) -> dict[str, list[str]]:
    """The processes ``make run`` starts: the web server, and a worker for each queue (dashboard.celery)."""
    from dashboard.celery import long_queue, short_queue

    py = sys.executable
    web = [
        py,
        "-m",
        "gunicorn",
        "dashboard.wsgi",
        "--bind",
        f"{host}:{port}",
        "--workers",
        "2",
        "--threads",
        "4",
        "--timeout",
        "300",
        "--access-logfile",
        "-",
    ]

    def worker(name: str, queue: str, concurrency: int) -> list[str]:
        return [
            py,
            "-m",
            "celery",
            "-A",
            "dashboard",
            "worker",
            "-Q",
            queue,
            "-n",
            f"{name}@%h",
            "--concurrency",
            str(concurrency),
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "INFO",
        ]

    # Two workers, one per queue: a packing analysis or a trace import (minutes) on the long
    # queue never holds the worker that runs experiments and sweep cells (seconds).
    return {
        "web server": web,
        "short-queue worker": worker("short", short_queue(), workers),
        "long-queue worker": worker("long", long_queue(), long_workers),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m dashboard.launcher", description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument(
        "--workers",
        type=int,
        default=int(os.environ.get("SIMCORE_WORKERS", "1")),
        help="processes of the short-queue worker (experiment runs, sweep cells, search evaluations at once)",
    )
    parser.add_argument(
        "--long-workers",
        type=int,
        default=int(os.environ.get("SIMCORE_LONG_WORKERS", "1")),
        help="processes of the long-queue worker (packing analyses, trace imports, search coordination at once)",
    )
    args = parser.parse_args(argv)
    debug = _setup()

    from dashboard.celery import WARM_KERNELS_ENV, long_queue, short_queue

    named = commands(args.host, args.port, args.workers, args.long_workers)
    # The short-queue worker, which runs experiments, warms the kernels when it starts (dashboard.celery);
    # the long-queue worker would compile the same ones at the same time on the same cores.
    envs = {"long-queue worker": {**os.environ, WARM_KERNELS_ENV: "0"}}
    procs = {
        name: subprocess.Popen(cmd, cwd=ROOT, start_new_session=True, env=envs.get(name)) for name, cmd in named.items()
    }
    url = f"http://{args.host}:{args.port}/"
    db = "SQLite (var/)" if not os.environ.get("DATABASE_URL") else "DATABASE_URL"
    broker = "filesystem broker (var/broker/)" if not os.environ.get("REDIS_URL") else "REDIS_URL"
    print(f"\nsimcore dashboard on {url}  [{db}, {broker}]", flush=True)
    print(
        f"workers: {args.workers} process(es) on queue {short_queue()!r} (runs, sweep cells, search evaluations), "
        f"{args.long_workers} on {long_queue()!r} (packing analyses, trace imports, search coordination)",
        flush=True,
    )
    if debug:
        print(f"sign in as user {DEMO_USER!r} with password {DEMO_PASSWORD!r}  (Ctrl-C stops everything)\n", flush=True)

    stopping = False

    def stop(*_: object) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    code = 0
    while not stopping:
        for name, p in procs.items():
            if p.poll() is not None:
                print(f"the {name} exited with status {p.returncode}; stopping", file=sys.stderr)
                code = p.returncode or 1
                stopping = True
        time.sleep(0.3)
    for p in procs.values():
        if p.poll() is None:
            p.terminate()
    for p in procs.values():
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
    return code


if __name__ == "__main__":
    sys.exit(main())
