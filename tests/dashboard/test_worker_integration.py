"""Submit through the form, a real worker runs it, results stored, pages render, downloads parse back."""

from __future__ import annotations

import csv
import io
import json
import zipfile

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.urls import reverse

from dashboard.common.heartbeat import clean_json
from dashboard.experiments.jobs import run_jobs
from dashboard.experiments.services import create_experiment
from dashboard.models import Experiment, Run, RunRecordsObject, RunResult, Status
from simcore import archive
from simcore.scenario import run_scenario
from tests.dashboard.conftest import small_scenario, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]


def _form_data(**over: object) -> dict[str, object]:
    data = {
        "name": "integration",
        "cluster": "preset:google-balanced",
        "cluster__google-balanced__machines_per_config": "2",
        "workload": "preset:google-like",
        "load": "0.9",
        "hours": "1",
        "schedulers": ["greedy", "fcfs"],
        "seeds": "0",
    }
    data.update(over)
    return data


def test_a_submitted_experiment_runs_in_the_worker_and_matches_simcore(owner_client, owner):
    resp = owner_client.post(reverse("experiment-new"), _form_data())
    assert resp.status_code == 302
    exp = Experiment.objects.get()
    assert resp["Location"] == exp.get_absolute_url()
    assert exp.owner == owner
    assert sorted(exp.runs.values_list("scheduler", "seed")) == [("fcfs", 0), ("greedy", 0)]

    exp = wait_for(exp)
    assert exp.status == Status.FINISHED
    runs = {r.scheduler: r for r in exp.runs.select_related("result")}
    for run in runs.values():
        assert run.status == Status.FINISHED and run.fraction == 1.0 and run.error == ""
        assert run.code_version and run.worker
    # The worker's numbers are simcore's numbers for the same scenario and seed.
    expected = run_scenario(exp.scenario, "greedy", 0)
    stored = runs["greedy"].result.summary
    assert archive.same_numbers(stored, json.loads(json.dumps(clean_json(expected.summary))))
    assert stored["jobs"] == expected.summary["jobs"] > 1000
    assert runs["greedy"].jobs_total == stored["jobs"]

    # Pages render with the numbers, the seed and the version.
    page = owner_client.get(exp.get_absolute_url())
    html = page.content.decode()
    assert page.status_code == 200
    assert f"{stored['mean_response_s']:.4g}" in html
    assert runs["greedy"].code_version in html
    assert 'id="chart-cdf"' in html and "plotly-basic.min.js" in html
    progress = owner_client.get(reverse("experiment-progress", args=[exp.pk])).json()
    assert progress["status"] == "finished" and {r["fraction"] for r in progress["runs"]} == {1.0}

    # Per-job CSV parses back to the stored columns.
    run = runs["greedy"]
    cols = run_jobs(run)
    body = b"".join(owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "jobs.csv"])).streaming_content)
    rows = list(csv.DictReader(io.StringIO(body.decode())))
    assert len(rows) == stored["jobs"]
    resp_s = np.array([float(r["response_s"]) if r["response_s"] else np.nan for r in rows])
    np.testing.assert_array_equal(resp_s, cols["response_s"])
    started = ~np.isnan(resp_s)
    assert np.mean(resp_s[started]) == pytest.approx(stored["mean_response_s"], rel=1e-12)

    # Parquet too, and the experiment CSV holds both runs.
    pbody = b"".join(owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "jobs.parquet"])).streaming_content)
    table = pq.read_table(io.BytesIO(pbody))
    np.testing.assert_array_equal(table.column("finish_s").to_numpy(zero_copy_only=False), cols["finish_s"])
    body = b"".join(owner_client.get(reverse("experiment-download", args=[exp.pk, "jobs.csv"])).streaming_content)
    per_sched = {}
    for r in csv.DictReader(io.StringIO(body.decode())):
        per_sched[r["scheduler"]] = per_sched.get(r["scheduler"], 0) + 1
    assert per_sched == {"greedy": stored["jobs"], "fcfs": runs["fcfs"].result.summary["jobs"]}

    # Summary and series downloads carry the same numbers.
    sj = owner_client.get(reverse("experiment-download", args=[exp.pk, "summary.json"])).json()
    by = {r["scheduler"]: r for r in sj["runs"]}
    assert by["greedy"]["summary"]["p99_response_s"] == stored["p99_response_s"]
    assert sj["scenario"]["seeds"] == [0]
    sc = list(
        csv.DictReader(
            io.StringIO(
                owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "summary.csv"])).content.decode()
            )
        )
    )
    assert float(sc[0]["p90_response_s"]) == stored["p90_response_s"]
    assert sc[0]["utilization.cpu"] == repr(stored["utilization"]["cpu"])
    series = owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "series.json"])).json()["runs"][0]["series"]
    assert series["cdf"]["response_s"] == run.result.series["cdf"]["response_s"]
    scsv = list(
        csv.DictReader(
            io.StringIO(owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "series.csv"])).content.decode())
        )
    )
    queue = [float(r["y"]) for r in scsv if r["series"] == "queue" and r["y_name"] == "queued"]
    assert queue == run.result.series["queue"]["queued"]


def test_the_archive_reruns_to_the_same_numbers(owner, tmp_path, capsys):
    exp = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy"], seeds=[3])))
    from django.test import Client

    c = Client()
    c.force_login(owner)
    body = b"".join(c.get(reverse("experiment-download", args=[exp.pk, "archive.zip"])).streaming_content)
    path = tmp_path / "exp.zip"
    path.write_bytes(body)
    with zipfile.ZipFile(path) as z:
        assert {"scenario.json", "runs/greedy/seed-3/summary.json", "runs/greedy/seed-3/jobs.npz"} <= set(z.namelist())
    from simcore.cli import main

    assert main(["rerun", str(path), "--out", str(tmp_path / "out")]) == 0
    line = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert line["matches_archive"] is True and line["seed"] == 3
    stored = Run.objects.get(experiment=exp).result.summary
    assert line["mean_response_s"] == stored["mean_response_s"]
    assert (tmp_path / "out" / "greedy" / "seed-3" / "jobs.csv").exists()


def test_a_failing_run_shows_its_message_and_leaves_the_others(owner, owner_client):
    # A scenario naming a trace file that is not there: the run fails inside the worker.
    exp = create_experiment(owner, small_scenario(schedulers=["greedy", "fcfs"]))
    wait_for(exp)
    bad = create_experiment(
        owner,
        small_scenario(
            cluster={"preset": "google-balanced", "params": {"machines_per_config": 2}},
            workload={"file": "missing.csv"},
            schedulers=["greedy"],
        ),
    )
    bad = wait_for(bad)
    run = bad.runs.get()
    assert run.status == Status.FAILED and "missing.csv" in run.error
    assert not RunResult.objects.filter(run=run).exists() and not RunRecordsObject.objects.filter(run=run).exists()
    html = owner_client.get(bad.get_absolute_url()).content.decode()
    assert "missing.csv" in html and "Traceback" not in html
    assert set(exp.runs.values_list("status", flat=True)) == {Status.FINISHED}


def test_cancelling_a_running_run_stops_it_without_results(owner, owner_client):
    exp = create_experiment(
        owner,
        small_scenario(
            cluster={"preset": "google-balanced", "params": {"machines_per_config": 20}},
            hours=24.0,
            schedulers=["greedy"],
        ),
    )
    run = exp.runs.get()
    import time

    deadline = time.monotonic() + 60
    while run.status != Status.RUNNING and time.monotonic() < deadline:
        time.sleep(0.1)
        run.refresh_from_db()
    assert run.status == Status.RUNNING
    resp = owner_client.post(reverse("run-cancel", args=[run.pk]))
    assert resp.status_code == 302
    exp = wait_for(exp)
    run.refresh_from_db()
    assert run.status == Status.CANCELLED and exp.status == Status.CANCELLED
    # The worker notices at its next progress report and stores nothing. It has one slot, so once a
    # run queued after the cancel has finished, the cancelled one has certainly let go (no fixed sleep).
    later = wait_for(create_experiment(owner, small_scenario(schedulers=["greedy"], hours=0.1)))
    assert later.status == Status.FINISHED
    assert not RunResult.objects.filter(run=run).exists()


def test_the_api_guide_example_drives_an_experiment_to_its_results(live_server, owner, tmp_path, monkeypatch, capsys):
    """The REST API guide's Python example (docs/guide/api.md), run as written against a live server and worker."""
    import re
    from pathlib import Path

    from dashboard.models import ApiToken
    from tests.dashboard.conftest import ROOT

    guide = Path(ROOT, "docs", "guide", "api.md").read_text()
    code = re.search(r"<!-- api-example -->\n```python\n(.*?)```", guide, flags=re.S).group(1)
    _, secret = ApiToken.issue(owner, "readme")
    monkeypatch.setenv("SIMCORE_URL", live_server.url)
    monkeypatch.setenv("SIMCORE_TOKEN", secret)
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/guide/api.md", "exec"), {"__name__": "api_guide_example"})
    exp = Experiment.objects.get(owner=owner)
    assert exp.status == Status.FINISHED and exp.runs.count() == 4
    out = capsys.readouterr().out.splitlines()
    summaries = {(r.scheduler, r.seed): r.result.summary for r in exp.runs.select_related("result")}
    for (sched, seed), s in summaries.items():
        assert f"{sched} {seed} finished {s['mean_response_s']}" in out
    table = pq.read_table(tmp_path / "jobs.parquet")
    assert table.num_rows == sum(s["jobs"] for s in summaries.values())
