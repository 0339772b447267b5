"""Capacity planning: the smallest cluster that meets a service target, per scheduler (issue 30).

Modules, one per concept:

* :mod:`~simcore.planning.target`: the target (``p99_wait_s<=60``) and its exact statistics;
* :mod:`~simcore.planning.shape`: a cluster shape resized to a machine count;
* :mod:`~simcore.planning.bisect`: the bisection, driven one round at a time;
* :mod:`~simcore.planning.bounds`: where it starts (compaction of a snapshot, lambda*);
* :mod:`~simcore.planning.probe`: one probe, ``probe(spec, machines, seed)``, a pure function;
* :mod:`~simcore.planning.plan`: the driver, which hands each round's probes to a ``run_probes`` callable
  (and its steps, ``prepare``, ``next_requests``, ``finish``, which the platform runs one task at a time);
* :mod:`~simcore.planning.local`: that callable over local processes (the command line's).

Not :mod:`simcore.capacity`, which is the allocation LP (lambda*) the bounds use.
"""

from simcore.planning.bisect import Search, bisect_smallest, violations
from simcore.planning.plan import (
    ProbeRequest,
    Step,
    Unreachable,
    finish,
    make_plan,
    next_requests,
    prepare,
    unreachable,
)
from simcore.planning.probe import PlanSpec, ProbeResult, probe
from simcore.planning.shape import resize
from simcore.planning.target import Target, parse_target

__all__ = [
    "PlanSpec",
    "ProbeRequest",
    "ProbeResult",
    "Search",
    "Step",
    "Target",
    "Unreachable",
    "bisect_smallest",
    "finish",
    "make_plan",
    "next_requests",
    "parse_target",
    "prepare",
    "probe",
    "resize",
    "unreachable",
    "violations",
]
