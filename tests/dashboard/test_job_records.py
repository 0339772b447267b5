"""An experiment chooses which per-job records its runs keep (issue 29): the form and the API store the choice,
each run records what it kept, the page says so, and downloads hold what was kept (a 410 when nothing was).

Summaries and series are computed from every job before the selection, so they are the same under every choice.
"""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.urls import reverse

from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import Experiment, Run, RunRecordsObject, Status
from dashboard.packing.models import PackingAnalysis, PackingSource
from dashboard.packing.services import SourceChoice, create_analysis
from simcore import archive
from simcore.core.errors import ParameterError
from simcore.records import keep_records
from tests.dashboard.conftest import GOOD, small_scenario
from tests.dashboard.test_api import Api


def _run_all(exp: Experiment) -> list[Run]:
    for run in Run.objects.filter(experiment=exp):
        assert execute_run(run.pk, worker="test") == Status.FINISHED
    return list(Run.objects.filter(experiment=exp).select_related("result").order_by("pk"))


def _create(client, **over) -> Experiment:
    resp = client.post(reverse("experiment-new"), {**GOOD, "schedulers": ["greedy"], **over})
    assert resp.status_code == 302, resp.content.decode()[:2000]
    return Experiment.objects.latest("pk")


def test_a_sample_from_the_form_is_stored_shown_and_downloaded_and_the_summary_is_unchanged(owner_client, owner):
    every = _create(owner_client)
    assert "job_records" not in every.scenario  # the default (auto) is left out: same scenario, same cache keys
    (full,) = _run_all(every)
    n = full.result.summary["jobs"]
    assert n > 10 and full.records == {"policy": "auto", "kept": "all", "jobs_kept": n, "of": n}

    exp = _create(owner_client, job_records="sample:10", reuse="")
    assert exp.scenario["job_records"] == "sample:10"
    (run,) = _run_all(exp)
    assert archive.same_numbers(run.result.summary, full.result.summary)  # every number but the clock's
    assert {k: v for k, v in run.result.summary.items() if k not in archive.VOLATILE_KEYS} == {
        k: v for k, v in full.result.summary.items() if k not in archive.VOLATILE_KEYS
    }
    assert run.result.series == full.result.series
    assert run.records == {"policy": "sample:10", "kept": "sample", "jobs_kept": 10, "of": n, "sample_seed": 0}
    assert RunRecordsObject.objects.get(run=run).rows == 10

    page = owner_client.get(reverse("experiment-detail", args=[exp.pk])).content.decode()
    assert 'Per-job records asked: <span id="records-asked">sample:10</span>' in page
    assert f'<span id="records-kept">a sample of 10 of {n:,} (seed 0)</span>' in page
    assert (
        f'<span id="records-kept">all {n:,} kept</span>'
        in owner_client.get(reverse("experiment-detail", args=[every.pk])).content.decode()
    )

    resp = owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "jobs.csv"]))
    assert resp.status_code == 200 and resp["Job-Records"] == f"a sample of 10 of {n:,} (seed 0)"
    rows = list(csv.DictReader(io.StringIO(b"".join(resp.streaming_content).decode())))
    keep = keep_records(n, "sample:10", 0)
    assert keep is not None and [int(r["job"]) for r in rows] == keep.tolist()
    whole = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    owner_client.get(reverse("run-download", args=[every.pk, full.pk, "jobs.csv"])).streaming_content
                ).decode()
            )
        )
    )
    assert rows == [whole[i] for i in keep.tolist()]  # the very records of those jobs
    body = json.loads(owner_client.get(reverse("run-download", args=[exp.pk, run.pk, "summary.json"])).content)
    assert body["runs"][0]["records"]["kept"] == "sample"

    zipped = owner_client.get(reverse("experiment-download", args=[exp.pk, "archive.zip"]))
    back = archive.read_archive(io.BytesIO(b"".join(zipped.streaming_content)))
    (arun,) = back.runs
    assert arun.records == run.records and back.scenario["job_records"] == "sample:10"
    assert arun.jobs is not None
    assert (
        archive.concat_jobs(archive.iter_jobs(arun.jobs if not isinstance(arun.jobs, bytes) else [arun.jobs]))[
            "job"
        ].tolist()
        == keep.tolist()
    )

    fork = owner_client.get(reverse("experiment-fork", args=[exp.pk])).content.decode()
    assert 'value="sample:10"' in fork


def test_none_from_the_api_keeps_no_records_and_the_jobs_download_says_why(owner):
    api = Api(owner)
    resp = api.post("/api/experiments/", {"scenario": small_scenario(schedulers=["greedy"], job_records="none")})
    assert resp.status_code == 201, resp.content
    exp = Experiment.objects.get(pk=resp.json()["id"])
    assert exp.scenario["job_records"] == "none"
    (run,) = _run_all(exp)
    assert run.records is not None and run.records["kept"] == "none" and run.records["of"] > 0
    assert not RunRecordsObject.objects.filter(run=run).exists()
    assert api.get(f"/api/experiments/{exp.pk}/").json()["runs"][0]["records"]["kept"] == "none"
    for kind in ("jobs.csv", "jobs.parquet"):
        gone = api.get(f"/api/runs/{run.pk}/download/{kind}")
        assert gone.status_code == 410, kind
        assert "This run kept no per-job records" in gone.content.decode()
        gone = api.get(f"/api/experiments/{exp.pk}/download/{kind}")
        assert gone.status_code == 410 and "No run of this experiment kept per-job records" in gone.content.decode()
    assert api.get(f"/api/runs/{run.pk}/download/summary.json").status_code == 200


def test_a_bad_choice_is_refused_naming_the_field_and_stores_nothing(owner_client, owner):
    resp = owner_client.post(reverse("experiment-new"), {**GOOD, "job_records": "half"})
    assert resp.status_code == 400
    assert "per-job records must be one of auto, all, none or sample:N" in resp.content.decode()
    resp = Api(owner).post("/api/experiments/", {"scenario": small_scenario(job_records="sample:0")})
    assert resp.status_code == 400
    assert resp.json()["scenario"]["job_records"] == [
        "job_records must be one of auto, all, none or sample:N (N a whole number of jobs, at least 1), got 'sample:0'"
    ]
    assert not Experiment.objects.exists()


def test_a_packing_snapshot_of_a_run_with_only_a_sample_is_refused_naming_why(owner):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"], job_records="sample:5"))
    (run,) = _run_all(exp)
    with pytest.raises(ParameterError, match=r"kept per-job records a sample of 5 of [\d,]+ \(seed 0\); a packing"):
        create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=1800.0, spec={})
    assert not PackingAnalysis.objects.exists()


def test_a_reproduction_keeps_what_its_form_and_the_api_choose(owner_client, owner):
    """A paper figure at paper scale has tens of millions of jobs a cell: its page and API offer the choice too."""
    form = {
        "reproduction": "lotes-fig11",
        "lotes-fig11-machines_per_config": "1",
        "lotes-fig11-hours": "0.1",
        "lotes-fig11-seeds": "1",
        "lotes-fig11-job_records": "none",
    }
    assert 'name="lotes-fig11-job_records"' in owner_client.get("/reproduce/").content.decode()
    resp = owner_client.post("/reproduce/", form)
    assert resp.status_code == 302, resp.content.decode()[-2000:]
    exp = Experiment.objects.get()
    assert exp.scenario["job_records"] == "none"
    # Not a scale knob: the figure's scale is the same whatever each run keeps.
    assert exp.reproduction["scale"] == {"machines_per_config": 1, "hours": 0.1, "seeds": 1, "request_cv": 0.5}
    run = exp.runs.order_by("pk").first()
    assert execute_run(run.pk) == Status.FINISHED
    run.refresh_from_db()
    assert run.records["kept"] == "none" and not RunRecordsObject.objects.filter(run=run).exists()

    # Left blank: the default, which the scenario does not record (as the experiment form).
    resp = owner_client.post("/reproduce/", {**form, "lotes-fig11-job_records": ""})
    assert resp.status_code == 302
    assert "job_records" not in Experiment.objects.order_by("-pk").first().scenario

    api = Api(owner)
    scale = {"machines_per_config": 1, "hours": 0.1, "seeds": 1}
    resp = api.post("/api/reproductions/lotes-fig11/", {"scale": scale, "job_records": "sample:5"})
    assert resp.status_code == 201, resp.content
    assert Experiment.objects.get(pk=resp.json()["id"]).scenario["job_records"] == "sample:5"


def test_a_bad_reproduction_records_choice_is_refused_naming_the_field_and_stores_nothing(owner_client, owner):
    form = {"reproduction": "lotes-fig11", "lotes-fig11-seeds": "1", "lotes-fig11-job_records": "half"}
    resp = owner_client.post("/reproduce/", form)
    assert resp.status_code == 400
    assert "per-job records must be one of auto, all, none or sample:N" in resp.content.decode()
    resp = Api(owner).post("/api/reproductions/lotes-fig11/", {"scale": {"seeds": 1}, "job_records": "sample:0"})
    assert resp.status_code == 400
    assert "job_records must be one of auto, all, none or sample:N" in json.dumps(resp.json())
    assert not Experiment.objects.exists()
