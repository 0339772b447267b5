"""Helpers shared by the library and dashboard tests."""

from __future__ import annotations

import os
import re
from functools import cache
from pathlib import Path

import numpy as np
import pytest

#: Extracts of real public cluster traces, beside the project (../shared/data, see its README);
#: SIMCORE_SHARED_DATA points elsewhere (a checkout that does not sit beside ../shared).
SHARED_DATA = Path(
    os.environ.get("SIMCORE_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data"
)


#: What marks a dashboard test as one of those that run together in one process: it starts or needs worker
#: processes, servers, a browser or the broker's queues, or times them (by fixture, or by what its file uses).
_TOGETHER_FIXTURES = frozenset({"celery_worker", "live_server", "own_queue", "transactional_db", "browser_page"})
_TOGETHER_WORDS = re.compile(
    r"subprocess|Worker\(|chromium|servers|fault_table|celery|live_server|own_queue|wait_for|transaction=True|browser"
)


@cache
def _file_needs_the_shared_process(path: Path) -> bool:
    return _TOGETHER_WORDS.search(path.read_text()) is not None


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """How ``make test`` shares the tests between its two processes (pytest-xdist, ``--dist loadgroup``).

    The dashboard's tests that start Celery workers, brokers, databases, servers or a browser, or use the
    session's worker or the broker's queues, stay together, one after another in one process, as they ran
    before: they share one test database and the session's worker, time heartbeats and recoveries, and a
    worker's repair of one process's database must never see another's. Every other test (the library's,
    the documentation's, and the dashboard's that only call views and services in the test process) runs
    a file at a time in either process (a file's module fixtures, such as the built documentation site,
    are made once). Without ``-n`` the marks change nothing.
    """
    for item in items:
        parts = item.path.relative_to(Path(__file__).parent).parts
        together = parts[0] == "dashboard" and (
            bool(_TOGETHER_FIXTURES & set(getattr(item, "fixturenames", ())))
            or _file_needs_the_shared_process(item.path)
        )
        item.add_marker(pytest.mark.xdist_group("dashboard" if together else "/".join(parts)))


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
