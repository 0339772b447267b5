"""Evaluating policies on a scenario, in this process or in local worker processes (``simcore explore --workers``).

The cluster and workload are built once per process (in each worker by the
pool's initializer, which keeps them in that worker's module state: the
standard way to give ``ProcessPoolExecutor`` tasks a large read-only input),
and every policy text is then one simulation. Results are keyed by policy
text, so they do not depend on how many processes computed them or in which
order they finished.
"""

from __future__ import annotations

import functools
import multiprocessing
import signal
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from pathlib import Path
from types import TracebackType
from typing import Any

from simcore.core.errors import InputError, SchedulingError, SimcoreError
from simcore.core.model import Cluster, Workload
from simcore.dse.explore.fitness import SCHEDULER, Evaluation, evaluate
from simcore.scenario import build_cluster, build_workload, validate_scenario

__all__ = ["LocalEvaluator", "SEARCH_KEYS", "build", "check_scenario"]

#: The parts of an :mod:`simcore.archive` scenario a search uses.
SEARCH_KEYS = ("cluster", "workload", "load", "hours")


def check_scenario(scenario: Mapping[str, Any], sim_seed: int) -> dict[str, Any]:
    """The search's scenario (cluster, workload, load, hours), validated as an experiment's of ``staged``."""
    full = {k: scenario[k] for k in SEARCH_KEYS if k in scenario}
    full.update(schedulers=[SCHEDULER], scheduler_params={}, seeds=[int(sim_seed)], drain=True)
    checked = validate_scenario(full)
    return {k: checked[k] for k in SEARCH_KEYS}


def build(
    scenario: Mapping[str, Any], sim_seed: int, files: Mapping[str, Path] | None = None
) -> tuple[Cluster, Workload]:
    """The scenario's cluster and its workload under ``sim_seed``; a workload without tasks is refused."""
    cluster = build_cluster(scenario, files)
    workload = build_workload(scenario, cluster, sim_seed, files)
    if workload.n_jobs == 0:
        raise InputError(f"workload {workload.name!r} has no tasks in the chosen window: there is nothing to schedule")
    return cluster, workload


# Worker-process state, set once by _init (see the module docstring).
_WORKER: dict[str, Any] = {}


#: Builds a cluster and workload (a picklable callable: a module-level function or a partial of one).
Builder = Callable[[], tuple[Cluster, Workload]]


def _init(builder: Builder, sim_seed: int, engine: str) -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent stops the pool on Ctrl-C
    _WORKER["built"] = builder()
    _WORKER["seed"] = sim_seed
    _WORKER["engine"] = engine


def _from_scenario(scenario: dict[str, Any], sim_seed: int, files: dict[str, Path] | None) -> tuple[Cluster, Workload]:
    return build(scenario, sim_seed, files)


def _one(policy: str) -> tuple[dict[str, Any] | None, str | None, bool]:
    """(evaluation, error message, broke an engine rule): errors travel as text (they do not all pickle)."""
    cluster, workload = _WORKER["built"]
    try:
        return evaluate(cluster, workload, policy, _WORKER["seed"], _WORKER["engine"]).to_dict(), None, False
    except SimcoreError as e:
        return None, str(e), False
    except SchedulingError as e:
        return None, str(e), True


class LocalEvaluator:
    """An :data:`~simcore.dse.explore.search.Evaluator` over local processes (``workers`` > 1) or this one.

    The scenario is built here first, so bad input fails at once with its
    message, before any process starts. ``builder`` replaces the scenario by
    any picklable function returning a cluster and a workload (the benchmark's). ``engine``
    is the simulations' (:func:`~simcore.dse.explore.fitness.evaluate`): the staged kernel by
    default, ``"python"`` for its specification; the evaluations are the same.
    """

    def __init__(
        self,
        scenario: Mapping[str, Any] | None,
        sim_seed: int,
        workers: int = 1,
        files: Mapping[str, Path] | None = None,
        *,
        builder: Builder | None = None,
        engine: str = "compiled",
    ) -> None:
        if builder is None:
            if scenario is None:
                raise ValueError("give a scenario or a builder")
            builder = functools.partial(_from_scenario, dict(scenario), int(sim_seed), dict(files) if files else None)
        self.sim_seed = int(sim_seed)
        self.engine = engine
        self.cluster, self.workload = builder()
        self.workers = max(1, int(workers))
        self._pool: ProcessPoolExecutor | None = None
        if self.workers > 1:
            self._pool = ProcessPoolExecutor(
                max_workers=self.workers,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_init,
                initargs=(builder, self.sim_seed, engine),
            )

    def __call__(self, policies: Sequence[str]) -> dict[str, Evaluation]:
        if self._pool is None:
            return {p: evaluate(self.cluster, self.workload, p, self.sim_seed, self.engine) for p in policies}
        futures: list[Future[tuple[dict[str, Any] | None, str | None, bool]]] = [
            self._pool.submit(_one, p) for p in policies
        ]
        out: dict[str, Evaluation] = {}
        for p, f in zip(policies, futures, strict=True):
            got, error, broke = f.result()
            if got is None:
                message = f"policy {p!r}: {error}"
                raise SchedulingError(message) if broke else SimcoreError(message)
            out[p] = Evaluation.from_dict(got)
        return out

    def close(self, abort: bool = False) -> None:
        """Stop the worker processes: after their work, or at once (``abort``: an error or Ctrl-C)."""
        pool, self._pool = self._pool, None
        if pool is None:
            return
        if not abort:
            pool.shutdown(wait=True)
            return
        pool.shutdown(wait=False, cancel_futures=True)
        # No public way to end running workers before Python 3.14 (as simcore.sweep.run.stop_workers).
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            if proc.is_alive():
                proc.terminate()

    def __enter__(self) -> LocalEvaluator:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close(abort=exc is not None)
