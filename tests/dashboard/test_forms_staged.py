"""The staged scheduler's policy on the experiment form: a bad text is refused next to its field."""

from __future__ import annotations

from django.urls import reverse

from dashboard.models import Experiment
from tests.dashboard.conftest import GOOD

FIELD = "scheduler__staged__policy"


def post(client, **over):
    return client.post(reverse("experiment-new"), {**GOOD, "schedulers": ["staged"], **over})


def test_a_bad_policy_is_refused_next_to_its_field_naming_the_stage_and_the_valid_atoms(owner_client):
    resp = post(owner_client, **{FIELD: "T2=Nope"})
    assert resp.status_code == 400
    html = resp.content.decode().replace("&#x27;", "'")
    block = html.split(f'id="field-{FIELD}"', 1)[1].split('<div class="field', 1)[0]
    assert "policy stage T2: unknown atom 'Nope' for stage T2; valid atoms: Submission-Time" in block
    assert Experiment.objects.count() == 0


def test_a_policy_is_stored_in_canonical_form(owner_client):
    resp = post(owner_client, **{FIELD: "r5=best-fit  t2=task-duration(desc)"})
    assert resp.status_code == 302
    stored = Experiment.objects.get().scenario["scheduler_params"]["staged"]["policy"]
    assert stored == ("J1=Interactive J2=Always J3=Submission-Time(asc) T1=Always T2=Task-Duration(desc) R5=Best-Fit")
