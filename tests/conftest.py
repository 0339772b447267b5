"""Helpers shared by the library and dashboard tests."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

#: Extracts of real public cluster traces, beside the project (../shared/data, see its README);
#: SIMCORE_SHARED_DATA points elsewhere (a checkout that does not sit beside ../shared).
SHARED_DATA = Path(
    os.environ.get("SIMCORE_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data"
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How ``make test`` shares the tests between its two processes (pytest-xdist, ``--dist loadgroup``).

    The dashboard's tests stay together, one after another in one process, as they ran before: many start
    Celery workers, brokers and databases of their own and time heartbeats and recoveries, and they share one
    test database and the session's worker. The library's and the documentation's tests run in the other
    process, a file at a time (a file's module fixtures, such as the built documentation site, are made once).
    Without ``-n`` the marks change nothing.
    """
    for item in items:
        parts = item.path.relative_to(Path(__file__).parent).parts
        item.add_marker(pytest.mark.xdist_group("dashboard" if parts[0] == "dashboard" else "/".join(parts)))


def shared_data(*parts: str) -> Path:
    """A file of the shared trace extracts; skipped when it is missing, but a failure under CI=true.

    CI has the extracts, so a missing file there means a broken checkout, not an optional test.
    """
    path = SHARED_DATA.joinpath(*parts)
    if not path.exists():
        message = f"the shared trace extract is not at {path}"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(message + " (CI=true: the extracts must be present)")
        pytest.skip(message)
    return path


class NoClass0OnConfig0:
    """A last-class runtime: class 0 cannot run on configuration 0 (infinite time); else 1 s warm, 2 s cold.

    Shared by the Tetris and LoTES tests of jobs that cannot run everywhere.
    """

    def __init__(self, job_class: np.ndarray) -> None:
        self.cls = job_class.tolist()

    def duration(self, job: int, config: int, last_class: int) -> float:
        k = self.cls[job]
        if k == 0 and config == 0:
            return float("inf")
        return 1.0 if last_class == k else 2.0
