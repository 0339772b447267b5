"""The rows every feature shares: teams and their members (what the access rules read), job states and their
guarded transitions, and the lost-worker rule on heartbeats.

Features' models import these; this module imports no feature.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime, timedelta
from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.urls import reverse
from django.utils import timezone

from dashboard.common.names import validate_name


class Team(models.Model):
    """A group of users sharing experiments; roles are on :class:`Membership`."""

    name = models.CharField(max_length=100, unique=True, validators=[validate_name])
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def get_absolute_url(self) -> str:
        return reverse("team-detail", args=[self.pk])


class Role(models.TextChoices):
    OWNER = "owner"  # manages members and invitations, runs experiments, cancels the team's runs
    MEMBER = "member"  # runs experiments in the team
    VIEWER = "viewer"  # reads the team's experiments


#: Roles allowed to start experiments in a team.
RUN_ROLES = (Role.OWNER, Role.MEMBER)


class Membership(models.Model):
    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.MEMBER)
    created = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["team__name", "user__username"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class Status(models.TextChoices):
    PENDING = "pending"
    RUNNING = "running"
    FINISHED = "finished"
    FAILED = "failed"
    CANCELLED = "cancelled"


#: Allowed run transitions (OpenDC's guarded state machine). Anything else is refused.
#: running -> pending: the attempt was lost with its worker and the run is queued again (dashboard.common.recovery).
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.PENDING: frozenset({Status.RUNNING, Status.CANCELLED}),
    Status.RUNNING: frozenset({Status.FINISHED, Status.FAILED, Status.CANCELLED, Status.PENDING}),
    Status.FINISHED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
}
ACTIVE = (Status.PENDING, Status.RUNNING)


class Visibility(models.TextChoices):
    PRIVATE = "private", "private (only me)"
    TEAM = "team", "team (members of its team)"
    PUBLIC = "public", "public read-only link (and the team)"


class OwnedWork(models.Model):
    """What every piece of work a user owns and shares has (experiments, searches, capacity plans, packing
    analyses): a name, its sharing (:mod:`dashboard.common.access` reads it, :mod:`dashboard.common.sharing`
    changes it), a status and a creation time. Abstract: each feature's table holds these columns.

    A feature's model adds ``owner`` and ``team`` (their reverse names are the feature's) and says what it is
    called until named (``untitled``: "Search" gives "Search 12") and the route of its page (``detail_route``).
    """

    #: Who can read it; see dashboard.common.access, the one place that applies it.
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE)
    #: The secret of the public read-only link; set exactly when visibility is public.
    share_token = models.CharField(max_length=64, null=True, blank=True, unique=True)
    name = models.CharField(max_length=200, blank=True, validators=[validate_name])
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)

    untitled: ClassVar[str] = ""
    detail_route: ClassVar[str] = ""

    class Meta:
        abstract = True
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"{self.untitled} {self.pk}"

    @property
    def title(self) -> str:
        return str(self)

    def get_absolute_url(self) -> str:
        return reverse(self.detail_route, args=[self.pk])


class BackgroundWork(OwnedWork):
    """Owned work that one background job carries through (a search, a capacity plan, a packing analysis):
    when it ran, the code that ran it, and why it failed. Abstract."""

    #: A message a user can read (never a stack trace).
    error = models.TextField(blank=True)
    code_version = models.CharField(max_length=100, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta(OwnedWork.Meta):
        abstract = True

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE


def move(
    model: type[models.Model],
    pk: int,
    old: str | Iterable[str],
    new: str,
    table: Mapping[str, frozenset[str]],
    *,
    guard: Q | None = None,
    **fields: Any,
) -> bool:
    """Move row ``pk`` of ``model`` from ``old`` (one status or several) to ``new``; False if another moved it first.

    The one claim rule for runs and trace imports (healthchecks' conditional
    UPDATE, OpenDC's guarded state machine): the transition must be in
    ``table``, and the row changes only if it is still in ``old`` (and meets
    ``guard``), so of two workers, or a worker and a cancel, exactly one wins.
    """
    olds = [old] if isinstance(old, str) else list(old)
    for o in olds:
        if new not in table[o]:
            raise ValueError(f"{model.__name__} {pk}: {o} -> {new} is not an allowed transition")
    rows = model._default_manager.filter(pk=pk, status__in=olds)
    if guard is not None:
        rows = rows.filter(guard)
    return bool(rows.update(status=new, **fields) == 1)


# ---------------------------------------------------------------------------- lost workers
#
# A worker that dies (SIGKILL, out of memory, a machine restart) cannot mark its
# run or import failed. While it works it stamps ``heartbeat_at`` every few
# seconds (dashboard.experiments.execution.Heartbeat); work still ``running`` whose stamp is
# older than SIMCORE_WORKER_TIMEOUT_S is declared lost, and queued again or, once
# its attempts are used up, failed (dashboard.common.recovery, applied by the workers'
# periodic repair, dashboard.common.repair). A live worker, wherever it runs, keeps its
# stamps fresh, so no one takes work it still holds.


def worker_timeout() -> timedelta:
    """How long running work may go without a heartbeat before it counts as lost."""
    return timedelta(seconds=settings.SIMCORE_WORKER_TIMEOUT_S)


def heartbeat_every_s() -> float:
    """Seconds between two heartbeats: a sixth of the timeout (at most 5 s), so a few missed ones are harmless."""
    return max(0.2, min(5.0, settings.SIMCORE_WORKER_TIMEOUT_S / 6))


def stale_heartbeat(now: datetime) -> Q:
    """The lost-worker rule as a filter on ``heartbeat_at`` (claims set it, so running work always has one)."""
    return Q(heartbeat_at__lt=now - worker_timeout())


def heard_at(last_heard: datetime | None, now: datetime) -> str:
    """``last_heard`` for a reader at ``now``: the time of day, with the date when it was another day."""
    if last_heard is None:
        return "an unknown time"
    local = timezone.localtime(last_heard)
    day = "" if local.date() == timezone.localtime(now).date() else f"{local:%Y-%m-%d} "
    return f"{day}{local:%H:%M} {local.tzname() or ''}".strip()


def lost_message(last_heard: datetime | None, now: datetime, advice: str) -> str:
    """What a user reads on work whose worker vanished; ``last_heard``: its last heartbeat."""
    return f"the worker running this stopped without finishing (lost at {heard_at(last_heard, now)}); {advice}"


class WorkerHost(models.Model):
    """A live worker as it publishes itself: its Celery node name, its memory limit, the queues it takes.

    Each worker's main process writes its row when it starts and at every periodic repair pass
    (dashboard.common.workers), and deletes it when it stops; a row not written for a few passes is a
    worker gone. Read to send a cell a worker declined for memory to one with enough, and to tell the
    page which workers there are.
    """

    #: Celery's node name (``short@host``): its direct queue is ``<node>.dq2`` (CELERY_WORKER_DIRECT).
    #: Not called ``name``: that field is the one people give to what they make (tests/dashboard/test_names.py).
    node = models.CharField(max_length=200, primary_key=True)
    #: SIMCORE_WORKER_MEMORY_MB of the worker: the memory one of its processes has for one cell; 0: not set.
    memory_mb = models.PositiveIntegerField(default=0)
    #: The queues it consumes, comma-separated.
    queues = models.TextField(blank=True)
    heard_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["node"]

    def __str__(self) -> str:
        return self.node
