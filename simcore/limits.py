"""Bounds on what one input may ask of a machine, as documented settings.

Each bound is read from the environment when it is checked, so the command
line, the web platform and its workers apply the same value (README,
"Limits"). They protect a shared server from inputs that are valid in form
but would exhaust a worker: a cluster of a billion machines, or JSON nested
deeper than Python's parser can follow.
"""

from __future__ import annotations

import os

from simcore.errors import ParameterError

#: Default bound on the total machines of one cluster (preset or upload). A million
#: machines of two resources is about 100 MB of engine state and per-machine queues.
DEFAULT_MAX_MACHINES = 1_000_000

#: Default bound on the nesting depth of any JSON input (files, API bodies).
#: Our formats need at most 5 levels; Python's json parser fails near 1,000.
DEFAULT_MAX_JSON_DEPTH = 64


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise ParameterError(f"setting {name} must be a positive integer, got {raw!r}") from None
    if value <= 0:
        raise ParameterError(f"setting {name} must be a positive integer, got {raw!r}")
    return value


def max_machines() -> int:
    """``SIMCORE_MAX_MACHINES``: the most machines one cluster may have (default 1,000,000)."""
    return _env_int("SIMCORE_MAX_MACHINES", DEFAULT_MAX_MACHINES)


def max_json_depth() -> int:
    """``SIMCORE_MAX_JSON_DEPTH``: the deepest nesting of lists and objects any JSON input may have (default 64)."""
    return _env_int("SIMCORE_MAX_JSON_DEPTH", DEFAULT_MAX_JSON_DEPTH)
