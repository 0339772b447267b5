"""Downloads of a capacity plan: every probe (CSV, Parquet), one row per scheduler run, and the plan (JSON).

A probe row is one scheduler's run at one size under one seed: the target
statistic, whether it met the target, and the run's jobs, started jobs and wall
time, as :class:`simcore.planning.ProbeResult` holds them. Each file carries the
``Link`` header to what its columns mean, as the experiments' downloads.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.http import FileResponse, Http404, HttpResponse

from dashboard.capacity.models import CapacityPlan, CapacityProbe, ProbeStatus

#: Where the columns are explained: the user guide's section on the downloads.
COLUMNS_PATH = "/docs/guide/capacity-plans/#downloads"

#: What can be downloaded for a plan.
PLAN_KINDS = ("probes.csv", "probes.parquet", "plan.json")

#: One probe row's columns and their Parquet types.
PROBE_COLUMNS: dict[str, pa.DataType] = {
    "round": pa.int64(),
    "scheduler": pa.string(),
    "machines": pa.int64(),
    "seed": pa.int64(),
    "statistic": pa.string(),
    "value": pa.float64(),
    "met": pa.bool_(),
    "jobs": pa.int64(),
    "started": pa.int64(),
    "stable": pa.bool_(),
    "wall_s": pa.float64(),
    "error": pa.string(),
}


def probe_rows(plan: CapacityPlan) -> Iterator[dict[str, Any]]:
    """One row per scheduler run of every stored probe, by round, size, seed and scheduler."""
    statistic = (plan.result or {}).get("statistic") or plan.target.split("<")[0].strip()
    rows = CapacityProbe.objects.filter(plan=plan, round__gt=0, status=ProbeStatus.DONE).order_by(
        "round", "machines", "seed"
    )
    for p in rows:
        r = p.result or {}
        for name in p.schedulers:
            run = (r.get("runs") or {}).get(name) or {}
            value = (r.get("values") or {}).get(name)
            yield {
                "round": p.round,
                "scheduler": name,
                "machines": p.machines,
                "seed": p.seed,
                "statistic": statistic,
                "value": None if value is None else float(value),
                "met": bool((r.get("met") or {}).get(name, False)),
                "jobs": run.get("jobs"),
                "started": run.get("started"),
                "stable": run.get("stable"),
                "wall_s": run.get("wall_s"),
                "error": (r.get("errors") or {}).get(name, ""),
            }


def described(resp: Any) -> Any:
    """``resp`` with a ``Link`` header to what its columns mean (a CSV keeps no note a parser would read as data)."""
    resp["Link"] = f'<{COLUMNS_PATH}>; rel="describedby"'
    return resp


def plan_body(plan: CapacityPlan) -> dict[str, Any]:
    """The plan's request, status and, once finished, simcore.planning's plan (what ``simcore capacity`` prints)."""
    return {
        "plan": plan.pk,
        "name": plan.title,
        "status": plan.status,
        "error": plan.error,
        "note": plan.note,
        "spec": plan.spec,
        "bounds": plan.bounds,
        "code_version": plan.code_version,
        "result": plan.result,
    }


def _csv(rows: list[dict[str, Any]], filename: str) -> HttpResponse:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(PROBE_COLUMNS), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: repr(v) if isinstance(v, float) else ("" if v is None else v) for k, v in r.items()})
    resp = HttpResponse(buf.getvalue(), content_type="text/csv")
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return described(resp)


def _parquet(rows: list[dict[str, Any]], filename: str) -> FileResponse:
    table = pa.table({c: pa.array([r[c] for r in rows], t) for c, t in PROBE_COLUMNS.items()})
    tmp = tempfile.TemporaryFile()
    pq.write_table(table, tmp)
    tmp.seek(0)
    resp = FileResponse(tmp, as_attachment=True, filename=filename, content_type="application/vnd.apache.parquet")
    return described(resp)


def plan_file(plan: CapacityPlan, kind: str) -> HttpResponse | FileResponse:
    """A download of a plan (the caller checked the user may see it)."""
    stem = f"capacity-{plan.pk}"
    if kind not in PLAN_KINDS:
        raise Http404(f"unknown download {kind!r}; valid: {', '.join(PLAN_KINDS)}")
    if kind == "plan.json":
        resp = HttpResponse(json.dumps(plan_body(plan), indent=1), content_type="application/json")
        resp["Content-Disposition"] = f'attachment; filename="{stem}.json"'
        return described(resp)
    rows = list(probe_rows(plan))
    if kind == "probes.csv":
        return _csv(rows, f"{stem}-probes.csv")
    return _parquet(rows, f"{stem}-probes.parquet")
