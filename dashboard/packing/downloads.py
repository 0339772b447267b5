"""Packing analysis downloads: the whole result as JSON, every series table as CSV and Parquet.

Tables are :func:`simcore.packing.analysis.series_tables` of the stored
results (small: a few thousand rows at most), built per request.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq
from django.http import FileResponse, Http404, HttpResponse

from dashboard.common.models import Status
from dashboard.packing.models import PackingAnalysis
from simcore.packing.analysis import series_tables

#: Download formats of every series table, and the whole result.
FORMATS = ("csv", "parquet")


def analysis_file(a: PackingAnalysis, kind: str) -> HttpResponse | FileResponse:
    """``results.json``, or ``<series>.csv`` / ``<series>.parquet`` for a table of series_tables."""
    if a.status != Status.FINISHED or not a.results:
        raise Http404("the analysis has no results yet")
    stem = f"packing-{a.pk}"
    if kind == "results.json":
        body = json.dumps({"analysis": a.pk, "code_version": a.code_version, **a.results}, indent=2)
        resp = HttpResponse(body, content_type="application/json")
        resp["Content-Disposition"] = f'attachment; filename="{stem}-results.json"'
        return resp
    name, _, fmt = kind.rpartition(".")
    tables = series_tables(a.results)
    if name not in tables or fmt not in FORMATS:
        valid = ["results.json"] + [f"{t}.{f}" for t in tables for f in FORMATS]
        raise Http404(f"unknown download {kind!r}; valid: {', '.join(valid)}")
    rows = tables[name]
    header = list(dict.fromkeys(k for r in rows for k in r))
    if fmt == "csv":
        buf = io.StringIO()
        w = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
        w.writeheader()
        w.writerows(rows)
        resp = HttpResponse(buf.getvalue(), content_type="text/csv")
        resp["Content-Disposition"] = f'attachment; filename="{stem}-{name}.csv"'
        return resp
    tmp = tempfile.TemporaryFile()
    pq.write_table(pa.Table.from_pylist([{k: r.get(k) for k in header} for r in rows]), tmp)
    tmp.seek(0)
    return FileResponse(
        tmp, as_attachment=True, filename=f"{stem}-{name}.parquet", content_type="application/vnd.apache.parquet"
    )


def kinds(a: PackingAnalysis) -> list[str]:
    """Every download of a finished analysis (for its page and the API)."""
    if a.status != Status.FINISHED or not a.results:
        return []
    return ["results.json"] + [f"{t}.{f}" for t in series_tables(a.results) for f in FORMATS]
