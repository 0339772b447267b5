"""Probes in local processes: the ``run_probes`` of the command line (:func:`simcore.planning.plan.make_plan`).

Each worker is a fresh interpreter ('spawn', as :mod:`simcore.sweep.run`) that lives for the whole plan,
so the workloads it builds (one per seed, :func:`simcore.planning.probe.plan_workload`) serve every size
and scheduler it probes later. A round with fewer probes than workers is split by scheduler, so that
both cores work when five schedulers want one size.
"""

from __future__ import annotations

import multiprocessing
import signal
from concurrent.futures import ProcessPoolExecutor
from types import TracebackType

from simcore.planning.plan import ProbeRequest
from simcore.planning.probe import PlanSpec, ProbeResult, probe


def _ignore_sigint() -> None:
    # Ctrl-C reaches the whole process group: the parent stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def split(requests: list[ProbeRequest], workers: int) -> list[ProbeRequest]:
    """``requests``, each split into one per scheduler when there are fewer than ``workers`` of them."""
    if len(requests) >= workers:
        return list(requests)
    return [ProbeRequest(r.machines, r.seed, (name,)) for r in requests for name in r.schedulers]


def _probe(spec: PlanSpec, r: ProbeRequest) -> ProbeResult:
    return probe(spec, r.machines, r.seed, list(r.schedulers))


def merge(results: list[ProbeResult]) -> list[ProbeResult]:
    """Results of split requests joined again per (size, seed)."""
    out: dict[tuple[int, int], ProbeResult] = {}
    for r in results:
        key = (r.machines, r.seed)
        if key not in out:
            out[key] = r
            continue
        m = out[key]
        m.values.update(r.values)
        m.met.update(r.met)
        m.errors.update(r.errors)
        m.runs.update(r.runs)
        m.wall_s += r.wall_s
    return list(out.values())


class LocalProbes:
    """``run_probes`` over ``workers`` local processes (in this process when ``workers`` is 1)."""

    def __init__(self, spec: PlanSpec, workers: int = 1) -> None:
        self.spec = spec
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None
        if workers > 1:
            self.pool = ProcessPoolExecutor(
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=_ignore_sigint
            )

    def __call__(self, requests: list[ProbeRequest]) -> list[ProbeResult]:
        if self.pool is None:
            return [_probe(self.spec, r) for r in requests]
        futures = [self.pool.submit(_probe, self.spec, r) for r in split(requests, self.workers)]
        return merge([f.result() for f in futures])

    def close(self) -> None:
        """Stop the workers now, also mid-probe (an error or Ctrl-C in the parent must not wait for them)."""
        if self.pool is None:
            return
        pool, self.pool = self.pool, None
        pool.shutdown(wait=False, cancel_futures=True)
        # No public way to end running workers before Python 3.14 (terminate_workers): the executor's
        # own process table is the only handle on them, as simcore.sweep.run does.
        processes = getattr(pool, "_processes", None) or {}
        for proc in list(processes.values()):
            if proc.is_alive():
                proc.terminate()
        for proc in list(processes.values()):
            proc.join(timeout=5)

    def __enter__(self) -> LocalProbes:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
