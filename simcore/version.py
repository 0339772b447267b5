"""The code version recorded with every result, so a figure can be reproduced."""

from __future__ import annotations

import functools
import hashlib
import os
import subprocess
from pathlib import Path

__version__ = "0.1.0"


@functools.cache
def code_version() -> str:
    """``<package version>+g<commit>`` when run from a git checkout, else the package version.

    With uncommitted changes to ``simcore/`` (tracked or new files) the version ends in
    ``.dirty<hash>``, a hash of those changes: two different edits of one commit are two versions,
    so a result cached under one (the dashboard's result cache) is never reused under the other.
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
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=all", "--", "simcore"],
            capture_output=True,
            text=True,
            timeout=5,
            check=True,
        ).stdout.strip()
        suffix = f".dirty{_changes_hash(root, dirty)}" if dirty else ""
    except (OSError, subprocess.SubprocessError):
        return __version__
    return f"{__version__}+g{sha}{suffix}" if sha else __version__


def _changes_hash(root: Path, status: str) -> str:
    """12 hex digits of a hash of the uncommitted changes under simcore/: the diff and every new file."""
    h = hashlib.sha256()
    h.update(
        subprocess.run(
            ["git", "-C", str(root), "diff", "HEAD", "--binary", "--", "simcore"],
            capture_output=True,
            timeout=10,
            check=True,
        ).stdout
    )
    for line in sorted(status.splitlines()):
        if line.startswith("??"):
            path = root / line[3:].strip()
            h.update(line.encode())
            if path.is_file():
                h.update(path.read_bytes())
    return h.hexdigest()[:12]
