"""Schedulers, found by name through one registry.

Each module in this package defines one scheduler class (a subclass of
:class:`simcore.schedulers.base.Scheduler`) decorated with
``@register("name")``.
"""

from __future__ import annotations

from typing import Any

from simcore.core.registry import Registry
from simcore.schedulers.base import Param, Scheduler

SCHEDULERS: Registry[type[Scheduler]] = Registry("scheduler", __name__)
register = SCHEDULERS.register


def create(name: str, **options: Any) -> Scheduler:
    """A new scheduler instance by registered name (raises UnknownNameError)."""
    return SCHEDULERS.get(name)(**options)


__all__ = ["SCHEDULERS", "Param", "Scheduler", "create", "register"]
