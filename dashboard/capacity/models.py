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

from dashboard.common.models import BackgroundWork, Team
from dashboard.common.units import UNIT_TRANSITIONS, Unit, UnitStatus
from dashboard.traces.models import ClusterUpload, TraceUpload

#: A probe's states and transitions are every unit of work's (running -> pending: its worker was lost).
ProbeStatus = UnitStatus
PROBE_TRANSITIONS = UNIT_TRANSITIONS


class PlanPhase(models.TextChoices):
    BOUNDS = "bounds"  # round 0: compaction and lambda* of the workload (where the searches start)
    SEARCH = "search"  # a round of the bisections
    CURVE = "curve"  # the curve's extra sizes
    DONE = "done"


class CapacityPlan(BackgroundWork):
    """One capacity plan: a cluster shape, a workload, schedulers, seeds and a target; its rounds and its answer."""

    untitled = "Capacity plan"
    detail_route = "capacity-detail"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="capacity_plans")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="capacity_plans")
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
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


class CapacityProbe(Unit):
    """One unit of a plan's work, one Celery task: the bounds (round 0) or a probe (a size under a seed).

    Its ``result``: simcore.planning.ProbeResult.to_dict() (round 0: simcore.planning.prepare's bounds) once done.
    """

    plan = models.ForeignKey(CapacityPlan, on_delete=models.CASCADE, related_name="probes")
    round = models.PositiveIntegerField()
    #: The size and seed probed, and the schedulers run there (round 0: 0, 0 and none).
    machines = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    schedulers = models.JSONField(default=list)

    class Meta:
        ordering = ["plan_id", "round", "machines", "seed"]
        constraints = [
            models.UniqueConstraint(fields=["plan", "round", "machines", "seed"], name="one_probe_per_round_size_seed")
        ]
