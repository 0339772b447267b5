"""The code version recorded with every result, so a figure can be reproduced."""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path

__version__ = "0.1.0"


@functools.cache
def code_version() -> str:
    """``<package version>+g<commit>`` when run from a git checkout, else the package version.

    ``SIMCORE_CODE_VERSION`` overrides it (set by deployments built without .git).
    """
    env = os.environ.get("SIMCORE_CODE_VERSION")
    if env:
        return env
    root = Path(__file__).resolve().parent.parent
    try:
        sha = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--short=12", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no", "--", "simcore"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{'.dirty' if dirty else ''}" if sha else __version__
