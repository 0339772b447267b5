"""The Greedy dispatch policy of the LoTES paper (section 5.1)."""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from simcore.core.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers.base import Scheduler

#: Uniform random numbers are drawn from the injected generator in batches of
#: this size: one numpy call per batch instead of one per tie-break.
DRAW_BATCH = 4096

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel


@register("greedy")
class Greedy(Scheduler):
    """First fit in configuration order, else the shortest machine queue; FCFS per machine.

    As LoTES section 5.1 describes it:

    * **Arrival.** The job starts on the first machine, in configuration order
      (Table 1 from top to bottom, which is machine index order here), whose
      free capacity holds it in every resource. An arriving job may start on
      a machine whose own queue is not empty: the paper starts a job
      "immediately if a machine is found that can process" it, and that
      machine's queued head does not fit there (else it would be running).
    * **Queueing.** If no machine fits, the job joins the queue of one
      machine: the one with the fewest waiting jobs, ties broken uniformly at
      random with the injected generator. *Clarification:* only machines
      that could ever run the job (capacity at least its request in every
      resource) are considered; the paper's Table 1 has machines with 3% of
      the largest memory, and a job queued on one that can never hold it
      would wait forever.
    * **Completion on machine m.** m serves its own queue first come, first
      served: it starts the head while the head fits and stops at the first
      head that does not fit. A non-fitting head blocks the jobs behind it
      (strict FCFS), even if a later one would fit.
    * **No migration.** A job that entered a machine's queue stays there
      until that machine starts it; it is never moved to another machine,
      even when another machine frees up first (the paper queues a job "for a
      single machine").

    * **Where a job cannot run.** A machine where the job's processing time
      is infinite (a rate of 0, LoTES section 5.3) is never chosen: first fit
      skips configurations where the job cannot run, and the shortest-queue
      choice considers only machines that could ever run it.

    Implementation: first fit is one vectorised pass over the engine's free
    capacity, read through its public view (``sim.view.first_fit``: one
    contiguous row per resource, a few microseconds for 10,000 machines). Machines are kept in buckets by
    queue length (per configuration, so the "could ever run the job"
    restriction is cheap); a bucket is a list with swap-remove, and a tie is
    broken by drawing a uniform number ``u`` from the generator and taking
    the ``floor(u * ties)``-th tied machine, configurations in order and
    bucket order within each (bucket order depends on history; the choice is
    uniform over the tied machines whatever the order; at the first tie
    every bucket is in machine order). Only a real tie (two or more
    candidates) consumes a random number; they are drawn in batches of
    ``DRAW_BATCH``.

    Versus the paper: no known difference; at the section 5.4 loads its queue
    grows without bound, as the paper reports (it leaves Greedy out of Figures
    11-13 for that reason).
    """

    name = "greedy"
    description = "First fit in configuration order; else the shortest machine queue (random ties); FCFS per machine"

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.view = sim.view
        n = sim.n_machines
        self.queues: list[deque[int] | None] = [None] * n
        self.qlen: list[int] = [0] * n
        cfg = sim.config_of.tolist()
        n_cfg = sim.cluster.n_configs
        #: buckets[c][L]: machines of configuration c with L waiting jobs.
        self.buckets: list[list[list[int]]] = [[[]] for _ in range(n_cfg)]
        self.pos: list[int] = [0] * n
        for m in range(n):
            b = self.buckets[cfg[m]][0]
            self.pos[m] = len(b)
            b.append(m)
        #: Shortest queue length within each configuration.
        self.minlen: list[int] = [0] * n_cfg
        self.cfg: list[int] = cfg
        self.cfg_cap: list[list[float]] = sim.cluster.capacity.tolist()
        self.cfg_present: list[int] = [c for c in range(n_cfg) if sim.cluster.counts[c] > 0]
        self._draws: list[float] = []
        #: Jobs that no machine can run (every configuration that holds them has rate 0).
        self.unrunnable = 0

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.greedy.kernel import make

        return make(self, sim)

    # -- events ---------------------------------------------------------------------------
    def on_arrival(self, job: int) -> None:
        sim = self.sim
        m = self.view.first_fit(job)
        if m >= 0 and not sim.all_runnable and not sim.can_run(job, m):
            m = self._first_runnable_fit(job)
        if m >= 0:
            sim.start(job, m)
            return
        self._enqueue(job)

    def _first_runnable_fit(self, job: int) -> int:
        """First fit among the configurations where ``job`` can run (rare: some rate is 0)."""
        runnable = self.sim.runnable_configs(job)
        for c, (lo, hi) in enumerate(self.view.config_ranges):
            if runnable[c] and hi > lo:
                m = self.view.first_fit(job, lo, hi)
                if m >= 0:
                    return m
        return -1

    def on_completion(self, job: int, machine: int) -> None:
        q = self.queues[machine]
        if not q:
            return
        sim = self.sim
        while q and sim.fits(q[0], machine):
            head = q.popleft()
            sim.start(head, machine)
            self._move(machine, -1)

    # -- machine queues ---------------------------------------------------------------------
    def _enqueue(self, job: int) -> None:
        m = self._shortest_queue(job)
        if m < 0:
            self.unrunnable += 1
            return
        q = self.queues[m]
        if q is None:
            q = self.queues[m] = deque()
        q.append(job)
        self._move(m, +1)

    def _shortest_queue(self, job: int) -> int:
        """A machine that could hold and run ``job`` with the fewest waiting jobs (uniform among ties)."""
        sim = self.sim
        floors = self.view.floors_of(job)
        R = len(floors)
        runnable = None if sim.all_runnable else sim.runnable_configs(job)
        best = -1
        tied: list[int] = []  # configurations holding machines at the best length
        total = 0
        for c in self.cfg_present:
            cap = self.cfg_cap[c]
            if any(not cap[off] >= floors[off] for off in range(R)):
                continue
            if runnable is not None and not runnable[c]:
                continue
            L = self.minlen[c]
            if best < 0 or L < best:
                best = L
                tied = [c]
                total = len(self.buckets[c][L])
            elif L == best:
                tied.append(c)
                total += len(self.buckets[c][L])
        if best < 0:
            # check_compatible guarantees some machine could hold it; with rates of 0 it may
            # still run nowhere, and then it waits for ever (counted as queued at the end).
            return -1
        if total == 1:
            return self.buckets[tied[0]][best][0]
        k = int(self._uniform() * total)
        for c in tied:
            b = self.buckets[c][best]
            if k < len(b):
                return b[k]
            k -= len(b)
        return self.buckets[tied[-1]][best][-1]  # only reached if u * total rounds up to total

    def _uniform(self) -> float:
        if not self._draws:
            self._draws = self.rng.random(DRAW_BATCH).tolist()[::-1]
        return self._draws.pop()

    def _move(self, m: int, step: int) -> None:
        """Change machine ``m``'s queue length by ``step`` (+1 or -1), keeping the buckets."""
        c = self.cfg[m]
        buckets = self.buckets[c]
        old = self.qlen[m]
        new = old + step
        self.qlen[m] = new
        b = buckets[old]
        p = self.pos[m]
        last = b.pop()
        if last != m:
            b[p] = last
            self.pos[last] = p
        if new == len(buckets):
            buckets.append([])
        nb = buckets[new]
        self.pos[m] = len(nb)
        nb.append(m)
        if step > 0:
            if old == self.minlen[c] and not b:
                self.minlen[c] = new
        elif new < self.minlen[c]:
            self.minlen[c] = new
