"""Helpers shared by the library and dashboard tests."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

#: Extracts of real public cluster traces, beside the project (../shared/data, see its README);
#: SIMCORE_SHARED_DATA points elsewhere (a checkout that does not sit beside ../shared).
SHARED_DATA = Path(
    os.environ.get("SIMCORE_SHARED_DATA") or Path(__file__).resolve().parents[1].parent / "shared" / "data"
)


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
