"""The policy text of staged schedulers: reading, writing back, errors, and the search's operators on it."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core.errors import ParameterError
from simcore.dse.staged.policy import (
    ATOMS,
    DEFAULT_TEXT,
    STAGES,
    Atom,
    atoms_of,
    format_policy,
    parse_policy,
    prune,
    random_policy,
)

EXAMPLE = (
    "J1=Interactive J2=Limit-Active(100) J3=Job-Size(asc).Submission-Time(asc) T1=Always "
    "T2=Task-Duration(asc) R5=Best-Fit"
)


def test_the_issues_example_reads_and_writes_back_unchanged() -> None:
    assert format_policy(parse_policy(EXAMPLE)) == EXAMPLE


def test_it_reads_a_composition_in_order() -> None:
    p = parse_policy(EXAMPLE)
    assert [a.name for a in p.J3] == ["Job-Size", "Submission-Time"]
    assert p.J2 == (Atom("J2", "Limit-Active", (100,), None),)


def test_missing_stages_take_the_default_and_names_are_case_insensitive() -> None:
    p = parse_policy("t2=task-duration(DESC)")
    assert p.T2 == (Atom("T2", "Task-Duration", (), "desc"),)
    assert format_policy(p) == DEFAULT_TEXT.replace("T2=Submission-Time(asc)", "T2=Task-Duration(desc)")


def test_an_ordering_atom_without_direction_is_ascending() -> None:
    assert parse_policy("J3=Job-Size").J3[0].direction == "asc"


def test_numbers_keep_their_decimals_and_integers_stay_integers() -> None:
    p = parse_policy("J1=Batch(30) T1=Job-Balance(1.25).Limit-Job(4)")
    assert p.J1[0].args == (30.0,)
    assert p.T1[1].args == (4,) and isinstance(p.T1[1].args[0], int)
    assert "T1=Job-Balance(1.25).Limit-Job(4)" in p.text()
    assert "J1=Batch(30)" in p.text()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("T3=Always", "unknown stage 'T3'; stages: J1, J2, J3, T1, T2, R5"),
        ("R5=Tightest", "unknown atom 'Tightest' for stage R5; valid atoms: First-Fit, Best-Fit, Worst-Fit"),
        ("J2=Limit-Active", r"Limit-Active takes 1 argument\(s\) \(n\), got 0"),
        ("J2=Limit-Active(2.5)", "n must be a whole number, got 2.5"),
        ("J2=Limit-Active(0)", "n must be between 1 and 1000, got 0"),
        ("J2=Random(x)", "Random's p must be a number, got 'x'"),
        ("R5=Best-Fit(3)", "Best-Fit takes no numeric argument, got '3'"),
        ("J1=Interactive.Batch(5)", r"stage J1 cannot compose atoms \(Table 4\)"),
        ("T2=Random T2=Random", "stage T2 is given twice"),
        ("Always", "'Always' is not STAGE=ATOM"),
        ("J1=Batch(nan)", "q must be a finite number"),
    ],
)
def test_bad_text_is_refused_naming_what_and_where(text: str, message: str) -> None:
    with pytest.raises(ParameterError, match=message):
        parse_policy(text)


def test_every_stage_has_the_papers_atoms() -> None:
    counts = {s: len(atoms_of(s)) for s in STAGES}
    # Tables 1-3: J1 3, J2 4, J3 4, T1 6, T2 8, R5 6 (31 atoms: "over 30").
    assert counts == {"J1": 3, "J2": 4, "J3": 4, "T1": 6, "T2": 8, "R5": 6}
    assert len(ATOMS) == 31


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_random_policies_read_back_as_themselves(seed: int) -> None:
    p = random_policy(np.random.default_rng(seed))
    assert parse_policy(p.text()) == parse_policy(parse_policy(p.text()).text())
    assert format_policy(parse_policy(p.text())) == p.text()


def test_pruning_drops_a_repeated_criterion_and_anything_after_a_total_order() -> None:
    a = parse_policy("T2=Task-Duration(asc).Task-Duration(desc).Random.Job-Completion(asc)").T2
    assert [x.text() for x in prune("T2", a)] == ["Task-Duration(asc)", "Random"]
    r = parse_policy("R5=Best-Fit.First-Fit.Expensive").R5
    assert [x.text() for x in prune("R5", r)] == ["Best-Fit"]  # ties go to the lowest number anyway


def test_pruning_drops_an_r5_atom_on_a_criterion_already_used_in_the_other_direction() -> None:
    r = parse_policy("R5=Best-Fit.Worst-Fit.Cheap.Expensive.Random").R5
    assert [x.text() for x in prune("R5", r)] == ["Best-Fit", "Cheap", "Random"]


def test_pruning_drops_always_from_a_composed_admission_and_keeps_distinct_limits() -> None:
    a = parse_policy("T1=Always.Limit-Job(3).Limit-Job(5).Limit-Job(3)").T1
    assert [x.text() for x in prune("T1", a)] == ["Limit-Job(3)", "Limit-Job(5)"]
    assert [x.text() for x in prune("J2", parse_policy("J2=Always").J2)] == ["Always"]
