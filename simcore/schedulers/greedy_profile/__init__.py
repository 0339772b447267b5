"""Greedy-1, Greedy-2 and Greedy-3: the profile study's minimum-cost greedy schedulers (section 4, Figure 10).

Each decision (repeated while jobs wait and machines are idle):

1. For every queued job, the cost of every idle machine is its expected run
   time from a profile table; the job's best machine is the cheapest, and its
   benefit is the absolute run-time difference to its second-best idle
   machine ("The benefit is computed as an absolute difference in runtime").
2. The oldest queued job names its best machine; among all queued jobs whose
   best machine is that same machine ("conflicts"), the one with the largest
   benefit gets it.

The three variants differ only in the table:

- ``greedy1``: run time per (job type, machine type), cold cache: it ignores
  affinity ("does a relatively poor job of taking affinity issues into account").
- ``greedy2``: the table gains "an additional dimension which is based on the
  type of job that was last run on a machine", so a warm machine looks cheaper.
- ``greedy3``: Greedy-2's table learned online: unknown entries cost
  ``initial_cost_s`` (low, 0 by default, so unexplored combinations are tried
  first) and each completion records the observed run time (the running mean
  of all observations of that entry).

Deviations and readings, with reasons:

- Figure 10's pseudocode adds the same job to its conflict list once per
  rival and never removes the assigned machine; we follow the prose above
  and recompute after every assignment.
- With a single idle machine Figure 10 has no second-best idle machine. A
  queue only forms when no machine is idle, so this is the case at every
  completion: reading it as "oldest job wins" would make every Greedy plain
  FCFS whenever jobs wait. We take as the second-best choice the job's best
  *other* machine type in the cluster (cold run time), i.e. what waiting for
  another machine would give it; the freed machine goes to the job that
  gains most there (or loses least). In a one-type cluster there is no other
  type, the benefit is infinite and the oldest job wins.
- Equal costs (identical machines) are broken by how long the machine has
  been idle, longest first, as FCFS does; equal benefits by job age.
- Jobs of one type have identical costs, so the decision is taken per job
  type (its oldest job stands for all); this is exact and keeps a decision at
  (job types x idle groups) work however long the queue.
- Greedy-3 keeps an entry at its optimistic value until a job using it
  completes (the paper updates "when a job completes"), so several jobs may
  explore one combination at once.
- Where a job cannot run: never. These schedulers run only on a profile
  table, which must give a finite run time for every job type and machine
  type (the readers and :func:`~simcore.profiles.pool.require_profile` refuse
  any other), so every machine can run every job.

Compiled: ``kernel.py`` (numba, one kernel for the three) makes the same decisions
from the cost tables these classes define (Greedy-3's learned in the kernel with the
same arithmetic); ``--engine python`` runs these classes.

Versus the paper: on the heterogeneous full trace our greedy schedulers gain
more over FCFS (about -28% against the paper's -10.5% and -19%): their gains
follow the spread of run times across machine types that the profile table
derived from the paper's stated findings implies (the paper prints no table).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from simcore.core.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers._profile_queues import ProfileQueueScheduler
from simcore.schedulers.base import Param

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel


class _GreedyProfile(ProfileQueueScheduler):
    """Figure 10 with the cost table left to subclasses (:meth:`cost`)."""

    #: Whether the cost table is learned from completions (Greedy-3), which the kernel then updates.
    learns: ClassVar[bool] = False

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.K = self.rt.cold.shape[0]
        self.cold = self.rt.cold.tolist()
        self.warm = self.rt.warm.tolist()
        # Machine types present in the cluster, for the second-best choice with one idle machine.
        self.present = sorted(set(self.cfg))

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.greedy_profile.kernel import make

        return make(self, sim, learn=self.learns)

    def cold_cost(self, k: int, config: int) -> float:
        """Cold-cache run time (s) of type ``k`` on machine type ``config`` as this scheduler knows it."""
        return self.cold[k][config]  # type: ignore[no-any-return]

    def other_type_cost(self, k: int, config: int) -> float:
        """Best cold run time (s) of type ``k`` on any machine type other than ``config`` (inf if none)."""
        return min((self.cold_cost(k, j) for j in self.present if j != config), default=math.inf)

    def cost(self, k: int, config: int, last: int) -> float:
        """Expected run time (s) of a type-``k`` job on an idle ``config`` machine whose last type is ``last``."""
        raise NotImplementedError

    def _started(self, job: int, machine: int, k: int, config: int, last: int) -> None:
        """Hook for Greedy-3's bookkeeping."""

    def decide(self) -> None:
        pool = self.pool
        sim = self.sim
        submit = self.submit
        while self.waiting and pool.size:
            groups = pool.nonempty()  # oldest head first: the first minimum is the longest-idle machine
            best: dict[int, tuple[tuple[int, int], float]] = {}
            oldest_k = -1
            oldest_t = math.inf
            for k, q in enumerate(self.queues):
                if not q:
                    continue
                b_key = groups[0][0]
                b_cost = math.inf
                b_n = 0
                second = math.inf
                for key, _, n in groups:
                    c = self.cost(k, key[0], key[1])
                    if c < b_cost:
                        if b_cost < second:
                            second = b_cost
                        b_key, b_cost, b_n = key, c, n
                    elif c < second:
                        second = c
                if b_n >= 2:
                    second = b_cost  # an identical machine is the second-best choice
                elif pool.size == 1:
                    second = self.other_type_cost(k, b_key[0])
                benefit = second - b_cost if second < math.inf else math.inf
                best[k] = (b_key, benefit)
                t = submit[q[0]]
                if t < oldest_t:
                    oldest_t, oldest_k = t, k
            target = best[oldest_k][0]
            win_k = oldest_k
            win_b = best[oldest_k][1]
            win_t = oldest_t
            for k, (key, benefit) in best.items():
                if key != target or k == oldest_k:
                    continue
                t = submit[self.queues[k][0]]
                if benefit > win_b or (benefit == win_b and t < win_t):
                    win_k, win_b, win_t = k, benefit, t
            job = self.queues[win_k].popleft()
            self.waiting -= 1
            m = pool.pop(target)
            last = int(sim.last_class[m])
            sim.start(job, m)
            self._started(job, m, win_k, target[0], last)


@register("greedy1")
class Greedy1(_GreedyProfile):
    name = "greedy1"
    description = (
        "Profile study, Figure 10: each job to its fastest idle machine by profile (cold cache); "
        "conflicts go to the job that gains most over its second-best machine"
    )

    def cost(self, k: int, config: int, last: int) -> float:
        return self.cold[k][config]  # type: ignore[no-any-return]


@register("greedy2")
class Greedy2(_GreedyProfile):
    name = "greedy2"
    description = (
        "Profile study: Greedy-1 with the profile extended by the machine's last job type, so warm caches count"
    )

    def cost(self, k: int, config: int, last: int) -> float:
        return self.warm[k][config] if last == k else self.cold[k][config]  # type: ignore[no-any-return]


@register("greedy3")
class Greedy3(_GreedyProfile):
    name = "greedy3"
    description = (
        "Profile study: Greedy-2 learning the profile online; unknown entries look cheap until a job has run there"
    )
    learns = True
    params = (
        Param(
            "initial_cost_s",
            float,
            0.0,
            "assumed run time (s) of a job type / machine type / last job type combination never observed",
            min=0.0,
        ),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.initial_cost_s = float(options.get("initial_cost_s", 0.0))

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        M = sim.cluster.n_configs
        # learned[k][config][last + 1]: mean observed run time (s); count[...] observations.
        self.learned = [[[self.initial_cost_s] * (self.K + 1) for _ in range(M)] for _ in range(self.K)]
        self.count = [[[0] * (self.K + 1) for _ in range(M)] for _ in range(self.K)]
        self.entry: dict[int, tuple[int, int, int]] = {}

    def cost(self, k: int, config: int, last: int) -> float:
        return self.learned[k][config][last + 1]

    def cold_cost(self, k: int, config: int) -> float:
        """Mean of the observed entries with a cold cache (last type != k); optimistic if none yet."""
        vals = [
            v
            for p, (v, n) in enumerate(zip(self.learned[k][config], self.count[k][config], strict=True))
            if n and p - 1 != k
        ]
        return sum(vals) / len(vals) if vals else self.initial_cost_s

    def _started(self, job: int, machine: int, k: int, config: int, last: int) -> None:
        self.entry[job] = (k, config, last + 1)

    def on_completion(self, job: int, machine: int) -> None:
        k, j, p = self.entry.pop(job)
        observed = self.sim.now - float(self.sim.start_t[job])
        n = self.count[k][j][p] + 1
        self.count[k][j][p] = n
        old = self.learned[k][j][p] if n > 1 else 0.0
        self.learned[k][j][p] = old + (observed - old) / n
        super().on_completion(job, machine)

    def known_entries(self) -> int:
        """How many (job type, machine type, last type) entries have been observed."""
        return sum(1 for a in self.count for b in a for c in b if c)
