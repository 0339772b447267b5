"""A worker running one probe of a capacity plan: claim, run, store, then move the plan on.

Round 0 is :func:`simcore.planning.prepare` (the bounds); every other probe is
:func:`simcore.planning.probe` at its size and seed for its schedulers, exactly
what ``simcore capacity``'s local processes run. The worker process keeps the
plan's cluster and workloads (:mod:`simcore.planning.probe`'s cache), so the
probes of one plan that land on one worker share them.
"""

from __future__ import annotations

import logging

from dashboard.capacity import files
from dashboard.capacity.coordinator import UNITS
from dashboard.capacity.models import CapacityPlan, CapacityProbe
from dashboard.capacity.services import spec_of, web_message
from dashboard.common import outages, units
from dashboard.common.heartbeat import clean_json
from simcore.core.errors import Cancelled, SchedulingError, SimcoreError
from simcore.planning import prepare, probe

log = logging.getLogger(__name__)


def execute_probe(probe_id: int, worker: str = "") -> str:
    """Claim a pending probe, run it, store the result, move the plan on; returns the outcome.

    A probe that is gone, claimed by another worker, or of a plan that ended is left alone
    (:func:`dashboard.common.units.execute_unit`).
    """
    return units.execute_unit(UNITS, probe_id, worker, _run)


def _run(row: CapacityProbe, plan: CapacityPlan) -> str:
    where = "computing the bounds: " if row.round == 0 else f"probe at {row.machines:,} machines, seed {row.seed}: "
    shown: dict[str, str] = {}
    try:
        # Uploads become files on this worker's disk here, and only here (dashboard.capacity.files).
        spec, shown = files.runnable_spec(plan, spec_of(plan))
        if row.round == 0:
            data = prepare(spec)
        else:
            data = probe(spec, row.machines, row.seed, list(row.schedulers)).to_dict()
    except Cancelled:
        return units.cancelled(UNITS, row.pk, plan.pk)
    except SimcoreError as e:
        return _fail(row, plan, where + web_message(files.without_paths(str(e), shown)))
    except SchedulingError as e:
        return _fail(row, plan, f"{where}a scheduler made an invalid decision: {files.without_paths(str(e), shown)}")
    except MemoryError:
        return _fail(row, plan, f"{where}the simulation needed more memory than the worker has")
    except outages.OUTAGE_ERRORS:  # not the probe's fault: the task is retried (dashboard.common.outages)
        raise
    except Exception as e:  # a bug: the traceback for us, one line for the user
        log.exception("probe %s of capacity plan %s failed", row.pk, plan.pk)
        return _fail(row, plan, f"{where}internal error ({type(e).__name__}): {files.without_paths(str(e), shown)}")
    return units.store(UNITS, row.pk, clean_json(data))


def _fail(row: CapacityProbe, plan: CapacityPlan, message: str) -> str:
    return units.fail(UNITS, row.pk, plan.pk, message)
