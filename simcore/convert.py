"""Text-to-value converters shared by the command line and the sweep grammar.

Each rejects a bad value with :class:`BadValue`, whose message says what was
expected; the command line turns it into argparse's one-line error and exit
status 2 (:mod:`simcore.cli.argtypes`), the sweep grammar into a
ParameterError naming the ``--vary`` axis.
"""

from __future__ import annotations

import math


class BadValue(ValueError):
    """A value that does not convert; the message says what was expected."""


def finite_float(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise BadValue(f"expected a number, got {v!r}") from None
    if not math.isfinite(x):
        raise BadValue(f"expected a finite number, got {v!r}")
    return x


def positive_float(v: str) -> float:
    x = finite_float(v)
    if x <= 0:
        raise BadValue(f"expected a positive number, got {v!r}")
    return x


def nonneg_seconds(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise BadValue(f"expected a number of seconds, got {v!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise BadValue(f"expected a non-negative number of seconds, got {v!r}")
    return x


def _int_at_least(v: str, low: int, what: str) -> int:
    try:
        x = int(v)
    except ValueError:
        raise BadValue(f"expected a {what} integer, got {v!r}") from None
    if x < low:
        raise BadValue(f"expected a {what} integer, got {v!r}")
    return x


def nonneg_int(v: str) -> int:
    return _int_at_least(v, 0, "non-negative")


def positive_int(v: str) -> int:
    return _int_at_least(v, 1, "positive")


def boolean(v: str) -> bool:
    if v.lower() in ("1", "true", "yes", "on"):
        return True
    if v.lower() in ("0", "false", "no", "off"):
        return False
    raise BadValue(f"expected true or false, got {v!r}")
