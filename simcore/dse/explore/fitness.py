"""The fitness of a scheduler of the design space: a simulation of its policy, scored by TRT, JMS, NJSL or JWT.

An individual is simulated as the registered scheduler ``staged`` with its
policy text, on the search's cluster and workload, with the scheduler stream
of the simulation seed (:func:`simcore.core.seeding.scheduler_rng`): the numbers
are those of ``simcore run --scheduler staged --policy TEXT --seed S --drain``.
One simulation gives all four metrics of section 2.3 (:mod:`simcore.core.jobmetrics`);
the search minimises the mean of the one chosen.

Choices where the paper is silent (each with its reason):

- The simulation always drains (runs until every submitted job finished):
  OpenDC simulates a workload to its end, and a cut at the arrival window
  would leave the long jobs of every scheduler unfinished.
- Unfinished work. A policy can leave tasks for ever unfinished (an
  admission that never admits once the system is idle). Leaving those out
  would reward starving jobs, so the metrics are *censored*: an unfinished
  task counts as completing, and a job that never started as starting, at
  the end of the simulation. Such a run is then penalised:
  its fitness is :data:`PENALTY_FACTOR` times its censored metric, so it
  ranks behind the schedulers that finish their work while the search still
  sees which of the broken ones got furthest. The count of unfinished tasks
  is recorded with every evaluation.
- NJSL is the mean over jobs with a positive critical path (a job of
  zero-length tasks has no schedule length to normalise).

The cache key (:func:`cache_key`) names everything the numbers depend on:
the policy text, the cluster and workload (:func:`scenario_fingerprint`:
presets with their parameters, files by the SHA-256 of their bytes), the
load and arrival window, the simulation seed and the code version.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from simcore.core.engine import Simulation
from simcore.core.jobmetrics import METRICS, job_metrics
from simcore.core.model import Cluster, FloatArray, Workload, shortest_durations
from simcore.core.seeding import scheduler_rng
from simcore.core.taskgraph import TaskGraph
from simcore.schedulers import create

__all__ = [
    "METRIC_NAMES",
    "PENALTY_FACTOR",
    "SCHEDULER",
    "Evaluation",
    "cache_key",
    "evaluate",
    "scenario_fingerprint",
]

#: The scheduler that gives a policy text its behaviour.
SCHEDULER = "staged"
#: The objectives (section 2.3), all minimised: trt, jms, njsl, jwt.
METRIC_NAMES: tuple[str, ...] = tuple(METRICS)
#: Fitness multiplier of a run that leaves tasks unfinished (see the module docstring).
PENALTY_FACTOR = 10.0


@dataclass(frozen=True)
class Evaluation:
    """What one simulation of one policy gave: the four mean metrics (censored) and how much was left undone."""

    policy: str
    trt: float
    jms: float
    njsl: float
    jwt: float
    tasks: int
    jobs: int
    unfinished: int
    simulated_s: float
    #: Wall and CPU time of the simulation (s): informative only, never part of a comparison.
    wall_s: float = 0.0
    cpu_s: float = 0.0

    def metric(self, name: str) -> float:
        """The mean of metric ``name`` (trt, jms, njsl or jwt)."""
        return float(getattr(self, name))

    def fitness(self, metric: str) -> float:
        """The minimised fitness: the metric's mean, times :data:`PENALTY_FACTOR` if tasks were left unfinished."""
        value = self.metric(metric)
        return value * PENALTY_FACTOR if self.unfinished else value

    def to_dict(self) -> dict[str, Any]:
        return {
            "policy": self.policy,
            "trt": self.trt,
            "jms": self.jms,
            "njsl": self.njsl,
            "jwt": self.jwt,
            "tasks": self.tasks,
            "jobs": self.jobs,
            "unfinished": self.unfinished,
            "simulated_s": self.simulated_s,
            "wall_s": self.wall_s,
            "cpu_s": self.cpu_s,
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Evaluation:
        return cls(
            policy=str(d["policy"]),
            trt=float(d["trt"]),
            jms=float(d["jms"]),
            njsl=float(d["njsl"]),
            jwt=float(d["jwt"]),
            tasks=int(d["tasks"]),
            jobs=int(d["jobs"]),
            unfinished=int(d["unfinished"]),
            simulated_s=float(d["simulated_s"]),
            wall_s=float(d.get("wall_s") or 0.0),
            cpu_s=float(d.get("cpu_s") or 0.0),
        )


def _mean(x: FloatArray) -> float:
    x = x[np.isfinite(x)]
    return float(x.mean()) if len(x) else 0.0


def censored_means(
    graph: TaskGraph, submit: FloatArray, start: FloatArray, finish: FloatArray, shortest: FloatArray, end: float
) -> dict[str, float]:
    """The four mean metrics with unfinished tasks completing (and unstarted ones starting) at ``end``.

    Equal to the plain means of :func:`simcore.core.jobmetrics.job_metrics` when everything finished.
    """
    start = np.where(np.isnan(start), end, start)
    finish = np.where(np.isnan(finish), end, finish)
    m = job_metrics(graph, submit, start, finish, shortest)
    njsl = m["njsl"][m["critical_path"] > 0]
    return {"trt": _mean(m["trt"]), "jms": _mean(m["jms"]), "njsl": _mean(njsl), "jwt": _mean(m["jwt"])}


def evaluate(cluster: Cluster, workload: Workload, policy: str, seed: int, engine: str = "compiled") -> Evaluation:
    """Simulate ``policy`` (a policy text) as the ``staged`` scheduler, draining, and score it.

    ``seed`` gives the scheduler's random stream (its Random atoms), as ``simcore run --seed``.
    ``engine``: ``compiled`` runs the staged kernel where numba is installed (else Python, saying
    nothing: the numbers are the same), ``python`` the specification.
    """
    sched = create(SCHEDULER, policy=policy)
    w0, c0 = time.perf_counter(), time.process_time()
    sim = Simulation(cluster, workload, sched, scheduler_rng(seed), drain=True, samples=2, engine=engine)
    res = sim.run()
    graph = workload.graph if workload.graph is not None else TaskGraph.single_tasks(workload.n_jobs)
    shortest = shortest_durations(workload.runtime_model(cluster), workload.n_jobs, cluster.n_configs)
    means = censored_means(graph, res.submit, res.start, res.finish, shortest, float(res.end_s))
    unfinished = int(np.isnan(res.finish).sum())
    return Evaluation(
        policy=policy,
        trt=means["trt"],
        jms=means["jms"],
        njsl=means["njsl"],
        jwt=means["jwt"],
        tasks=int(workload.n_jobs),
        jobs=int(graph.n_jobs),
        unfinished=unfinished,
        simulated_s=float(res.end_s),
        wall_s=time.perf_counter() - w0,
        cpu_s=time.process_time() - c0,
    )


def _digest(obj: Any) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def scenario_fingerprint(scenario: Mapping[str, Any], file_digests: Mapping[str, str] | None = None) -> str:
    """A digest of what the simulated cluster and workload depend on.

    ``scenario``: the :mod:`simcore.archive` scenario's ``cluster``,
    ``workload``, ``load`` and ``hours``; a part given by file is identified by
    ``file_digests[file name]`` (the SHA-256 of its bytes), not by its name,
    so two uploads of the same bytes share results and a changed file does not.
    """
    digests = dict(file_digests or {})

    def part(spec: Mapping[str, Any]) -> dict[str, Any]:
        if "file" in spec:
            out = {"sha256": digests.get(str(spec["file"]), str(spec["file"]))}
            if spec.get("classes"):
                out["classes"] = digests.get(str(spec["classes"]), str(spec["classes"]))
            return out
        return {"preset": spec["preset"], "params": dict(spec.get("params") or {})}

    hours = scenario.get("hours")
    return _digest(
        {
            "cluster": part(scenario["cluster"]),
            "workload": part(scenario["workload"]),
            "load": float(scenario.get("load", 0.9)),
            "hours": None if hours is None else float(hours),
        }
    )


def cache_key(policy: str, fingerprint: str, seed: int, version: str) -> str:
    """The key under which an evaluation is stored: policy, scenario, simulation seed and code version."""
    return _digest([policy, fingerprint, int(seed), version])
