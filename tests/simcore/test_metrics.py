"""Metrics on hand-built results: the numbers are computed by hand in the comments."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simcore.core import metrics
from simcore.core.engine import SimResult


def _result(submit, start, finish, *, queue=None, util=None, horizon=10.0) -> SimResult:
    submit = np.asarray(submit, dtype=float)
    n = len(submit)
    samples = 5
    return SimResult(
        n_jobs=n,
        submit=submit,
        start=np.asarray(start, dtype=float),
        finish=np.asarray(finish, dtype=float),
        machine=np.where(np.isnan(np.asarray(start, dtype=float)), -1, 0),
        job_class=np.array([0, 1, 0, 1][:n] + [0] * max(0, n - 4)),
        sample_t=np.linspace(0, horizon, samples),
        sample_queue=np.asarray(queue if queue is not None else [0] * samples),
        sample_running=np.zeros(samples, dtype=np.int64),
        sample_util=np.asarray(util if util is not None else [[0.5, 0.25]] * samples, dtype=float),
        horizon_s=horizon,
        end_s=horizon,
        wall_s=0.5,
        resources=("cpu", "mem"),
        config_of_machine=np.zeros(1, dtype=np.int64),
        extra={"arrived": n},
        # Every job asks 1 cpu and 0.5 mem of a cluster of 4 each.
        request=np.tile([1.0, 0.5], (n, 1)),
        total_capacity=np.array([4.0, 4.0]),
    )


def test_it_summarises_waits_completions_and_counts() -> None:
    # waits: 0, 2, 4 for the started jobs; job 3 never started.
    # completions: 1, 5 (job 2 still running at the end).
    r = _result(submit=[0, 1, 2, 3], start=[0, 3, 6, np.nan], finish=[1, 6, np.nan, np.nan])
    s = metrics.summary(r)
    assert s["jobs"] == 4 and s["started"] == 3 and s["completed"] == 2
    assert s["queued_at_end"] == 1 and s["running_at_end"] == 1
    assert s["mean_response_s"] == pytest.approx(2.0)
    assert s["p50_response_s"] == pytest.approx(2.0)
    assert s["max_response_s"] == pytest.approx(4.0)
    # numpy's linear interpolation: p90 of [0, 2, 4] = 3.6
    assert s["p90_response_s"] == pytest.approx(3.6)
    assert s["mean_completion_s"] == pytest.approx(3.0)
    assert s["mean_run_s"] == pytest.approx(2.0)  # runs 1 and 3
    # Exact, over the window [0, 10]: running 0..1, 3..6 and 6..10 (job 2 until the end) = 8 s,
    # so 8 cpu-s / (4 * 10) = 0.2 and 4 mem-s / 40 = 0.1; queued: 1..3, 2..6 and 3..10 = 13 s -> 1.3.
    assert s["utilization"] == {"cpu": pytest.approx(0.2), "mem": pytest.approx(0.1)}
    assert s["mean_queue_len"] == pytest.approx(1.3) and s["mean_running"] == pytest.approx(0.8)
    # The queue: 1 from t=1, 2 from t=2 (jobs 1 and 2), 2 from t=3 (job 1 started, job 3 arrived).
    assert s["max_queue_len"] == 2
    # Job 3 counted as waiting until the end: (0 + 2 + 4 + 7) / 4.
    assert s["mean_response_lower_s"] == pytest.approx(13 / 4)
    assert s["jobs_per_s"] == pytest.approx(8.0)


def test_per_day_counts_a_job_in_the_day_it_starts() -> None:
    day = metrics.DAY_S
    # job 0 waits 10 s and starts on day 0; job 1 arrives late on day 0, waits 10 s and
    # starts on day 1, so it counts on day 1 with job 2 (also a 10 s wait).
    r = _result(
        submit=[0.0, day - 5, day + 1],
        start=[10.0, day + 5, day + 11],
        finish=[11.0, day + 6, day + 12],
        horizon=2 * day,
    )
    pd = metrics.series(r)["per_day"]
    assert pd["day"] == [0, 1]
    assert pd["jobs"] == [1, 2]
    # day 1: waits 10 and 10 -> mean 10
    assert pd["mean_response_s"] == pytest.approx([10.0, 10.0])


def test_cdf_is_monotone_and_ends_at_the_maximum() -> None:
    rng = np.random.default_rng(3)
    submit = np.sort(rng.uniform(0, 100, 200))
    start = submit + rng.exponential(5, 200)
    r = _result(submit, start, start + 1, horizon=200)
    cdf = metrics.series(r)["cdf"]
    x = np.array(cdf["response_s"])
    assert np.all(np.diff(x) >= 0)
    assert x[-1] == pytest.approx((start - submit).max())
    assert cdf["p"][0] == 0.0 and cdf["p"][-1] == 1.0


def test_a_growing_queue_is_unstable_and_a_flat_one_is_stable() -> None:
    t = np.linspace(0, 100, 40)
    assert metrics.is_stable(t, np.full(40, 3.0))
    assert metrics.is_stable(t, 5 + 3 * np.sin(t))
    assert not metrics.is_stable(t, 2.0 * t)


def test_per_class_splits_wait_and_run() -> None:
    r = _result(submit=[0, 0, 0, 0], start=[0, 1, 2, 3], finish=[4, 2, 3, 9])
    rows = {row["class"]: row for row in metrics.per_class(r, ["a", "b"])}
    # class a: jobs 0 and 2: waits 0, 2; runs 4, 1
    assert rows["a"]["mean_response_s"] == pytest.approx(1.0)
    assert rows["a"]["mean_run_s"] == pytest.approx(2.5)
    assert rows["a"]["mean_completion_s"] == pytest.approx(3.5)
    # class b: jobs 1 and 3: waits 1, 3; runs 1, 6
    assert rows["b"]["mean_completion_s"] == pytest.approx(5.5)


def test_a_noisy_but_level_queue_with_a_small_drift_is_stable() -> None:
    # What a stable 1-hour Greedy run looks like: bursts of 0-60 jobs and a mild upward drift.
    rng = np.random.default_rng(0)
    t = np.linspace(0, 3600, 2000)
    q = np.maximum(0, rng.normal(10 + t / 720, 12))
    assert metrics.is_stable(t, q)


def test_a_queue_climbing_steadily_under_noise_is_unstable() -> None:
    rng = np.random.default_rng(0)
    t = np.linspace(0, 3600, 2000)
    q = np.maximum(0, t / 10 + rng.normal(0, 20, len(t)))  # +180 jobs over the last half
    assert not metrics.is_stable(t, q)


def test_the_ccdf_counts_jobs_waiting_longer_than_each_grid_point_and_the_zero_waits() -> None:
    # waits 0, 0, 0.005, 2, 40 s: three jobs wait longer than 1 ms, two longer than 10 ms, one longer than 10 s
    r = _result(submit=[0, 0, 0, 0, 0], start=[0, 0, 0.005, 2, 40], finish=[1, 1, 1, 3, 41], horizon=50)
    cc = metrics.series(r)["ccdf"]
    x, f = cc["response_s"], cc["longer"]
    assert cc["zero_waits"] == 2 and cc["started"] == 5
    assert x[0] == 0.001 and f[0] == pytest.approx(3 / 5)
    assert f[x.index(0.01)] == pytest.approx(2 / 5) and f[x.index(10.0)] == pytest.approx(1 / 5)
    # the grid stops at the first point nobody waited longer than (50.1 s: after the 40 s wait)
    assert f[-1] == 0.0 and x[-2] < 40.0 < x[-1]


def test_the_ccdf_grid_is_shared_by_every_run() -> None:
    assert metrics.CCDF_GRID_S[0] == 0.001 and metrics.CCDF_GRID_S[10] == 0.01 and len(metrics.CCDF_GRID_S) == 121


def test_a_drained_run_that_left_jobs_unfinished_is_never_stable() -> None:
    # The queue samples are flat (the stability test alone would say stable), but job 2 never finished.
    r = _result(submit=[0, 1, 2], start=[0, 1, np.nan], finish=[1, 2, np.nan])
    r.extra["drained"] = True
    assert metrics.summary(r)["stable"] is False


def test_an_undrained_run_with_a_flat_queue_stays_stable() -> None:
    r = _result(submit=[0, 1, 2], start=[0, 1, np.nan], finish=[1, 2, np.nan])
    assert metrics.summary(r)["stable"] is True


def test_the_summary_says_where_the_measured_span_starts() -> None:
    r = _result(submit=[0, 1], start=[0, 1], finish=[1, 2])
    r.sample_t[:] = np.linspace(3.0, 10.0, len(r.sample_t))
    assert metrics.summary(r)["measured_from_s"] == 3.0


# -- the shared passes give the numbers of the plain computation, to the bit ----------------------------------------


def _plain_per_class(res: SimResult) -> list[dict[str, object]]:
    """per_class as one mask per class (what metrics.per_class computed before it grouped by one sort)."""
    out = []
    completed = res.completed_mask
    for k in np.unique(res.job_class):
        m = completed & (res.job_class == k)
        if not m.any():
            continue
        wait = res.start[m] - res.submit[m]
        run = res.finish[m] - res.start[m]
        out.append(
            {
                "class": str(int(k)),
                "jobs": int(m.sum()),
                "mean_response_s": float(wait.mean()),
                "mean_run_s": float(run.mean()),
                "mean_completion_s": float((wait + run).mean()),
            }
        )
    return out


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.floats(0, 1e4, allow_nan=False),
            st.sampled_from([np.nan, 0.0, 0.25, 3.0, 1e3]),
            st.sampled_from([np.nan, 0.5, 7.0]),
            st.integers(-1, 40),
        ),
        max_size=300,
    )
)
def test_summary_series_and_per_class_from_shared_passes_are_the_plain_ones(rows: list[tuple]) -> None:
    """Waits sorted once for summary and series, classes grouped by one stable sort: identical numbers."""
    submit = np.sort(np.array([r[0] for r in rows], dtype=float))
    wait = np.array([r[1] for r in rows], dtype=float)
    run = np.array([r[2] for r in rows], dtype=float)
    start = submit + wait
    finish = np.where(np.isnan(start), np.nan, start + run)
    r = _result(submit, start, finish)
    r.job_class = np.array([row[3] for row in rows], dtype=np.int64)
    waits = metrics.Waits(r)
    assert metrics.summary(r, waits) == metrics.summary(r)
    assert metrics.series(r, waits) == metrics.series(r)
    assert metrics.per_class(r) == _plain_per_class(r)
    resp = metrics.response_times(r)
    if len(resp):
        assert metrics.summary(r)["p90_response_s"] == float(np.percentile(resp, 90))
        assert metrics.summary(r)["mean_response_s"] == float(resp.mean())
