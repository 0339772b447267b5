"""The search loop of section 3.3 and the explanations of section 3.5, with a stand-in fitness.

The stand-in scores a policy by how far it is from a fixed target policy, so
these tests need no simulation (the simulated fitness is tested in
test_explore_fitness.py).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

import pytest

from simcore.core.errors import ParameterError
from simcore.dse.explore.explain import explain, explanation_candidates
from simcore.dse.explore.fitness import Evaluation
from simcore.dse.explore.search import SearchSettings, converged, run_search, stop_reason
from simcore.dse.staged.policy import STAGES, parse_policy

TARGET = parse_policy("J1=Interactive J2=Always J3=Job-Size(asc) T1=Always T2=Task-Duration(asc) R5=Best-Fit")


def distance(text: str) -> float:
    """1 per stage whose first atom differs from the target's, 0.1 per extra composed atom."""
    p = parse_policy(text)
    return sum((p.stage(s)[0].text() != TARGET.stage(s)[0].text()) + 0.1 * (len(p.stage(s)) - 1) for s in STAGES)


class StandIn:
    """Evaluates by distance to TARGET and counts how often each policy was asked for."""

    def __init__(self) -> None:
        self.asked: Counter[str] = Counter()

    def __call__(self, texts: Sequence[str]) -> Mapping[str, Evaluation]:
        self.asked.update(texts)
        return {t: Evaluation(t, 10.0 + distance(t), 1.0, 1.0, 1.0, 10, 1, 0, 0.0) for t in texts}


def test_the_same_seed_gives_the_same_elite_sequence() -> None:
    a = run_search(SearchSettings("trt", 16, 60, seed=4), StandIn())
    b = run_search(SearchSettings("trt", 16, 60, seed=4), StandIn())
    assert a.elite_sequence() == b.elite_sequence()
    assert [g.individuals for g in a.generations] == [g.individuals for g in b.generations]


def test_another_seed_gives_another_search() -> None:
    a = run_search(SearchSettings("trt", 16, 5, seed=4), StandIn())
    b = run_search(SearchSettings("trt", 16, 5, seed=5), StandIn())
    assert a.generations[0].individuals != b.generations[0].individuals


def test_the_stand_in_search_finds_the_target() -> None:
    result = run_search(SearchSettings("trt", 32, 200, seed=1), StandIn())
    assert result.elite.elite_policy == TARGET.text()
    assert result.elite.elite_fitness == 10.0


def test_the_elite_never_gets_worse() -> None:
    result = run_search(SearchSettings("trt", 8, 80, seed=2), StandIn())
    fit = [g.elite_fitness for g in result.generations]
    assert all(b <= a for a, b in zip(fit, fit[1:], strict=False))
    # The elite is carried over first, so an unchanged elite sits at index 0 of the next generation.
    for prev, cur in zip(result.generations, result.generations[1:], strict=False):
        assert cur.individuals[0] == prev.elite_policy


def test_every_distinct_policy_is_evaluated_once() -> None:
    stand_in = StandIn()
    result = run_search(SearchSettings("trt", 16, 40, seed=3), stand_in)
    assert max(stand_in.asked.values()) == 1
    assert set(stand_in.asked) == set(result.evaluations)
    # Individuals repeat across and within generations; each was simulated once.
    assert sum(len(g.individuals) for g in result.generations) > len(result.evaluations)


def test_the_search_stops_at_the_generation_cap() -> None:
    result = run_search(SearchSettings("trt", 4, 3, seed=0), StandIn())
    assert len(result.generations) == 3 and result.stop == "generations"


def test_convergence_needs_thirty_generations() -> None:
    assert not converged([5.0] * 29)
    assert converged([5.0] * 30)


def test_convergence_compares_the_last_ten_with_the_last_thirty_within_a_hundredth_percent() -> None:
    # Twenty generations at 100.02, ten at 100: last-30 mean 100.01333, last-10 mean 100,
    # a difference of 0.0133% (not converged); at 100.01 it is 0.00667% (converged).
    assert not converged([100.02] * 20 + [100.0] * 10)
    assert converged([100.01] * 20 + [100.0] * 10)


def test_a_converged_search_stops_with_its_reason() -> None:
    s = SearchSettings("trt", 4, 500, 0)
    assert stop_reason(s, [7.0] * 30) == "converged"
    assert stop_reason(s, [float(100 - i) for i in range(40)]) is None


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("metric", "latency", "metric must be one of trt, jms, njsl, jwt"),
        ("population", 1, "population must be a whole number from 2"),
        ("generations", 0, "generations must be a whole number from 1"),
        ("seed", -1, "seed must be a non-negative integer"),
    ],
)
def test_bad_settings_are_refused_by_name(field: str, value: object, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        SearchSettings(**{field: value}).check()  # type: ignore[arg-type]


BEFORE = "J1=Interactive J2=Always J3=Submission-Time(asc) T1=Always T2=Submission-Time(asc) R5=First-Fit"
AFTER = "J1=Interactive J2=Always J3=Job-Size(asc) T1=Always T2=Task-Duration(asc) R5=First-Fit"


def test_each_changed_stage_is_applied_alone_to_the_previous_elite() -> None:
    assert explanation_candidates(BEFORE, AFTER) == [
        ("J3", BEFORE.replace("J3=Submission-Time(asc)", "J3=Job-Size(asc)")),
        ("T2", BEFORE.replace("T2=Submission-Time(asc)", "T2=Task-Duration(asc)")),
    ]


def test_a_change_within_ten_percent_of_the_new_elite_explains_the_gain() -> None:
    (_, j3), (_, t2) = explanation_candidates(BEFORE, AFTER)
    # New elite 100; T2 alone gives 109.9 (within 10%), J3 alone 180 (not).
    e = explain(4, BEFORE, 200.0, AFTER, 100.0, {j3: 180.0, t2: 109.9})
    assert e.explained_by == ["T2"]
    assert "T2 Submission-Time(asc) -> Task-Duration(asc)" in e.text() and "explains the gain" in e.text()


def test_when_no_single_change_explains_the_gain_several_changes_made_it() -> None:
    (_, j3), (_, t2) = explanation_candidates(BEFORE, AFTER)
    e = explain(4, BEFORE, 200.0, AFTER, 100.0, {j3: 180.0, t2: 110.5})
    assert e.explained_by == []
    assert e.text().startswith("several changes together made the gain")


def test_an_explanation_round_trips_through_its_dict() -> None:
    (_, j3), (_, t2) = explanation_candidates(BEFORE, AFTER)
    e = explain(4, BEFORE, 200.0, AFTER, 100.0, {j3: 180.0, t2: 105.0})
    assert type(e).from_dict(e.to_dict()) == e


def test_the_search_records_an_explanation_whenever_the_elite_changes() -> None:
    result = run_search(SearchSettings("trt", 16, 60, seed=6), StandIn())
    for prev, cur in zip(result.generations, result.generations[1:], strict=False):
        assert (cur.explanation is not None) == (cur.elite_policy != prev.elite_policy)
        if cur.explanation is not None:
            assert {c.stage for c in cur.explanation.changes} == {
                s for s in STAGES if parse_policy(prev.elite_policy).stage(s) != parse_policy(cur.elite_policy).stage(s)
            }
