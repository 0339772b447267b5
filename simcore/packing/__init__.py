"""Packing efficiency at one moment: the four techniques of Verma, Korupolu and Wilkes.

*Evaluating job packing in warehouse-scale computing* (IEEE Cluster 2014):
aggregate utilisation, hole filling, workload inflation (Algorithms 1 and 2)
and cluster compaction (Algorithm 3), on a :class:`Snapshot` of machines and
placed or pending tasks. Modules, one per concept:

* :mod:`~simcore.packing.snapshot`: the snapshot and its validation;
* :mod:`~simcore.packing.placement`: the four job orderings and vectorised first fit;
* :mod:`~simcore.packing.utilisation`: aggregate utilisation and hole filling;
* :mod:`~simcore.packing.inflation`: Algorithms 1 and 2;
* :mod:`~simcore.packing.compaction`: Algorithm 3;
* :mod:`~simcore.packing.sources`: snapshots from a run, a Google 2011 trace, or a policy.

Our traces carry no placement constraints. Wherever the paper makes a task
picky or pins it by a constraint, "fits on few machines" is the proxy.
"""

from simcore.packing.compaction import CompactionResult, compact, compaction_sweep
from simcore.packing.inflation import InflationStep, inflate, monte_carlo_inflation, picky_jobs
from simcore.packing.placement import ORDERINGS, first_fit, order_tasks, pack
from simcore.packing.snapshot import Snapshot
from simcore.packing.utilisation import aggregate_utilisation, hole_filling, hole_filling_sweep

__all__ = [
    "ORDERINGS",
    "CompactionResult",
    "InflationStep",
    "Snapshot",
    "aggregate_utilisation",
    "compact",
    "compaction_sweep",
    "first_fit",
    "hole_filling",
    "hole_filling_sweep",
    "inflate",
    "monte_carlo_inflation",
    "order_tasks",
    "pack",
    "picky_jobs",
]
