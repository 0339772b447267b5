"""The one scheduler interface every scheduler in this project implements.

A scheduler only decides; the engine enforces the rules. The engine tells
the scheduler about each arrival and each completion, and the scheduler
answers by calling ``sim.start(job, machine)`` zero or more times (start job
J on machine M now). Jobs it does not start stay in whatever queues the
scheduler keeps; the engine counts them as queued. A scheduler may also ask
for a call at a later time (``sim.wake_at(t)`` then ``on_wake``).

With a task graph (:mod:`simcore.core.taskgraph`) the units are tasks: ``on_arrival``
means "this task may start now" (its job arrived and its parents finished),
and ``sim.graph`` gives the jobs and precedence constraints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

if TYPE_CHECKING:
    from simcore.compiled.driver import Kernel
    from simcore.core.engine import Simulation


#: What a scheduler may need of a scenario, with the words a user reads when it is missing.
#: A scheduler declares its needs in ``requires``; a workload preset declares what it
#: ``provides``. Validation, ``compare/sweep --schedulers all``, ``bench``, the web form
#: and the API catalogue all read these declarations (:func:`unmet_needs`).
REQUIREMENTS: dict[str, str] = {
    "profile": "a workload with a run-time profile per job type and machine type (ncbi-blast, ncbi-blast-reduced)",
}


def unmet_needs(scheduler: type[Scheduler], provides: frozenset[str], workload: str) -> str | None:
    """Why ``scheduler`` cannot run a workload that provides ``provides``, or None if it can."""
    missing = sorted(scheduler.requires - provides)
    if not missing:
        return None
    needs = "; ".join(REQUIREMENTS.get(m, m) for m in missing)
    return f"scheduler {scheduler.name!r} needs {needs}; workload {workload!r} has none"


@dataclass(frozen=True)
class Param:
    """A tunable parameter of a scheduler or preset, so the CLI, forms and API can offer it."""

    name: str
    type: type
    default: Any
    help: str
    min: float | None = None
    max: float | None = None
    choices: tuple[Any, ...] | None = None


class Scheduler:
    """Base class. Subclasses set ``name``, ``description`` and optionally ``params``."""

    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: What the scheduler needs of a scenario (keys of :data:`REQUIREMENTS`).
    requires: ClassVar[frozenset[str]] = frozenset()

    def __init__(self, **options: Any) -> None:
        self.options = options

    def setup(self, sim: Simulation, rng: np.random.Generator) -> None:
        """Called once before the first event. Keep ``sim`` and ``rng``."""
        self.sim = sim
        self.rng = rng

    def on_arrival(self, job: int) -> None:
        """Job ``job`` arrived at ``self.sim.now``: start it or queue it."""
        raise NotImplementedError

    def on_completion(self, job: int, machine: int) -> None:
        """Job ``job`` finished on ``machine``; its resources are already free."""
        raise NotImplementedError

    def on_wake(self) -> None:
        """A wake-up asked for with ``self.sim.wake_at(t)`` is due (``self.sim.now == t``).

        Optional: only schedulers that ask for wake-ups (periodic or deferred
        scheduling cycles) need it.
        """

    def kernel(self, sim: Simulation) -> Kernel | None:
        """This scheduler's compiled kernel for ``sim`` (built-ins only), or None to run in Python.

        Called after :meth:`setup`. A kernel must make exactly the decisions of the
        methods above (:mod:`simcore.compiled`); plugins need not define it.
        """
        return None

    def offline_solution(self) -> dict[str, Any] | None:
        """JSON-ready description of any offline plan (LoTES), or None."""
        return None
