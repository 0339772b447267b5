"""Design-space searches on the platform, driven in this process (the worker's code, called directly).

The coordinator must give exactly the generations of ``simcore explore`` for
the same scenario and seeds; it must move each step once however often it
is called; permissions are those of experiments (owner, teammate, outsider).
"""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from dashboard.models import EvalStatus, Search, SearchEvaluation, SearchGeneration, Status, Visibility
from dashboard.searches import services as searches
from dashboard.searches.charts import elite_changes, elite_metrics, elite_timeline, stage_segments
from dashboard.searches.coordinator import advance, repair_searches
from dashboard.searches.execution import execute_evaluation
from dashboard.searches.services import cancel_search, create_search
from simcore.dse.explore.pool import LocalEvaluator
from simcore.dse.explore.search import SearchResult, SearchSettings, run_search
from simcore.dse.staged.policy import STAGES

#: Small enough for a test: 8 machines, about 400 tasks of the crafted short/long workload.
SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
    "workload": {"preset": "workflows-short-long", "params": {}},
    "load": 0.9,
    "hours": 0.25,
}
SETTINGS = SearchSettings("trt", population=6, generations=4, seed=3)


def start(owner: User, **kw: Any) -> Search:
    scenario = searches.check_search(dict(SCENARIO), kw.pop("settings", SETTINGS), kw.pop("sim_seed", 3))
    return create_search(owner, scenario, kw.pop("cfg", SETTINGS), 3, **kw)


def drive(search: Search) -> Search:
    """What the workers do: evaluate every pending evaluation until the search ends."""
    for _ in range(10_000):
        pending = list(
            SearchEvaluation.objects.filter(search=search, status=EvalStatus.PENDING).values_list("pk", flat=True)
        )
        if not pending:
            advance(search.pk)
            search.refresh_from_db()
            if not search.is_active:
                return search
            continue
        for pk in pending:
            execute_evaluation(pk, worker="test")
    raise AssertionError("the search did not end")


def cli_result(settings: SearchSettings = SETTINGS, sim_seed: int = 3) -> SearchResult:
    return run_search(settings, LocalEvaluator(SCENARIO, sim_seed))


@pytest.mark.django_db
def test_the_platform_gives_the_generations_of_simcore_explore(owner):
    search = drive(start(owner))
    assert search.status == Status.FINISHED and search.stop_reason == "generations"
    expected = cli_result()
    gens = list(search.generations.order_by("index"))
    assert [(g.elite_policy, g.elite_fitness) for g in gens] == expected.elite_sequence()
    assert [g.individuals for g in gens] == [r.individuals for r in expected.generations]
    assert [g.fitness for g in gens] == [r.fitness for r in expected.generations]
    assert [g.new_evaluations for g in gens] == [r.new_evaluations for r in expected.generations]
    assert [g.explanation for g in gens] == [
        r.explanation.to_dict() if r.explanation else None for r in expected.generations
    ]
    # Identical individuals were simulated once: one row per distinct policy, as the CLI's cache.
    assert SearchEvaluation.objects.filter(search=search).count() == len(expected.evaluations)


@pytest.mark.django_db
def test_a_coordinator_step_happens_once_however_often_it_is_called(owner):
    search = start(owner)
    for pk in SearchEvaluation.objects.filter(search=search).values_list("pk", flat=True):
        execute_evaluation(pk)
    search.refresh_from_db()
    g = search.generation
    rows = SearchGeneration.objects.filter(search=search).count()
    for _ in range(3):  # duplicate coordinator passes (a repeated task, the periodic repair)
        advance(search.pk)
    search.refresh_from_db()
    assert search.generation == g and SearchGeneration.objects.filter(search=search).count() == rows


@pytest.mark.django_db
def test_a_duplicate_evaluation_task_is_harmless(owner):
    search = start(owner)
    pk = SearchEvaluation.objects.filter(search=search).values_list("pk", flat=True).first()
    assert execute_evaluation(pk) == EvalStatus.DONE
    first = SearchEvaluation.objects.get(pk=pk).result
    assert execute_evaluation(pk) == EvalStatus.DONE  # already done: left alone
    assert SearchEvaluation.objects.get(pk=pk).result == first


@pytest.mark.django_db
def test_a_second_search_with_the_same_scenario_reuses_the_evaluations(owner):
    drive(start(owner))
    again = start(owner)
    evs = SearchEvaluation.objects.filter(search=again)
    assert evs.count() > 0 and not evs.filter(status=EvalStatus.PENDING).exists()
    assert all(evs.values_list("reused", flat=True))


@pytest.mark.django_db
def test_a_cancelled_search_stops_and_its_pending_evaluations_are_dropped(owner):
    search = start(owner)
    assert cancel_search(search)
    search.refresh_from_db()
    assert search.status == Status.CANCELLED
    assert set(SearchEvaluation.objects.filter(search=search).values_list("status", flat=True)) == {
        EvalStatus.CANCELLED
    }
    pk = SearchEvaluation.objects.filter(search=search).values_list("pk", flat=True).first()
    assert execute_evaluation(pk) == EvalStatus.CANCELLED
    assert not cancel_search(search)


@pytest.mark.django_db
def test_an_evaluation_whose_worker_died_is_queued_again_and_the_search_goes_on(owner, settings):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    search = start(owner)
    ev = SearchEvaluation.objects.filter(search=search).first()
    long_ago = timezone.now() - timezone.timedelta(minutes=5)
    SearchEvaluation.objects.filter(pk=ev.pk).update(
        status=EvalStatus.RUNNING, heartbeat_at=long_ago, attempts=1, worker="dead"
    )
    done = repair_searches()
    assert ev.pk in done["requeued"]
    ev.refresh_from_db()
    assert ev.status == EvalStatus.PENDING and ev.worker == ""
    search = drive(search)
    assert search.status == Status.FINISHED
    assert [(g.elite_policy, g.elite_fitness) for g in search.generations.order_by("index")] == (
        cli_result().elite_sequence()
    )


@pytest.mark.django_db
def test_a_policy_that_kills_its_workers_three_times_fails_the_search(owner, settings):
    settings.SIMCORE_WORKER_TIMEOUT_S = 60
    search = start(owner)
    ev = SearchEvaluation.objects.filter(search=search).first()
    SearchEvaluation.objects.filter(pk=ev.pk).update(
        status=EvalStatus.RUNNING, heartbeat_at=timezone.now() - timezone.timedelta(minutes=5), attempts=3
    )
    repair_searches()
    search.refresh_from_db()
    assert search.status == Status.FAILED
    assert "the worker running this stopped without finishing" in search.error and "3 workers" in search.error


# ---------------------------------------------------------------------------- pages, downloads, permissions


@pytest.fixture
def finished(owner, team) -> Search:
    return drive(start(owner, name="alice-search", team=team, visibility=Visibility.TEAM))


def _client(user: User) -> Client:
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.django_db
def test_the_owner_and_a_teammate_read_the_page_and_an_outsider_gets_404(finished, owner, other, outsider):
    url = reverse("search-detail", args=[finished.pk])
    for user in (owner, other):
        page = _client(user).get(url)
        assert page.status_code == 200
        html = page.content.decode()
        assert finished.generations.order_by("-index").first().elite_policy in html
        assert 'id="chart-elite"' in html and 'id="chart-metrics"' in html
    assert _client(outsider).get(url).status_code == 404
    assert _client(outsider).get(reverse("search-download", args=[finished.pk, "generations.csv"])).status_code == 404
    assert Client().get(url).status_code == 302


@pytest.mark.django_db
def test_only_the_owner_and_team_owners_cancel_and_only_the_owner_shares(owner, other, team):
    search = start(owner, team=team, visibility=Visibility.TEAM)
    assert _client(other).post(reverse("search-cancel", args=[search.pk])).status_code == 403
    assert _client(other).post(reverse("search-share", args=[search.pk]), {"visibility": "public"}).status_code == 403
    search.refresh_from_db()
    assert search.status == Status.PENDING and search.visibility == Visibility.TEAM
    assert _client(owner).post(reverse("search-cancel", args=[search.pk])).status_code == 302
    search.refresh_from_db()
    assert search.status == Status.CANCELLED


@pytest.mark.django_db
def test_a_public_link_shows_the_search_read_only_until_revoked(finished, owner):
    c = _client(owner)
    c.post(reverse("search-share", args=[finished.pk]), {"visibility": "public", "team": finished.team_id})
    finished.refresh_from_db()
    url = reverse("shared-search-detail", args=[finished.share_token])
    page = Client().get(url)
    assert page.status_code == 200 and 'id="cancel-search"' not in page.content.decode()
    assert Client().get(reverse("shared-search-download", args=[finished.share_token, "elites.csv"])).status_code == 200
    c.post(reverse("search-revoke-link", args=[finished.pk]))
    assert Client().get(url).status_code == 404


@pytest.mark.django_db
def test_downloads_hold_every_generations_individuals_and_fitness(finished, owner):
    c = _client(owner)
    body = c.get(reverse("search-download", args=[finished.pk, "generations.csv"])).content.decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    gens = list(finished.generations.order_by("index"))
    assert len(rows) == sum(len(g.individuals) for g in gens) == finished.population * len(gens)
    for g in gens:
        mine = [r for r in rows if int(r["generation"]) == g.index]
        assert [r["policy"] for r in mine] == g.individuals
        assert [float(r["fitness"]) for r in mine] == g.fitness
        assert [int(r["elite"]) for r in mine].index(1) == g.elite
    resp = c.get(reverse("search-download", args=[finished.pk, "generations.parquet"]))
    table = pq.read_table(io.BytesIO(b"".join(resp.streaming_content)))
    assert table.column("fitness").to_pylist() == [float(r["fitness"]) for r in rows]
    js = json.loads(c.get(reverse("search-download", args=[finished.pk, "search.json"])).content)
    assert [e["policy"] for e in js["elites"]] == [g.elite_policy for g in gens]
    assert c.get(reverse("search-download", args=[finished.pk, "nope.csv"])).status_code == 404


@pytest.mark.django_db
def test_the_new_search_form_starts_a_search(owner):
    c = _client(owner)
    assert c.get(reverse("search-new")).status_code == 200
    resp = c.post(
        reverse("search-new"),
        {
            "name": "from the form",
            "cluster": "preset:dse-2020",
            "cluster__dse-2020__machines": "8",
            "workload": "preset:workflows-short-long",
            "load": "0.9",
            "hours": "0.25",
            "metric": "jms",
            "population": "6",
            "generations": "4",
            "seed": "3",
            "visibility": "private",
        },
    )
    search = Search.objects.get(name="from the form")
    assert resp.status_code == 302 and resp["Location"] == search.get_absolute_url()
    assert (search.metric, search.population, search.max_generations, search.seed, search.sim_seed) == (
        "jms",
        6,
        4,
        3,
        3,
    )
    assert SearchGeneration.objects.get(search=search, index=0).individuals
    assert search.scenario["cluster"] == {"preset": "dse-2020", "params": {"machines": 8}}


@pytest.mark.django_db
def test_the_form_names_the_bad_field(owner):
    c = _client(owner)
    resp = c.post(
        reverse("search-new"),
        {
            "cluster": "preset:dse-2020",
            "workload": "preset:workflows-short-long",
            "load": "0.9",
            "population": "1",
            "generations": "4",
            "seed": "0",
            "metric": "trt",
        },
    )
    assert resp.status_code == 400
    assert "population" in resp.context["form"].errors
    assert not Search.objects.exists()


@pytest.mark.django_db
def test_the_api_starts_reads_and_forks_a_search(owner):
    from dashboard.models import ApiToken

    _, secret = ApiToken.issue(owner, "t")
    api = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    body = {
        "name": "api search",
        "scenario": {
            "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
            "workload": {"preset": "workflows-short-long"},
            "hours": 0.25,
        },
        "metric": "njsl",
        "population": 6,
        "generations": 4,
        "seed": 5,
    }
    resp = api.post("/api/searches/", body, content_type="application/json")
    assert resp.status_code == 201, resp.content
    made = resp.json()
    assert made["metric"] == "njsl" and made["sim_seed"] == 5 and made["progress"]["status"] == "pending"
    assert api.get(f"/api/searches/{made['id']}/").json()["name"] == "api search"
    fork = api.post(f"/api/searches/{made['id']}/fork/", {"changes": {"seed": 6}}, content_type="application/json")
    assert fork.status_code == 201 and fork.json()["seed"] == 6 and fork.json()["forked_from"] == made["id"]
    bad = api.post("/api/searches/", {**body, "metric": "latency"}, content_type="application/json")
    assert bad.status_code == 400 and "metric" in bad.json()


# ---------------------------------------------------------------------------- charts (pure functions)

ROWS = [
    {
        "generation": 0,
        "policy": "A",
        **{s: "x" for s in STAGES},
        "fitness": 9.0,
        "trt": 9.0,
        "jms": 5,
        "njsl": 2,
        "jwt": 1,
    },
    {
        "generation": 1,
        "policy": "A",
        **{s: "x" for s in STAGES},
        "fitness": 9.0,
        "trt": 9.0,
        "jms": 5,
        "njsl": 2,
        "jwt": 1,
    },
    {
        "generation": 2,
        "policy": "B",
        **{s: "x" for s in STAGES},
        "T2": "y",
        "fitness": 4.0,
        "trt": 4.0,
        "jms": 6,
        "njsl": 3,
        "jwt": 1,
    },
]


def test_a_stage_lane_has_one_bar_per_period_of_one_policy():
    assert stage_segments(ROWS, "T2") == [(0, 1, "x"), (2, 2, "y")]
    assert stage_segments(ROWS, "J1") == [(0, 2, "x")]


def test_the_timeline_marks_each_change_of_elite_with_a_dashed_red_line():
    fig = elite_timeline(ROWS, "trt")
    assert elite_changes(ROWS) == [2]
    assert [s["x0"] for s in fig["layout"]["shapes"]] == [1.5]
    assert fig["data"][0]["y"] == [9.0, 9.0, 4.0]
    t2 = next(t for t in fig["data"] if t.get("name") == "T2")
    assert t2["base"] == [-0.5, 1.5] and t2["x"] == [2, 1] and t2["text"] == ["x", "y"]


def test_the_metrics_chart_highlights_the_optimised_metric():
    fig = elite_metrics(ROWS, "jms")
    widths = {t["name"]: t["line"]["width"] for t in fig["data"]}
    assert widths == {"TRT": 1.5, "JMS": 3, "NJSL": 1.5, "JWT": 1.5}
    assert [t["y"] for t in fig["data"] if t["name"] == "JMS"] == [[5, 5, 6]]


#: A small trace of jobs made of tasks (the project's CSV with job, task and parents columns).
DAG_TRACE = "submit_s,duration_s,cores,job,task,parents\n" + "".join(
    f"{j * 20.0},{d},{c},{j},{t},{p}\n"
    for j in range(30)
    for t, d, c, p in (
        ("split", 10 + j % 7, 1, ""),
        ("left", 30 + j % 5, 2, "split"),
        ("right", 50, 1, "split"),
        ("merge", 5, 1, "left right"),
    )
)


@pytest.mark.django_db
def test_a_search_on_an_uploaded_trace_gives_the_generations_of_simcore_explore_on_the_file(owner, tmp_path):
    import gzip
    import hashlib

    from dashboard.models import ImportStatus, TraceUpload
    from dashboard.traces.uploads import upload_specs

    up = TraceUpload.objects.create(
        owner=owner,
        name="four-task dags",
        filename="dags.csv",
        content_gz=gzip.compress(DAG_TRACE.encode()),
        size_bytes=len(DAG_TRACE),
        sha256=hashlib.sha256(DAG_TRACE.encode()).hexdigest(),
        info={"resources": ["cores"]},
        status=ImportStatus.READY,
    )
    scenario = {"cluster": {"preset": "dse-2020", "params": {"machines": 4}}, "load": 0.9, "hours": None}
    scenario.update(upload_specs(None, up))
    cfg = SearchSettings("njsl", population=6, generations=3, seed=2)
    search = drive(
        create_search(owner, searches.check_search(scenario, cfg, 2), cfg, 2, trace_upload=up, name="on a file")
    )
    assert search.status == Status.FINISHED, search.error
    path = tmp_path / "dags.csv"
    path.write_text(DAG_TRACE)
    local = {**scenario, "workload": {"file": "dags.csv"}}
    expected = run_search(cfg, LocalEvaluator(local, 2, files={"dags.csv": path}))
    assert [(g.elite_policy, g.elite_fitness) for g in search.generations.order_by("index")] == (
        expected.elite_sequence()
    )
    assert search.workload_label == "four-task dags"
