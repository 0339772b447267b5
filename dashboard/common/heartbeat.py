"""A worker's heartbeat on the row it works on, and the helpers every kind of background work shares.

Runs, trace imports, packing analyses and search evaluations all stamp
``heartbeat_at`` while a worker holds them (:class:`Heartbeat`), so that the
periodic repair (dashboard.common.recovery) tells a live worker from a lost one.
"""

from __future__ import annotations

import ctypes
import logging
import math
import threading
import time
from collections.abc import Callable
from typing import Any

from django.db import DatabaseError, connection
from django.db.models import QuerySet
from django.utils import timezone

from dashboard.common import beats
from dashboard.common.models import heartbeat_every_s
from simcore.core.errors import Cancelled

log = logging.getLogger(__name__)


#: Least wall time between two progress writes of one run (s): the bars move, the DB rests.
PROGRESS_EVERY_S = 0.5


class Heartbeat:
    """While a worker runs ``rows`` (one running run or import), stamp their ``heartbeat_at`` every few seconds.

    A daemon thread of the worker process, independent of the simulation's
    progress callbacks: those stop during long phases (building a big
    workload, solving LPs, storing the results), and a live worker must never
    look lost (:mod:`dashboard.common.recovery`). ``rows`` must filter on
    ``status=running`` and this worker's attempt number: once the work left
    that status (finished, cancelled, declared lost) or another worker took
    it over, a stamp changes nothing and the thread stops. The thread uses
    its own database connection and closes it.

    ``time_limit_s`` (0: none): once the work has taken that long,
    ``on_time_limit`` is called (it fails the work with the limit's message)
    and the work is stopped (see :mod:`dashboard.common.limits`).

    Work that left ``running`` while it is still being done (cancelled, or
    declared lost because the worker looked dead) is stopped at once: the
    thread raises :class:`~simcore.core.errors.Cancelled` in the working thread
    (at its next Python instruction, whatever phase it is in: building the
    cluster or workload, solving LPs, simulating), so a declared-lost run
    never keeps the worker's only slot.
    """

    def __init__(
        self,
        rows: QuerySet[Any],
        every_s: float | None = None,
        *,
        stamp: tuple[str, int, dict[str, Any]] | None = None,
        time_limit_s: float = 0,
        on_time_limit: Callable[[], object] | None = None,
    ) -> None:
        """``stamp``: the same rows as :func:`dashboard.common.beats.target` gives them, for the helper process."""
        self.rows = rows
        self.stamp = stamp
        self.every_s = heartbeat_every_s() if every_s is None else every_s
        self.time_limit_s = time_limit_s
        self.on_time_limit = on_time_limit
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._finishing = False
        self._lock = threading.Lock()
        self._helper = False
        self._worker_thread = threading.get_ident()
        self._thread = threading.Thread(target=self._beat, name="simcore-heartbeat", daemon=True)

    def __enter__(self) -> Heartbeat:
        # Inside a transaction (a test calling the worker's code) other connections cannot see the claim
        # yet, so there is nothing to keep alive, and a stamp would only wait for this transaction's locks.
        if not connection.in_atomic_block:
            self._thread.start()
            # Stamps that no phase can hold up: dashboard.common.beats (a phase holding the GIL stops this thread).
            self._helper = self.stamp is not None and beats.start(*self.stamp, every_s=self.every_s)
        return self

    def finishing(self) -> None:
        """The work is done and its outcome about to be written: keep beating (a large result takes a while to
        store) but interrupt no more. The outcome's own conditional write settles who wins from now on, and an
        interrupt landing inside that write would leave the database connection in the middle of a query."""
        with self._lock:
            self._finishing = True

    def __exit__(self, *exc: object) -> None:
        with self._lock:  # never interrupt the worker once its work is over
            self._stop.set()
        if self._helper:
            beats.stop()
        if self._thread.is_alive():
            self._thread.join(timeout=30)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(self._next_wait()):
                try:
                    if self._over_time() and not self._finishing:
                        log.warning(
                            "work of %s over its time limit of %s s", self.rows.model.__name__, self.time_limit_s
                        )
                        if self.on_time_limit is not None:
                            self.on_time_limit()
                        self._interrupt()
                        return
                    if not self.rows.update(heartbeat_at=timezone.now()):
                        self._interrupt()
                        return
                # A busy or briefly unreachable database, or an allocation refused under the memory limit
                # (dashboard.common.limits): the next beat retries. It must outlive both, or live work looks lost.
                except (DatabaseError, MemoryError) as e:
                    log.warning("heartbeat of %s failed: %r", self.rows.model.__name__, e)
                    if isinstance(e, DatabaseError):
                        connection.close()  # a broken connection stays broken: the next beat opens a new one
        finally:
            connection.close()

    def _over_time(self) -> bool:
        return bool(self.time_limit_s) and time.monotonic() - self._started >= self.time_limit_s

    def _next_wait(self) -> float:
        """The next beat, or the time limit if it comes first."""
        if not self.time_limit_s:
            return self.every_s
        return max(0.0, min(self.every_s, self._started + self.time_limit_s - time.monotonic()))

    def _interrupt(self) -> None:
        with self._lock:
            if self._stop.is_set() or self._finishing:
                return
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(self._worker_thread), ctypes.py_object(Cancelled))
            log.warning("work of %s left 'running' while in progress: stopped", self.rows.model.__name__)


def status_after_interrupt(current: Callable[[], str]) -> str:
    """``current()`` after the heartbeat stopped the work; the stop may have landed inside a query of this
    thread's connection and left it unusable, so a failing read is retried once on a new connection."""
    try:
        return current()
    except DatabaseError:
        connection.close()
        return current()


def clean_json(x: Any) -> Any:
    """JSON-safe copy: NaN and infinities become null (PostgreSQL's jsonb rejects them)."""
    if isinstance(x, float):
        return x if math.isfinite(x) else None
    if isinstance(x, dict):
        return {str(k): clean_json(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [clean_json(v) for v in x]
    if hasattr(x, "item"):  # numpy scalar
        return clean_json(x.item())
    return x
