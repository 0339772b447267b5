"""A scheduler whose setup never ends, loaded only by one test's own worker (SIMCORE_PLUGINS).

It stands for any long phase without progress reports (building a huge
cluster or workload, solving a large LP), to check that a run declared lost
during such a phase is stopped and frees its worker.
"""

from __future__ import annotations

import time

import numpy as np

from simcore.core.engine import Simulation
from simcore.schedulers import register
from simcore.schedulers.base import Scheduler


@register("test-slow-setup")
class SlowSetup(Scheduler):
    description = "test only: a setup that never ends"

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        while True:
            time.sleep(0.05)

    def on_arrival(self, job: int) -> None:  # pragma: no cover - never reached
        raise AssertionError

    def on_completion(self, job: int, machine: int) -> None:  # pragma: no cover - never reached
        raise AssertionError
