"""Fixtures of the library's tests: the engine a behaviour test runs on.

The default engine is the compiled one, so a behaviour test that builds a ``Simulation``
without naming an engine tests the kernel, not the specification it describes (issue 27:
changing LoTES's roulette in the specification passed every LoTES dispatch test). Tests of a
scheduler's behaviour take the ``engine`` fixture and run on both engines; :func:`expect_engine`
checks that the run really used the engine asked for (a run the compiled engine cannot serve
falls back to Python, which would make the "compiled" case a second Python run).
"""

from __future__ import annotations

import pytest

from simcore.core.engine import SimResult

#: The specification first: a failure there names the rule, a failure only on "compiled" the kernel.
ENGINES = ("python", "compiled")


@pytest.fixture(params=ENGINES, scope="module")
def engine(request: pytest.FixtureRequest) -> str:
    """Each engine in turn (module scope: Hypothesis tests may take it, and each kernel compiles once)."""
    return str(request.param)


def expect_engine(res: SimResult, engine: str) -> SimResult:
    """``res`` after checking that it ran on ``engine`` (not on a fallback); for chaining."""
    used = res.extra.get("engine")
    assert used == engine, f"asked for the {engine} engine, ran {used}: {res.extra.get('engine_note')}"
    return res
