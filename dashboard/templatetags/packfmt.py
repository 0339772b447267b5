"""Plain numbers on packing pages: ``{{ x|plain }}`` (86,400, never 8.64e+04) and ``{{ t|duration }}``."""

from __future__ import annotations

from typing import Any

from django import template

from dashboard.packing import reading

register = template.Library()


@register.filter
def plain(value: Any) -> str:
    return reading.plain(value)


@register.filter
def duration(value: Any) -> str:
    return reading.duration(value)
