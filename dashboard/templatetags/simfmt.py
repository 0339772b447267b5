"""Number formatting for result tables."""

from __future__ import annotations

import json
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

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


@register.filter
def json_data(value: Any, element_id: str) -> SafeString:
    """Like Django's ``json_script``, with compact separators and a fast escape (the charts' JSON is 200 KB).

    ``<``, ``>`` and ``&`` become JSON unicode escapes, so the text can never
    close the script element; the browser never executes it (type JSON), and
    the page's script reads it with ``JSON.parse``.
    """
    text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    text = text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e")
    return format_html('<script id="{}" type="application/json">{}</script>', element_id, mark_safe(text))
