"""The coordinator of design-space searches: it moves a search on when its current step's evaluations are stored.

It holds no state in memory: each step reads the search, computes the next
one with simcore (:mod:`simcore.dse.explore.search`, the same functions
``simcore explore`` calls) and writes it behind a guarded transition of
``(generation, phase)``, so two workers calling it at once, or a duplicate
task, change nothing twice. Steps whose evaluations are all known already
(an unchanged elite, a policy seen before) are taken at once, in the same
call. :func:`repair_searches` is the workers' periodic repair for searches.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from dashboard.common import units
from dashboard.common.models import Status, move
from dashboard.searches import work
from dashboard.searches.models import EvalStatus, Phase, Search, SearchEvaluation, SearchGeneration
from dashboard.searches.services import (
    MAX_INLINE_STEPS,
    TRANSITIONS,
    ensure_evaluations,
    evaluation_rows,
    fail_search,
    search_settings_of,
)
from simcore.dse.explore.explain import explain, explanation_candidates
from simcore.dse.explore.fitness import Evaluation
from simcore.dse.explore.search import GenerationRecord, SearchSettings, make_record, next_population, stop_reason

# ---------------------------------------------------------------------------- the coordinator


def advance(search_id: int) -> str:
    """Move the search on as far as its stored evaluations allow; safe to call at any time, from anywhere.

    Returns what happened last: ``waiting`` (evaluations are still to come),
    ``finished``, ``failed``, ``raced`` (another coordinator moved first) or the search's status if it ended.
    """
    queued: list[int] = []
    state = "waiting"
    for _ in range(MAX_INLINE_STEPS):
        with transaction.atomic():
            moved, ids, state = _step(search_id)
        queued += ids
        if not moved:
            break
    if queued:
        transaction.on_commit(lambda: work.enqueue_evaluations(queued))
    return state


def _finished_elite_fitness(search: Search, below: int) -> list[float]:
    rows = SearchGeneration.objects.filter(search=search, index__lt=below).order_by("index")
    return [float(f) for f in rows.values_list("elite_fitness", flat=True) if f is not None]


#: What a coordinator step did: whether the search moved, the evaluations to queue, and the state it is in.
Step = tuple[bool, list[int], str]


def _wait_for(search: Search, gen: SearchGeneration, phase: str) -> tuple[Step | None, dict[str, SearchEvaluation]]:
    """Whether the step's evaluations are done: (a step to return at once, else None; the evaluation rows)."""
    needed = gen.individuals if phase == Phase.EVALUATE else gen.candidates
    rows = evaluation_rows(search, [*gen.individuals, *needed])
    if len(rows) < len(set(gen.individuals) | set(needed)):  # rows lost (never the case, but never stuck either)
        _, ids = ensure_evaluations(search, [*gen.individuals, *needed])
        return (False, ids, "waiting"), rows
    bad = [rows[t] for t in needed if rows[t].status in (EvalStatus.FAILED, EvalStatus.CANCELLED)]
    if bad:
        fail_search(search.pk, bad[0].error or f"policy {bad[0].policy!r} could not be evaluated")
        return (False, [], Status.FAILED), rows
    if any(rows[t].status != EvalStatus.DONE for t in needed):
        return (False, [], "waiting"), rows
    return None, rows


def _explain_change(
    search: Search, gen: SearchGeneration, phase: str, rec: GenerationRecord, metric: str, guard: Q
) -> Step | None:
    """When the elite changed: evaluate the explanation's candidates first (a step to return), else explain it."""
    g = gen.index
    prev = SearchGeneration.objects.filter(search=search, index=g - 1).first() if g > 0 else None
    if prev is None or prev.elite_fitness is None or rec.elite_policy == prev.elite_policy:
        return None
    candidates = [t for _, t in explanation_candidates(prev.elite_policy, rec.elite_policy)]
    known = evaluation_rows(search, candidates)
    if phase == Phase.EVALUATE and not all(t in known and known[t].status == EvalStatus.DONE for t in candidates):
        if not move(Search, search.pk, search.status, Status.RUNNING, TRANSITIONS, guard=guard, phase=Phase.EXPLAIN):
            return False, [], "raced"
        new, ids = ensure_evaluations(search, candidates)
        SearchGeneration.objects.filter(pk=gen.pk).update(
            candidates=candidates, new_evaluations=F("new_evaluations") + new
        )
        return True, ids, "explaining"
    rec.explanation = explain(
        g,
        prev.elite_policy,
        float(prev.elite_fitness),
        rec.elite_policy,
        rec.elite_fitness,
        {t: Evaluation.from_dict(known[t].result or {}).fitness(metric) for t in candidates},
    )
    gen.candidates = candidates
    return None


def _close_generation(
    search: Search, gen: SearchGeneration, rec: GenerationRecord, cfg: SearchSettings, guard: Q
) -> Step:
    """Store the finished generation; then stop the search (converged, or its last generation) or start the next."""
    g = gen.index
    history = [*_finished_elite_fitness(search, g), rec.elite_fitness]
    stop = stop_reason(cfg, history)
    now = timezone.now()
    if stop is not None:
        changes: dict[str, Any] = {"stop_reason": stop, "finished_at": now}
        new_status = Status.FINISHED
    else:
        changes = {"generation": g + 1, "phase": Phase.EVALUATE}
        new_status = Status.RUNNING
    won = move(
        Search,
        search.pk,
        search.status,
        new_status,
        TRANSITIONS,
        guard=guard,
        generations_done=g + 1,
        started_at=search.started_at or now,
        **changes,
    )
    if not won:
        return False, [], "raced"
    SearchGeneration.objects.filter(pk=gen.pk).update(
        fitness=rec.fitness,
        elite=rec.elite,
        elite_policy=rec.elite_policy,
        elite_fitness=rec.elite_fitness,
        candidates=gen.candidates,
        explanation=rec.explanation.to_dict() if rec.explanation is not None else None,
        finished_at=now,
    )
    if stop is not None:
        return False, [], Status.FINISHED
    individuals = next_population(cfg, rec)
    new, ids = ensure_evaluations(search, individuals)
    SearchGeneration.objects.create(search=search, index=g + 1, individuals=individuals, new_evaluations=new)
    return True, ids, "next"


def _step(search_id: int) -> Step:
    """One coordinator step inside a transaction: (whether the search moved, evaluations to queue, state)."""
    search = Search.objects.filter(pk=search_id).first()
    if search is None:
        return False, [], "missing"
    if not search.is_active:
        return False, [], search.status
    g, phase = search.generation, search.phase
    gen = SearchGeneration.objects.get(search=search, index=g)
    early, rows = _wait_for(search, gen, phase)
    if early is not None:
        return early
    cfg = search_settings_of(search)
    evaluations = {t: Evaluation.from_dict(rows[t].result or {}) for t in gen.individuals}
    rec = make_record(g, gen.individuals, evaluations, cfg.metric, gen.new_evaluations)
    guard = Q(generation=g, phase=phase)
    explaining = _explain_change(search, gen, phase, rec, cfg.metric, guard)
    if explaining is not None:
        return explaining
    return _close_generation(search, gen, rec, cfg, guard)


# ---------------------------------------------------------------------------- repair


#: A search's evaluations as units of work (dashboard.common.units): claimed, stored and repaired as probes are.
UNITS = units.Units(
    unit=SearchEvaluation,
    parent=Search,
    parent_field="search",
    unit_noun="policy",
    fail_parent=fail_search,
    # looked up when called: tests and the repair see the current functions
    advance=lambda search_id: advance(search_id),
    enqueue=lambda ids: work.enqueue_evaluations(ids),
)


def repair_searches(now: datetime | None = None) -> dict[str, Any]:
    """Requeue evaluations of dead workers and never-queued ones; advance searches nobody advanced.

    An evaluation whose heartbeat is older than ``SIMCORE_WORKER_TIMEOUT_S``
    goes back to pending and is queued again (a simulation can be repeated;
    its result is the same), unless it already cost SIMCORE_RUN_MAX_ATTEMPTS
    workers (the rule of runs, :func:`dashboard.common.recovery.max_attempts`): then it
    fails its search with the lost-worker message (:func:`dashboard.common.units.repair`).
    """
    return units.repair(UNITS, now)
