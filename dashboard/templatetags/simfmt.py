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


#: The summary table's number columns after scheduler and seed, in order (dashboard/_summary.html's header).
SUMMARY_NUMBERS = ("mean_response_s", "p50_response_s", "p90_response_s", "p99_response_s", "mean_completion_s")
RUN_DOWNLOADS = (
    ("jobs.csv", "jobs.csv"),
    ("jobs.parquet", ".parquet"),
    ("summary.json", "summary.json"),
    ("summary.csv", ".csv"),
    ("series.json", "series.json"),
    ("series.csv", ".csv"),
)


@register.simple_tag
def summary_rows(runs: Any, show_experiment: Any = False, sweep: Any = None, one_version: Any = False) -> SafeString:
    """The rows of dashboard/_summary.html, one per finished run.

    Written here, not as a template loop: a grid's page has a row per cell (90 and more), and the template
    engine spent a quarter of that page's server time on them (issue 25); this gives the same cells.
    """
    out = []
    for r in runs:
        s = r.result.summary or {}
        cells = []
        if show_experiment:
            exp = r.experiment
            cells.append(
                format_html(
                    '<td class="name"><a href="{}">#{} {}</a></td>', exp.get_absolute_url(), r.experiment_id, exp.title
                )
            )
        if sweep:
            cells.append(format_html("<td>{}</td>", getattr(r, "point_label", "")))
        cells.append(format_html("<td>{}</td><td>{}</td><td>{}</td>", r.scheduler, r.seed, num(s.get("jobs"))))
        cells += [format_html("<td>{}</td>", num(s.get(k))) for k in SUMMARY_NUMBERS]
        cells.append(format_html("<td>{}</td>", num(s.get("max_queue_len"))))
        util = s.get("utilization") or {}
        cells.append(
            format_html(
                "<td>{}</td>",
                mark_safe(", ".join(format_html("{} {}", res, pct(u)) for res, u in util.items())),
            )
        )
        stable = bool(s.get("stable"))
        cells.append(
            format_html('<td class="{}">{}</td>', "ok" if stable else "bad", "stable" if stable else "growing queue")
        )
        cells.append(
            format_html(
                "<td>{}</td><td>{}</td><td>{}</td>", num(s.get("lambda_star")), num(s.get("arrival_rate")), ratio(s)
            )
        )
        if not one_version:
            cells.append(format_html("<td><code>{}</code></td>", r.code_version))
        prefix = getattr(r, "dl_prefix", "")
        links = " ".join(format_html('<a href="{}{}">{}</a>', prefix, f, label) for f, label in RUN_DOWNLOADS)
        cells.append(format_html('<td class="dl">{}</td>', mark_safe(links)))
        out.append(format_html('<tr class="run-row" data-run="{}">{}</tr>', r.pk, mark_safe("".join(cells))))
    return mark_safe("\n".join(out))
