"""Packing analyses (issue 11): the four techniques of Verma, Korupolu and Wilkes on one snapshot, run by a worker.

Kept beside :mod:`dashboard.models` (which imports it, so Django and the
migrations see it) because it is one concept of its own. It reuses what
runs have: the same states and guarded transitions (:func:`dashboard.models.move`
with :data:`~dashboard.models.TRANSITIONS`), the same heartbeat and
lost-worker rule, and the same visibility and team rules
(:mod:`dashboard.common.access`). An analysis lost with its worker is queued again
up to SIMCORE_RUN_MAX_ATTEMPTS times, as runs are (:func:`dashboard.common.recovery.recover_lost_analyses`).
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models
from django.db.models import Q

from dashboard.common.models import TRANSITIONS, BackgroundWork, Team, move
from dashboard.experiments.models import Run
from dashboard.traces.models import ClusterUpload, TraceUpload


class PackingSource(models.TextChoices):
    RUN = "run", "a finished run of one of your experiments (or your team's), at time t"
    TRACE = "trace", "one of your imported traces, at time t"
    SCENARIO = "scenario", "a new simulation (cluster, workload, scheduler, seed), at time t"


#: How a user re-runs an analysis lost with its worker on every attempt allowed (dashboard.common.recovery).
RERUN_ANALYSIS = "start it again: Analyse again on its page"


class PackingAnalysis(BackgroundWork):
    """A snapshot (``source`` at ``time_s``) and the techniques run on it (``spec``), with their results."""

    untitled = "Packing analysis"
    detail_route = "packing-detail"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="packing_analyses")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="packing_analyses")
    source = models.CharField(max_length=10, choices=PackingSource.choices)
    #: The run whose state is analysed (source ``run``); kept as a copy in ``source_spec`` if it goes.
    run = models.ForeignKey(Run, null=True, blank=True, on_delete=models.SET_NULL, related_name="packing_analyses")
    trace_upload = models.ForeignKey(TraceUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    cluster_upload = models.ForeignKey(ClusterUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    #: Everything needed to rebuild the snapshot (see dashboard.packing.services.snapshot_of).
    source_spec = models.JSONField()
    #: Short description of the source, for lists ("run greedy seed 0 of #12", "trace 'part0'", ...).
    label = models.CharField(max_length=200)
    #: The snapshot time in seconds of the run, trace window or simulation.
    time_s = models.FloatField()
    #: simcore.packing.analysis.AnalysisSpec.to_dict().
    spec = models.JSONField()
    fraction = models.FloatField(default=0.0)
    stage = models.CharField(max_length=100, blank=True)
    worker = models.CharField(max_length=200, blank=True)
    #: When its task was last put on the broker; null while it never was.
    queued_at = models.DateTimeField(null=True, blank=True)
    #: Last sign of life of the worker running it; null until claimed.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    #: Claims so far (the current attempt's number while running; every write of a worker requires it) and
    #: the attempts lost with their workers, as on runs (dashboard.common.recovery).
    attempt = models.PositiveIntegerField(default=0)
    lost_attempts = models.JSONField(default=list, blank=True)
    #: simcore.packing.analysis.analyse's output (null until finished).
    results = models.JSONField(null=True, blank=True)
    #: The snapshot as the worker built it, shown while it runs: ``tasks``, ``machines``, ``pending`` and
    #: ``analysing_since`` (Unix time the techniques started, for the ETA); empty until built.
    snapshot_size = models.JSONField(default=dict, blank=True)

    class Meta(BackgroundWork.Meta):
        verbose_name_plural = "packing analyses"

    @property
    def attempts_note(self) -> str:
        """Which attempt this is and when the earlier ones were lost with their worker; empty if none was."""
        from dashboard.common.recovery import attempts_note

        return attempts_note(self.attempt, self.lost_attempts)

    def transition(self, new: str, guard: Q | None = None, **fields: Any) -> bool:
        """Move to ``new`` if the row is still in this status and matches ``guard`` (the runs' state machine)."""
        won = move(PackingAnalysis, self.pk, self.status, new, TRANSITIONS, guard=guard, **fields)
        if won:
            self.status = new
            for k, v in fields.items():
                setattr(self, k, v)
        return won
