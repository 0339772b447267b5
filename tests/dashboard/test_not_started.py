"""The run page's summary says how many jobs never started, with the bound on the mean wait (issue 26)."""

from __future__ import annotations

from dashboard.templatetags.simfmt import not_started


def test_jobs_that_never_started_are_counted_with_the_bound_on_the_mean_wait() -> None:
    cell = not_started({"queued_at_end": 1234, "mean_response_lower_s": 56.75, "mean_response_s": 3.0})
    assert cell == "1,234 <small>(mean wait &ge; 56.75 s)</small>"


def test_a_run_where_every_job_started_shows_zero_and_no_bound() -> None:
    assert not_started({"queued_at_end": 0, "mean_response_lower_s": 3.0, "mean_response_s": 3.0}) == "0"
    assert not_started({}) == "-"
