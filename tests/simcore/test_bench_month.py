"""``simcore bench --scenarios month``: a month on google-2011 with the Google 2011 trace's task count."""

from __future__ import annotations

import numpy as np

from simcore.api import resolve_cluster
from simcore.bench.runs import DEFAULT_SCENARIOS, MONTH_HOURS, BenchOptions, _first_jobs, _month_workload, plan_specs


def test_the_month_runs_only_when_named_with_its_job_count() -> None:
    assert "month" not in DEFAULT_SCENARIOS
    assert not [s for s in plan_specs(BenchOptions(schedulers="greedy")) if s["scenario"] == "month"]
    specs = [
        s for s in plan_specs(BenchOptions(schedulers="greedy,lotes", scenarios="month")) if s["scenario"] == "month"
    ]
    assert [(s["scheduler"], s["jobs"]) for s in specs] == [("greedy", 25_000_000), ("lotes", 25_000_000)]
    # A month at a million jobs a second is still most of a minute: never cut by the default 300 s.
    assert all(s["max_seconds"] >= 3600 for s in specs)


def test_the_month_keeps_the_jobs_and_the_load_and_spans_thirty_days() -> None:
    cluster = resolve_cluster("google-2011")
    spec = {"seed": 3, "load": 0.9, "jobs": 5000}
    base = _first_jobs(cluster, spec, 5000)
    month = _month_workload(cluster, spec)
    k = month.params["time_stretch"]
    assert month.n_jobs == base.n_jobs == 5000
    assert month.horizon_s == MONTH_HOURS * 3600.0
    assert np.isclose(month.submit[-1], MONTH_HOURS * 3600.0, rtol=1e-12)
    assert k > 100  # 5,000 jobs are a few seconds of google-like: stretched a lot
    # Same shapes, same order; times and durations by one factor, so the offered load is the same.
    assert np.array_equal(month.request, base.request) and np.array_equal(month.job_class, base.job_class)
    assert np.allclose(month.submit, base.submit * k, rtol=0, atol=0)
    assert np.allclose(month.work, base.work * k, rtol=0, atol=0)
    offered = float(base.work.sum() / base.submit[-1])
    assert np.isclose(float(month.work.sum() / month.submit[-1]), offered, rtol=1e-12)
    # LoTES's class table slows down with the jobs: rates / k.
    assert base.classes is not None and month.classes is not None
    assert np.array_equal(month.classes.rates, base.classes.rates / k)
    assert np.array_equal(month.classes.requests, base.classes.requests)
