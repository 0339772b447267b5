"""Explainability (section 3.5): which change of the elite made it better.

After each generation the elite is compared with the previous generation's.
Every stage whose policy changed is applied *alone* to the previous elite and
that scheduler is simulated; a change whose fitness is within 10% of the new
elite's fitness explains the gain and is reported. When no single change
does, several changes together made it (the paper's section 5.4 explains why
it does not search combinations: their number explodes).

"Within 10%" is ``|f(change) - f(elite)| <= 0.1 * |f(elite)|``, relative to
the new elite's fitness as the paper words it. A change of a single stage is
the new elite itself; it explains its gain by construction (and costs no
simulation: the search's cache holds it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simcore.dse.staged.policy import STAGES, Policy, parse_policy

__all__ = ["EXPLAIN_TOLERANCE", "Explanation", "StageChange", "changed_stages", "explain", "explanation_candidates"]

#: A single change explains the gain when its fitness is within this fraction of the new elite's.
EXPLAIN_TOLERANCE = 0.10


def _stage_text(policy: Policy, stage: str) -> str:
    return ".".join(a.text() for a in policy.stage(stage))


def changed_stages(before: Policy, after: Policy) -> list[str]:
    """The stages whose chromosome differs, in stage order."""
    return [s for s in STAGES if _stage_text(before, s) != _stage_text(after, s)]


def explanation_candidates(before: str, after: str) -> list[tuple[str, str]]:
    """``(stage, policy text)`` per changed stage: the previous elite with that one stage of the new elite."""
    b, a = parse_policy(before), parse_policy(after)
    return [(s, b.replace(s, a.stage(s)).text()) for s in changed_stages(b, a)]


@dataclass(frozen=True)
class StageChange:
    """One changed stage applied alone to the previous elite, and what that scheduler scored."""

    stage: str
    before: str
    after: str
    policy: str
    fitness: float
    explains: bool

    def to_dict(self) -> dict[str, Any]:
        return {
            "stage": self.stage,
            "before": self.before,
            "after": self.after,
            "policy": self.policy,
            "fitness": self.fitness,
            "explains": self.explains,
        }


@dataclass(frozen=True)
class Explanation:
    """Why generation ``generation``'s elite beat the previous one."""

    generation: int
    previous: str
    previous_fitness: float
    elite: str
    fitness: float
    changes: tuple[StageChange, ...]

    @property
    def explained_by(self) -> list[str]:
        """The stages whose change alone explains the gain (may be empty)."""
        return [c.stage for c in self.changes if c.explains]

    def text(self) -> str:
        """One sentence for progress lines and pages."""
        by = [c for c in self.changes if c.explains]
        if by:
            parts = [f"{c.stage} {c.before} -> {c.after} (alone: {c.fitness:.6g})" for c in by]
            return f"{'; '.join(parts)} explains the gain ({self.previous_fitness:.6g} -> {self.fitness:.6g})"
        stages = ", ".join(c.stage for c in self.changes)
        return (
            f"several changes together made the gain ({self.previous_fitness:.6g} -> {self.fitness:.6g}): "
            f"no single change of {stages} comes within {EXPLAIN_TOLERANCE:.0%} alone"
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "generation": self.generation,
            "previous": self.previous,
            "previous_fitness": self.previous_fitness,
            "elite": self.elite,
            "fitness": self.fitness,
            "changes": [c.to_dict() for c in self.changes],
            "explained_by": self.explained_by,
            "text": self.text(),
        }

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Explanation:
        return cls(
            generation=int(d["generation"]),
            previous=str(d["previous"]),
            previous_fitness=float(d["previous_fitness"]),
            elite=str(d["elite"]),
            fitness=float(d["fitness"]),
            changes=tuple(
                StageChange(
                    str(c["stage"]),
                    str(c["before"]),
                    str(c["after"]),
                    str(c["policy"]),
                    float(c["fitness"]),
                    bool(c["explains"]),
                )
                for c in d["changes"]
            ),
        )


def explain(
    generation: int,
    previous: str,
    previous_fitness: float,
    elite: str,
    fitness: float,
    candidate_fitness: Mapping[str, float],
) -> Explanation:
    """The explanation of a change of elite; ``candidate_fitness`` maps each candidate's policy text to its fitness.

    The candidates are :func:`explanation_candidates` of ``previous`` and ``elite``.
    """
    b, a = parse_policy(previous), parse_policy(elite)
    changes = []
    for stage, text in explanation_candidates(previous, elite):
        f = float(candidate_fitness[text])
        ok = abs(f - fitness) <= EXPLAIN_TOLERANCE * abs(fitness)
        changes.append(StageChange(stage, _stage_text(b, stage), _stage_text(a, stage), text, f, ok))
    return Explanation(generation, previous, float(previous_fitness), elite, float(fitness), tuple(changes))
