"""The genetic operators of the design-space search (Mastenbroek, Andreadis and Iosup, section 3.3).

The genome is a :class:`~simcore.dse.staged.policy.Policy`: one *chromosome* per
stage (J1, J2, J3, T1, T2, R5) whose *genes* are atoms, composed in order
when a chromosome holds several (Table 4). Everything here is a pure function
of its inputs and an injected :class:`numpy.random.Generator`, so a generation
is reproduced exactly from the previous one, its fitness and the seed; no
state lives anywhere else (the dashboard's coordinator relies on this).

The operators and their probabilities, as the paper gives them:

- tournament selection: the best of three individuals drawn with replacement
  (ties: the lower population index);
- uniform crossover: parents are paired in selection order and, for every
  stage, the genes at index ``i`` (``i`` below both chromosomes' lengths) are
  swapped with probability 0.2;
- unguided mutation (0.1): a gene becomes a random atom of its stage;
- guided mutation (0.05): an atom's numeric parameter is nudged with a
  Gaussian around its value (:meth:`ParamSpec.nudge`); atoms without a
  parameter are left alone;
- length mutation (0.02): with probability 1/3 the first gene is removed,
  with 2/3 a random gene is appended;
- redundancy pruning (:func:`~simcore.dse.staged.policy.prune`) of every chromosome.

How the mutation probabilities apply. The paper writes them as cube roots
(∛0.1, ∛0.05, ∛0.02). Those are the numbers of Jenetics' ``Mutator``
(``io.jenetics.Mutator.alter``), which takes an overall gene mutation
probability ``p`` and draws ``∛p`` three times: an individual is picked with
``∛p``, each of its chromosomes with ``∛p``, and each gene of a picked
chromosome with ``∛p``; a gene is therefore mutated with probability ``p``.
We read the paper that way: a literal ∛0.1 = 0.46 per gene would redraw
nearly half of every scheduler each generation, a random search. Length
mutation is a chromosome-level operator: the individual, the chromosome and
then the chromosome's length are each picked with ``∛0.02``.

Choices where the paper is silent (each with its reason):

- Elitism: the fittest individual of a generation is copied unchanged into
  the next (:data:`ELITE`). The paper reports "the elite" per generation and
  explains every change of it as a *gain* (section 3.5); that reading needs
  an elite that never gets worse. The rest of the population is offspring.
- J1 holds exactly one gene (Table 4: J1 does not compose), so length
  mutation skips it; removing the only gene of any chromosome is skipped too
  (a stage needs a policy).
- A chromosome holds at most :data:`MAX_GENES` genes: length mutation adds
  two genes for every one it removes, so without a bound chromosomes of
  stages that do not matter would grow without end. Three is the paper's own
  assumption in its estimate of the design space (section 2.5: "use the
  composition operator twice per stage").
- The direction of an ordering atom (asc/desc) is not a numeric parameter:
  guided mutation leaves it, unguided mutation redraws it with the atom.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from simcore.dse.staged.policy import (
    COMPOSABLE,
    STAGES,
    Atom,
    Policy,
    format_policy,
    parse_policy,
    prune,
    random_atom,
    random_policy,
)

__all__ = [
    "CROSSOVER_SWAP",
    "ELITE",
    "GUIDED",
    "LENGTH",
    "MAX_GENES",
    "TOURNAMENT",
    "UNGUIDED",
    "best_index",
    "breed",
    "crossover",
    "generation_rng",
    "guided_mutation",
    "initial_population",
    "length_mutation",
    "normalise",
    "prune_policy",
    "tournament",
    "unguided_mutation",
]

#: Individuals drawn (with replacement) per tournament.
TOURNAMENT = 3
#: Probability that the genes at one index of two paired chromosomes are swapped.
CROSSOVER_SWAP = 0.2
#: Overall probability that a gene is redrawn (applied as its cube root at three levels, see the docstring).
UNGUIDED = 0.1
#: Overall probability that an atom's parameter is nudged.
GUIDED = 0.05
#: Overall probability that a chromosome's length changes.
LENGTH = 0.02
#: Of a length mutation: probability of removing the first gene (else a random gene is appended).
REMOVE_FIRST = 1.0 / 3.0
#: Individuals copied unchanged into the next generation (the fittest one).
ELITE = 1
#: Most genes a chromosome may hold (section 2.5's "composition at most twice per stage").
MAX_GENES = 3


def generation_rng(seed: int, generation: int) -> np.random.Generator:
    """The random stream that makes generation ``generation`` of a search seeded with ``seed``.

    One independent stream per generation (:class:`numpy.random.SeedSequence`
    with the generation as spawn key), so generation ``g`` depends only on the
    seed and generation ``g - 1``: a coordinator holding no state rebuilds it.
    """
    return np.random.default_rng(np.random.SeedSequence(int(seed), spawn_key=(int(generation),)))


def normalise(policy: Policy) -> Policy:
    """``policy`` read back from its text: the identity of an individual is its canonical text."""
    return parse_policy(format_policy(policy))


def prune_policy(policy: Policy) -> Policy:
    """Redundancy pruning of every chromosome (:func:`simcore.dse.staged.policy.prune`)."""
    return Policy(**{s: prune(s, policy.stage(s)) for s in STAGES})


def initial_population(size: int, seed: int) -> list[Policy]:
    """Generation 0: ``size`` random individuals, one random atom per stage (section 3.3, step 1)."""
    rng = generation_rng(seed, 0)
    return [normalise(random_policy(rng)) for _ in range(size)]


def best_index(fitness: Sequence[float]) -> int:
    """The fittest individual (lowest fitness; ties: the lowest index, so a kept elite stays the elite)."""
    return min(range(len(fitness)), key=lambda i: (fitness[i], i))


def tournament(fitness: Sequence[float], rng: np.random.Generator) -> int:
    """Tournament selection: the best of :data:`TOURNAMENT` indices drawn with replacement."""
    drawn: list[int] = rng.integers(len(fitness), size=TOURNAMENT).tolist()
    return min(drawn, key=lambda i: (fitness[i], i))


def crossover(a: Policy, b: Policy, rng: np.random.Generator) -> tuple[Policy, Policy]:
    """Uniform crossover: per stage, swap the genes at each common index with probability :data:`CROSSOVER_SWAP`."""
    ca: dict[str, tuple[Atom, ...]] = {}
    cb: dict[str, tuple[Atom, ...]] = {}
    for s in STAGES:
        ga, gb = list(a.stage(s)), list(b.stage(s))
        for i in range(min(len(ga), len(gb))):
            if rng.random() < CROSSOVER_SWAP:
                ga[i], gb[i] = gb[i], ga[i]
        ca[s], cb[s] = tuple(ga), tuple(gb)
    return Policy(**ca), Policy(**cb)


def _cube_root(p: float) -> float:
    return math.pow(p, 1.0 / 3.0)


def _per_gene(policy: Policy, p: float, rng: np.random.Generator, change: Callable[[Atom], Atom]) -> Policy:
    """Jenetics' three-level mutation: individual, chromosome and gene each picked with ``∛p``."""
    q = _cube_root(p)
    if rng.random() >= q:
        return policy
    parts: dict[str, tuple[Atom, ...]] = {}
    for s in STAGES:
        genes = policy.stage(s)
        if rng.random() < q:
            genes = tuple(change(g) if rng.random() < q else g for g in genes)
        parts[s] = genes
    return Policy(**parts)


def unguided_mutation(policy: Policy, rng: np.random.Generator, p: float = UNGUIDED) -> Policy:
    """Unguided mutation: a picked gene becomes a random atom of its stage (arguments and direction drawn too)."""
    return _per_gene(policy, p, rng, lambda g: random_atom(g.stage, rng))


def _nudged(atom: Atom, rng: np.random.Generator) -> Atom:
    params = atom.spec.params
    if not params:
        return atom
    args = tuple(spec.nudge(float(v), rng) for spec, v in zip(params, atom.args, strict=True))
    return Atom(atom.stage, atom.name, args, atom.direction)


def guided_mutation(policy: Policy, rng: np.random.Generator, p: float = GUIDED) -> Policy:
    """Guided mutation: a picked atom's numeric parameter moves by a Gaussian step (atoms without one stay)."""
    return _per_gene(policy, p, rng, lambda g: _nudged(g, rng))


def length_mutation(policy: Policy, rng: np.random.Generator, p: float = LENGTH, max_genes: int = MAX_GENES) -> Policy:
    """Length mutation: a picked chromosome loses its first gene (1/3) or gains a random one at the end (2/3).

    J1 is never picked (it holds one gene); a chromosome keeps at least one
    gene and at most ``max_genes``: a change that would break either bound is
    not made.
    """
    q = _cube_root(p)
    if rng.random() >= q:
        return policy
    parts = {s: policy.stage(s) for s in STAGES}
    for s in STAGES:
        if s not in COMPOSABLE:
            continue
        if rng.random() >= q or rng.random() >= q:  # the chromosome, then its length
            continue
        genes = parts[s]
        if rng.random() < REMOVE_FIRST:
            if len(genes) > 1:
                parts[s] = genes[1:]
        else:
            gene = random_atom(s, rng)  # drawn either way, so the stream does not depend on the bound
            if len(genes) < max_genes:
                parts[s] = (*genes, gene)
    return Policy(**parts)


def breed(population: Sequence[Policy], fitness: Sequence[float], seed: int, generation: int) -> list[Policy]:
    """Generation ``generation`` from the previous one and its fitness (section 3.3, steps 4 and 5).

    The elite is copied first (:data:`ELITE`), then offspring: parents by
    tournament, paired in order for crossover, then unguided, guided and
    length mutation and pruning, each pass over all offspring in order.
    Returns as many individuals as ``population`` holds, normalised.
    """
    n = len(population)
    if n != len(fitness) or n < 2:
        raise ValueError(f"breed needs at least two individuals with one fitness each, got {n} and {len(fitness)}")
    rng = generation_rng(seed, generation)
    kept = [population[best_index(fitness)]][:ELITE]
    n_off = n - len(kept)
    parents = [population[tournament(fitness, rng)] for _ in range(n_off + n_off % 2)]
    offspring: list[Policy] = []
    for i in range(0, len(parents), 2):
        offspring.extend(crossover(parents[i], parents[i + 1], rng))
    offspring = offspring[:n_off]
    offspring = [unguided_mutation(c, rng) for c in offspring]
    offspring = [guided_mutation(c, rng) for c in offspring]
    offspring = [length_mutation(c, rng) for c in offspring]
    return [normalise(prune_policy(c)) for c in kept + offspring]
