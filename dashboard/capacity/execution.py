"""A worker running one probe of a capacity plan: claim, run, store, then move the plan on.

Round 0 is :func:`simcore.planning.prepare` (the bounds); every other probe is
:func:`simcore.planning.probe` at its size and seed for its schedulers, exactly
what ``simcore capacity``'s local processes run. The worker process keeps the
plan's cluster and workloads (:mod:`simcore.planning.probe`'s cache), so the
probes of one plan that land on one worker share them.
"""

from __future__ import annotations

import logging

from django.db.models import F
from django.utils import timezone

from dashboard.capacity import files
from dashboard.capacity.coordinator import advance
from dashboard.capacity.models import PROBE_TRANSITIONS, CapacityPlan, CapacityProbe, ProbeStatus
from dashboard.capacity.services import TRANSITIONS, fail_plan, spec_of, web_message
from dashboard.common import beats, outages
from dashboard.common.heartbeat import Heartbeat, clean_json
from dashboard.common.models import ACTIVE, Status, move
from simcore.core.errors import Cancelled, SchedulingError, SimcoreError
from simcore.planning import prepare, probe
from simcore.version import code_version

log = logging.getLogger(__name__)


def execute_probe(probe_id: int, worker: str = "") -> str:
    """Claim a pending probe, run it, store the result, move the plan on; returns the outcome.

    A probe that is gone, claimed by another worker, or of a plan that ended is left alone.
    """
    row = CapacityProbe.objects.select_related("plan").filter(pk=probe_id).first()
    if row is None or row.status != ProbeStatus.PENDING:
        return row.status if row else "missing"
    plan = row.plan
    if not plan.is_active:
        return f"plan {plan.status}"
    now = timezone.now()
    claimed = move(
        CapacityProbe,
        row.pk,
        ProbeStatus.PENDING,
        ProbeStatus.RUNNING,
        PROBE_TRANSITIONS,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        attempts=F("attempts") + 1,
        code_version=code_version()[:100],
    )
    if not claimed:
        return "claimed elsewhere"
    move(CapacityPlan, plan.pk, Status.PENDING, Status.RUNNING, TRANSITIONS, started_at=now)
    try:
        with Heartbeat(
            CapacityProbe.objects.filter(pk=row.pk, status=ProbeStatus.RUNNING, plan__status__in=ACTIVE),
            # the helper stamps while it runs; the thread also stops it once its plan ended
            stamp=beats.target(CapacityProbe, row.pk, status=ProbeStatus.RUNNING),
        ):
            outcome = _run(row, plan)
    except Cancelled:  # raised by the heartbeat: the plan was cancelled or the probe given to another worker
        outcome = _current(row)
    if outcome == ProbeStatus.DONE:
        advance(plan.pk)
    return outcome


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
        if not CapacityPlan.objects.filter(pk=plan.pk, status__in=ACTIVE).exists():
            move(CapacityProbe, row.pk, ProbeStatus.RUNNING, ProbeStatus.CANCELLED, PROBE_TRANSITIONS)
        return _current(row)
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
    won = move(
        CapacityProbe,
        row.pk,
        ProbeStatus.RUNNING,
        ProbeStatus.DONE,
        PROBE_TRANSITIONS,
        result=clean_json(data),
        finished_at=timezone.now(),
    )
    return ProbeStatus.DONE if won else _current(row)


def _current(row: CapacityProbe) -> str:
    return CapacityProbe.objects.filter(pk=row.pk).values_list("status", flat=True).first() or "missing"


def _fail(row: CapacityProbe, plan: CapacityPlan, message: str) -> str:
    move(
        CapacityProbe,
        row.pk,
        ProbeStatus.RUNNING,
        ProbeStatus.FAILED,
        PROBE_TRANSITIONS,
        error=message[:2000],
        finished_at=timezone.now(),
    )
    fail_plan(plan.pk, message)
    return ProbeStatus.FAILED
