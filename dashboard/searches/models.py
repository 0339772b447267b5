"""Design-space searches (issue 13): a genetic search over staged schedulers, its generations and evaluations.

A :class:`Search` runs, shares and forks like an experiment (owner, team,
visibility, public link, fork of; :mod:`dashboard.common.access` applies the same
rules). Its state lives entirely in these tables, never in a process:

- :class:`SearchGeneration`: one row per generation, created with its
  individuals (policy texts) when it is bred, completed with their fitness,
  the elite and the explanation once they are all evaluated;
- :class:`SearchEvaluation`: one row per distinct policy of a search (the
  search's cache, keyed by :func:`simcore.dse.explore.fitness.cache_key`), each
  the unit of work of one Celery task.

The coordinator (:func:`dashboard.searches.coordinator.advance`) moves a search
on when every evaluation its current step needs is stored: from the
individuals of generation ``g`` (phase ``evaluate``) to the explanation
candidates of its elite (phase ``explain``) to generation ``g + 1``. Each
move is a guarded conditional update of ``(generation, phase)``, so it
happens once however many workers try.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.utils import timezone

from dashboard.common.models import BackgroundWork, Team
from dashboard.common.units import UNIT_TRANSITIONS, Unit, UnitStatus
from dashboard.traces.models import ClusterUpload, TraceUpload


class Phase(models.TextChoices):
    EVALUATE = "evaluate"  # the individuals of the current generation are being evaluated
    EXPLAIN = "explain"  # the elite changed: its single-stage changes are being evaluated


class Search(BackgroundWork):
    """A genetic search (section 3.3) on one cluster and workload, optimising one metric."""

    untitled = "Search"
    detail_route = "search-detail"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="searches")
    team = models.ForeignKey(Team, null=True, blank=True, on_delete=models.SET_NULL, related_name="searches")
    forked_from = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="forks")
    #: The simulated scenario: the simcore.archive scenario's cluster, workload, load and hours.
    scenario = models.JSONField()
    cluster_upload = models.ForeignKey(ClusterUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    trace_upload = models.ForeignKey(TraceUpload, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    cluster_label = models.CharField(max_length=200)
    workload_label = models.CharField(max_length=200)
    #: simcore.dse.explore.search.SearchSettings: objective, population size, most generations, seed.
    metric = models.CharField(max_length=8)
    population = models.PositiveIntegerField()
    max_generations = models.PositiveIntegerField()
    seed = models.BigIntegerField()
    #: Seed of the simulations (workload generation, Random atoms).
    sim_seed = models.BigIntegerField()
    #: simcore.dse.explore.fitness.scenario_fingerprint; with the policy, seed and version it keys evaluations.
    fingerprint = models.CharField(max_length=64)
    #: The generation being evaluated (or the last one, once the search ended) and its phase.
    generation = models.PositiveIntegerField(default=0)
    phase = models.CharField(max_length=10, choices=Phase.choices, default=Phase.EVALUATE)
    generations_done = models.PositiveIntegerField(default=0)
    #: Why it ended: "converged", "generations" (the cap), or empty.
    stop_reason = models.CharField(max_length=20, blank=True)


class SearchGeneration(models.Model):
    """One generation: its individuals, then their fitness, the elite and the explanation of a new elite."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="generations")
    index = models.PositiveIntegerField()
    #: Policy texts in population order (the elite of the previous generation first).
    individuals = models.JSONField()
    #: Fitness per individual; null until every individual is evaluated.
    fitness = models.JSONField(null=True, blank=True)
    elite = models.PositiveIntegerField(null=True, blank=True)
    elite_policy = models.TextField(blank=True)
    elite_fitness = models.FloatField(null=True, blank=True)
    #: Policy texts of the explanation candidates (the previous elite with one changed stage each).
    candidates = models.JSONField(default=list)
    #: simcore.dse.explore.explain.Explanation.to_dict(), when the elite changed.
    explanation = models.JSONField(null=True, blank=True)
    #: Distinct policies this search had not evaluated before (individuals and candidates).
    new_evaluations = models.PositiveIntegerField(default=0)
    created = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["search_id", "index"]
        constraints = [models.UniqueConstraint(fields=["search", "index"], name="one_row_per_generation")]


#: An evaluation's states and transitions are every unit of work's (running -> pending: its worker was lost).
EvalStatus = UnitStatus
EVAL_TRANSITIONS = UNIT_TRANSITIONS


class SearchEvaluation(Unit):
    """One distinct policy of a search, simulated once (one Celery task); its ``result``:
    simcore.dse.explore.fitness.Evaluation.to_dict() once done."""

    search = models.ForeignKey(Search, on_delete=models.CASCADE, related_name="evaluations")
    #: simcore.dse.explore.fitness.cache_key: policy, scenario fingerprint, simulation seed, code version.
    key = models.CharField(max_length=64, db_index=True)
    policy = models.TextField()
    #: True when the result was copied from another search's evaluation of the same key (no simulation).
    reused = models.BooleanField(default=False)

    class Meta:
        ordering = ["search_id", "id"]
        constraints = [models.UniqueConstraint(fields=["search", "key"], name="one_evaluation_per_policy")]
