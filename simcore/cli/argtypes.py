"""argparse ``type=`` converters: :mod:`simcore.convert`'s, with their messages kept.

argparse shows the message of an ``ArgumentTypeError`` as it is (other
ValueErrors become a generic "invalid value"), so each converter's
:class:`~simcore.convert.BadValue` is re-raised as one.
"""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, TypeVar

from simcore import convert
from simcore.core import limits
from simcore.core.errors import ParameterError

if TYPE_CHECKING:
    from simcore.schedulers.base import Param

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


def _bounded(check: Callable[[int, None], int]) -> Callable[[str], int]:
    """A non-negative integer held to one of :mod:`simcore.core.limits`' bounds (the platform's too)."""

    def f(v: str) -> int:
        try:
            return check(convert.nonneg_int(v), None)
        except ParameterError as e:
            raise convert.BadValue(str(e)) from None

    return argtype(f)


#: 0 to 2^32-1, as the API and forms take seeds.
seed_int = _bounded(limits.check_seed)
#: 1 to ``limits.MAX_TRIALS``, as a packing analysis on the platform.
trials_int = _bounded(limits.check_trials)

__all__ = [
    "argtype",
    "boolean",
    "finite_float",
    "nonneg_int",
    "nonneg_seconds",
    "positive_float",
    "positive_int",
    "seed_int",
    "trials_int",
]


def add_param_options(p: argparse.ArgumentParser, title: str, params: Mapping[str, Param]) -> None:
    """One ``--name`` option per preset or scheduler parameter (``dest`` ``param_<name>``, default None: unset),
    converted and checked as `simcore sweep` converts its axes; the run, explore and capacity commands share it."""
    from simcore import sweep  # the sweep package imports the presets; the converters above stay light

    group = p.add_argument_group(title)
    for name, prm in sorted(params.items()):
        group.add_argument(
            f"--{name.replace('_', '-')}",
            dest=f"param_{name}",
            type=argtype(sweep.param_converter(prm)),
            default=None,
            help=f"{prm.help} (default {prm.default})",
        )
