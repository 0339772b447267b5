"""argparse ``type=`` converters shared by the ``simcore`` subcommands.

Each rejects a bad value with a message that says what was expected, which
argparse turns into a one-line error and exit status 2.
"""

from __future__ import annotations

import argparse
import math


def finite_float(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {v!r}") from None
    if not math.isfinite(x):
        raise argparse.ArgumentTypeError(f"expected a finite number, got {v!r}")
    return x


def positive_float(v: str) -> float:
    x = finite_float(v)
    if x <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {v!r}")
    return x


def nonneg_seconds(v: str) -> float:
    try:
        x = float(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {v!r}") from None
    if not (math.isfinite(x) and x >= 0):
        raise argparse.ArgumentTypeError(f"expected a non-negative number of seconds, got {v!r}")
    return x


def _int_at_least(v: str, low: int, what: str) -> int:
    try:
        x = int(v)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a {what} integer, got {v!r}") from None
    if x < low:
        raise argparse.ArgumentTypeError(f"expected a {what} integer, got {v!r}")
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
    raise argparse.ArgumentTypeError(f"expected true or false, got {v!r}")
