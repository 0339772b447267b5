"""Probes in local processes: the ``run_probes`` of the command line (:func:`simcore.planning.plan.make_plan`).

Each worker is a fresh interpreter ('spawn', as :mod:`simcore.sweep.run`) that lives for the whole plan,
so the workloads it builds (one per seed, :func:`simcore.planning.probe.plan_workload`) serve every size
and scheduler it probes later. A round with fewer probes than workers is split by scheduler, so that
both cores work when five schedulers want one size.
"""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor
from types import TracebackType

from simcore.planning.plan import ProbeRequest
from simcore.planning.probe import PlanSpec, ProbeResult, probe
from simcore.sweep.run import ignore_sigint, stop_workers


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
                max_workers=workers, mp_context=multiprocessing.get_context("spawn"), initializer=ignore_sigint
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
        stop_workers(pool)

    def __enter__(self) -> LocalProbes:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()
