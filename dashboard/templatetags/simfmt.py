"""Number formatting for result tables."""

from __future__ import annotations

from typing import Any

from django import template

register = template.Library()


@register.filter
def num(value: Any, digits: int = 4) -> str:
    """A float with ``digits`` significant digits; '-' for missing values."""
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    try:
        return f"{float(value):.{int(digits)}g}"
    except (TypeError, ValueError):
        return str(value)


@register.filter
def pct(value: Any) -> str:
    if value is None:
        return "-"
    return f"{100 * float(value):.1f}%"


@register.filter
def get(mapping: Any, key: str) -> Any:
    if isinstance(mapping, dict):
        return mapping.get(key)
    return None
