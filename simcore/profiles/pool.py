"""Idle machines grouped by (machine type, last job type), and per-type job queues.

The profile schedulers decide from run times that depend only on the job's
type, the machine's type and the machine's last job type. So all idle
machines with the same (type, last type) are interchangeable at this
instant, and so are all queued jobs of one type except for their age. The
schedulers therefore look at a handful of groups (at most machine types x
(job types + 1)) instead of every machine and every queued job, which keeps
a decision cheap even when thousands of jobs wait.

Within a group machines leave in the order they became idle (FIFO), the
same "free longest" rule as FCFS; a global sequence number orders the
groups' heads, so "the first free machine" across groups is well defined.
"""

from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from simcore.core.errors import ParameterError
from simcore.profiles.runtime import ProfileRuntime

if TYPE_CHECKING:
    from simcore.core.engine import Simulation

Key = tuple[int, int]  # (machine type, last job type or -1)


class IdlePool:
    """Idle machines by (config, last class); FIFO within a group."""

    def __init__(self) -> None:
        self.groups: dict[Key, deque[tuple[int, int]]] = {}
        self._seq = 0
        self.size = 0

    def add(self, machine: int, config: int, last: int) -> None:
        self._seq += 1
        key = (config, last)
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = deque()
        g.append((self._seq, machine))
        self.size += 1

    def nonempty(self) -> list[tuple[Key, int, int]]:
        """``(key, head sequence, machines in group)`` of every non-empty group, oldest head first."""
        out = [(k, g[0][0], len(g)) for k, g in self.groups.items() if g]
        out.sort(key=lambda x: x[1])
        return out

    def pop(self, key: Key) -> int:
        self.size -= 1
        return self.groups[key].popleft()[1]


def require_profile(sim: Simulation, scheduler: str) -> ProfileRuntime:
    """The workload's profile run-time model, or a ParameterError saying what the scheduler needs."""
    rt = sim.runtime
    if not isinstance(rt, ProfileRuntime):
        raise ParameterError(
            f"scheduler {scheduler!r} needs a workload with a run-time profile per job type and machine type "
            f"(ncbi-blast, ncbi-blast-reduced); workload {sim.workload.name!r} has none"
        )
    if rt.cold.shape[1] != sim.cluster.n_configs:
        raise ParameterError(
            f"scheduler {scheduler!r}: the profile has {rt.cold.shape[1]} machine types but "
            f"cluster {sim.cluster.name!r} has {sim.cluster.n_configs} configurations"
        )
    # A job type that cannot run on a machine type would need an infinite time there; the
    # profile schedulers choose among idle machines by cost and would pick it when nothing
    # else is idle. The profile readers refuse such tables; a table built in code is checked here.
    bad = ~(np.isfinite(rt.cold) & np.isfinite(rt.warm) & (rt.cold >= 0) & (rt.warm >= 0))
    if bad.any():
        k, j = (int(x) for x in np.argwhere(bad)[0])
        raise ParameterError(
            f"scheduler {scheduler!r} needs a finite run time for every job type and machine type; "
            f"the profile has none for job type {k} on machine type {j}"
        )
    return rt


def initial_pool(sim: Simulation) -> IdlePool:
    """Every machine idle, in machine order (so index order breaks the first ties, as in FCFS)."""
    pool = IdlePool()
    cfg = sim.config_of.tolist()
    last = sim.last_class.tolist()
    for m in range(sim.n_machines):
        pool.add(m, cfg[m], last[m])
    return pool
