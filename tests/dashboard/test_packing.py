"""Packing analyses on the platform: who sees and changes what, form and API errors, downloads, lost work.

The worker's code path (:func:`dashboard.packing.services.execute_analysis`)
runs in this process here; tests/dashboard/test_packing_worker.py runs it in
a real worker. alice owns the team "lab", bob is a member, dave a viewer,
carol is in another team.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
from datetime import timedelta
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse
from django.utils import timezone

from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import (
    ClusterUpload,
    ImportStatus,
    PackingAnalysis,
    PackingSource,
    Run,
    Status,
    Team,
    TraceUpload,
    Visibility,
)
from dashboard.packing.forms import initial_from
from dashboard.packing.services import SourceChoice, create_analysis, execute_analysis
from dashboard.packing.work import recover_lost_analyses
from dashboard.traces import imports
from simcore.api import resolve_cluster
from simcore.packing.analysis import AnalysisSpec, analyse, series_tables
from simcore.packing.sources import from_result, from_trace
from simcore.scenario import run_scenario
from simcore.traces.tracefile import read_trace
from tests.dashboard.conftest import CLUSTER, TRACE, small_scenario

#: Small enough for a test: 20 machines, ~240 tasks at 1800 s, two trials.
SPEC = {
    "trials": 2,
    "factors": [1.0, 1.5],
    "taus": [0.0, 0.01],
    "units": [0.05, 0.5],
    "orderings": ["arrival", "sum"],
}
T = 1800.0


def finished_run(owner: User, team: Team | None = None, visibility: str = Visibility.PRIVATE) -> Run:
    exp = create_experiment(owner, small_scenario(schedulers=["greedy"]), team=team, visibility=visibility)
    run = exp.runs.get()
    assert execute_run(run.pk) == Status.FINISHED
    run.refresh_from_db()
    return run


def finished_analysis(owner: User, run: Run, **kw: Any) -> PackingAnalysis:
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC, **kw)
    assert execute_analysis(a.pk) == Status.FINISHED
    a.refresh_from_db()
    return a


@pytest.fixture
def team_analysis(owner: User, team: Team) -> PackingAnalysis:
    """alice's finished analysis of her team experiment's run, shared with the team."""
    run = finished_run(owner, team, Visibility.TEAM)
    return finished_analysis(owner, run, team=team, visibility=Visibility.TEAM, name="lab packing")


# ---------------------------------------------------------------------------- numbers


def test_an_analysis_of_a_run_stores_pinned_numbers(owner: User) -> None:
    """Seeded golden values of the small scenario's Greedy run at T, recorded from the analysis.

    (Issue 27: this test used to recompute the analysis with the library, which agrees with itself
    by construction.) A change to the simulation, the snapshot at T, a technique or its seeding
    changes them.
    """
    a = finished_analysis(owner, finished_run(owner))
    r = a.results
    assert r["snapshot"]["meta"] == {"t_s": 1800.0, "queued": 4, "source": "run", "running": 233}
    assert (r["snapshot"]["tasks"], r["snapshot"]["pending"], r["snapshot"]["machines"]) == (237, 4, 20)
    used = r["utilisation"]["utilisation"]
    assert (used["cpu"]["p"], used["mem"]["p"]) == (pytest.approx(0.7333369474582322), pytest.approx(0.726238586767827))
    holes = r["holes"]["utilisation"]
    assert holes["cpu"]["p"] == pytest.approx([0.7633369474582322, 0.7333369474582322])
    assert holes["mem"]["p"] == pytest.approx([0.7579823790928835, 0.726238586767827])
    assert r["holes"]["units"]["p"] == [15.0, 0.0]  # the holes counted in units of 0.05 and of 0.5
    assert r["compaction"]["trials"] == [[24, 23], [23, 23]]
    assert r["compaction"]["machines"] == {"p": [23.9, 23.0], "lo": [23.0, 23.0], "hi": [24.0, 23.0]}
    assert a.fraction == 1.0 and a.code_version


def test_an_analysis_of_an_imported_trace_takes_the_tasks_running_at_t(owner: User, client: Any) -> None:
    client.force_login(owner)
    client.post(
        reverse("uploads"),
        {
            "kind": "cluster",
            "cluster-name": "two",
            "cluster-file": SimpleUploadedFile("c.json", json.dumps(CLUSTER).encode()),
        },
    )
    client.post(
        reverse("uploads"),
        {
            "kind": "trace",
            "trace-name": "t",
            "trace-file": SimpleUploadedFile("t.csv.gz", gzip.compress(TRACE.encode())),
        },
    )
    trace = TraceUpload.objects.get()
    assert imports.execute_import(trace.pk) == ImportStatus.READY
    trace.refresh_from_db()
    cu = ClusterUpload.objects.get()
    spec = {**SPEC, "placed_by": "sum"}
    a = create_analysis(owner, SourceChoice(PackingSource.TRACE, trace=trace, cluster_upload=cu), time_s=100, spec=spec)
    assert execute_analysis(a.pk) == Status.FINISHED
    a.refresh_from_db()
    cluster = resolve_cluster(_write(CLUSTER))
    snap = from_trace(read_trace(io.BytesIO(TRACE.encode())), cluster, 100.0)
    # Rows i with 2.5 i <= 100 < 2.5 i + 30 + 10 (i % 7).
    assert snap.n_tasks == sum(1 for i in range(200) if 2.5 * i <= 100 < 2.5 * i + 30 + (i % 7) * 10)
    assert a.results == json.loads(json.dumps(analyse(snap, AnalysisSpec.from_dict(spec))))


def _write(cluster: dict[str, Any]) -> str:
    import tempfile

    f = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
    json.dump(cluster, f)
    f.close()
    return f.name


# ---------------------------------------------------------------------------- who sees what


def test_the_owner_reads_the_page_with_every_figure(client: Any, owner: User) -> None:
    a = finished_analysis(owner, finished_run(owner))
    client.force_login(owner)
    html = client.get(a.get_absolute_url()).content.decode()
    for chart in ("chart-holes", "chart-inflation-pending", "chart-compaction", "chart-compare-compaction"):
        assert f'id="{chart}"' in html
    # Plotly's basic bundle, fetched by app.js when a chart is drawn: no blocking script in <head> (issue 28)
    assert 'data-plotly="/static/dashboard/plotly-basic.min.js"' in html and 'id="charts-data"' in html
    assert "plotly.min.js" not in html


def test_a_teammate_reads_a_team_analysis(client: Any, other: User, team_analysis: PackingAnalysis) -> None:
    client.force_login(other)
    assert client.get(team_analysis.get_absolute_url()).status_code == 200
    assert client.get(reverse("packing-download", args=[team_analysis.pk, "holes.csv"])).status_code == 200


def test_a_teammate_cannot_see_a_private_analysis(client: Any, owner: User, other: User, team: Team) -> None:
    a = finished_analysis(owner, finished_run(owner, team, Visibility.TEAM))  # the run is shared, the analysis not
    client.force_login(other)
    assert client.get(a.get_absolute_url()).status_code == 404
    assert client.get(reverse("packing-download", args=[a.pk, "results.json"])).status_code == 404


def test_an_outsider_sees_nothing_of_a_team_analysis(
    client: Any, outsider: User, team_analysis: PackingAnalysis
) -> None:
    client.force_login(outsider)
    for url in (
        team_analysis.get_absolute_url(),
        reverse("packing-progress", args=[team_analysis.pk]),
        reverse("packing-download", args=[team_analysis.pk, "compaction.parquet"]),
        reverse("api-packing-detail", args=[team_analysis.pk]),
    ):
        assert client.get(url).status_code == 404, url
    assert "lab packing" not in client.get(reverse("packing-list")).content.decode()


def test_a_team_owner_may_cancel_a_members_shared_analysis_and_a_viewer_may_not(
    client: Any, owner: User, other: User, viewer: User, team: Team
) -> None:
    run = finished_run(other, team, Visibility.TEAM)
    a = create_analysis(
        other, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC, team=team, visibility=Visibility.TEAM
    )
    client.force_login(viewer)
    assert client.post(reverse("packing-cancel", args=[a.pk])).status_code == 403
    a.refresh_from_db()
    assert a.status == Status.PENDING
    client.force_login(owner)
    assert client.post(reverse("packing-cancel", args=[a.pk])).status_code == 302
    a.refresh_from_db()
    assert a.status == Status.CANCELLED
    assert execute_analysis(a.pk) == Status.CANCELLED  # a worker that gets it later leaves it alone


def test_only_the_owner_changes_sharing(client: Any, other: User, team_analysis: PackingAnalysis) -> None:
    client.force_login(other)
    resp = client.post(reverse("packing-share", args=[team_analysis.pk]), {"visibility": "public"})
    assert resp.status_code == 403
    team_analysis.refresh_from_db()
    assert team_analysis.visibility == Visibility.TEAM and team_analysis.share_token is None


def test_a_public_link_shows_the_analysis_to_anyone_until_it_is_revoked(
    client: Any, owner: User, team: Team, team_analysis: PackingAnalysis
) -> None:
    client.force_login(owner)
    client.post(reverse("packing-share", args=[team_analysis.pk]), {"team": team.pk, "visibility": "public"})
    team_analysis.refresh_from_db()
    token = team_analysis.share_token
    assert token
    client.logout()
    page = client.get(reverse("packing-shared-detail", args=[token]))
    assert page.status_code == 200 and 'id="chart-compaction"' in page.content.decode()
    assert client.get(reverse("packing-shared-download", args=[token, "inflation.csv"])).status_code == 200
    client.force_login(owner)
    client.post(reverse("packing-share", args=[team_analysis.pk]), {"team": team.pk, "visibility": "team"})
    client.logout()
    assert client.get(reverse("packing-shared-detail", args=[token])).status_code == 404


def test_a_teammate_analyses_a_team_run_in_their_own_name(client: Any, owner: User, other: User, team: Team) -> None:
    run = finished_run(owner, team, Visibility.TEAM)
    client.force_login(other)
    assert client.get(reverse("packing-new") + f"?run={run.pk}").status_code == 200
    resp = client.post(reverse("packing-new"), _form(run))
    assert resp.status_code == 302, resp.content.decode()[:2000]
    a = PackingAnalysis.objects.get()
    assert a.owner == other and a.run == run and a.visibility == Visibility.PRIVATE and a.status == Status.PENDING


def test_an_outsider_cannot_start_an_analysis_of_someone_elses_run(client: Any, owner: User, outsider: User) -> None:
    run = finished_run(owner)
    client.force_login(outsider)
    assert client.get(reverse("packing-new") + f"?run={run.pk}").status_code == 404
    resp = client.post(reverse("packing-new"), _form(run))
    assert resp.status_code == 400 and not PackingAnalysis.objects.exists()  # not among the runs offered


# ---------------------------------------------------------------------------- form errors


def _form(run: Run, **over: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "source": "run",
        "run": str(run.pk),
        "time_s": str(T),
        "techniques": ["utilisation", "holes", "inflation", "compaction", "compare"],
        "placed_by": "as-is",
        "repack_with": "arrival",
        "orderings": ["arrival", "sum"],
        "units": "0.05,0.5",
        "factors": "1,1.5",
        "taus": "0,0.01",
        "trials": "2",
        "seed": "0",
        "visibility": "private",
    }
    data.update(over)
    return data


@pytest.mark.parametrize(
    ("over", "field", "message"),
    [
        ({"time_s": "0"}, "time_s", "the snapshot at t = 0 s is empty"),
        ({"time_s": "1e9"}, "time_s", "snapshot time must be in [0, "),
        ({"orderings": ["arrival", "size"]}, "orderings", "Select a valid choice. size is not one of"),
        ({"taus": "0,1"}, "taus", "tau (fraction of tasks allowed to pend) must be in [0, 1), got 1.0"),
        ({"taus": "-0.01"}, "taus", "must be in [0, 1), got -0.01"),
        ({"units": "0.05,0"}, "units", "unit size U must be a positive fraction of the median machine, got 0.0"),
        ({"units": "-1"}, "units", "got -1.0"),
        ({"factors": "0.5"}, "factors", "scale factors must be &gt;= 1, got 0.5"),
        ({"units": "abc"}, "units", "unit sizes: &#x27;abc&#x27; is not a number"),
        ({"trials": "0"}, "trials", "Ensure this value is greater than or equal to 1"),
        (
            {"scheduler_params": "tetris.bogus=1"},
            "scheduler_params",
            "scheduler &#x27;tetris&#x27; has no parameter &#x27;bogus&#x27;; valid parameters: work_weight",
        ),
        ({"scheduler_params": "nope.x=1"}, "scheduler_params", "unknown scheduler &#x27;nope&#x27;"),
        ({"scheduler_params": "tetris.work_weight=-1"}, "scheduler_params", "must be at least 0.0, got -1.0"),
        ({"scheduler_params": "tetris=1"}, "scheduler_params", "expected scheduler.parameter=value"),
    ],
)
def test_bad_input_is_a_form_error_on_its_field_and_nothing_is_stored(
    client: Any, owner: User, over: dict[str, Any], field: str, message: str
) -> None:
    run = finished_run(owner)
    client.force_login(owner)
    resp = client.post(reverse("packing-new"), _form(run, **over))
    html = resp.content.decode()
    assert resp.status_code == 400
    assert f'id="error-{field}"' in html
    assert message in html, html[html.find("error-") - 200 : html.find("error-") + 400]
    assert not PackingAnalysis.objects.exists()


def test_the_form_stores_known_scheduler_params_and_start_again_shows_them(client: Any, owner: User) -> None:
    run = finished_run(owner)
    client.force_login(owner)
    resp = client.post(reverse("packing-new"), _form(run, scheduler_params="tetris.work_weight=0.5"))
    assert resp.status_code == 302
    a = PackingAnalysis.objects.get()
    assert a.spec["scheduler_params"] == {"tetris": {"work_weight": 0.5}}
    assert initial_from(a)["scheduler_params"] == "tetris.work_weight=0.5"


def test_a_trace_must_be_placed_by_a_policy(client: Any, owner: User) -> None:
    client.force_login(owner)
    client.post(
        reverse("uploads"),
        {"kind": "trace", "trace-name": "t", "trace-file": SimpleUploadedFile("t.csv", TRACE.encode())},
    )
    trace = TraceUpload.objects.get()
    assert imports.execute_import(trace.pk) == ImportStatus.READY
    data = {
        **_form(finished_run(owner)),
        "source": "trace",
        "trace": str(trace.pk),
        "trace_cluster": "preset:google-2011",
    }
    resp = client.post(reverse("packing-new"), data)
    assert resp.status_code == 400
    assert "a trace records no placements" in resp.content.decode()
    assert not PackingAnalysis.objects.exists()


# ---------------------------------------------------------------------------- downloads


def test_every_series_downloads_as_csv_and_parquet_with_the_stored_numbers(client: Any, owner: User) -> None:
    a = finished_analysis(owner, finished_run(owner))
    client.force_login(owner)
    tables = series_tables(a.results)
    assert set(tables) == {"utilisation", "holes", "inflation", "compaction", "compaction_trials", "compare"}
    for name, rows in tables.items():
        body = client.get(reverse("packing-download", args=[a.pk, f"{name}.csv"])).content.decode()
        got = list(csv.DictReader(io.StringIO(body)))
        assert len(got) == len(rows)
        pq_resp = client.get(reverse("packing-download", args=[a.pk, f"{name}.parquet"]))
        table = pq.read_table(io.BytesIO(b"".join(pq_resp.streaming_content)))
        assert table.num_rows == len(rows)
        if "point" in rows[0]:
            np.testing.assert_allclose([float(r["point"]) for r in got], [r["point"] for r in rows])
            np.testing.assert_allclose(table.column("point").to_pylist(), [r["point"] for r in rows])
    full = json.loads(client.get(reverse("packing-download", args=[a.pk, "results.json"])).content)
    assert full["compaction"] == a.results["compaction"]


def test_an_unknown_download_lists_the_valid_ones(client: Any, owner: User) -> None:
    a = finished_analysis(owner, finished_run(owner))
    client.force_login(owner)
    resp = client.get(reverse("api-packing-download", args=[a.pk, "speed.csv"]))
    assert resp.status_code == 404
    assert "holes.parquet" in resp.json()["detail"]


# ---------------------------------------------------------------------------- API


def _api(client: Any, user: User) -> Any:
    client.force_login(user)
    return client


def test_the_api_starts_an_analysis_and_reads_it_back(client: Any, owner: User) -> None:
    run = finished_run(owner)
    c = _api(client, owner)
    resp = c.post(
        reverse("api-packing-list"),
        {"source": {"run": run.pk}, "time_s": T, "spec": SPEC, "name": "via api"},
        content_type="application/json",
    )
    assert resp.status_code == 201, resp.content
    a = PackingAnalysis.objects.get()
    assert resp.json()["id"] == a.pk and a.name == "via api" and a.status == Status.PENDING
    assert execute_analysis(a.pk) == Status.FINISHED
    body = c.get(reverse("api-packing-detail", args=[a.pk])).json()
    assert body["status"] == "finished" and body["results"]["snapshot"]["tasks"] > 100
    assert any(u.endswith("/download/holes.parquet") for u in body["downloads"])
    assert [x["id"] for x in c.get(reverse("api-packing-list")).json()["results"]] == [a.pk]


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ({"taus": [0.5, 1.2]}, "tau (fraction of tasks allowed to pend) must be in [0, 1), got 1.2"),
        ({"units": [0]}, "unit size U must be a positive fraction of the median machine, got 0.0"),
        ({"orderings": ["random"]}, "unknown ordering 'random'; valid orderings: arrival, cpu, mem, sum"),
        ({"speed": 1}, "unknown key 'speed'"),
        (
            {"schedulers": ["tetris"], "scheduler_params": {"tetris": {"bogus": 1}}},
            "scheduler 'tetris' has no parameter 'bogus'; valid parameters: work_weight",
        ),
        ({"scheduler_params": {"tetris": {"work_weight": -1}}}, "scheduler 'tetris' parameter 'work_weight' must be"),
        ({"scheduler_params": {"nope": {}}}, "unknown scheduler 'nope'"),
        ({"scheduler_params": {"tetris": 3}}, "scheduler_params['tetris'] must be an object"),
    ],
)
def test_the_api_answers_bad_input_with_a_json_400_naming_it(
    client: Any, owner: User, spec: dict[str, Any], message: str
) -> None:
    run = finished_run(owner)
    resp = _api(client, owner).post(
        reverse("api-packing-list"),
        {"source": {"run": run.pk}, "time_s": T, "spec": spec},
        content_type="application/json",
    )
    assert resp.status_code == 400
    assert message in resp.json()["detail"]
    assert not PackingAnalysis.objects.exists()


def test_the_api_refuses_unknown_scheduler_params_of_a_scenario_source_as_experiments_do(
    client: Any, owner: User
) -> None:
    scenario = {**small_scenario(schedulers=["tetris"]), "scheduler_params": {"tetris": {"bogus": 1}}}
    resp = _api(client, owner).post(
        reverse("api-packing-list"),
        {"source": {"scenario": scenario}, "time_s": T, "spec": SPEC},
        content_type="application/json",
    )
    assert resp.status_code == 400 and not PackingAnalysis.objects.exists()
    assert "scheduler 'tetris' has no parameter 'bogus'; valid parameters: work_weight" in json.dumps(resp.json())


def test_known_scheduler_params_are_stored_converted(owner: User) -> None:
    run = finished_run(owner)
    spec = {**SPEC, "schedulers": ["tetris"], "scheduler_params": {"tetris": {"work_weight": "0.5"}}}
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=spec)
    assert a.spec["scheduler_params"] == {"tetris": {"work_weight": 0.5}}


def test_the_api_refuses_a_run_the_caller_cannot_see(client: Any, owner: User, outsider: User) -> None:
    run = finished_run(owner)
    resp = _api(client, outsider).post(
        reverse("api-packing-list"), {"source": {"run": run.pk}, "time_s": T}, content_type="application/json"
    )
    assert resp.status_code == 400 and "no run" in json.dumps(resp.json())


def test_the_api_runs_a_new_scenario(client: Any, owner: User) -> None:
    scenario = {**small_scenario(schedulers=["tetris"]), "seeds": [3]}
    resp = _api(client, owner).post(
        reverse("api-packing-list"),
        {"source": {"scenario": scenario}, "time_s": T, "spec": {**SPEC, "techniques": ["compaction"]}},
        content_type="application/json",
    )
    assert resp.status_code == 201, resp.content
    a = PackingAnalysis.objects.get()
    assert execute_analysis(a.pk) == Status.FINISHED
    a.refresh_from_db()
    out = run_scenario(a.source_spec["scenario"], "tetris", 3)
    spec = AnalysisSpec.from_dict({**SPEC, "techniques": ["compaction"]})
    assert a.results == json.loads(json.dumps(analyse(from_result(out.result, out.workload, out.cluster, T), spec)))


def test_an_empty_scenario_snapshot_fails_with_a_message_on_the_analysis(owner: User) -> None:
    # Emptiness of a new simulation is only known once it ran: the worker says so on the analysis.
    choice = SourceChoice(PackingSource.SCENARIO, scenario=small_scenario(schedulers=["greedy"]))
    a = create_analysis(owner, choice, time_s=0, spec=SPEC)
    assert execute_analysis(a.pk) == Status.FAILED
    a.refresh_from_db()
    assert "the snapshot has no tasks" in a.error


# ---------------------------------------------------------------------------- lost work


def test_an_analysis_whose_worker_stopped_beating_is_queued_again_with_the_attempt_recorded(owner: User) -> None:
    run = finished_run(owner)
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC)
    long_ago = timezone.now() - timedelta(hours=1)
    PackingAnalysis.objects.filter(pk=a.pk).update(status=Status.RUNNING, attempt=1, heartbeat_at=long_ago, worker="w1")
    done = recover_lost_analyses()
    assert (done.retried, done.failed) == ([a.pk], [])
    a.refresh_from_db()
    assert a.status == Status.PENDING and a.attempt == 1 and a.heartbeat_at is None
    assert [x["worker"] for x in a.lost_attempts] == ["w1"]
    assert a.attempts_note.startswith("attempt 1 of 3; lost with their worker and run again: attempt 1 (w1")
    assert recover_lost_analyses().retried == []  # once


def test_an_analysis_lost_on_its_last_attempt_fails_naming_every_attempt(owner: User, settings: Any) -> None:
    settings.SIMCORE_RUN_MAX_ATTEMPTS = 2
    run = finished_run(owner)
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC)
    long_ago = timezone.now() - timedelta(hours=1)
    for attempt, worker in ((1, "w1"), (2, "w2")):
        PackingAnalysis.objects.filter(pk=a.pk).update(
            status=Status.RUNNING, attempt=attempt, heartbeat_at=long_ago, worker=worker
        )
        recover_lost_analyses()
    a.refresh_from_db()
    assert a.status == Status.FAILED
    assert a.error.startswith("the workers running this stopped without finishing 2 times, the most attempts allowed")
    assert "attempt 1 on w1" in a.error and "attempt 2 on w2" in a.error and "Analyse again" in a.error


def test_a_live_analysis_is_not_touched_by_the_repair(owner: User) -> None:
    run = finished_run(owner)
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=T, spec=SPEC)
    PackingAnalysis.objects.filter(pk=a.pk).update(status=Status.RUNNING, attempt=1, heartbeat_at=timezone.now())
    assert recover_lost_analyses().retried == [] and recover_lost_analyses().failed == []


def test_a_run_whose_records_no_longer_match_its_rebuilt_workload_is_simulated_again(owner: User) -> None:
    from dashboard.experiments import storage
    from dashboard.experiments.jobs import run_jobs
    from dashboard.models import RunRecordsObject

    run = finished_run(owner)
    # As if another code version had generated the stored run: its records differ from today's workload.
    cols = run_jobs(run)
    cols["submit_s"] = cols["submit_s"] + 1e-6
    other = storage.write_records(run.experiment_id, run.pk, run.attempt, [(cols, None)], sampled=False)
    RunRecordsObject.objects.filter(run=run).update(key=other.key, sha256=other.sha256, size=other.size)
    a = finished_analysis(owner, run)
    assert "simulated again" in a.results["snapshot"]["meta"]["note"]
    out = run_scenario(run.experiment.scenario, "greedy", 0)
    want = analyse(from_result(out.result, out.workload, out.cluster, T), AnalysisSpec.from_dict(SPEC))
    assert a.results["compaction"] == json.loads(json.dumps(want["compaction"]))


def test_an_analysis_of_a_sweep_cell_reads_that_cells_records_at_its_own_load(owner: User) -> None:
    # The cell at load 0.5 of a sweep whose base load is 0.9: the analysis builds the cell's workload, finds it
    # is the stored run's, and reads its records (it built the base scenario's, found another workload, and
    # simulated a run at load 0.9 instead).
    from dashboard.experiments.services import check_scenario

    sc = check_scenario(small_scenario(schedulers=["greedy"], axes=[{"name": "load", "values": [0.5, 0.9]}]))
    exp = create_experiment(owner, sc)
    run = next(r for r in exp.runs.all() if r.point == {"load": 0.5})
    assert execute_run(run.pk) == Status.FINISHED
    a = finished_analysis(owner, Run.objects.get(pk=run.pk))
    assert "note" not in a.results["snapshot"]["meta"]
    assert a.source_spec["point"] == {"load": 0.5} and "greedy seed 0 at load=0.5" in a.label
