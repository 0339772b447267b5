"""Design-space searches on the platform: creating one, its evaluations, cancelling, reading it.

The search itself is :mod:`simcore.dse.explore`; the platform only moves its
state between the database and those pure steps, so a search run here gives
the generations ``simcore explore`` gives for the same scenario and seeds.

- :func:`create_search` (here) stores a search with its generation 0 and one
  evaluation per distinct individual, and queues one task per evaluation.
- :func:`~dashboard.searches.execution.execute_evaluation` (a worker)
  claims an evaluation, simulates its policy, stores the result and calls
  the coordinator.
- :func:`~dashboard.searches.coordinator.advance` (the coordinator)
  moves the search on when every evaluation its current step needs is
  stored, holding no state in memory;
  :func:`~dashboard.searches.coordinator.repair_searches` (the
  workers' periodic repair) queues again the evaluations of dead workers and
  advances searches whose coordinator pass died with its worker.

Identical individuals are simulated once: per search, an evaluation row per
cache key (:func:`simcore.dse.explore.fitness.cache_key`), and across searches
a finished evaluation with the same key (same policy, scenario, seeds and
code version) is copied instead of simulated again.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import User
from django.db import transaction
from django.utils import timezone

from dashboard.common import waiting
from dashboard.common.models import ACTIVE, Status, Team, Visibility, move
from dashboard.common.rows import scenario_fields, sharing_fields
from dashboard.common.units import STEPPED_TRANSITIONS
from dashboard.searches import work
from dashboard.searches.models import EvalStatus, Phase, Search, SearchEvaluation, SearchGeneration
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import scenario_file_names
from simcore.core.errors import ParameterError
from simcore.core.limits import MAX_SEED
from simcore.dse.explore.fitness import Evaluation, cache_key, scenario_fingerprint
from simcore.dse.explore.pool import check_scenario
from simcore.dse.explore.search import (
    GenerationRecord,
    SearchSettings,
    first_population,
)
from simcore.version import code_version

log = logging.getLogger(__name__)

#: Search transitions (the guarded state machine of dashboard.models.move). running -> running is a step:
#: the conditional update on (generation, phase) makes each step happen once.
TRANSITIONS = STEPPED_TRANSITIONS

#: Bounds of searches started from the web (the library allows more from the command line).
MAX_WEB_POPULATION = 200
MAX_WEB_GENERATIONS = 500
#: Coordinator steps one call may take while every evaluation they need is already known.
MAX_INLINE_STEPS = 1000
#: Built clusters and workloads a worker process keeps (workloads can be large).
BUILT_CACHE = 2


# ---------------------------------------------------------------------------- creating


def check_search(scenario: dict[str, Any], search_settings: SearchSettings, sim_seed: int) -> dict[str, Any]:
    """Validate a search from the web: simcore's checks plus the platform's bounds; returns the scenario."""
    search_settings.check()
    if search_settings.population > MAX_WEB_POPULATION:
        raise ParameterError(f"population must be at most {MAX_WEB_POPULATION} here, got {search_settings.population}")
    if search_settings.generations > MAX_WEB_GENERATIONS:
        raise ParameterError(
            f"generations must be at most {MAX_WEB_GENERATIONS} here, got {search_settings.generations}"
        )
    if isinstance(sim_seed, bool) or not isinstance(sim_seed, int) or not 0 <= sim_seed <= MAX_SEED:
        raise ParameterError(f"sim_seed must be a whole number from 0 to 2^32 - 1, got {sim_seed!r}")
    if search_settings.seed > MAX_SEED:
        raise ParameterError(f"seed must be below 2^32, got {search_settings.seed}")
    from dashboard.experiments.services import check_scenario as check_web_scenario

    full = {**scenario, "schedulers": ["staged"], "scheduler_params": {}, "seeds": [sim_seed], "drain": True}
    check_web_scenario(full)  # the platform's bounds on load, hours and preset parameters
    return check_scenario(scenario, sim_seed)


def _fingerprint(scenario: dict[str, Any], cluster: ClusterUpload | None, trace: TraceUpload | None) -> str:
    names = scenario_file_names(cluster, trace)
    digests = {}
    if cluster is not None:
        digests[names["cluster"]] = cluster.sha256
    if trace is not None:
        digests[names["workload"]] = trace.sha256
    return scenario_fingerprint(scenario, digests)


def create_search(
    owner: User,
    scenario: dict[str, Any],
    search_settings: SearchSettings,
    sim_seed: int,
    *,
    name: str = "",
    cluster_upload: ClusterUpload | None = None,
    trace_upload: TraceUpload | None = None,
    team: Team | None = None,
    visibility: str = Visibility.PRIVATE,
    forked_from: Search | None = None,
) -> Search:
    """Store a search, its generation 0 and their evaluations; queue the evaluations after the commit.

    Callers validated the request (:func:`check_search`) and that the uploads
    are the owner's or come from ``forked_from``, which the owner can see.
    """
    search_settings.check()
    shared = sharing_fields(owner, team, visibility)
    individuals = first_population(search_settings)
    with transaction.atomic():
        search = Search.objects.create(
            name=name,
            **shared,
            **scenario_fields(scenario, cluster_upload, trace_upload),
            forked_from=forked_from,
            metric=search_settings.metric,
            population=search_settings.population,
            max_generations=search_settings.generations,
            seed=search_settings.seed,
            sim_seed=sim_seed,
            fingerprint=_fingerprint(scenario, cluster_upload, trace_upload),
            code_version=code_version()[:100],
        )
        new, pending = ensure_evaluations(search, individuals)
        SearchGeneration.objects.create(search=search, index=0, individuals=individuals, new_evaluations=new)
        transaction.on_commit(lambda: setattr(search, "queued", _queue(search.pk, pending)))
    return search


def _queue(search_id: int, evaluation_ids: list[int]) -> bool:
    """Queue evaluations, or a coordinator pass when there is nothing to evaluate (every result was known)."""
    if evaluation_ids:
        return work.enqueue_evaluations(evaluation_ids)
    return work.enqueue_advance(search_id)


def search_settings_of(search: Search) -> SearchSettings:
    return SearchSettings(search.metric, search.population, search.max_generations, int(search.seed))


def cancel_search(search: Search) -> bool:
    """Cancel a pending or running search; its running evaluations stop at their worker's next heartbeat."""
    if not search.is_active:
        return False
    won = move(Search, search.pk, search.status, Status.CANCELLED, TRANSITIONS, finished_at=timezone.now())
    if won:
        SearchEvaluation.objects.filter(search=search, status=EvalStatus.PENDING).update(status=EvalStatus.CANCELLED)
        search.status = Status.CANCELLED
    return won


# ---------------------------------------------------------------------------- evaluations


def _key(search: Search, policy: str) -> str:
    return cache_key(policy, search.fingerprint, int(search.sim_seed), search.code_version)


def ensure_evaluations(search: Search, texts: Sequence[str]) -> tuple[int, list[int]]:
    """Evaluation rows for ``texts`` not yet in the search; returns (how many were new, ids of new pending ones).

    A key some other search already evaluated is copied (no simulation).
    """
    keys = {t: _key(search, t) for t in dict.fromkeys(texts)}
    have = set(SearchEvaluation.objects.filter(search=search, key__in=keys.values()).values_list("key", flat=True))
    missing = {t: k for t, k in keys.items() if k not in have}
    if not missing:
        return 0, []
    known = dict(
        SearchEvaluation.objects.filter(key__in=missing.values(), status=EvalStatus.DONE)
        .order_by("id")
        .values_list("key", "result")
    )
    now = timezone.now()
    SearchEvaluation.objects.bulk_create(
        [
            SearchEvaluation(
                search=search,
                key=k,
                policy=t,
                status=EvalStatus.DONE if k in known else EvalStatus.PENDING,
                result=known.get(k),
                reused=k in known,
                finished_at=now if k in known else None,
            )
            for t, k in missing.items()
        ],
        ignore_conflicts=True,
    )
    pending = SearchEvaluation.objects.filter(
        search=search, key__in=[k for k in missing.values() if k not in known], status=EvalStatus.PENDING
    )
    return len(missing), list(pending.order_by("id").values_list("id", flat=True))


def evaluation_rows(search: Search, texts: Sequence[str]) -> dict[str, SearchEvaluation]:
    keys = {t: _key(search, t) for t in dict.fromkeys(texts)}
    by_key = {e.key: e for e in SearchEvaluation.objects.filter(search=search, key__in=keys.values())}
    return {t: by_key[k] for t, k in keys.items() if k in by_key}


# Built clusters and workloads of this worker process, by (scenario fingerprint, simulation seed): a cache, not
# state (every entry is rebuilt from the database when missing), so that a worker evaluating a generation builds
# its workload once rather than once per individual.
def fail_search(search_id: int, message: str) -> bool:
    status = Search.objects.filter(pk=search_id).values_list("status", flat=True).first()
    if status not in ACTIVE:
        return False
    won = move(Search, search_id, status, Status.FAILED, TRANSITIONS, error=message[:2000], finished_at=timezone.now())
    if won:
        SearchEvaluation.objects.filter(search_id=search_id, status=EvalStatus.PENDING).update(
            status=EvalStatus.CANCELLED
        )
    return won


# ---------------------------------------------------------------------------- reading


def progress_payload(search: Search) -> dict[str, Any]:
    """What the search page's poller reads: status, generation, evaluations of the current step, the elite."""
    search.refresh_from_db()
    gen = SearchGeneration.objects.filter(search=search, index=search.generation).first()
    needed = (gen.individuals if search.phase == Phase.EVALUATE else gen.candidates) if gen else []
    rows = evaluation_rows(search, needed)
    done = sum(1 for e in rows.values() if e.status == EvalStatus.DONE)
    # Nothing of this step running and some of it queued a while: say what is ahead of its first evaluation.
    queued = [e.queued_at for e in rows.values() if e.status == EvalStatus.PENDING and e.queued_at is not None]
    running = any(e.status == EvalStatus.RUNNING for e in rows.values())
    wait = "" if running or not queued else waiting.notes([("pending", min(queued))], "short")[0]
    last = (
        SearchGeneration.objects.filter(search=search, fitness__isnull=False)
        .order_by("-index")
        .values("index", "elite_policy", "elite_fitness")
        .first()
    )
    return {
        "id": search.pk,
        "status": search.status,
        "generation": search.generation,
        "generations_done": search.generations_done,
        "max_generations": search.max_generations,
        "phase": search.phase,
        "evaluations_done": done,
        "evaluations_total": len(set(needed)),
        "elite": last["elite_policy"] if last else None,
        "elite_fitness": last["elite_fitness"] if last else None,
        "metric": search.metric,
        "stop_reason": search.stop_reason,
        "error": search.error,
        "waiting": wait,
    }


def records(search: Search) -> tuple[list[GenerationRecord], dict[str, Evaluation]]:
    """The finished generations as simcore records, and the evaluation of every policy in them."""
    gens = list(SearchGeneration.objects.filter(search=search, fitness__isnull=False).order_by("index"))
    evaluations = {
        e.policy: Evaluation.from_dict(e.result)
        for e in SearchEvaluation.objects.filter(search=search, status=EvalStatus.DONE).only("policy", "result")
        if e.result
    }
    from simcore.dse.explore.explain import Explanation

    out = []
    for g in gens:
        rec = GenerationRecord(
            g.index, list(g.individuals), [float(f) for f in g.fitness or []], int(g.elite or 0), g.new_evaluations
        )
        if g.explanation:
            rec.explanation = Explanation.from_dict(g.explanation)
        out.append(rec)
    return out, evaluations
