"""Pages, permissions, filters, compare: the worker's code path run in-process (no broker needed)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from dashboard.common.sharing import set_sharing
from dashboard.experiments.execution import execute_run, store_outcome
from dashboard.experiments.jobs import n_jobs
from dashboard.experiments.services import cancel_run, create_experiment
from dashboard.models import Experiment, Run, RunRecordsObject, RunResult, Status
from tests.dashboard.conftest import small_scenario


def finished(owner, **scenario) -> Experiment:
    """An experiment whose runs went through execute_run, as in a worker."""
    exp = create_experiment(owner, small_scenario(**scenario))
    for run in exp.runs.all():
        assert execute_run(run.pk, worker="test") == Status.FINISHED
    exp.refresh_status()  # on_commit hooks do not fire inside a test transaction
    return exp


def test_the_experiment_page_shows_the_summary_charts_seed_and_version(owner_client, owner):
    exp = finished(owner, schedulers=["greedy", "lotes"], seeds=[7])
    resp = owner_client.get(exp.get_absolute_url())
    html = resp.content.decode()
    assert resp.status_code == 200
    runs = {r.scheduler: r for r in exp.runs.select_related("result")}
    for r in runs.values():
        s = r.result.summary
        assert f"{s['p99_response_s']:.4g}" in html and f"{s['lambda_star']:.4g}" in html
        assert r.code_version in html
    assert "Seeds 7." in html
    # The LoTES offline solution is shown (lambda*, bins, machines per bin).
    assert "Offline solution: lotes" in html
    charts = resp.context["charts"]
    assert [t["legendgroup"] for t in charts["chart-cdf"]["data"]] == ["greedy", "lotes"]
    assert [t["name"] for t in charts["chart-per-day"]["data"]] == ["greedy", "lotes"]


def test_a_page_never_reads_the_per_job_blob(owner_client, owner):
    exp = finished(owner)
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as ctx:
        assert owner_client.get(exp.get_absolute_url()).status_code == 200
    assert not any("dashboard_runjobs" in q["sql"] for q in ctx.captured_queries)
    assert len(ctx.captured_queries) < 15


def test_a_teammate_reads_but_only_the_owner_cancels_and_an_outsider_gets_404(client, owner, other, team, outsider):
    exp = create_experiment(owner, small_scenario(), team=team, visibility="team")
    run = exp.runs.first()
    client.force_login(other)  # a member of the team, not its owner
    assert client.get(exp.get_absolute_url()).status_code == 200
    assert client.post(reverse("run-cancel", args=[run.pk])).status_code == 403
    assert client.post(reverse("experiment-cancel", args=[exp.pk])).status_code == 403
    run.refresh_from_db()
    assert run.status == Status.PENDING
    client.force_login(outsider)
    assert client.get(exp.get_absolute_url()).status_code == 404
    assert client.post(reverse("experiment-cancel", args=[exp.pk])).status_code == 404
    client.force_login(owner)
    assert client.post(reverse("experiment-cancel", args=[exp.pk])).status_code == 302
    assert set(exp.runs.values_list("status", flat=True)) == {Status.CANCELLED}
    # A cancelled run is never claimed afterwards.
    assert execute_run(run.pk) == Status.CANCELLED


def test_anonymous_users_are_sent_to_the_login_page(client, owner):
    exp = create_experiment(owner, small_scenario())
    for url in (
        exp.get_absolute_url(),
        reverse("experiment-list"),
        reverse("compare"),
        reverse("uploads"),
        reverse("experiment-progress", args=[exp.pk]),
        reverse("experiment-download", args=[exp.pk, "summary.json"]),
    ):
        resp = client.get(url)
        assert resp.status_code == 302 and "/accounts/login/" in resp["Location"], url


def test_unknown_objects_and_downloads_are_404(owner_client, owner):
    assert owner_client.get(reverse("experiment-detail", args=[999])).status_code == 404
    assert owner_client.get(reverse("run-download", args=[999, 999, "jobs.csv"])).status_code == 404
    exp = create_experiment(owner, small_scenario())
    assert owner_client.get(reverse("experiment-download", args=[exp.pk, "nope.exe"])).status_code == 404


def test_the_list_filters_and_paginates(owner_client, owner, other, team):
    for i in range(27):
        create_experiment(owner, small_scenario(schedulers=["greedy"] if i % 2 else ["fcfs"]))
    create_experiment(
        other, small_scenario(workload={"preset": "lotes-phi", "params": {}}), team=team, visibility="team"
    )
    create_experiment(other, small_scenario())  # bob's private one: not listed for alice
    url = reverse("experiment-list")
    first = owner_client.get(url)
    assert len(first.context["page"].object_list) == 25 and first.context["page"].paginator.count == 28
    assert owner_client.get(url, {"owner": "me"}).context["page"].paginator.count == 27
    assert owner_client.get(url, {"owner": "bob"}).context["page"].paginator.count == 1
    assert owner_client.get(url, {"team": team.pk}).context["page"].paginator.count == 1
    assert owner_client.get(url, {"workload": "lotes-phi"}).context["page"].paginator.count == 1
    assert owner_client.get(url, {"scheduler": "greedy"}).context["page"].paginator.count == 14
    assert owner_client.get(url, {"status": "finished"}).context["page"].paginator.count == 0
    page2 = owner_client.get(url, {"owner": "me", "page": 2})
    assert len(page2.context["page"].object_list) == 2
    assert "owner=me&page=1" in page2.content.decode()


def test_the_compare_page_overlays_runs_of_different_experiments_it_can_see(owner_client, owner, other, team):
    a = finished(owner, schedulers=["greedy"])
    b = finished(other, schedulers=["fcfs"], seeds=[1])
    ra, rb = a.runs.get(), b.runs.get()
    # bob's experiment is private: alice cannot overlay it, even by naming its run.
    resp = owner_client.get(reverse("compare"), {"run": [ra.pk, rb.pk]})
    assert [r.pk for r in resp.context["chosen"]] == [ra.pk]
    assert rb.pk not in [r.pk for r in resp.context["candidates"]]
    set_sharing(b, team=team, visibility="team")
    resp = owner_client.get(reverse("compare"), {"run": [ra.pk, rb.pk]})
    assert resp.status_code == 200
    names = [t["name"] for t in resp.context["charts"]["chart-cdf"]["data"]]
    assert len(names) == 2 and "greedy s0" in names[0] and "fcfs s1" in names[1]


def test_a_finished_run_has_all_results_and_a_cancelled_one_none(owner):
    exp = finished(owner, schedulers=["greedy"])
    run = exp.runs.get()
    assert RunResult.objects.filter(run=run).exists() and n_jobs(run) == run.jobs_total
    exp2 = create_experiment(owner, small_scenario(schedulers=["greedy"]))
    run2 = exp2.runs.get()
    run2.transition(Status.RUNNING)
    cancel_run(Run.objects.get(pk=run2.pk))
    from simcore.scenario import run_scenario

    outcome = run_scenario(exp2.scenario, "greedy", 0)
    assert store_outcome(run2, outcome) is False  # cancelled meanwhile: nothing written
    assert not RunResult.objects.filter(run=run2).exists() and not RunRecordsObject.objects.filter(run=run2).exists()


def test_transitions_are_guarded_and_claims_are_exclusive(owner):
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"]))
    a = exp.runs.get()
    b = Run.objects.get(pk=a.pk)  # a second worker's view of the same row
    assert a.transition(Status.RUNNING) is True
    assert b.transition(Status.RUNNING) is False  # the conditional UPDATE lost: someone claimed it first
    with pytest.raises(ValueError, match="pending -> finished"):
        b.transition(Status.FINISHED)
    assert a.transition(Status.FAILED, error="boom") is True
    with pytest.raises(ValueError):
        a.transition(Status.FINISHED)


def test_the_experiment_status_follows_its_runs(owner):
    exp = create_experiment(owner, small_scenario())
    runs = list(exp.runs.all())
    assert exp.refresh_status() == Status.PENDING
    runs[0].transition(Status.RUNNING)
    assert exp.refresh_status() == Status.RUNNING
    runs[0].transition(Status.FINISHED)
    assert exp.refresh_status() == Status.RUNNING  # one done, one still pending
    runs[1].transition(Status.RUNNING)
    runs[1].transition(Status.FAILED, error="x")
    assert exp.refresh_status() == Status.FAILED


def test_progress_json_reports_each_run(owner_client, owner):
    exp = create_experiment(owner, small_scenario())
    data = owner_client.get(reverse("experiment-progress", args=[exp.pk])).json()
    assert data["status"] == "pending"
    assert [(r["scheduler"], r["status"], r["fraction"]) for r in data["runs"]] == [
        ("greedy", "pending", 0.0),
        ("fcfs", "pending", 0.0),
    ]
