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


@register.filter
def span(value: Any, digits: int = 4) -> str:
    """A (lowest, highest) pair as one number when they agree, else 'lowest to highest'."""
    if not value:
        return "-"
    lo, hi = value
    a, b = num(lo, digits), num(hi, digits)
    return a if a == b else f"{a} to {b}"


@register.filter
def ratio(summary: Any) -> str:
    """A run's arrival rate over its lambda* (the load actually simulated); '-' when either is missing."""
    if not isinstance(summary, dict):
        return "-"
    a, lam = summary.get("arrival_rate"), summary.get("lambda_star")
    if not isinstance(a, (int, float)) or not isinstance(lam, (int, float)) or lam <= 0:
        return "-"
    return f"{a / lam:.3g}"
