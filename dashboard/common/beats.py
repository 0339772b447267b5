"""Heartbeats that no phase of the work can hold up: a small helper process stamps ``heartbeat_at``.

The heartbeat thread of :class:`dashboard.experiments.execution.Heartbeat`
needs Python's global interpreter lock to run, and some phases hold it for
long stretches: ``json.loads`` of a large WfCommons instance held it for 20 s
(a 10^6-task instance on this machine), and one C call (a compiled kernel,
a solver) can hold it as long as it runs. With SIMCORE_WORKER_TIMEOUT_S=30,
live imports were declared lost with ``last_heard_at == started_at``.

So each worker process starts one helper process (a plain Python interpreter
with Django's database layer only, no apps: a few megabytes, started once)
and tells it over a pipe which row to stamp. The helper stamps it every
``every_s`` whatever the worker is doing, with one conditional UPDATE (still
running, same attempt): once the work left that state it stops. It never
outlives its worker: when the worker dies (SIGKILL, the OOM killer, Celery's
hard time limit), the pipe closes and the helper exits, so lost work still
looks lost after SIMCORE_WORKER_TIMEOUT_S.

The thread stays: it stops work that was cancelled or declared lost, and
applies the time limit. Two stamps per beat cost one indexed UPDATE more.
"""

from __future__ import annotations

import json
import logging
import os
import select
import subprocess
import sys
import threading
from datetime import UTC, datetime
from typing import IO, Any

log = logging.getLogger(__name__)


class _Helper:
    """The helper process of this worker process (started on first use, again after a fork or if it died)."""

    def __init__(self) -> None:
        self.proc: subprocess.Popen[bytes] | None = None
        self.pid = 0
        self.lock = threading.Lock()

    def send(self, message: dict[str, Any]) -> bool:
        with self.lock:
            try:
                if self.proc is None or self.pid != os.getpid() or self.proc.poll() is not None:
                    self._start()
                assert self.proc is not None and self.proc.stdin is not None
                self.proc.stdin.write(json.dumps(message).encode() + b"\n")
                self.proc.stdin.flush()
                return True
            except (OSError, ValueError) as e:  # the helper died or could not start: the thread still beats
                log.warning("heartbeat helper unavailable: %s", e)
                self.proc = None
                return False

    def _start(self) -> None:
        # Run as a file, not as dashboard.common.beats: importing the package would load the Celery app and settings.
        self.proc = subprocess.Popen(
            [sys.executable, "-c", f"import runpy; runpy.run_path({__file__!r}, run_name='__main__')"],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            close_fds=True,
        )
        self.pid = os.getpid()


_helper = _Helper()


def start(table: str, pk: int, where: dict[str, Any], every_s: float) -> bool:
    """Stamp row ``pk`` of ``table`` every ``every_s`` while its columns equal ``where``; False if no helper."""
    from django.db import connection

    settings = {k: connection.settings_dict[k] for k in ("ENGINE", "NAME", "USER", "PASSWORD", "HOST", "PORT")}
    settings["OPTIONS"] = {k: v for k, v in connection.settings_dict.get("OPTIONS", {}).items() if k == "timeout"}
    return _helper.send({"db": settings, "table": table, "pk": pk, "where": where, "every_s": every_s})


def stop() -> None:
    """Stop stamping (the work is over); the helper waits for the next :func:`start`."""
    if _helper.proc is not None and _helper.pid == os.getpid():
        _helper.send({"stop": True})


def target(model: Any, pk: int, **where: Any) -> tuple[str, int, dict[str, Any]]:
    """What to stamp: row ``pk`` of ``model``'s table while its fields equal ``where`` (names as in a filter).

    Given by the caller as plain values (the same the work's own conditional writes use), through the
    model's documented ``_meta`` API: the helper has no models of its own, only the database layer.
    """
    meta = model._meta
    return meta.db_table, pk, {meta.get_field(name).column: value for name, value in where.items()}


# ---------------------------------------------------------------------------- the helper process


def _stamp(message: dict[str, Any]) -> bool:
    """One conditional UPDATE; False once the row no longer matches (the work ended or changed hands)."""
    from django.db import connection

    now = connection.ops.adapt_datetimefield_value(datetime.now(UTC))
    q = connection.ops.quote_name
    where = message["where"]
    sql = f"UPDATE {q(message['table'])} SET {q('heartbeat_at')} = %s WHERE {q('id')} = %s" + "".join(
        f" AND {q(col)} = %s" for col in where
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [now, message["pk"], *where.values()])
        return bool(cursor.rowcount)


def _configure(db: dict[str, Any]) -> None:
    import django
    from django.conf import settings

    settings.configure(DATABASES={"default": db}, USE_TZ=True, TIME_ZONE="UTC", INSTALLED_APPS=[])
    django.setup()


def main(stdin: IO[bytes]) -> None:
    from django.db import DatabaseError, connection

    current: dict[str, Any] | None = None
    configured = False
    fd = stdin.fileno()
    while True:
        timeout = current["every_s"] if current else None
        ready, _, _ = select.select([fd], [], [], timeout)
        if ready:
            line = stdin.readline()
            if not line:  # the worker is gone: so is every beat of its work
                return
            message = json.loads(line)
            if message.get("stop"):
                current = None
                if configured:
                    connection.close()  # idle until the next work: hold no connection (a test database is dropped)
                continue
            if not configured:
                _configure(message["db"])
                configured = True
            current = message
            continue
        if current is None:
            continue
        try:
            if not _stamp(current):
                current = None
        except DatabaseError:  # a blip: the next beat retries on a new connection
            connection.close()


if __name__ == "__main__":
    main(sys.stdin.buffer)
