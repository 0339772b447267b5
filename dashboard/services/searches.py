"""Design-space searches on the platform: creating one, its evaluations in workers, the coordinator, reading it.

The search itself is :mod:`simcore.explore`; this module only moves its
state between the database and those pure steps, so a search run here gives
the generations ``simcore explore`` gives for the same scenario and seeds.

- :func:`create_search` stores a search with its generation 0 and one
  evaluation per distinct individual, and queues one task per evaluation.
- :func:`execute_evaluation` (a worker) claims an evaluation, simulates its
  policy, stores the result and calls :func:`advance`.
- :func:`advance` (the coordinator) moves the search on when every evaluation
  its current step needs is stored. It holds no state in memory: it reads
  the search, computes the next step with simcore and writes it behind a
  guarded transition of ``(generation, phase)``, so two workers calling it
  at once, or a duplicate task, change nothing twice. Steps whose
  evaluations are all known already (an unchanged elite, a policy seen
  before) are taken at once, in the same call.
- :func:`repair_searches` (the workers' periodic repair) queues again the
  evaluations of dead workers and advances searches whose coordinator pass
  died with its worker.

Identical individuals are simulated once: per search, an evaluation row per
cache key (:func:`simcore.explore.fitness.cache_key`), and across searches
a finished evaluation with the same key (same policy, scenario, seeds and
code version) is copied instead of simulated again.
"""

from __future__ import annotations

import contextlib
import logging
import math
import re
import tempfile
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.db import transaction
from django.db.models import F, Q
from django.utils import timezone

from dashboard import queueing
from dashboard.models import (
    ClusterUpload,
    EvalStatus,
    Phase,
    Search,
    SearchEvaluation,
    SearchGeneration,
    Status,
    Team,
    TraceUpload,
    Visibility,
    lost_message,
    move,
    stale_heartbeat,
)
from dashboard.search_models import EVAL_TRANSITIONS
from dashboard.services.execution import Heartbeat
from dashboard.services.experiments import check_team_choice, new_share_token
from dashboard.services.uploads import scenario_file_names
from simcore import archive
from simcore.errors import Cancelled, ParameterError, SchedulingError, SimcoreError
from simcore.explore.explain import explain, explanation_candidates
from simcore.explore.fitness import Evaluation, cache_key, evaluate, scenario_fingerprint
from simcore.explore.pool import build, check_scenario
from simcore.explore.search import (
    GenerationRecord,
    SearchSettings,
    first_population,
    make_record,
    next_population,
    stop_reason,
)
from simcore.model import Cluster, Workload
from simcore.version import code_version

log = logging.getLogger(__name__)

ACTIVE = (Status.PENDING, Status.RUNNING)

#: Search transitions (the guarded state machine of dashboard.models.move). running -> running is a step:
#: the conditional update on (generation, phase) makes each step happen once.
TRANSITIONS: dict[str, frozenset[str]] = {
    Status.PENDING: frozenset({Status.RUNNING, Status.FINISHED, Status.FAILED, Status.CANCELLED}),
    Status.RUNNING: frozenset({Status.RUNNING, Status.FINISHED, Status.FAILED, Status.CANCELLED}),
    Status.FINISHED: frozenset(),
    Status.FAILED: frozenset(),
    Status.CANCELLED: frozenset(),
}

#: Bounds of searches started from the web (the library allows more from the command line).
MAX_WEB_POPULATION = 200
MAX_WEB_GENERATIONS = 500
#: An evaluation whose worker died this many times fails the search (a policy that kills workers).
MAX_ATTEMPTS = 3
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
    if isinstance(sim_seed, bool) or not isinstance(sim_seed, int) or not 0 <= sim_seed < 2**32:
        raise ParameterError(f"sim_seed must be a whole number from 0 to 2^32 - 1, got {sim_seed!r}")
    if search_settings.seed >= 2**32:
        raise ParameterError(f"seed must be below 2^32, got {search_settings.seed}")
    from dashboard.services.experiments import check_scenario as check_web_scenario

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
    check_team_choice(owner, team, visibility)
    names = archive.labels_of(scenario)
    individuals = first_population(search_settings)
    with transaction.atomic():
        search = Search.objects.create(
            owner=owner,
            name=name,
            scenario=scenario,
            cluster_upload=cluster_upload,
            trace_upload=trace_upload,
            cluster_label=names["cluster"][:200],
            workload_label=names["workload"][:200],
            team=team,
            visibility=visibility,
            share_token=new_share_token() if visibility == Visibility.PUBLIC else None,
            forked_from=forked_from,
            metric=search_settings.metric,
            population=search_settings.population,
            max_generations=search_settings.generations,
            seed=search_settings.seed,
            sim_seed=sim_seed,
            fingerprint=_fingerprint(scenario, cluster_upload, trace_upload),
            code_version=code_version()[:100],
        )
        new, pending = _ensure(search, individuals)
        SearchGeneration.objects.create(search=search, index=0, individuals=individuals, new_evaluations=new)
        transaction.on_commit(lambda: setattr(search, "queued", _queue(search.pk, pending)))
    return search


def _queue(search_id: int, evaluation_ids: list[int]) -> bool:
    """Queue evaluations, or a coordinator pass when there is nothing to evaluate (every result was known)."""
    if evaluation_ids:
        return queueing.enqueue_evaluations(evaluation_ids)
    return queueing.enqueue_advance(search_id)


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


def _ensure(search: Search, texts: Sequence[str]) -> tuple[int, list[int]]:
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


def _rows(search: Search, texts: Sequence[str]) -> dict[str, SearchEvaluation]:
    keys = {t: _key(search, t) for t in dict.fromkeys(texts)}
    by_key = {e.key: e for e in SearchEvaluation.objects.filter(search=search, key__in=keys.values())}
    return {t: by_key[k] for t, k in keys.items() if k in by_key}


# Built clusters and workloads of this worker process, by (scenario fingerprint, simulation seed): a cache, not
# state (every entry is rebuilt from the database when missing), so that a worker evaluating a generation builds
# its workload once rather than once per individual.
_BUILT: OrderedDict[tuple[str, int], tuple[Cluster, Workload]] = OrderedDict()


def search_files(search: Search) -> dict[str, bytes]:
    """The uploaded files a search's scenario names, by scenario file name."""
    names = scenario_file_names(search.cluster_upload, search.trace_upload)
    out = {}
    if search.cluster_upload is not None:
        out[names["cluster"]] = search.cluster_upload.content()
    if search.trace_upload is not None:
        out[names["workload"]] = search.trace_upload.content()
    return out


@contextlib.contextmanager
def _materialised(search: Search) -> Iterator[dict[str, Path]]:
    with tempfile.TemporaryDirectory(prefix="simcore-search-") as tmp:
        paths = {}
        for name, content in search_files(search).items():
            paths[name] = Path(tmp) / name
            paths[name].write_bytes(content)
        yield paths


def built(search: Search) -> tuple[Cluster, Workload]:
    """The search's cluster and workload, built once per worker process."""
    key = (search.fingerprint, int(search.sim_seed))
    if key in _BUILT:
        _BUILT.move_to_end(key)
        return _BUILT[key]
    with _materialised(search) as files:
        pair = build(search.scenario, int(search.sim_seed), files)
    _BUILT[key] = pair
    while len(_BUILT) > BUILT_CACHE:
        _BUILT.popitem(last=False)
    return pair


def _upload_names(message: str, search: Search) -> str:
    """``message`` without the worker's temporary paths: the names the user gave the uploads."""
    names = scenario_file_names(search.cluster_upload, search.trace_upload)
    for key, upload, what in (
        ("cluster", search.cluster_upload, "cluster upload"),
        ("workload", search.trace_upload, "trace upload"),
    ):
        if upload is not None:
            message = re.sub(r"\S*" + re.escape(names[key]), f"{what} {upload.name!r}", message)
    return message


def execute_evaluation(evaluation_id: int, worker: str = "") -> str:
    """Claim a pending evaluation, simulate its policy, store the result, move the search on; returns the outcome.

    An evaluation that is gone, claimed by another worker, or of a search that
    ended is left alone. A policy the simulation refuses fails the search
    with its message (the search cannot rank an individual it cannot score).
    """
    ev = (
        SearchEvaluation.objects.select_related("search", "search__cluster_upload", "search__trace_upload")
        .filter(pk=evaluation_id)
        .first()
    )
    if ev is None or ev.status != EvalStatus.PENDING:
        return ev.status if ev else "missing"
    search = ev.search
    if not search.is_active:
        return f"search {search.status}"
    now = timezone.now()
    claimed = move(
        SearchEvaluation,
        ev.pk,
        EvalStatus.PENDING,
        EvalStatus.RUNNING,
        EVAL_TRANSITIONS,
        started_at=now,
        heartbeat_at=now,
        worker=worker[:200],
        attempts=F("attempts") + 1,
        code_version=code_version()[:100],
    )
    if not claimed:
        return "claimed elsewhere"
    move(Search, search.pk, Status.PENDING, Status.RUNNING, TRANSITIONS, started_at=now)
    try:
        with Heartbeat(SearchEvaluation.objects.filter(pk=ev.pk, status=EvalStatus.RUNNING, search__status__in=ACTIVE)):
            outcome = _simulate(ev, search)
    except Cancelled:  # raised by the heartbeat: the search was cancelled or the evaluation given to another worker
        outcome = _current(ev)
    if outcome == EvalStatus.DONE:
        advance(search.pk)
    return outcome


def _simulate(ev: SearchEvaluation, search: Search) -> str:
    try:
        cluster, workload = built(search)
        result = evaluate(cluster, workload, ev.policy, int(search.sim_seed))
    except Cancelled:
        if not Search.objects.filter(pk=search.pk, status__in=ACTIVE).exists():
            move(SearchEvaluation, ev.pk, EvalStatus.RUNNING, EvalStatus.CANCELLED, EVAL_TRANSITIONS)
        return _current(ev)
    except SimcoreError as e:
        return _fail(ev, search, f"policy {ev.policy!r}: {_upload_names(str(e), search)}")
    except SchedulingError as e:
        return _fail(ev, search, f"policy {ev.policy!r}: the scheduler made an invalid decision: {e}")
    except MemoryError:
        return _fail(ev, search, f"policy {ev.policy!r}: the simulation needed more memory than the worker has")
    except Exception as e:  # a bug: the traceback for us, one line for the user
        log.exception("evaluation %s of search %s failed", ev.pk, search.pk)
        return _fail(ev, search, f"policy {ev.policy!r}: internal error ({type(e).__name__}): {e}")
    data = result.to_dict()
    if not all(math.isfinite(float(data[m])) for m in ("trt", "jms", "njsl", "jwt")):
        return _fail(ev, search, f"policy {ev.policy!r}: the simulation gave a non-finite metric ({data})")
    won = move(
        SearchEvaluation,
        ev.pk,
        EvalStatus.RUNNING,
        EvalStatus.DONE,
        EVAL_TRANSITIONS,
        result=data,
        finished_at=timezone.now(),
    )
    return EvalStatus.DONE if won else _current(ev)


def _current(ev: SearchEvaluation) -> str:
    return SearchEvaluation.objects.filter(pk=ev.pk).values_list("status", flat=True).first() or "missing"


def _fail(ev: SearchEvaluation, search: Search, message: str) -> str:
    move(
        SearchEvaluation,
        ev.pk,
        EvalStatus.RUNNING,
        EvalStatus.FAILED,
        EVAL_TRANSITIONS,
        error=message[:2000],
        finished_at=timezone.now(),
    )
    fail_search(search.pk, message)
    return EvalStatus.FAILED


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
        transaction.on_commit(lambda: queueing.enqueue_evaluations(queued))
    return state


def _finished_elite_fitness(search: Search, below: int) -> list[float]:
    rows = SearchGeneration.objects.filter(search=search, index__lt=below).order_by("index")
    return [float(f) for f in rows.values_list("elite_fitness", flat=True) if f is not None]


def _step(search_id: int) -> tuple[bool, list[int], str]:
    """One coordinator step inside a transaction: (whether the search moved, evaluations to queue, state)."""
    search = Search.objects.filter(pk=search_id).first()
    if search is None:
        return False, [], "missing"
    if not search.is_active:
        return False, [], search.status
    g, phase = search.generation, search.phase
    gen = SearchGeneration.objects.get(search=search, index=g)
    needed = gen.individuals if phase == Phase.EVALUATE else gen.candidates
    rows = _rows(search, [*gen.individuals, *needed])
    if len(rows) < len(set(gen.individuals) | set(needed)):  # rows lost (never the case, but never stuck either)
        _, ids = _ensure(search, [*gen.individuals, *needed])
        return False, ids, "waiting"
    bad = [rows[t] for t in needed if rows[t].status in (EvalStatus.FAILED, EvalStatus.CANCELLED)]
    if bad:
        fail_search(search.pk, bad[0].error or f"policy {bad[0].policy!r} could not be evaluated")
        return False, [], Status.FAILED
    if any(rows[t].status != EvalStatus.DONE for t in needed):
        return False, [], "waiting"

    cfg = search_settings_of(search)
    evaluations = {t: Evaluation.from_dict(rows[t].result or {}) for t in gen.individuals}
    rec = make_record(g, gen.individuals, evaluations, cfg.metric, gen.new_evaluations)
    guard = Q(generation=g, phase=phase)
    prev = SearchGeneration.objects.filter(search=search, index=g - 1).first() if g > 0 else None
    if prev is not None and prev.elite_fitness is not None and rec.elite_policy != prev.elite_policy:
        candidates = [t for _, t in explanation_candidates(prev.elite_policy, rec.elite_policy)]
        known = _rows(search, candidates)
        if phase == Phase.EVALUATE and not all(t in known and known[t].status == EvalStatus.DONE for t in candidates):
            if not move(
                Search, search.pk, search.status, Status.RUNNING, TRANSITIONS, guard=guard, phase=Phase.EXPLAIN
            ):
                return False, [], "raced"
            new, ids = _ensure(search, candidates)
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
            {t: Evaluation.from_dict(known[t].result or {}).fitness(cfg.metric) for t in candidates},
        )
        gen.candidates = candidates
    history = [*_finished_elite_fitness(search, g), rec.elite_fitness]
    stop = stop_reason(cfg, history)
    now = timezone.now()
    if stop is not None:
        won = move(
            Search,
            search.pk,
            search.status,
            Status.FINISHED,
            TRANSITIONS,
            guard=guard,
            generations_done=g + 1,
            stop_reason=stop,
            finished_at=now,
            started_at=search.started_at or now,
        )
    else:
        won = move(
            Search,
            search.pk,
            search.status,
            Status.RUNNING,
            TRANSITIONS,
            guard=guard,
            generation=g + 1,
            phase=Phase.EVALUATE,
            generations_done=g + 1,
            started_at=search.started_at or now,
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
    new, ids = _ensure(search, individuals)
    SearchGeneration.objects.create(search=search, index=g + 1, individuals=individuals, new_evaluations=new)
    return True, ids, "next"


# ---------------------------------------------------------------------------- repair


def repair_searches(now: datetime | None = None) -> dict[str, Any]:
    """Requeue evaluations of dead workers and never-queued ones; advance searches nobody advanced.

    An evaluation whose heartbeat is older than ``SIMCORE_WORKER_TIMEOUT_S``
    goes back to pending and is queued again (a simulation can be repeated;
    its result is the same), unless it already cost :data:`MAX_ATTEMPTS`
    workers: then it fails its search with the lost-worker message.
    """
    now = now or timezone.now()
    requeued: list[int] = []
    failed: list[int] = []
    lost = SearchEvaluation.objects.filter(stale_heartbeat(now), status=EvalStatus.RUNNING)
    for pk, search_id, attempts, heard in lost.values_list("pk", "search_id", "attempts", "heartbeat_at"):
        if attempts >= MAX_ATTEMPTS:
            message = lost_message(heard, now, "re-run it: fork the search")
            if move(
                SearchEvaluation,
                pk,
                EvalStatus.RUNNING,
                EvalStatus.FAILED,
                EVAL_TRANSITIONS,
                guard=stale_heartbeat(now),
                error=message,
                finished_at=now,
            ):
                fail_search(search_id, f"{message} ({attempts} workers were lost on one policy)")
                failed.append(pk)
        elif move(
            SearchEvaluation,
            pk,
            EvalStatus.RUNNING,
            EvalStatus.PENDING,
            EVAL_TRANSITIONS,
            guard=stale_heartbeat(now),
            heartbeat_at=None,
            queued_at=None,
            worker="",
        ):
            requeued.append(pk)
    before = now - timedelta(seconds=settings.SIMCORE_REQUEUE_AFTER_S)
    grace = now - timedelta(seconds=queueing.NEVER_QUEUED_GRACE_S)
    stale = SearchEvaluation.objects.filter(
        Q(queued_at__isnull=True, search__created__lt=grace) | Q(queued_at__lt=before),
        status=EvalStatus.PENDING,
        search__status__in=ACTIVE,
    ).exclude(pk__in=requeued)
    again = requeued + list(stale.order_by("id").values_list("id", flat=True)[:1000])
    sent = queueing.enqueue_evaluations(again) if again else True
    advanced = {}
    for sid in Search.objects.filter(status__in=ACTIVE).values_list("id", flat=True):
        state = advance(sid)
        if state != "waiting":
            advanced[sid] = state
    return {"requeued": again if sent else [], "failed": failed, "advanced": advanced}


# ---------------------------------------------------------------------------- reading


def progress_payload(search: Search) -> dict[str, Any]:
    """What the search page's poller reads: status, generation, evaluations of the current step, the elite."""
    search.refresh_from_db()
    gen = SearchGeneration.objects.filter(search=search, index=search.generation).first()
    needed = (gen.individuals if search.phase == Phase.EVALUATE else gen.candidates) if gen else []
    rows = _rows(search, needed)
    done = sum(1 for e in rows.values() if e.status == EvalStatus.DONE)
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
    }


def records(search: Search) -> tuple[list[GenerationRecord], dict[str, Evaluation]]:
    """The finished generations as simcore records, and the evaluation of every policy in them."""
    gens = list(SearchGeneration.objects.filter(search=search, fitness__isnull=False).order_by("index"))
    evaluations = {
        e.policy: Evaluation.from_dict(e.result)
        for e in SearchEvaluation.objects.filter(search=search, status=EvalStatus.DONE).only("policy", "result")
        if e.result
    }
    from simcore.explore.explain import Explanation

    out = []
    for g in gens:
        rec = GenerationRecord(
            g.index, list(g.individuals), [float(f) for f in g.fitness or []], int(g.elite or 0), g.new_evaluations
        )
        if g.explanation:
            rec.explanation = Explanation.from_dict(g.explanation)
        out.append(rec)
    return out, evaluations
