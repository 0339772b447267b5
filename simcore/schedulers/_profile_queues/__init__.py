"""What the profile study's queueing schedulers (Affinity, Greedy-1/2/3) share.

One FIFO queue per job type and a pool of idle one-job machines grouped by
(machine type, last job type); every arrival and completion triggers one
decision pass, which subclasses implement in :meth:`decide`.
"""

from __future__ import annotations

from collections import deque

import numpy as np

from simcore.core.engine import Simulation
from simcore.profiles.pool import IdlePool, initial_pool, require_profile
from simcore.schedulers.base import Scheduler


class ProfileQueueScheduler(Scheduler):
    #: Run times per job type and machine type decide every choice (section 4).
    requires = frozenset({"profile"})

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.rt = require_profile(sim, self.name)
        self.queues: list[deque[int]] = [deque() for _ in range(self.rt.cold.shape[0])]
        self.pool: IdlePool = initial_pool(sim)
        self.submit = sim.submit
        self.cls = sim.job_class
        self.cfg: list[int] = sim.config_of.tolist()
        self.waiting = 0

    def on_arrival(self, job: int) -> None:
        self.queues[int(self.cls[job])].append(job)
        self.waiting += 1
        self.decide()

    def on_completion(self, job: int, machine: int) -> None:
        self.pool.add(machine, self.cfg[machine], int(self.sim.last_class[machine]))
        self.decide()

    def decide(self) -> None:
        """Start whatever queued jobs the policy starts now."""
        raise NotImplementedError
