"""What the commands share for bad use: one error type and the ``--out`` file check."""

from __future__ import annotations

import os

from simcore.core.errors import SimcoreError


class UsageError(SimcoreError):
    """A bad combination of options (exit status 2, one line)."""


def check_out_file(path: str, command: str = "sweep") -> None:
    """Refuse an ``--out`` file that could not be written, before any work is done."""
    if os.path.isdir(path):
        raise UsageError(f"--out {path!r} is a directory; {command} writes one CSV file")
    parent = os.path.dirname(path) or "."
    if not os.path.isdir(parent):
        raise UsageError(f"--out {path!r}: directory {parent!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise UsageError(f"--out {path!r}: directory {parent!r} is not writable")
