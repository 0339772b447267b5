"""Units of work: the rows of owned work that are one Celery task each, claimed, run, stored, repaired alike.

A design-space search is run as evaluations, a capacity plan as probes: each a
row a worker claims with a conditional update, runs under a heartbeat, and
stores (or fails, failing its parent); its parent's coordinator then moves the
parent on. The periodic repair queues again the units of dead workers and those
never queued, and moves on parents whose coordinator pass was lost. Those steps
were the same in both features; they are written once here, parameterised by a
:class:`Units` (the two models, the parent's coordinator and queue), and the
features keep what is theirs: what a unit computes and how its parent moves on.

This module imports no feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone

from dashboard.common import beats, queueing
from dashboard.common.heartbeat import Heartbeat
from dashboard.common.models import ACTIVE, Status, lost_message, move, stale_heartbeat
from dashboard.common.recovery import max_attempts
from simcore.core.errors import Cancelled
from simcore.version import code_version


class UnitStatus(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Allowed unit transitions. running -> pending: its worker was lost; the periodic repair queues it again.
UNIT_TRANSITIONS: dict[str, frozenset[str]] = {
    UnitStatus.PENDING: frozenset({UnitStatus.RUNNING, UnitStatus.CANCELLED}),
    UnitStatus.RUNNING: frozenset({UnitStatus.DONE, UnitStatus.FAILED, UnitStatus.PENDING, UnitStatus.CANCELLED}),
    UnitStatus.DONE: frozenset(),
    UnitStatus.FAILED: frozenset(),
    UnitStatus.CANCELLED: frozenset(),
}

#: Transitions of work moved on in steps by a coordinator (searches, capacity plans). running -> running is
#: a step: the coordinator's guard (a row lock, a conditional update) makes each step happen once.
STEPPED_TRANSITIONS: dict[str, frozenset[str]] = {
    Status.PENDING: frozenset({Status.RUNNING, Status.FINISHED, Status.FAILED, Status.CANCELLED}),
    Status.RUNNING: frozenset({Status.RUNNING, Status.FINISHED, Status.FAILED, Status.CANCELLED}),
    Status.FINISHED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
}


class Unit(models.Model):
    """The fields every unit of work has: its state, result, claims, heartbeat and times (abstract: no table)."""

    status = models.CharField(max_length=16, choices=UnitStatus.choices, default=UnitStatus.PENDING, db_index=True)
    #: What the unit computed (the feature's simcore result as a dict) once done.
    result = models.JSONField(null=True, blank=True)
    attempts = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=200, blank=True)
    queued_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    code_version = models.CharField(max_length=100, blank=True)

    class Meta:
        abstract = True


@dataclass(frozen=True)
class Units:
    """One feature's units: the unit and parent models and what moves the parent on."""

    unit: type[Unit]
    parent: type[models.Model]
    #: The unit's foreign key to its parent; also how messages name the parent ("plan", "search").
    parent_field: str
    #: How the lost-worker message names a unit ("probe", "policy").
    unit_noun: str
    #: Fail the parent with a message: ``(parent_id, message)``.
    fail_parent: Callable[[int, str], object]
    #: The parent's coordinator: move it on as far as its stored units allow; returns its state.
    advance: Callable[[int], str]
    #: Queue units' tasks; False when the broker is down.
    enqueue: Callable[[list[int]], bool]

    def active(self, **lookups: Any) -> Q:
        """Units whose parent is still active (and match ``lookups``)."""
        return Q(**{f"{self.parent_field}__status__in": ACTIVE}, **lookups)


def execute_unit(
    units: Units, unit_id: int, worker: str, run: Callable[[Any, Any], str], related: Iterable[str] = ()
) -> str:
    """Claim pending unit ``unit_id``, ``run(unit, parent)`` under a heartbeat, move the parent on once it is done.

    Returns the outcome: the unit's status, or why it was left alone (gone, claimed by
    another worker, its parent ended). The parent starts running with its first claimed
    unit. ``related``: more relations to load with the unit (``run`` reads them).
    """
    row = units.unit._default_manager.select_related(units.parent_field, *related).filter(pk=unit_id).first()
    if row is None or row.status != UnitStatus.PENDING:
        return row.status if row else "missing"
    parent = getattr(row, units.parent_field)
    if not parent.is_active:
        return f"{units.parent_field} {parent.status}"
    now = timezone.now()
    claimed = move(
        units.unit,
        row.pk,
        UnitStatus.PENDING,
        UnitStatus.RUNNING,
        UNIT_TRANSITIONS,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        attempts=F("attempts") + 1,
        code_version=code_version()[:100],
    )
    if not claimed:
        return "claimed elsewhere"
    move(units.parent, parent.pk, Status.PENDING, Status.RUNNING, STEPPED_TRANSITIONS, started_at=now)
    try:
        with Heartbeat(
            units.unit._default_manager.filter(units.active(pk=row.pk, status=UnitStatus.RUNNING)),
            # the helper stamps while it runs; the thread also stops it once its parent ended
            stamp=beats.target(units.unit, row.pk, status=UnitStatus.RUNNING),
        ):
            outcome = run(row, parent)
    except Cancelled:  # raised by the heartbeat: the parent was cancelled or the unit given to another worker
        outcome = current(units, row.pk)
    if outcome == UnitStatus.DONE:
        units.advance(parent.pk)
    return outcome


def current(units: Units, pk: int) -> str:
    """Unit ``pk``'s status as stored now; ``missing`` when it is gone."""
    return units.unit._default_manager.filter(pk=pk).values_list("status", flat=True).first() or "missing"


def cancelled(units: Units, pk: int, parent_id: int) -> str:
    """After ``Cancelled`` in a unit's work: the unit is cancelled if its parent ended; its status then."""
    if not units.parent._default_manager.filter(pk=parent_id, status__in=ACTIVE).exists():
        move(units.unit, pk, UnitStatus.RUNNING, UnitStatus.CANCELLED, UNIT_TRANSITIONS)
    return current(units, pk)


def store(units: Units, pk: int, result: Any) -> str:
    """Store a running unit's ``result``: ``done``, or its status if another worker or a cancel moved it first."""
    won = move(
        units.unit,
        pk,
        UnitStatus.RUNNING,
        UnitStatus.DONE,
        UNIT_TRANSITIONS,
        result=result,
        finished_at=timezone.now(),
    )
    return UnitStatus.DONE if won else current(units, pk)


def fail(units: Units, pk: int, parent_id: int, message: str) -> str:
    """Fail a running unit and its parent with ``message`` (a sentence a user can read)."""
    move(
        units.unit,
        pk,
        UnitStatus.RUNNING,
        UnitStatus.FAILED,
        UNIT_TRANSITIONS,
        error=message[:2000],
        finished_at=timezone.now(),
    )
    units.fail_parent(parent_id, message)
    return UnitStatus.FAILED


def repair(units: Units, now: datetime | None = None) -> dict[str, Any]:
    """Requeue units of dead workers and never-queued ones; advance parents nobody advanced.

    A unit whose heartbeat is older than ``SIMCORE_WORKER_TIMEOUT_S`` goes back to pending and is
    queued again (a unit is a pure function of its inputs: its result is the same), unless it already
    cost SIMCORE_RUN_MAX_ATTEMPTS workers (the rule of runs, :func:`dashboard.common.recovery.max_attempts`):
    then it fails its parent with the lost-worker message.
    """
    now = now or timezone.now()
    parent_id = f"{units.parent_field}_id"
    requeued: list[int] = []
    failed: list[int] = []
    lost = units.unit._default_manager.filter(stale_heartbeat(now), status=UnitStatus.RUNNING)
    for pk, pid, attempts, heard in lost.values_list("pk", parent_id, "attempts", "heartbeat_at"):
        if attempts >= max_attempts():
            message = lost_message(heard, now, f"re-run it: fork the {units.parent_field}")
            if move(
                units.unit,
                pk,
                UnitStatus.RUNNING,
                UnitStatus.FAILED,
                UNIT_TRANSITIONS,
                guard=stale_heartbeat(now),
                error=message,
                finished_at=now,
            ):
                units.fail_parent(pid, f"{message} ({attempts} workers were lost on one {units.unit_noun})")
                failed.append(pk)
        elif move(
            units.unit,
            pk,
            UnitStatus.RUNNING,
            UnitStatus.PENDING,
            UNIT_TRANSITIONS,
            guard=stale_heartbeat(now),
            heartbeat_at=None,
            queued_at=None,
            worker="",
        ):
            requeued.append(pk)
    before = now - timedelta(seconds=settings.SIMCORE_REQUEUE_AFTER_S)
    grace = now - timedelta(seconds=queueing.NEVER_QUEUED_GRACE_S)
    never_queued = Q(queued_at__isnull=True, **{f"{units.parent_field}__created__lt": grace})
    stale = units.unit._default_manager.filter(
        never_queued | Q(queued_at__lt=before), units.active(status=UnitStatus.PENDING)
    ).exclude(pk__in=requeued)
    again = requeued + list(stale.order_by("id").values_list("pk", flat=True)[:1000])
    sent = units.enqueue(again) if again else True
    advanced = {}
    for pid in units.parent._default_manager.filter(status__in=ACTIVE).values_list("id", flat=True):
        state = units.advance(pid)
        if state != "waiting":
            advanced[pid] = state
    return {"requeued": again if sent else [], "failed": failed, "advanced": advanced}
