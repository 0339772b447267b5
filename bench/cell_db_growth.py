"""Database growth of one paper-scale sweep cell whose per-job records are not kept (issue 29 target: < 5 MB).

LoTES Figure 11's preset at the paper's scale (1,000 machines per configuration, 100 h), one cell (Greedy,
seed 0, Phi 0.015), per-job records "none": the experiment is created and the cell stored as a worker
stores it (execute_run, in this process), and PostgreSQL's size is read before and after, with the bytes of
what the cell stored (summary, series, per-class means, aggregate, charts).

    DEBUG=1 DATABASE_URL=postgresql://.../db PYTHONPATH=. python bench/cell_db_growth.py
"""

from __future__ import annotations

import json
import os
import time

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
django.setup()

from django.contrib.auth.models import User  # noqa: E402
from django.db import connection  # noqa: E402

from dashboard.experiments.execution import execute_run  # noqa: E402
from dashboard.experiments.services import check_scenario, create_experiment  # noqa: E402
from dashboard.models import CellAggregate, ExperimentCharts, RunResult  # noqa: E402
from simcore import reproductions  # noqa: E402
from simcore.sweep import scenario as sweep_scenario  # noqa: E402


def db_bytes() -> int:
    with connection.cursor() as c:
        c.execute("SELECT pg_database_size(current_database())")
        return int(c.fetchone()[0])


def tables() -> dict[str, int]:
    with connection.cursor() as c:
        c.execute(
            "SELECT relname, pg_total_relation_size(oid) FROM pg_class "
            "WHERE relkind = 'r' AND relname LIKE 'dashboard_%'"
        )
        return dict(c.fetchall())


def main() -> None:
    owner, _ = User.objects.get_or_create(username="bench")
    rep = reproductions.get("lotes-fig11")
    scale = rep.scale_values({"machines_per_config": 1000, "hours": 100, "seeds": 1})
    sc = sweep_scenario.scenario_of(rep.sweep(scale))
    sc["schedulers"] = ["greedy"]
    for axis in sc["axes"]:
        axis["values"] = axis["values"][-1:]
    sc["job_records"] = "none"
    exp = create_experiment(owner, check_scenario(sc), name="one paper-scale cell")
    run = exp.runs.get()
    before_db, before = db_bytes(), tables()
    t0 = time.perf_counter()
    status = execute_run(run.pk, "bench@host")
    wall = time.perf_counter() - t0
    after_db, after = db_bytes(), tables()
    res = RunResult.objects.get(run=run)
    parts = {
        "summary": res.summary,
        "series": res.series,
        "per_class": res.per_class,
        "offline": res.offline,
    }
    print(f"cell {run}: {status}, {res.summary.get('jobs'):,} jobs, {wall:.0f} s wall")
    for k, v in parts.items():
        print(f"  {k}: {len(json.dumps(v)):,} bytes of JSON")
    for k, v in (res.series or {}).items():
        print(f"    series.{k}: {len(json.dumps(v)):,} bytes")
    agg = CellAggregate.objects.filter(experiment=exp)
    print(f"  cell aggregates: {sum(len(json.dumps(a.stats)) for a in agg):,} bytes of JSON")
    charts = ExperimentCharts.objects.filter(experiment=exp).first()
    print(f"  stored charts: {len(charts.figures) if charts else 0:,} bytes")
    with connection.cursor() as c:
        c.execute(
            "SELECT pg_column_size(summary), pg_column_size(series), pg_column_size(per_class), "
            "pg_column_size(offline) FROM dashboard_runresult WHERE run_id = %s",
            [run.pk],
        )
        print("  stored (jsonb, TOAST-compressed) summary/series/per_class/offline:", c.fetchone())
    grew = {k: after.get(k, 0) - before.get(k, 0) for k in after if after.get(k, 0) != before.get(k, 0)}
    print(f"database: {before_db:,} -> {after_db:,} bytes (+{(after_db - before_db) / 1e6:.2f} MB)")
    for k, v in sorted(grew.items(), key=lambda kv: -kv[1]):
        print(f"  {k}: +{v / 1e3:.0f} kB")


if __name__ == "__main__":
    main()
