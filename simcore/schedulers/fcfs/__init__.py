"""FCFS: the profile study's strawman, "simply assigns an incoming job to the first available machine".

Jobs start in arrival order; the head of the queue blocks the others until
some machine can take it. "First available machine" is read as the machine
that has been available longest (a FIFO of free machines, the natural
reading of a queue-based simulator); ``pick=lowest-index`` takes the free
machine with the lowest number instead (Table 1 order, so type 1 first).

Deviation / generalisation: the paper's machines run one job at a time. On
clusters whose machines hold several jobs, "available" means the job fits in
the machine's free capacity, and "available longest" means the machine whose
last job finished earliest.

Where a job cannot run (an infinite processing time: a rate of 0, LoTES
section 5.3) FCFS never starts it: the head takes the longest-idle (or
lowest-numbered) free machine among those where it can run, and blocks the
queue while there is none, as strict FCFS does.

Versus the paper: the baseline of Figures 12-13; its run times come from a
profile table derived from the paper's stated findings (the paper prints no
table, see ``simcore/data/ncbi_profile.json``), so absolute completion times
are ours, not the paper's.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers.base import Param, Scheduler

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel


@register("fcfs")
class FCFS(Scheduler):
    name = "fcfs"
    description = "First come, first served: the oldest job takes the machine that has been free longest"
    params = (
        Param("pick", str, "longest-idle", "which free machine FCFS takes", choices=("longest-idle", "lowest-index")),
    )

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.pick = str(options.get("pick", "longest-idle"))

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.queue: deque[int] = deque()
        # Time each machine last became free (-inf: never used, so index order decides at the start).
        self.idle_since = np.full(sim.n_machines, -np.inf)
        self._single = bool(np.all(sim.capacity == 1.0)) and bool(np.all(sim.request == 1.0))
        self._all_runnable = sim.all_runnable
        # One-slot fast path: a FIFO of idle machines is exactly "free longest" (ties in index order).
        self._idle: deque[int] = deque(range(sim.n_machines))
        self._idle_sorted = list(range(sim.n_machines))

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.fcfs.kernel import make

        return make(self, sim)

    def on_arrival(self, job: int) -> None:
        self.queue.append(job)
        self._dispatch()

    def on_completion(self, job: int, machine: int) -> None:
        self.idle_since[machine] = self.sim.now
        if self._single:
            if self.pick == "longest-idle":
                self._idle.append(machine)
            else:
                import bisect

                bisect.insort(self._idle_sorted, machine)
        self._dispatch()

    def _dispatch(self) -> None:
        sim = self.sim
        q = self.queue
        if self._single:
            pool: Any = self._idle if self.pick == "longest-idle" else self._idle_sorted
            if self._all_runnable:
                while q and pool:
                    m = pool.popleft() if self.pick == "longest-idle" else pool.pop(0)
                    sim.start(q.popleft(), m)
                return
            while q and pool:
                # The first machine in pool order where the head can run; none blocks the queue.
                i = next((i for i, m in enumerate(pool) if sim.can_run(q[0], m)), -1)
                if i < 0:
                    return
                m = pool[i]
                del pool[i]
                sim.start(q.popleft(), m)
            return
        view = sim.view
        while q:
            job = q[0]
            fit = view.fit_mask(view.floors_of(job))
            if not self._all_runnable:
                fit &= np.repeat(np.array(sim.runnable_configs(job)), sim.cluster.counts)
            if not fit.any():
                return
            if self.pick == "lowest-index":
                m = int(np.argmax(fit))
            else:
                m = int(np.argmin(np.where(fit, self.idle_since, np.inf)))
            q.popleft()
            sim.start(job, m)
