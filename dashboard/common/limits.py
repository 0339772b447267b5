"""The time and memory limits of one run or trace import in a worker (SIMCORE_RUN_TIME_LIMIT_S, SIMCORE_RUN_MEMORY_MB).

Time: the worker's heartbeat thread (dashboard.experiments.execution.Heartbeat)
checks the wall time of the attempt at every beat and, once it is over the
limit, fails the attempt with :meth:`Limits.time_message` and stops the
working thread. The heartbeat rather than the progress callback: a run can
spend minutes in phases without progress reports (building a large workload,
solving LoTES's LPs), and the heartbeat beats through all of them. A task
that is stuck in C code (which an asynchronous exception only reaches when
it returns) is killed by Celery's hard time limit a minute later
(dashboard.tasks); the run is failed with the limit's message by then.

Memory: ``RLIMIT_DATA`` on the worker's pool process while it does the work,
set to what the process holds when it starts plus the limit. Since Linux 4.7
it counts the private writable memory of the process: the heap and every
anonymous mapping numpy makes for a large array, but not shared libraries
or the address space reserved and never made writable (glibc's per-thread
malloc arenas, thread stacks' guard areas) that makes ``RLIMIT_AS`` useless
with numpy, scipy and OpenBLAS loaded (a worker's pool process reserves
about 340 MB of address space and 220 MB of data before it does anything).
Over the limit an allocation fails, numpy raises MemoryError at once, the
arrays are freed as the exception unwinds, and the worker writes the
readable message. The other choice, checking the resident size from the
heartbeat thread, samples every few seconds: a run that allocates faster
than that meets the kernel's OOM killer first, and a killed pool process is
indistinguishable from a lost one, so it would be retried instead of being
told why. Celery's prefork pool (the default, and ``make run``'s) runs one
task per process, so the limit is one run's; a process already holding a
limit (a threads pool) sets no second one and logs that it did not.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from django.conf import settings

log = logging.getLogger(__name__)

try:  # POSIX only; elsewhere no memory limit is applied (and docs/guide/configuration.md says so)
    import resource
except ImportError:  # pragma: no cover - not on Linux
    resource = None  # type: ignore[assignment]

_active = threading.Lock()


def data_bytes() -> int:
    """The private writable memory of this process (``VmData``, what ``RLIMIT_DATA`` counts); 0 if unknown."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmData:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


@dataclass(frozen=True)
class Limits:
    """The limits of one attempt; ``kind`` ("run" or "import") names it in the messages. 0: no limit."""

    kind: str
    time_s: int
    memory_mb: int

    @classmethod
    def from_settings(cls, kind: str) -> Limits:
        return cls(kind, settings.SIMCORE_RUN_TIME_LIMIT_S, settings.SIMCORE_RUN_MEMORY_MB)

    def time_message(self) -> str:
        return f"stopped after {self.time_s} s: the {self.kind} time limit (setting SIMCORE_RUN_TIME_LIMIT_S)"

    def memory_message(self) -> str:
        if not self.memory_mb:
            return f"the {self.kind} needed more memory than the worker has"
        return f"stopped at {self.memory_mb} MB of memory: the {self.kind} memory limit (setting SIMCORE_RUN_MEMORY_MB)"

    @contextmanager
    def memory(self) -> Iterator[None]:
        """Within the block this process may allocate at most ``memory_mb`` more megabytes (MemoryError beyond)."""
        if not self.memory_mb or resource is None or not _active.acquire(blocking=False):
            if self.memory_mb and resource is not None:
                log.warning("memory limit not applied: this process already runs work under one (a threads pool?)")
            yield
            return
        try:
            soft, hard = resource.getrlimit(resource.RLIMIT_DATA)
            want = data_bytes() + self.memory_mb * 2**20
            if hard != resource.RLIM_INFINITY:
                want = min(want, hard)
            resource.setrlimit(resource.RLIMIT_DATA, (want, hard))
            try:
                yield
            finally:
                resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))
        finally:
            _active.release()


#: Seconds between the time limit and Celery's hard kill of the pool process.
HARD_LIMIT_GRACE_S = 60


def hard_time_limit_s() -> float | None:
    """Celery's hard limit: a minute past SIMCORE_RUN_TIME_LIMIT_S, for a task stuck where the heartbeat cannot stop it.

    The heartbeat fails the work with the limit's message within seconds of
    the limit (:class:`Limits`); this only frees a pool process whose task
    sits in one long C call.
    """
    limit = settings.SIMCORE_RUN_TIME_LIMIT_S
    return float(limit + HARD_LIMIT_GRACE_S) if limit else None
