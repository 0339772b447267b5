"""A scale too small to show anything says so: on the forms before a run ("Check the scale"), on the result after."""

from __future__ import annotations

import gzip
import json

from django.urls import reverse

from dashboard.experiments.execution import execute_run
from dashboard.experiments.forms import QUICK_START
from dashboard.experiments.services import create_experiment
from dashboard.models import ClusterUpload, Experiment, Status
from tests.dashboard.conftest import CLUSTER, GOOD, small_scenario

QUICK = {
    "cluster": QUICK_START["cluster"],
    "cluster__google-balanced__machines_per_config": "20",
    "workload": QUICK_START["workload"],
    "workload__lotes-phi__load_basis": "assignment",
    "workload__lotes-phi__request_cv": "0",
    "load": "0.97",
    "hours": "25",
    "schedulers": QUICK_START["schedulers"],
    "seeds": "0",
}


def test_checking_the_quick_start_scale_finds_nothing_to_warn_of_and_runs_nothing(owner_client):
    resp = owner_client.post(reverse("experiment-new"), {**QUICK, "check": "1"})
    assert resp.status_code == 200 and resp.context["scale_check"] == [] and resp.context["scale_checked"]
    html = resp.content.decode()
    assert "Scale checked: enough jobs" in html and "scale-warnings" not in html
    assert not Experiment.objects.exists()


def test_checking_a_tiny_scale_warns_on_the_form_before_anything_runs(owner_client):
    data = {**GOOD, "cluster__google-balanced__machines_per_config": "1", "hours": "0.01", "check": "1"}
    resp = owner_client.post(reverse("experiment-new"), data)
    assert resp.status_code == 200
    (few, *_) = resp.context["scale_check"]
    assert few.startswith("About ") and "jobs a run: too few" in few
    assert "This scale may show nothing:" in resp.content.decode()
    assert not Experiment.objects.exists()


def test_the_reproduce_page_checks_a_figure_11_scale_in_its_own_section(owner_client):
    resp = owner_client.post(
        "/reproduce/",
        {
            "reproduction": "lotes-fig11",
            "lotes-fig11-machines_per_config": "1",
            "lotes-fig11-hours": "0.01",
            "lotes-fig11-seeds": "1",
            "lotes-fig11-request_cv": "0.5",
            "check": "1",
        },
    )
    assert resp.status_code == 200 and not Experiment.objects.exists()
    (fig11,) = [i for i in resp.context["items"] if i["rep"].name == "lotes-fig11"]
    assert [w.split(" ")[0] for w in fig11["warnings"]] == ["About", "Jobs"]
    assert all(i["warnings"] == [] and not i["checked"] for i in resp.context["items"] if i is not fig11)
    section = resp.content.decode().split('id="reproduction-lotes-fig11"')[1].split("</section>")[0]
    assert "This scale may show nothing:" in section and "arrive over only 36 s" in section


def test_the_result_page_says_what_a_run_too_small_could_not_show(owner_client, owner):
    exp = create_experiment(owner, small_scenario(hours=0.01, schedulers=["greedy"]))
    (run,) = exp.runs.all()
    assert execute_run(run.pk, worker="test") == Status.FINISHED
    jobs = exp.runs.get().result.summary["jobs"]
    resp = owner_client.get(exp.get_absolute_url())
    assert resp.context["scale_warnings"][0].startswith(f"Runs had as few as {jobs} jobs")
    assert "At this scale the runs cannot show the schedulers differ:" in resp.content.decode()


def test_checking_a_scenario_with_an_uploaded_file_says_the_file_is_judged_after_the_run(owner_client, owner):
    content = json.dumps(CLUSTER).encode()
    up = ClusterUpload.objects.create(
        owner=owner,
        name="mine",
        filename="c.json",
        content_gz=gzip.compress(content, mtime=0),
        size_bytes=len(content),
        sha256="",
        info={"resources": ["cpu", "mem"]},
    )
    resp = owner_client.post(reverse("experiment-new"), {**GOOD, "cluster": f"upload:{up.pk}", "check": "1"})
    assert resp.status_code == 200 and resp.context["scale_unread"] is True
    html = resp.content.decode()
    assert "an uploaded file's scale is judged after the run" in html and "Scale checked" not in html
    assert not Experiment.objects.exists()
