"""argparse ``type=`` converters: :mod:`simcore.convert`'s, with their messages kept.

argparse shows the message of an ``ArgumentTypeError`` as it is (other
ValueErrors become a generic "invalid value"), so each converter's
:class:`~simcore.convert.BadValue` is re-raised as one.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable
from typing import TypeVar

from simcore import convert

T = TypeVar("T")


def argtype(f: Callable[[str], T]) -> Callable[[str], T]:
    """``f`` as an argparse ``type=``: its BadValue messages shown as they are."""

    @functools.wraps(f)
    def wrapped(v: str) -> T:
        try:
            return f(v)
        except convert.BadValue as e:
            raise argparse.ArgumentTypeError(str(e)) from None

    return wrapped


finite_float = argtype(convert.finite_float)
positive_float = argtype(convert.positive_float)
nonneg_seconds = argtype(convert.nonneg_seconds)
nonneg_int = argtype(convert.nonneg_int)
positive_int = argtype(convert.positive_int)
boolean = argtype(convert.boolean)

__all__ = [
    "argtype",
    "boolean",
    "finite_float",
    "nonneg_int",
    "nonneg_seconds",
    "positive_float",
    "positive_int",
]
