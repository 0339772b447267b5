"""Download responses: per-job CSV (streamed) and Parquet, summary and series as JSON and CSV, archives.

Large downloads never sit in memory whole: per-job records are read one
stored chunk at a time (dashboard.experiments.jobs); the per-job CSV is written
in pieces of :data:`CSV_CHUNK_ROWS` rows as the client reads; Parquet and the
experiment archive go to an anonymous temporary file (deleted when the
response closes it) in row groups / one chunk at a time, then stream from there.
"""

from __future__ import annotations

import csv
import io
import json
import tempfile
from collections.abc import Iterable, Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
from django.http import FileResponse, Http404, HttpResponse, StreamingHttpResponse

from dashboard.common import labels
from dashboard.common.models import Status
from dashboard.experiments.jobs import records_text, run_job_chunks
from dashboard.experiments.models import Experiment, Run
from dashboard.experiments.results import runs_with_results, write_experiment_archive
from simcore.api import NULL_IF_NEGATIVE
from simcore.archive import JOB_COLUMNS
from simcore.sweep.report import flatten

#: Rows per streamed CSV chunk: ~6 MB of text, small against a worker's memory, big enough for pyarrow's speed.
CSV_CHUNK_ROWS = 65_536
#: Rows per Parquet row group (~10 MB of columns).
PARQUET_ROW_GROUP = 262_144

_CSV_OPTS = pacsv.WriteOptions(include_header=False, quoting_style="none")


def _attachment(resp: HttpResponse | StreamingHttpResponse | FileResponse, filename: str) -> Any:
    resp["Content-Disposition"] = f'attachment; filename="{filename}"'
    return described(resp)


def described(resp: Any) -> Any:
    """``resp`` with a ``Link`` header to what its columns mean (RFC 8288 ``describedby``): a CSV keeps no note
    of its own that a parser would read as data, and the machine keys (``mean_response_s``) stay as they are."""
    resp["Link"] = f'<{labels.DEFINITIONS_PATH}#downloads>; rel="describedby"'
    return resp


def _arrow_type(v: Any) -> pa.DataType:
    if isinstance(v, bool):
        return pa.bool_()
    if isinstance(v, int):
        return pa.int64()
    return pa.float64() if isinstance(v, float) else pa.string()


def _table(cols: dict[str, np.ndarray], lo: int, hi: int, extra: dict[str, Any]) -> pa.Table:
    arrays: dict[str, pa.Array] = {}
    n = hi - lo
    for k, v in extra.items():
        arrays[k] = pa.nulls(n, pa.float64()) if v is None else pa.repeat(pa.scalar(v, _arrow_type(v)), n)
    for k in JOB_COLUMNS:
        # NaN (never started / not finished) becomes null: an empty CSV cell, a Parquet null; so does
        # the -1 machine and config of a job that never started.
        v = cols[k][lo:hi]
        arrays[k] = pa.array(v, mask=v < 0) if k in NULL_IF_NEGATIVE else pa.array(v, from_pandas=True)
    return pa.table(arrays)


def _point_names(runs: Iterable[Run]) -> list[str]:
    """The axes of the runs' sweep points, in first-seen order (none outside sweeps)."""
    names: list[str] = []
    for r in runs:
        names += [k for k in (r.point or {}) if k not in names]
    return names


def _run_columns(run: Run, points: list[str]) -> dict[str, Any]:
    """The columns that tell a run's rows from another's: run, scheduler, seed and its point (``point.load``)."""
    where = run.point or {}
    return {
        "run": run.pk,
        "scheduler": run.scheduler,
        "seed": run.seed,
        **{f"point.{k}": where.get(k) for k in points},
    }


def _job_tables(runs: list[Run], with_run: bool, rows: int, *, empty: bool = False) -> Iterator[pa.Table]:
    """The runs' per-job records as tables of at most ``rows`` rows, one stored chunk in memory at a time;
    ``empty``: a run without jobs gives one empty table (Parquet takes its schema from it)."""
    points = _point_names(runs)
    for run in runs:
        if _kept_none(run):
            continue  # it kept no records (its experiment chose none): nothing of it in the file
        extra = _run_columns(run, points) if with_run else {}
        for cols in run_job_chunks(run):
            n = len(cols["job"])
            for lo in range(0, max(n, 1) if empty else n, rows):
                yield _table(cols, lo, min(n, lo + rows), extra)
            del cols


def _csv_stream(runs: list[Run], with_run: bool) -> Iterator[bytes]:
    points = [f"point.{k}" for k in _point_names(runs)]
    header = (["run", "scheduler", "seed", *points] if with_run else []) + list(JOB_COLUMNS)
    yield (",".join(header) + "\n").encode()
    for t in _job_tables(runs, with_run, CSV_CHUNK_ROWS):
        buf = io.BytesIO()
        pacsv.write_csv(t, buf, _CSV_OPTS)
        yield buf.getvalue()


def _finished(runs: Iterable[Run]) -> list[Run]:
    return [r for r in runs if r.status == Status.FINISHED]


def _kept_none(run: Run) -> bool:
    return (run.records or {}).get("kept") == "none"


#: The header of a per-job download that says which records it holds (a CSV has no place for a note).
RECORDS_HEADER = "Job-Records"


def _with_records(resp: Any, runs: list[Run]) -> Any:
    """``resp`` saying which per-job records it holds: one run's in words, several runs' in summary.json."""
    if len(runs) == 1:
        resp[RECORDS_HEADER] = records_text(runs[0])
    elif all((r.records or {}).get("kept", "all") == "all" for r in runs):
        resp[RECORDS_HEADER] = "all kept"
    else:
        resp[RECORDS_HEADER] = "some runs keep a sample or none; summary.json's runs[].records says which"
    return resp


def no_records(runs: list[Run], experiment: bool) -> HttpResponse | None:
    """A 410 saying so when every finished run kept no per-job records (not an empty file); else None.
    ``experiment``: a whole experiment's download (else one run's)."""
    done = _finished(runs)
    if not done or not all(_kept_none(r) for r in done):
        return None
    which = "No run of this experiment kept" if experiment else "This run kept no"
    msg = (
        f"{which} per-job records: the experiment's per-job records choice is none. Its summary, statistics "
        "and series (summary.json, series.json) are complete; fork it with per-job records all or sample:N "
        "to get them.\n"
    )
    return HttpResponse(msg, status=410, content_type="text/plain; charset=utf-8")


def jobs_csv(runs: list[Run], filename: str, with_run: bool) -> StreamingHttpResponse:
    resp = StreamingHttpResponse(_csv_stream(_finished(runs), with_run), content_type="text/csv")
    return _with_records(_attachment(resp, filename), _finished(runs))


def jobs_parquet(runs: list[Run], filename: str, with_run: bool) -> FileResponse:
    tmp = tempfile.TemporaryFile()
    schema = None
    writer = None
    for t in _job_tables(_finished(runs), with_run, PARQUET_ROW_GROUP, empty=True):
        if writer is None:
            schema = t.schema
            writer = pq.ParquetWriter(tmp, schema)
        writer.write_table(t.cast(schema))
    if writer is None:
        empty = {
            **(
                {
                    "run": pa.array([], pa.int64()),
                    "scheduler": pa.array([], pa.string()),
                    "seed": pa.array([], pa.int64()),
                }
                if with_run
                else {}
            )
        }
        empty.update({k: pa.array([], pa.float64()) for k in JOB_COLUMNS})
        pq.write_table(pa.table(empty), tmp)
    else:
        writer.close()
    tmp.seek(0)
    resp = FileResponse(tmp, as_attachment=True, filename=filename, content_type="application/vnd.apache.parquet")
    return _with_records(described(resp), _finished(runs))


def _run_record(run: Run) -> dict[str, Any]:
    res = getattr(run, "result", None) if run.status == Status.FINISHED else None
    return {
        "run": run.pk,
        "experiment": run.experiment_id,
        "scheduler": run.scheduler,
        "seed": run.seed,
        # A sweep's cell: the point tells "lotes, seed 0" at Phi 0.003 from "lotes, seed 0" at Phi 0.006.
        "point": dict(run.point or {}),
        "status": run.status,
        "error": run.error,
        "code_version": run.code_version,
        "summary": res.summary if res else None,
        "per_class": res.per_class if res else None,
        "offline": res.offline if res else None,
        # Which per-job records it kept (simcore.records.describe); null: stored before the choice, all kept.
        "records": run.records,
    }


def summary_body(runs: list[Run], scenario: dict[str, Any] | None = None) -> dict[str, Any]:
    """Every run's status, summary, per-class means and offline plan (and the scenario), as JSON data."""
    records = [_run_record(r) for r in runs]
    keys: list[str] = []
    for rec in records:
        keys += [k for k in flatten(rec["summary"] or {}) if k not in keys]
    body: dict[str, Any] = {
        "runs": records,
        # What each summary key means, with its definition in the docs ("mean_response_s" is the wait until start).
        "columns": {"definitions": f"{labels.DEFINITIONS_PATH}#downloads", "summary": labels.columns(keys)},
    }
    if scenario is not None:
        body["scenario"] = scenario
    return body


def summary_json(runs: list[Run], filename: str, scenario: dict[str, Any] | None = None) -> HttpResponse:
    body = summary_body(runs, scenario)
    return _attachment(HttpResponse(json.dumps(body, indent=2), content_type="application/json"), filename)


def summary_csv(runs: list[Run], filename: str) -> HttpResponse:
    rows = []
    for r in runs:
        rec = _run_record(r)
        rows.append(
            {
                "run": r.pk,
                "scheduler": r.scheduler,
                "seed": r.seed,
                **{f"point.{k}": v for k, v in rec["point"].items()},  # the sweep chart data's column names
                "status": r.status,
                "code_version": r.code_version,
                **flatten(rec["summary"] or {}),
            }
        )
    header: list[str] = []
    for row in rows:
        header += [k for k in row if k not in header]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=header or ["run"], lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return _attachment(HttpResponse(buf.getvalue(), content_type="text/csv"), filename)


def series_body(runs: list[Run]) -> dict[str, Any]:
    """The plotted series of the finished runs, as JSON data."""
    return {
        "runs": [
            {
                "run": r.pk,
                "scheduler": r.scheduler,
                "seed": r.seed,
                "point": dict(r.point or {}),
                "series": r.result.series,
            }
            for r in _finished(runs)
            if hasattr(r, "result")
        ]
    }


def series_json(runs: list[Run], filename: str) -> HttpResponse:
    body = series_body(runs)
    return _attachment(HttpResponse(json.dumps(body), content_type="application/json"), filename)


def series_rows(series: dict[str, Any]) -> Iterator[tuple[str, str, Any, str, Any]]:
    """Long-format rows (series, x_name, x, y_name, y) of one run's plotted series."""
    cdf = series.get("cdf") or {}
    for p, v in zip(cdf.get("p", []), cdf.get("response_s", []), strict=False):
        yield "cdf", "p", p, "response_s", v
    cc = series.get("ccdf") or {}
    for v, f in zip(cc.get("response_s", []), cc.get("longer", []), strict=False):
        yield "ccdf", "response_s", v, "fraction_longer", f
    pd = series.get("per_day") or {}
    for d, m, n in zip(pd.get("day", []), pd.get("mean_response_s", []), pd.get("jobs", []), strict=False):
        yield "per_day", "day", d, "mean_response_s", m
        yield "per_day", "day", d, "jobs", n
    # Queue length and utilisation over time are samples (the summary's averages are exact): x says so.
    q = series.get("queue") or {}
    for t, a, b in zip(q.get("t_s", []), q.get("queued", []), q.get("running", []), strict=False):
        yield "queue", "sample_t_s", t, "queued", a
        yield "queue", "sample_t_s", t, "running", b
    u = series.get("utilization") or {}
    for r in [k for k in u if k != "t_s"]:
        for t, v in zip(u.get("t_s", []), u[r], strict=False):
            yield "utilization", "sample_t_s", t, r, v


def series_csv(runs: list[Run], filename: str) -> HttpResponse:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    done = [r for r in _finished(runs) if hasattr(r, "result")]
    points = _point_names(done)
    w.writerow(["run", "scheduler", "seed", *(f"point.{k}" for k in points), "series", "x_name", "x", "y_name", "y"])
    for r in done:
        first = list(_run_columns(r, points).values())
        for row in series_rows(r.result.series):
            w.writerow([*first, *row])
    return _attachment(HttpResponse(buf.getvalue(), content_type="text/csv"), filename)


def experiment_archive(experiment: Experiment, filename: str) -> FileResponse:
    tmp = tempfile.TemporaryFile()
    write_experiment_archive(experiment, tmp)
    tmp.seek(0)
    return FileResponse(tmp, as_attachment=True, filename=filename, content_type="application/zip")


#: What can be downloaded for a run; an experiment also has ``archive.zip``.
RUN_KINDS = ("jobs.csv", "jobs.parquet", "summary.json", "summary.csv", "series.json", "series.csv")
EXPERIMENT_KINDS = (*RUN_KINDS, "archive.zip")


def _runs_file(
    runs: list[Run], kind: str, stem: str, with_run: bool, scenario: dict[str, Any] | None = None
) -> HttpResponse | StreamingHttpResponse | FileResponse:
    if kind in ("jobs.csv", "jobs.parquet"):
        gone = no_records(runs, with_run)
        if gone is not None:
            return gone
    if kind == "jobs.csv":
        return jobs_csv(runs, f"{stem}-jobs.csv", with_run)
    if kind == "jobs.parquet":
        return jobs_parquet(runs, f"{stem}-jobs.parquet", with_run)
    if kind == "summary.json":
        return summary_json(runs, f"{stem}-summary.json", scenario)
    if kind == "summary.csv":
        return summary_csv(runs, f"{stem}-summary.csv")
    if kind == "series.json":
        return series_json(runs, f"{stem}-series.json")
    if kind == "series.csv":
        return series_csv(runs, f"{stem}-series.csv")
    raise Http404(f"unknown download {kind!r}; valid: {', '.join(EXPERIMENT_KINDS)}")


def experiment_file(experiment: Experiment, kind: str) -> HttpResponse | StreamingHttpResponse | FileResponse:
    """A download of a whole experiment (the caller checked the user may see it)."""
    if kind == "archive.zip":
        return experiment_archive(experiment, f"experiment-{experiment.pk}.zip")
    return _runs_file(runs_with_results(experiment), kind, f"experiment-{experiment.pk}", True, experiment.scenario)


def run_file(run: Run, kind: str) -> HttpResponse | StreamingHttpResponse | FileResponse:
    """A download of one run (the caller checked the user may see its experiment)."""
    return _runs_file([run], kind, f"run-{run.pk}-{run.scheduler}-seed{run.seed}", False)
