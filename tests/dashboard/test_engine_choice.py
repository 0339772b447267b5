"""The engine is picked per experiment on the form: compiled by default, Python to check the reference.

Both give the same schedule (tests/simcore/test_kernels.py); here: the choice reaches the runs, each
run's summary says which engine ran, the page says what was asked and what ran, and a fork keeps it.
"""

from __future__ import annotations

from django.urls import reverse

from dashboard.experiments.execution import execute_run
from dashboard.models import Experiment, Run, Status
from tests.dashboard.conftest import GOOD


def _create(client, **over) -> Experiment:
    resp = client.post(reverse("experiment-new"), {**GOOD, **over})
    assert resp.status_code == 302, resp.content.decode()[:2000]
    exp = Experiment.objects.latest("pk")
    for run in Run.objects.filter(experiment=exp):
        assert execute_run(run.pk, worker="test") == Status.FINISHED
    return exp


def _summaries(exp: Experiment) -> dict[str, dict]:
    return {r.scheduler: r.result.summary for r in Run.objects.filter(experiment=exp).select_related("result")}


def test_the_default_is_compiled_and_the_scenario_stays_as_before(owner_client, owner):
    exp = _create(owner_client)
    assert "engine" not in exp.scenario  # the default is left out: same scenario, same result-cache keys
    sums = _summaries(exp)
    assert {s: v["engine"] for s, v in sums.items()} == {"greedy": "compiled", "fcfs": "compiled"}
    page = owner_client.get(reverse("experiment-detail", args=[exp.pk])).content.decode()
    assert 'Engine asked: <span id="engine-asked">compiled</span>' in page
    assert '<span id="engine-ran">compiled for 2 runs</span>' in page


def test_python_reaches_every_run_gives_the_same_numbers_and_a_fork_keeps_it(owner_client, owner):
    compiled = _summaries(_create(owner_client))
    exp = _create(owner_client, engine="python")
    assert exp.scenario["engine"] == "python"
    python = _summaries(exp)
    for s in ("greedy", "fcfs"):
        assert python[s]["engine"] == "python" and python[s].get("compile_s") in (None, 0, 0.0)
        for key in ("jobs", "completed", "mean_response_s", "p99_response_s", "max_queue_len", "utilization"):
            assert python[s][key] == compiled[s][key], (s, key)
    page = owner_client.get(reverse("experiment-detail", args=[exp.pk])).content.decode()
    assert '<span id="engine-ran">python for 2 runs</span>' in page
    fork = owner_client.get(reverse("experiment-fork", args=[exp.pk])).content.decode()
    assert '<option value="python" selected>' in fork


def test_an_unknown_engine_is_a_form_error_and_stores_nothing(owner_client, owner):
    resp = owner_client.post(reverse("experiment-new"), {**GOOD, "engine": "fortran"})
    assert resp.status_code == 400  # a form with errors is a 400, as every form here
    assert "Select a valid choice. fortran is not one of the available choices." in resp.content.decode()
    assert not Experiment.objects.exists()
