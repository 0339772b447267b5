"""Capacity plans (issue 30): per scheduler, the smallest cluster that meets a service target.

A :class:`CapacityPlan` runs, shares and forks like a search (owner, team,
visibility, public link, fork of; :mod:`dashboard.common.access` applies the same
rules). Its state lives entirely in these tables, never in a process:

- :class:`CapacityPlan`: the request (:class:`simcore.planning.PlanSpec` as JSON),
  the bounds the searches start from once computed, the round being probed and,
  once finished, the plan (:func:`simcore.planning.finish`'s output);
- :class:`CapacityProbe`: one row per unit of work, each one Celery task. Round 0
  is the bounds (:func:`simcore.planning.prepare`: compaction and lambda*); every
  later round holds the probes :func:`simcore.planning.next_requests` asked for,
  one per size and seed (a :class:`~simcore.planning.ProbeRequest`).

The coordinator (:func:`dashboard.capacity.coordinator.advance`) issues round
``r + 1`` when every probe of round ``r`` is stored, under a row lock of the plan
and a unique constraint on ``(plan, round, machines, seed)``: a round is issued once
however many workers finish at the same time.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.urls import reverse
from django.utils import timezone

from dashboard.common.models import ACTIVE, Status, Team, Visibility
from dashboard.common.names import validate_name
from dashboard.searches.models import EVAL_TRANSITIONS, EvalStatus
from dashboard.traces.models import ClusterUpload, TraceUpload

#: A probe's states and transitions are a search evaluation's (running -> pending: its worker was lost).
ProbeStatus = EvalStatus
PROBE_TRANSITIONS = EVAL_TRANSITIONS


class PlanPhase(models.TextChoices):
    BOUNDS = "bounds"  # round 0: compaction and lambda* of the workload (where the searches start)
    SEARCH = "search"  # a round of the bisections
    CURVE = "curve"  # the curve's extra sizes
    DONE = "done"


class CapacityPlan(models.Model):
    """One capacity plan: a cluster shape, a workload, schedulers, seeds and a target; its rounds and its answer."""

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="capacity_plans")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="capacity_plans")
    visibility = models.CharField(max_length=10, choices=Visibility.choices, default=Visibility.PRIVATE)
    share_token = models.CharField(max_length=64, null=True, blank=True, unique=True)
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    name = models.CharField(max_length=200, blank=True, validators=[validate_name])
    #: simcore.planning.PlanSpec.to_dict(): presets by name with their parameters; an upload by its scenario file
    #: name (``cluster_<file>``, ``trace_<file>``: :func:`dashboard.traces.uploads.scenario_file_names`), the row
    #: below saying which. A worker writes the upload's bytes to its own disk and runs a copy of the spec naming
    #: that path (:mod:`dashboard.capacity.files`): the stored spec names no path of any machine.
    spec = models.JSONField()
    #: The uploads the spec's cluster and workload are (PROTECT: an upload in use is not deleted).
    cluster_upload = models.ForeignKey(ClusterUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    trace_upload = models.ForeignKey(TraceUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    cluster_label = models.CharField(max_length=200)
    workload_label = models.CharField(max_length=200)
    target = models.CharField(max_length=200)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING, db_index=True)
    phase = models.CharField(max_length=10, choices=PlanPhase.choices, default=PlanPhase.BOUNDS)
    #: The round being probed (0: the bounds), and the bisection's round number within it (for the page).
    round = models.PositiveIntegerField(default=0)
    search_round = models.PositiveIntegerField(default=0)
    #: The sizes this round probes, as text: "2,845 (greedy, lotes), 3,000 (tetris)".
    wanted = models.CharField(max_length=2000, blank=True)
    #: simcore.planning.prepare's output once round 0 is stored.
    bounds = models.JSONField(null=True, blank=True)
    #: simcore.planning.finish's output once finished.
    result = models.JSONField(null=True, blank=True)
    #: "target ... is not reachable up to N machines: ..." when no scheduler reaches the target (a finished plan).
    note = models.TextField(blank=True)
    error = models.TextField(blank=True)
    code_version = models.CharField(max_length=100, blank=True)
    created = models.DateTimeField(default=timezone.now, db_index=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created", "-id"]

    def __str__(self) -> str:
        return self.name or f"Capacity plan {self.pk}"

    @property
    def title(self) -> str:
        return str(self)

    @property
    def is_active(self) -> bool:
        return self.status in ACTIVE

    def get_absolute_url(self) -> str:
        return reverse("capacity-detail", args=[self.pk])


class CapacityProbe(models.Model):
    """One unit of a plan's work, one Celery task: the bounds (round 0) or a probe (a size under a seed)."""

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="probes")
    round = models.PositiveIntegerField()
    #: The size and seed probed, and the schedulers run there (round 0: 0, 0 and none).
    machines = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    schedulers = models.JSONField(default=list)
    status = models.CharField(max_length=16, choices=ProbeStatus.choices, default=ProbeStatus.PENDING, db_index=True)
    #: simcore.planning.ProbeResult.to_dict() (round 0: simcore.planning.prepare's bounds) once done.
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
        ordering = ["plan_id", "round", "machines", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "round", "machines", "seed"], name="one_probe_per_round_size_seed")
        ]
