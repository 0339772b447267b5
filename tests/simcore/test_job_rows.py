"""Per-job CSV rows of the command line (RunOutcome.iter_job_rows): a job that never started has no machine."""

from __future__ import annotations

from simcore.api import RunSpec, run


def test_a_job_still_queued_at_the_end_has_empty_times_machine_and_config() -> None:
    # Three times the sustainable rate for a few minutes: the queue grows and jobs are left waiting.
    out = run(
        RunSpec(
            "google-balanced", "google-like", "greedy", load=3.0, hours=0.1, cluster_params={"machines_per_config": 1}
        )
    )
    assert out.summary["queued_at_end"] > 0
    rows = list(out.iter_job_rows())
    header, body = rows[0], rows[1:]
    col = {name: i for i, name in enumerate(header)}
    waiting = [r for r in body if r[col["start_s"]] == ""]
    assert len(waiting) == out.summary["queued_at_end"]
    assert all(r[col["machine"]] == "" and r[col["config"]] == "" for r in waiting)
    started = [r for r in body if r[col["start_s"]] != ""]
    assert all(int(r[col["machine"]]) >= 0 and int(r[col["config"]]) >= 0 for r in started)
