"""Downloads of a design-space search: every generation's individuals and fitness (CSV, Parquet), elites, JSON.

The rows are :mod:`simcore.dse.explore.report`'s, the same ``simcore explore --out``
writes, so a file from the platform and one from the command line have the
same columns.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from django.http import FileResponse, Http404, HttpResponse

from dashboard.searches.models import Search
from dashboard.searches.services import records
from simcore.dse.explore.report import ELITE_COLUMNS, GENERATION_COLUMNS, elite_rows, generation_rows

#: What can be downloaded for a search.
SEARCH_KINDS = ("generations.csv", "generations.parquet", "elites.csv", "search.json")


def _csv(columns: tuple[str, ...], rows: Any, filename: str) -> HttpResponse:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: repr(v) if isinstance(v, float) else v for k, v in r.items()})
    resp = HttpResponse(buf.getvalue(), content_type="text/csv")
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return resp


def _parquet(rows: list[dict[str, Any]], filename: str) -> FileResponse:
    types = {
        "generation": pa.int64(),
        "individual": pa.int64(),
        "policy": pa.string(),
        "fitness": pa.float64(),
        "unfinished": pa.int64(),
        "elite": pa.int8(),
    }
    table = pa.table({c: pa.array([r[c] for r in rows], types.get(c, pa.float64())) for c in GENERATION_COLUMNS})
    tmp = tempfile.TemporaryFile()
    pq.write_table(table, tmp)
    tmp.seek(0)
    return FileResponse(tmp, as_attachment=True, filename=filename, content_type="application/vnd.apache.parquet")


def search_body(search: Search) -> dict[str, Any]:
    """The search's settings, scenario, status and every finished generation with its explanation, as JSON data."""
    recs, evaluations = records(search)
    return {
        "search": search.pk,
        "name": search.title,
        "status": search.status,
        "stop_reason": search.stop_reason,
        "error": search.error,
        "settings": {
            "metric": search.metric,
            "population": search.population,
            "generations": search.max_generations,
            "seed": search.seed,
            "sim_seed": search.sim_seed,
        },
        "scenario": search.scenario,
        "code_version": search.code_version,
        "generations": [r.to_dict() for r in recs],
        "elites": list(elite_rows(recs, evaluations)),
    }


def search_file(search: Search, kind: str) -> HttpResponse | FileResponse:
    """A download of a search (the caller checked the user may see it)."""
    stem = f"search-{search.pk}"
    if kind not in SEARCH_KINDS:
        raise Http404(f"unknown download {kind!r}; valid: {', '.join(SEARCH_KINDS)}")
    if kind == "search.json":
        resp = HttpResponse(json.dumps(search_body(search), indent=1), content_type="application/json")
        resp["Content-Disposition"] = f'attachment; filename="{stem}.json"'
        return resp
    recs, evaluations = records(search)
    if kind == "elites.csv":
        return _csv(ELITE_COLUMNS, elite_rows(recs, evaluations), f"{stem}-elites.csv")
    rows = list(generation_rows(recs, evaluations))
    if kind == "generations.csv":
        return _csv(GENERATION_COLUMNS, rows, f"{stem}-generations.csv")
    return _parquet(rows, f"{stem}-generations.parquet")
