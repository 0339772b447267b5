"""The genetic search of section 3.3: generations of schedulers, their fitness, the elite and its explanations.

The search is a sequence of pure steps (:mod:`simcore.dse.explore.genetic`) around
one impure one, evaluating a batch of policy texts. :func:`run_search` drives
them with any evaluator: local processes for ``simcore explore``
(:mod:`simcore.dse.explore.pool`), or a test's stand-in. The dashboard's
coordinator takes the same steps one at a time, with the state in its
database, so both give the same generations for the same seed.

Per generation ``g``:

1. evaluate the individuals (each distinct policy text once; texts already
   evaluated in this search come from its cache);
2. the elite is the fittest individual (ties: the lowest index, which is the
   previous elite, copied first);
3. if the elite changed, explain it (:mod:`simcore.dse.explore.explain`; the
   candidates are evaluated like individuals);
4. stop when :func:`stop_reason` says so, else breed generation ``g + 1``.

Stop criteria (the paper's): at most ``generations`` generations (500 by
default), and convergence when the mean fitness of the last 10 generations
is within 0.01% of the mean of the last 30. Where the paper is silent:

- A generation's fitness, for convergence, is its elite's (the best)
  fitness. The population's mean fitness includes every fresh mutant and
  every penalised run and never settles to 0.01%; the elite's, which never
  worsens (elitism), settles once the search stops finding better schedulers.
- "Within 0.01%": ``|mean(last 10) - mean(last 30)| <= 1e-4 * |mean(last 30)|``;
  it needs at least 30 generations, so a search that converges runs 30 or more.
- Population size: 32 by default (the paper leaves it to the user). Small
  enough that a generation of a 10,000-task workload takes seconds on two
  cores, large enough for tournaments of three to select.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from simcore.core.errors import ParameterError
from simcore.dse.explore.explain import Explanation, explain, explanation_candidates
from simcore.dse.explore.fitness import METRIC_NAMES, Evaluation
from simcore.dse.explore.genetic import best_index, breed, initial_population
from simcore.dse.staged.policy import STAGES, Policy, parse_policy

__all__ = [
    "CONVERGENCE_LONG",
    "CONVERGENCE_SHORT",
    "CONVERGENCE_TOLERANCE",
    "DEFAULT_GENERATIONS",
    "DEFAULT_POPULATION",
    "Evaluator",
    "GenerationRecord",
    "SearchResult",
    "SearchSettings",
    "converged",
    "make_record",
    "next_population",
    "run_search",
    "stop_reason",
]

DEFAULT_POPULATION = 32
#: The paper's cap on generations ("500 by default").
DEFAULT_GENERATIONS = 500
#: Bounds a search may ask for (a typo such as 1000000 individuals is refused, not attempted).
MAX_POPULATION = 1000
MAX_GENERATIONS = 10_000
CONVERGENCE_SHORT = 10
CONVERGENCE_LONG = 30
CONVERGENCE_TOLERANCE = 1e-4

#: Evaluates a batch of distinct policy texts; returns one Evaluation per text.
Evaluator = Callable[[Sequence[str]], Mapping[str, Evaluation]]


@dataclass(frozen=True)
class SearchSettings:
    """What a search optimises and how (the simulated scenario is the evaluator's business)."""

    metric: str = "trt"
    population: int = DEFAULT_POPULATION
    generations: int = DEFAULT_GENERATIONS
    seed: int = 0

    def check(self) -> SearchSettings:
        """Raise ParameterError naming the first bad setting; returns self."""
        if self.metric not in METRIC_NAMES:
            raise ParameterError(f"metric must be one of {', '.join(METRIC_NAMES)}, got {self.metric!r}")
        for name, value, low, high in (
            ("population", self.population, 2, MAX_POPULATION),
            ("generations", self.generations, 1, MAX_GENERATIONS),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
                raise ParameterError(f"{name} must be a whole number from {low} to {high}, got {value!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ParameterError(f"seed must be a non-negative integer, got {self.seed!r}")
        return self

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "population": self.population,
            "generations": self.generations,
            "seed": self.seed,
        }


@dataclass
class GenerationRecord:
    """One generation: its individuals (policy texts, in population order), their fitness, the elite."""

    index: int
    individuals: list[str]
    fitness: list[float]
    elite: int
    #: Distinct policies simulated for this generation (not found in the search's cache).
    new_evaluations: int = 0
    explanation: Explanation | None = None

    @property
    def elite_policy(self) -> str:
        return self.individuals[self.elite]

    @property
    def elite_fitness(self) -> float:
        return self.fitness[self.elite]

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.index,
            "elite": self.elite_policy,
            "elite_fitness": self.elite_fitness,
            "new_evaluations": self.new_evaluations,
            "individuals": self.individuals,
            "fitness": self.fitness,
            "explanation": self.explanation.to_dict() if self.explanation is not None else None,
        }


def make_record(
    index: int, individuals: Sequence[str], evaluations: Mapping[str, Evaluation], metric: str, new: int = 0
) -> GenerationRecord:
    """A generation's record from the evaluations of its individuals."""
    fitness = [evaluations[t].fitness(metric) for t in individuals]
    return GenerationRecord(index, list(individuals), fitness, best_index(fitness), new)


def converged(elite_fitness: Sequence[float]) -> bool:
    """The paper's convergence rule on the elite fitness per generation (see the module docstring)."""
    if len(elite_fitness) < CONVERGENCE_LONG:
        return False
    short = sum(elite_fitness[-CONVERGENCE_SHORT:]) / CONVERGENCE_SHORT
    long = sum(elite_fitness[-CONVERGENCE_LONG:]) / CONVERGENCE_LONG
    return abs(short - long) <= CONVERGENCE_TOLERANCE * abs(long)


def stop_reason(settings: SearchSettings, elite_fitness: Sequence[float]) -> str | None:
    """``"converged"``, ``"generations"`` (the cap was reached) or None (go on)."""
    if converged(elite_fitness):
        return "converged"
    if len(elite_fitness) >= settings.generations:
        return "generations"
    return None


def next_population(settings: SearchSettings, record: GenerationRecord) -> list[str]:
    """The individuals of generation ``record.index + 1`` (policy texts)."""
    population = [parse_policy(t) for t in record.individuals]
    return [p.text() for p in breed(population, record.fitness, settings.seed, record.index + 1)]


def first_population(settings: SearchSettings) -> list[str]:
    """The individuals of generation 0 (policy texts)."""
    return [p.text() for p in initial_population(settings.population, settings.seed)]


@dataclass
class SearchResult:
    """A finished (or stopped) search: its generations, every evaluation, and why it stopped."""

    settings: SearchSettings
    generations: list[GenerationRecord] = field(default_factory=list)
    evaluations: dict[str, Evaluation] = field(default_factory=dict)
    stop: str | None = None
    wall_s: float = 0.0

    @property
    def elite(self) -> GenerationRecord:
        return self.generations[-1]

    def elite_sequence(self) -> list[tuple[str, float]]:
        """(elite policy, elite fitness) per generation: what the same seed must reproduce."""
        return [(g.elite_policy, g.elite_fitness) for g in self.generations]

    def summary(self) -> dict[str, Any]:
        """The JSON summary ``simcore explore`` prints."""
        last = self.elite
        ev = self.evaluations[last.elite_policy]
        policy = parse_policy(last.elite_policy)
        return {
            **self.settings.to_dict(),
            "generations_run": len(self.generations),
            "stop": self.stop,
            "elite": last.elite_policy,
            "elite_stages": stage_texts(policy),
            "elite_fitness": last.elite_fitness,
            "elite_metrics": {m: ev.metric(m) for m in METRIC_NAMES},
            "elite_unfinished": ev.unfinished,
            "first_elite_fitness": self.generations[0].elite_fitness,
            "improvement": 1.0 - last.elite_fitness / self.generations[0].elite_fitness
            if self.generations[0].elite_fitness
            else 0.0,
            "elite_sequence": [
                {"generation": g.index, "elite": g.elite_policy, "fitness": g.elite_fitness} for g in self.generations
            ],
            "explanations": [g.explanation.to_dict() for g in self.generations if g.explanation is not None],
            "simulations": len(self.evaluations),
            "individuals_evaluated": sum(len(g.individuals) for g in self.generations),
            "wall_s": self.wall_s,
        }


def stage_texts(policy: Policy) -> dict[str, str]:
    """Per stage, its chromosome as text (``Job-Size(asc).Submission-Time(asc)``)."""
    return {s: ".".join(a.text() for a in policy.stage(s)) for s in STAGES}


def run_search(
    settings: SearchSettings,
    evaluate: Evaluator,
    on_generation: Callable[[GenerationRecord, SearchResult], None] | None = None,
) -> SearchResult:
    """Run the search to its stop criterion; ``on_generation`` is called after every generation."""
    settings.check()
    t0 = time.perf_counter()
    result = SearchResult(settings)
    cache = result.evaluations

    def ensure(texts: Sequence[str]) -> int:
        missing = list(dict.fromkeys(t for t in texts if t not in cache))
        if missing:
            got = evaluate(missing)
            for t in missing:
                cache[t] = got[t]
        return len(missing)

    individuals = first_population(settings)
    for g in range(settings.generations):
        new = ensure(individuals)
        rec = make_record(g, individuals, cache, settings.metric, new)
        if result.generations and rec.elite_policy != result.generations[-1].elite_policy:
            prev = result.generations[-1]
            cands = [t for _, t in explanation_candidates(prev.elite_policy, rec.elite_policy)]
            rec.new_evaluations += ensure(cands)
            rec.explanation = explain(
                g,
                prev.elite_policy,
                prev.elite_fitness,
                rec.elite_policy,
                rec.elite_fitness,
                {t: cache[t].fitness(settings.metric) for t in cands},
            )
        result.generations.append(rec)
        result.stop = stop_reason(settings, [r.elite_fitness for r in result.generations])
        result.wall_s = time.perf_counter() - t0
        if on_generation is not None:
            on_generation(rec, result)
        if result.stop is not None:
            break
        individuals = next_population(settings, rec)
    return result
