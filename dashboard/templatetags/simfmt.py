"""Number formatting for result tables, and the rows of the two tables a grid's page repeats per cell."""

from __future__ import annotations

import html
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


def not_started(summary: dict[str, Any]) -> str:
    """The summary cell of jobs that never started (escaped): their count and, when there are any, the lower
    bound on every arrived job's mean wait that counts them as waiting until the run's end
    (``mean_response_lower_s``)."""
    n = summary.get("queued_at_end")
    bound = summary.get("mean_response_lower_s")
    if not n or bound is None:
        return _esc(num(n))
    return f"{_esc(num(n))} <small>(mean wait &ge; {_esc(num(bound))} s)</small>"


@register.simple_tag
def summary_rows(runs: Any, show_experiment: Any = False, sweep: Any = None, one_version: Any = False) -> SafeString:
    """The rows of dashboard/_summary.html, one per finished run, every value escaped.

    Written here, not as a template loop: a grid's page has a row per cell (90 and more), and the template
    engine (or format_html, whose lazy-string checks cost as much) took a quarter of that page's server
    time over them (issue 25). The standard library's escape gives the same cells in a tenth of it.
    """
    out = []
    for r in runs:
        s = r.result.summary or {}
        cells = []
        if show_experiment:
            exp = r.experiment
            url, title = _esc(exp.get_absolute_url()), _esc(exp.title)
            cells.append(f'<td class="name"><a href="{url}">#{r.experiment_id} {title}</a></td>')
        if sweep:
            cells.append(f"<td>{_esc(getattr(r, 'point_label', ''))}</td>")
        cells.append(f"<td>{_esc(r.scheduler)}</td><td>{r.seed}</td><td>{_esc(num(s.get('jobs')))}</td>")
        cells += [f"<td>{_esc(num(s.get(k)))}</td>" for k in SUMMARY_NUMBERS]
        cells.append(f"<td>{not_started(s)}</td>")
        cells.append(f"<td>{_esc(num(s.get('max_queue_len')))}</td>")
        util = ", ".join(f"{_esc(res)} {_esc(pct(u))}" for res, u in (s.get("utilization") or {}).items())
        cells.append(f"<td>{util}</td>")
        ok = bool(s.get("stable"))
        cells.append(f'<td class="{"ok" if ok else "bad"}">{"stable" if ok else "growing queue"}</td>')
        cells += [f"<td>{_esc(v)}</td>" for v in (num(s.get("lambda_star")), num(s.get("arrival_rate")), ratio(s))]
        if not one_version:
            cells.append(f"<td><code>{_esc(r.code_version)}</code></td>")
        prefix = _esc(getattr(r, "dl_prefix", ""))
        links = " ".join(f'<a href="{prefix}{f}">{label}</a>' for f, label in RUN_DOWNLOADS)
        cells.append(f'<td class="dl">{links}</td>')
        out.append(f'<tr class="run-row" data-run="{r.pk}">{"".join(cells)}</tr>')
    return mark_safe("\n".join(out))  # every value above went through _esc


def _esc(value: Any) -> str:
    """Django's ``escape`` (the same ``&<>"'`` entities) without its lazy-string wrapper."""
    return html.escape(str(value))


@register.simple_tag(takes_context=True)
def run_rows(context: Any, runs: Any) -> SafeString:
    """The experiment page's runs table: four rows per run (the run, what it waits for, lost attempts, error).

    Written here for the reason :func:`summary_rows` is: a grid's page has a row per cell. The context gives
    ``sweep``, ``can_cancel``, ``can_share``, ``shared`` and the CSRF token, as the template read them.
    """
    from django.template.defaultfilters import floatformat
    from django.urls import reverse
    from django.utils.formats import localize

    sweep, can_cancel, can_share, shared = (context.get(k) for k in ("sweep", "can_cancel", "can_share", "shared"))
    token = context.get("csrf_token")
    csrf = (
        f'<input type="hidden" name="csrfmiddlewaretoken" value="{_esc(token)}">'
        if token and token != "NOTPROVIDED"
        else ""
    )
    packing_new = _esc(reverse("packing-new"))
    span = "8" if sweep else "7"
    out = []
    for r in runs:
        pk, status, active = r.pk, _esc(r.status), r.is_active
        point = f"<td>{_esc(getattr(r, 'point_label', ''))}</td>" if sweep else ""
        eta = f"{floatformat(r.eta_s, 0)} s" if active and r.eta_s is not None else ""
        actions = ""
        if can_cancel and active:
            url = _esc(reverse("run-cancel", args=[pk]))
            actions += (
                f'<form method="post" action="{url}" class="inline run-cancel">{csrf}'
                '<button class="small">Cancel</button></form>'
            )
        if can_share and r.status in ("failed", "cancelled"):
            url = _esc(reverse("run-retry", args=[pk]))
            actions += (
                f'<form method="post" action="{url}" class="inline">{csrf}'
                f'<button class="small retry" id="retry-{pk}">Retry</button></form>'
            )
        if not shared and r.status == "finished":
            actions += f'<a class="small" id="packing-run-{pk}" href="{packing_new}?run={pk}">packing analysis</a>'
        out.append(
            f'<tr id="run-{pk}" data-run="{pk}">{point}<td>{_esc(r.scheduler)}</td><td>{r.seed}</td>'
            f'<td class="run-status"><span class="status {status}">{status}</span></td>'
            f'<td><progress max="1" value="{_esc(localize(r.fraction))}"></progress> '
            f'<span class="pct">{_esc(pct(r.fraction))}</span></td>'
            f'<td class="jobs">{_esc(num(r.jobs_done))} / {_esc(num(r.jobs_total))}</td>'
            f'<td class="eta">{eta}</td><td>{actions}</td></tr>\n'
            f'<tr class="waiting-row" id="run-{pk}-waiting" {"" if getattr(r, "waiting", "") else "hidden"}>'
            f'<td colspan="{span}" class="note">{_esc(getattr(r, "waiting", ""))}</td></tr>\n'
            f'<tr class="attempts-row" id="run-{pk}-attempts" {"" if r.lost_attempts else "hidden"}>'
            f'<td colspan="{span}" class="note">{_esc(r.attempts_note)}</td></tr>\n'
            f'<tr class="error-row" id="run-{pk}-error" {"" if r.error else "hidden"}>'
            f'<td colspan="{span}" class="error">{_esc(r.error)}</td></tr>'
        )
    return mark_safe("\n".join(out))  # every value above went through _esc (or is a number or a fixed word)


@register.filter
def metric_title(key: Any) -> str:
    """A summary key's name and unit (dashboard.common.labels): ``Mean wait until start (s)``."""
    from dashboard.common import labels

    return labels.title(str(key))


@register.simple_tag
def metric_link(key: Any, text: Any = None) -> SafeString:
    """A summary key's name and unit (or ``text``), linked to its definition in the documentation."""
    from dashboard.common import labels

    lab = labels.label(str(key))
    return format_html(
        '<a class="definition" href="{}" title="what this is: the documentation">{}</a>',
        lab.definition,
        lab.title if text is None else text,
    )
