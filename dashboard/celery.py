"""The Celery app (Saleor's habit: settings under the CELERY_ namespace, tasks autodiscovered)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

#: Tasks that can hold a worker for minutes: a packing analysis (up to half an hour on a large
#: trace), a trace import (reading, converting, k-means), a search's coordination. They go to the
#: long queue, so that a worker of the short queue is always free for experiment runs, sweep cells
#: and search evaluations (seconds each): one long analysis used to hold ``make run``'s only
#: worker while two experiments sat pending with no hint why.
LONG_TASKS = frozenset({"dashboard.import_trace", "dashboard.run_packing_analysis", "dashboard.advance_search"})

#: Suffix of the long queue's name: ``celery`` and ``celery.long`` by default (SIMCORE_TASK_QUEUE).
LONG_SUFFIX = ".long"


def short_queue() -> str:
    """The queue of short interactive work: runs, sweep cells, search evaluations (``SIMCORE_TASK_QUEUE``)."""
    return str(app.conf.task_default_queue)


def long_queue(short: str | None = None) -> str:
    """The queue of long work beside ``short`` (the current short queue by default)."""
    return (short or short_queue()) + LONG_SUFFIX


def both_queues(short: str | None = None) -> list[str]:
    """Both queues, short first: what one worker taking all work listens to (``-Q short,short.long``)."""
    return [short or short_queue(), long_queue(short)]


def queue_of(task_name: str) -> str:
    """The queue a task goes to."""
    return long_queue() if task_name in LONG_TASKS else short_queue()


def route_task(name: str, args: Any, kwargs: Any, options: Any, task: Any = None, **_: Any) -> dict[str, str]:
    """Celery router (setting CELERY_TASK_ROUTES): long tasks to the long queue, the rest to the short one.

    A function rather than a fixed table: the queue names follow ``task_default_queue``,
    which the tests change per session so that a ``make run`` worker never takes their tasks.
    """
    return {"queue": queue_of(name)}


#: A file the worker creates once it consumes tasks and removes at shutdown; the launcher
#: and the test fixture wait for it (works with every broker, unlike a broadcast ping).
READY_FILE_ENV = "SIMCORE_WORKER_READY_FILE"


#: Which kernels a worker compiles in the background when it starts (simcore.cli.warm):
#: unset or "all" every built-in scheduler's, "0" none, else a comma-separated list of schedulers.
WARM_KERNELS_ENV = "SIMCORE_WARM_KERNELS"

#: The warm-up process of this worker, while it runs.
_warming: list[subprocess.Popen[bytes]] = []


def warm_kernels_command(setting: str | None) -> list[str] | None:
    """The command that warms the kernels ``setting`` (SIMCORE_WARM_KERNELS) asks for; None for none."""
    value = (setting if setting is not None else "all").strip()
    if value.lower() in ("0", "no", "off", "none", "false", ""):
        return None
    names = [] if value.lower() == "all" else [n.strip() for n in value.split(",") if n.strip()]
    return [sys.executable, "-m", "simcore.cli.warm", *names]


def start_kernel_warm_up() -> subprocess.Popen[bytes] | None:
    """Start compiling the kernels in a separate, low-priority process; the worker takes tasks meanwhile.

    A separate process, not a thread: compiling holds the GIL for seconds at a time, and a pool
    process busy compiling would not take a task. Its kernels land in numba's disk cache, which
    every run of every worker process reads (same environment, same cache directory).
    """
    cmd = warm_kernels_command(os.environ.get(WARM_KERNELS_ENV))
    if cmd is None:
        return None
    # niceness 10: a task that starts meanwhile gets the CPU first on a busy machine
    proc = subprocess.Popen(cmd, cwd=Path(__file__).resolve().parent.parent, preexec_fn=lambda: os.nice(10))
    _warming.append(proc)
    return proc


@worker_ready.connect
def _mark_ready(**_: Any) -> None:
    start_kernel_warm_up()
    path = os.environ.get(READY_FILE_ENV)
    if path:
        Path(path).write_text(str(os.getpid()))


@worker_shutdown.connect
def _unmark_ready(**_: Any) -> None:
    path = os.environ.get(READY_FILE_ENV)
    if path:
        Path(path).unlink(missing_ok=True)
    while _warming:  # a warm-up still compiling when the worker stops has nothing left to serve
        proc = _warming.pop()
        if proc.poll() is None:
            proc.terminate()
            proc.wait(timeout=10)
