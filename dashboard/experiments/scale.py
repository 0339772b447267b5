"""Will a scenario's scale show the schedulers differ? The form's check before a run and the result page's after.

The judging is :mod:`simcore.scalecheck` (pure computation); this module only picks what it reads: a
scenario of presets before (uploaded files are not read for a preview), the finished runs' summaries after.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from dashboard.common.models import Status
from dashboard.experiments.models import Run
from simcore import scalecheck
from simcore.core.errors import SimcoreError


def before(scenario: Mapping[str, Any]) -> list[str] | None:
    """Warnings about a checked scenario (``check_scenario``'s output) before it runs: [] when none, None when
    it names an uploaded file (not read for a preview: the result page judges its runs)."""
    if "preset" not in scenario["cluster"] or "preset" not in scenario["workload"]:
        return None
    try:
        return scalecheck.warnings_before(scalecheck.expect_scenario(scenario))
    except SimcoreError as e:  # e.g. a window so short that the workload draws no job: that is the warning
        return [f"{str(e)[:1].upper()}{str(e)[1:]}."]


def after(runs: Iterable[Run]) -> list[str]:
    """Warnings from the finished runs' summaries (the result page's)."""
    return scalecheck.warnings_after(
        r.result.summary for r in runs if r.status == Status.FINISHED and getattr(r, "result", None) is not None
    )
