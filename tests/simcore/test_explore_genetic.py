"""The genetic operators of section 3.3: selection, crossover, the three mutations, pruning, breeding."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.dse.explore import genetic
from simcore.dse.explore.genetic import (
    CROSSOVER_SWAP,
    MAX_GENES,
    best_index,
    breed,
    crossover,
    generation_rng,
    guided_mutation,
    initial_population,
    length_mutation,
    tournament,
)
from simcore.dse.staged.policy import STAGES, Atom, Policy, parse_policy, random_policy

A = parse_policy("J1=Interactive J2=Always J3=Job-Size(asc).Submission-Time(asc) T1=Always T2=Random R5=Best-Fit")
B = parse_policy("J1=Batch(60) J2=Limit-Active(5) J3=Random T1=Limit-Job(3) T2=Task-Duration(desc) R5=Cheap")


def test_each_generation_has_its_own_reproducible_stream() -> None:
    a = generation_rng(7, 3).random(4)
    assert np.array_equal(a, generation_rng(7, 3).random(4))
    assert not np.array_equal(a, generation_rng(7, 4).random(4))
    assert not np.array_equal(a, generation_rng(8, 3).random(4))


def test_the_initial_population_comes_from_the_seed_alone() -> None:
    first = [p.text() for p in initial_population(16, seed=5)]
    assert first == [p.text() for p in initial_population(16, seed=5)]
    assert first != [p.text() for p in initial_population(16, seed=6)]
    assert all(len(parse_policy(t).stage(s)) == 1 for t in first for s in STAGES)


def test_the_best_index_is_the_lowest_fitness_and_ties_go_to_the_first() -> None:
    assert best_index([3.0, 1.0, 2.0]) == 1
    assert best_index([1.0, 0.5, 0.5]) == 1


def test_a_tournament_returns_the_best_of_the_three_drawn() -> None:
    fitness = [5.0, 3.0, 9.0, 1.0, 7.0]
    rng = np.random.default_rng(11)
    drawn = np.random.default_rng(11).integers(len(fitness), size=3).tolist()
    assert tournament(fitness, rng) == min(drawn, key=lambda i: fitness[i])


def test_tournaments_draw_with_replacement() -> None:
    # Of two individuals the worse wins only when all three draws are it: 1/8 of the time.
    # Without replacement three draws from two would be impossible.
    rng = np.random.default_rng(0)
    wins = sum(tournament([2.0, 1.0], rng) == 0 for _ in range(40_000))
    assert abs(wins / 40_000 - 1 / 8) < 0.006


def test_crossover_swaps_only_genes_at_indices_both_chromosomes_have() -> None:
    # A's J3 has two genes, B's one: the second gene of A's J3 never moves.
    rng = np.random.default_rng(1)
    for _ in range(500):
        ca, cb = crossover(A, B, rng)
        assert ca.J3[1] == A.J3[1] and len(ca.J3) == 2 and len(cb.J3) == 1


def test_crossover_swaps_each_common_gene_with_probability_0_2() -> None:
    rng = np.random.default_rng(2)
    n = 20_000
    swapped = 0
    for _ in range(n):
        ca, cb = crossover(A, B, rng)
        swapped += ca.T2 == B.T2
        # Every gene of the parents is in one of the children, at its index.
        for s in STAGES:
            assert {ca.stage(s)[0], cb.stage(s)[0]} == {A.stage(s)[0], B.stage(s)[0]}
    assert abs(swapped / n - CROSSOVER_SWAP) < 0.01


def test_a_mutation_picks_individual_chromosome_and_gene_each_with_the_cube_root() -> None:
    # Jenetics' reading of the paper's cube roots: a gene changes with overall probability p.
    p = 0.1
    q = p ** (1 / 3)
    rng = np.random.default_rng(3)
    n = 30_000
    touched_genes = touched_individuals = 0
    for _ in range(n):
        calls: list[Atom] = []

        def mark(g: Atom, calls: list[Atom] = calls) -> Atom:
            calls.append(g)
            return g

        genetic._per_gene(A, p, rng, mark)
        touched_genes += len(calls)
        touched_individuals += bool(calls)
    genes = sum(len(A.stage(s)) for s in STAGES)  # 7
    assert abs(touched_genes / (n * genes) - p) < 0.006
    # An individual is changed when it is picked and at least one gene of a picked chromosome is.
    per_chromosome = [1 - (1 - q) ** len(A.stage(s)) for s in STAGES]
    expected = q * (1 - math.prod(1 - q * c for c in per_chromosome))
    assert abs(touched_individuals / n - expected) < 0.01


def test_guided_mutation_moves_parameters_within_their_range_and_nothing_else() -> None:
    rng = np.random.default_rng(4)
    moved = 0
    for _ in range(3000):
        m = guided_mutation(B, rng, p=1.0)  # every individual, chromosome and gene picked
        for s in STAGES:
            for before, after in zip(B.stage(s), m.stage(s), strict=True):
                assert (after.name, after.direction) == (before.name, before.direction)
                for spec, v in zip(after.spec.params, after.args, strict=True):
                    assert spec.low <= v <= spec.high
        moved += m.J2[0].args != B.J2[0].args
    assert moved == 3000  # an integer nudge that rounds back steps by one, so a picked parameter always moves


def test_length_mutation_removes_the_first_gene_a_third_of_the_time() -> None:
    two = parse_policy("J2=Limit-Active(5).Random(0.5) J3=Job-Size(asc).Random T1=Limit-Job(3).Random(0.5)")
    rng = np.random.default_rng(5)
    removed = added = 0
    for _ in range(6000):
        m = length_mutation(two, rng, p=1.0)
        for s in ("J2", "J3", "T1"):
            if len(m.stage(s)) == 1:
                removed += 1
                assert m.stage(s) == two.stage(s)[1:]  # the first gene went
            elif len(m.stage(s)) == 3:
                added += 1
                assert m.stage(s)[:2] == two.stage(s)  # appended at the end
    assert abs(removed / (removed + added) - 1 / 3) < 0.015


def test_length_mutation_never_touches_j1_nor_empties_or_overfills_a_chromosome() -> None:
    rng = np.random.default_rng(6)
    p = random_policy(rng)
    for _ in range(3000):
        p = length_mutation(p, rng, p=1.0)
        assert len(p.J1) == 1
        assert all(1 <= len(p.stage(s)) <= MAX_GENES for s in STAGES)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), generation=st.integers(1, 500), size=st.integers(2, 40))
def test_breeding_keeps_the_elite_first_the_size_and_valid_pruned_policies(
    seed: int, generation: int, size: int
) -> None:
    rng = np.random.default_rng(seed)
    population = [random_policy(rng) for _ in range(size)]
    fitness = rng.uniform(1, 100, size).tolist()
    children = breed(population, fitness, seed, generation)
    assert len(children) == size
    assert children[0].text() == population[best_index(fitness)].text()
    for c in children:
        assert parse_policy(c.text()) == c  # normalised: the text is the identity
        assert genetic.prune_policy(c) == c


def test_breeding_is_a_function_of_population_fitness_seed_and_generation() -> None:
    rng = np.random.default_rng(9)
    population: list[Policy] = [random_policy(rng) for _ in range(12)]
    fitness = rng.uniform(1, 10, 12).tolist()
    once = [c.text() for c in breed(population, fitness, 1, 4)]
    assert once == [c.text() for c in breed(population, fitness, 1, 4)]
    assert once != [c.text() for c in breed(population, fitness, 1, 5)]
