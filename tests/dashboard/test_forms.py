"""Bad input on every form: a clear message next to the field, and nothing stored."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from dashboard.experiments.forms import QUICK_START, ExperimentForm, parse_seeds, seeds_text
from dashboard.experiments.services import SERVER_PATH_PARAMS
from dashboard.models import ClusterUpload, Experiment, Run
from simcore.presets import CLUSTERS, WORKLOADS
from simcore.schedulers import SCHEDULERS
from tests.dashboard.conftest import GOOD


def post(client, **over):
    data = {**GOOD, **over}
    data = {k: v for k, v in data.items() if v is not None}
    return client.post(reverse("experiment-new"), data)


def test_the_form_offers_every_registered_preset_and_scheduler(owner):
    form = ExperimentForm(owner=owner)
    offered = {v for group, choices in form.fields["cluster"].choices for v, _ in choices}
    assert offered == {f"preset:{n}" for n in CLUSTERS.names()}
    offered = {v for group, choices in form.fields["workload"].choices for v, _ in choices}
    assert offered == {f"preset:{n}" for n in WORKLOADS.names()}
    assert [v for v, _ in form.fields["schedulers"].choices] == SCHEDULERS.names()
    # Every parameter of every preset and scheduler has a field with the registry's default (or the
    # quick-start scenario's value), except those naming a file on the server, which the web never sets.
    for kind, reg in (("cluster", CLUSTERS), ("workload", WORKLOADS), ("scheduler", SCHEDULERS)):
        for name, obj in reg.items():
            for p in obj.params:
                key = f"{kind}__{name}__{p.name}"
                if p.name in SERVER_PATH_PARAMS:
                    assert key not in form.fields
                else:
                    assert form.fields[key].initial == QUICK_START.get(key, p.default)


def test_a_valid_post_creates_the_experiment_and_one_run_per_scheduler_and_seed(owner_client, owner):
    resp = post(owner_client, seeds="0-2")
    assert resp.status_code == 302
    exp = Experiment.objects.get()
    assert exp.scenario["cluster"] == {"preset": "google-balanced", "params": {"machines_per_config": 2}}
    assert exp.scenario["seeds"] == [0, 1, 2] and exp.scenario["load"] == 0.9 and exp.scenario["hours"] == 1.0
    assert Run.objects.filter(experiment=exp).count() == 6
    assert exp.cluster_label == "google-balanced" and exp.workload_label == "google-like"


def test_parameters_of_presets_not_chosen_are_ignored(owner_client):
    resp = post(owner_client, **{"workload__lotes-phi__phi": "not a number"})
    assert resp.status_code == 302


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("load", "", "This field is required"),
        ("load", "abc", "Enter a number"),
        ("load", "-1", "greater than or equal to 0.01"),
        ("load", "inf", "Enter a number"),
        ("hours", "0", "greater than or equal to 0.01"),
        ("seeds", "", "This field is required"),
        ("seeds", "x", "'x' is not a non-negative integer"),
        ("seeds", "-1", "is not a non-negative integer"),
        ("seeds", "3-1", "goes backwards"),
        ("seeds", "1,1", "listed twice"),
        ("seeds", "0-99", "range '0-99' has 100 seeds; at most 50"),
        ("seeds", "4294967296", "seed 4294967296 is outside 0 to 2^32-1"),
        ("schedulers", [], "This field is required"),
        ("schedulers", ["nope"], "Select a valid choice"),
        ("cluster", "preset:nope", "Select a valid choice"),
        ("cluster", "upload:999", "Select a valid choice"),
        ("workload", "", "This field is required"),
        ("cluster__google-balanced__machines_per_config", "0", "greater than or equal to 1"),
        ("cluster__google-balanced__machines_per_config", "1.5", "Enter a whole number"),
    ],
)
def test_bad_values_get_a_message_next_to_the_field_and_store_nothing(owner_client, field, value, message):
    resp = post(owner_client, **{field: value})
    assert resp.status_code == 400
    html = resp.content.decode()
    assert f'id="error-{field}"' in html
    block = html.split(f'id="field-{field}"', 1)[1].split('<div class="field', 1)[0]
    assert message in block.replace("&#x27;", "'")
    assert Experiment.objects.count() == 0 and Run.objects.count() == 0


@override_settings(SIMCORE_MAX_RUNS=4)
def test_too_many_runs_are_refused(owner_client):
    resp = post(owner_client, seeds="0-2")
    assert resp.status_code == 400
    assert resp.context["form"].errors["seeds"] == [
        "the grid has 6 runs (2 schedulers x 3 seeds); at most 4 (setting SIMCORE_MAX_RUNS)"
    ]
    assert Experiment.objects.count() == 0


def test_another_users_upload_cannot_be_chosen(owner_client, other):
    up = ClusterUpload.objects.create(
        owner=other, name="theirs", filename="c.json", content_gz=b"", size_bytes=0, sha256="", info={}
    )
    resp = post(owner_client, cluster=f"upload:{up.pk}")
    assert resp.status_code == 400 and 'id="error-cluster"' in resp.content.decode()
    assert Experiment.objects.count() == 0


def test_parse_seeds_reads_lists_and_ranges():
    assert parse_seeds("0") == [0]
    assert parse_seeds(" 0, 2 ,5-7") == [0, 2, 5, 6, 7]


def test_seeds_text_is_the_inverse_of_parse_seeds():
    assert seeds_text([0, 1, 2, 5, 7, 8]) == "0-2,5,7-8"
    for seeds in ([0], [3, 1], list(range(50)), [0, 2, 4]):
        assert parse_seeds(seeds_text(seeds)) == sorted(seeds)


def test_a_server_file_parameter_cannot_be_set_from_the_web(owner_client):
    # ncbi presets read a profile table from a path: a web user must not point it at a server file.
    resp = post(
        owner_client,
        cluster="preset:ncbi-heterogeneous",
        workload="preset:ncbi-blast",
        **{"cluster__ncbi-heterogeneous__profile": "/etc/passwd", "workload__ncbi-blast__profile": "/etc/passwd"},
    )
    assert resp.status_code in (302, 400)
    exp = Experiment.objects.first()
    assert exp is None or (
        exp.scenario["cluster"]["params"].get("profile") in ("", None)
        and exp.scenario["workload"]["params"].get("profile") in ("", None)
    )


def test_unbounded_integer_parameters_have_a_web_ceiling(owner_client, monkeypatch):
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", str(10**10))  # so the web ceiling, not the machine limit, answers
    resp = post(owner_client, **{"cluster__google-balanced__machines_per_config": "100000000"})
    assert resp.status_code == 400 and "at most 100000" in resp.content.decode()
    assert Experiment.objects.count() == 0


def test_the_form_page_needs_a_login(client, db):
    resp = client.get(reverse("experiment-new"))
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]
    assert client.post(reverse("experiment-new"), GOOD).status_code == 302
    assert Experiment.objects.count() == 0
