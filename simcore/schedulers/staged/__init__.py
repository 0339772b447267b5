"""``staged``: a scheduler composed from stage policies (design-space exploration paper, section 2.2).

The ``policy`` parameter is a policy text such as ``J1=Interactive
J2=Limit-Active(100) J3=Job-Size(asc) T1=Always T2=Task-Duration(asc)
R5=Best-Fit`` (grammar and atoms: :mod:`simcore.dse.staged.policy`). The cycle
that runs the stages is :mod:`simcore.dse.staged.cycle`, each atom's behaviour is
:mod:`simcore.dse.staged.atoms`; their docstrings list every choice and every
difference from OpenDC's prototype.

A text that does not read is refused when parameters are validated, with a
message naming the stage and the valid atoms. On a workload without a task
graph every job is a one-task job; the default policy is then first come,
first served on the lowest-numbered fitting machine, with head-of-line
blocking (``fcfs`` with ``pick=lowest-index``).

Compiled: :mod:`simcore.schedulers.staged.kernel` makes the same decisions in
numba (one compiled function for every policy), with its own event loop, so it
runs task graphs too; ``engine="python"`` runs this specification.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from simcore.core.engine import Simulation
from simcore.dse.staged.cycle import StagedRun
from simcore.dse.staged.policy import DEFAULT_TEXT, PolicyText
from simcore.schedulers import register
from simcore.schedulers.base import Param, Scheduler

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel


@register("staged")
class Staged(Scheduler):
    name = "staged"
    description = "Composed from stage policies J1-R5 (Tables 1-4 of the design-space exploration paper)"
    params = (
        Param(
            "policy",
            PolicyText,
            DEFAULT_TEXT,
            "stage policies, e.g. 'J2=Limit-Active(100) T2=Task-Duration(asc) R5=Best-Fit' (stages left out take "
            "the default)",
        ),
    )

    #: The kernel has its own event loop with task graphs and wake-ups (see simcore.core.engine).
    kernel_runs_graphs = True

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.policy_text = PolicyText(options.get("policy", DEFAULT_TEXT))
        self.policy = self.policy_text.policy()

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        super().setup(sim, rng)
        self.run = StagedRun(self.policy, sim, rng)

    def on_arrival(self, job: int) -> None:
        self.run.on_arrival(job)

    def on_completion(self, job: int, machine: int) -> None:
        self.run.on_completion(job, machine)

    def on_wake(self) -> None:
        self.run.on_wake()

    def kernel(self, sim: Simulation) -> Kernel:
        from simcore.schedulers.staged.driver import make

        return make(self, sim)
