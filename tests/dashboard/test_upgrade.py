"""An existing database upgrades in place (issue 31): the dashboard's rooms keep the one app ``dashboard``.

The test database is taken back to no dashboard table at all, migrated to
the head of the flat layout (:data:`HEAD`, ``0016_analysis_attempts``) and
filled there through the historical models of that state, as a database of
before the move would be: a team with a member, a cluster upload, a ready
trace and a trace import waiting for a worker, an experiment whose runs have
results and per-job records, a sweep, a packing analysis and a design-space
search waiting for workers. Then it is migrated to the latest migration and
the reorganised code takes over: the waiting work is done by the workers'
code (called here), and every list and detail page and every download of
those objects answers 200 with what they hold.

Results are real: the runs are simulated by simcore here (a few seconds), and
their rows written as the worker of before wrote them.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import io
import json
import zipfile
from typing import Any

import pyarrow.parquet as pq
import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.test import Client
from django.urls import reverse

from dashboard.common.heartbeat import clean_json
from simcore import archive
from simcore.dse.explore.fitness import cache_key, scenario_fingerprint
from simcore.dse.explore.pool import check_scenario as check_search_scenario
from simcore.dse.explore.search import SearchSettings, first_population
from simcore.scenario import labels_of, run_scenario
from simcore.sweep import scenario as sweep_scenario
from simcore.version import code_version
from tests.dashboard.conftest import CLUSTER, TRACE

pytestmark = pytest.mark.django_db(transaction=True)

#: Today's head: the last migration of the flat layout, before the move into rooms.
HEAD = ("dashboard", "0016_analysis_attempts")

#: A small scenario (a few hundred jobs): one scheduler, two seeds.
SCENARIO = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 1}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.7,
    "hours": 0.25,
    "drain": False,
    "schedulers": ["greedy"],
    "scheduler_params": {},
    "seeds": [0, 1],
}

#: A search small enough for a test (as tests/dashboard/test_searches.py).
SEARCH_SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "dse-2020", "params": {"machines": 8}},
    "workload": {"preset": "workflows-short-long", "params": {}},
    "load": 0.9,
    "hours": 0.25,
}
SEARCH = SearchSettings("trt", population=4, generations=2, seed=3)
SIM_SEED = 3

PACKING_SPEC = {"trials": 1, "factors": [1.0], "taus": [0.0], "units": [0.5], "orderings": ["arrival"]}


def _latest() -> list[tuple[str, str]]:
    return [n for n in MigrationExecutor(connection).loader.graph.leaf_nodes() if n[0] == "dashboard"]


def _migrate(targets: list[tuple[str, str | None]]) -> Any:
    """Migrate to ``targets``; the historical apps of that state (None when the target is no migration)."""
    executor = MigrationExecutor(connection)
    executor.migrate(targets)  # type: ignore[arg-type]
    executor.loader.build_graph()
    if any(name is None for _, name in targets):
        return None
    return executor.loader.project_state(targets).apps


def _gz(text: str | bytes) -> bytes:
    return gzip.compress(text.encode() if isinstance(text, str) else text)


# ---------------------------------------------------------------------------- the database of before


def _finished_run(apps: Any, exp: Any, scenario: dict[str, Any], seed: int, point: dict[str, Any]) -> Any:
    """A run simulated by simcore and stored as the worker of the flat layout stored it."""
    Run, RunResult, RunJobsChunk = (apps.get_model("dashboard", m) for m in ("Run", "RunResult", "RunJobsChunk"))
    outcome = run_scenario(scenario, "greedy", seed)
    n = int(outcome.summary.get("jobs", 0))
    run = Run.objects.create(
        experiment=exp,
        scheduler="greedy",
        seed=seed,
        point=point,
        point_key=sweep_scenario.point_key(point),
        status="finished",
        fraction=1.0,
        jobs_done=int(outcome.summary.get("completed", 0)),
        jobs_total=n,
        attempt=1,
    )
    RunResult.objects.create(
        run=run,
        summary=clean_json(outcome.summary),
        series=clean_json(outcome.series),
        per_class=clean_json(outcome.per_class),
        offline=clean_json(outcome.offline),
    )
    size = settings.SIMCORE_JOB_CHUNK
    total = int(outcome.result.extra.get("arrived", outcome.result.n_jobs))
    for index, blob in enumerate(archive.job_chunks(outcome, size)):
        first = index * size
        RunJobsChunk.objects.create(run=run, index=index, first=first, n_jobs=min(size, total - first), data=blob)
    return run


def _experiment(apps: Any, owner: Any, team: Any, name: str, scenario: dict[str, Any]) -> Any:
    names = labels_of(scenario)
    return apps.get_model("dashboard", "Experiment").objects.create(
        owner=owner,
        team=team,
        visibility="team",
        name=name,
        scenario=scenario,
        cluster_label=names["cluster"],
        workload_label=names["workload"],
    )


def _search(apps: Any, owner: Any, team: Any) -> Any:
    """A search whose first generation waits for its evaluations, as create_search left it before the move."""
    scenario = check_search_scenario(dict(SEARCH_SCENARIO), SIM_SEED)
    names = labels_of(scenario)
    search = apps.get_model("dashboard", "Search").objects.create(
        owner=owner,
        team=team,
        visibility="team",
        name="old search",
        scenario=scenario,
        cluster_label=names["cluster"],
        workload_label=names["workload"],
        metric=SEARCH.metric,
        population=SEARCH.population,
        max_generations=SEARCH.generations,
        seed=SEARCH.seed,
        sim_seed=SIM_SEED,
        fingerprint=scenario_fingerprint(scenario, {}),
        code_version=code_version()[:100],
    )
    individuals = first_population(SEARCH)
    apps.get_model("dashboard", "SearchGeneration").objects.create(
        search=search, index=0, individuals=individuals, new_evaluations=len(set(individuals))
    )
    for policy in dict.fromkeys(individuals):
        apps.get_model("dashboard", "SearchEvaluation").objects.create(
            search=search,
            key=cache_key(policy, search.fingerprint, SIM_SEED, search.code_version),
            policy=policy,
        )
    return search


def _fill(apps: Any) -> dict[str, int]:
    """The database of before, through the historical models of HEAD; the ids of what it holds."""
    users = apps.get_model("auth", "User")
    owner, member = users.objects.get(username="alice"), users.objects.get(username="bob")
    team = apps.get_model("dashboard", "Team").objects.create(name="lab")
    Membership = apps.get_model("dashboard", "Membership")
    Membership.objects.create(team=team, user=owner, role="owner")
    Membership.objects.create(team=team, user=member, role="member")
    cluster_bytes = json.dumps(CLUSTER).encode()
    cluster = apps.get_model("dashboard", "ClusterUpload").objects.create(
        owner=owner,
        name="two kinds",
        filename="two-kinds.json",
        content_gz=_gz(cluster_bytes),
        size_bytes=len(cluster_bytes),
        sha256=hashlib.sha256(cluster_bytes).hexdigest(),
        info={"resources": ["cpu", "mem"], "machines": 12},
    )
    TraceUpload = apps.get_model("dashboard", "TraceUpload")
    ready = TraceUpload.objects.create(
        owner=owner,
        name="ready trace",
        filename="trace.csv",
        content_gz=_gz(TRACE),
        size_bytes=len(TRACE),
        sha256=hashlib.sha256(TRACE.encode()).hexdigest(),
        status="ready",
        format="csv",
        info={"jobs": 200, "hours": 600 / 3600, "resources": ["cpu", "mem"], "format": "csv"},
    )
    waiting = TraceUpload.objects.create(
        owner=owner,
        name="queued import",
        filename="later.csv",
        content_gz=b"",
        size_bytes=len(TRACE),
        sha256="",
        status="pending",
        format="csv",
        options={},
    )
    apps.get_model("dashboard", "TraceImportFile").objects.create(
        upload=waiting, role="trace", position=0, filename="later.csv", size_bytes=len(TRACE), content_gz=_gz(TRACE)
    )
    exp = _experiment(apps, owner, team, "old experiment", SCENARIO)
    runs = [_finished_run(apps, exp, SCENARIO, seed, {}) for seed in SCENARIO["seeds"]]
    sweep_sc = {**SCENARIO, "seeds": [0], "axes": [{"name": "load", "values": [0.5, 0.8]}]}
    sweep = _experiment(apps, owner, team, "old sweep", sweep_sc)
    for point in sweep_scenario.points(sweep_sc):
        _finished_run(apps, sweep, sweep_scenario.cell_scenario(sweep_sc, point), 0, point)
    # As the worker of before left them once their last run finished.
    apps.get_model("dashboard", "Experiment").objects.filter(pk__in=[exp.pk, sweep.pk]).update(status="finished")
    source = {"experiment": exp.pk, "run": runs[0].pk, "scheduler": "greedy", "seed": 0}
    analysis = apps.get_model("dashboard", "PackingAnalysis").objects.create(
        owner=owner,
        team=team,
        visibility="team",
        name="old packing",
        source="run",
        run=runs[0],
        source_spec=source,
        label=f"run greedy seed 0 of #{exp.pk}",
        time_s=300.0,
        spec=PACKING_SPEC,
    )
    search = _search(apps, owner, team)
    return {
        "team": team.pk,
        "cluster": cluster.pk,
        "trace": ready.pk,
        "import": waiting.pk,
        "experiment": exp.pk,
        "run": runs[0].pk,
        "sweep": sweep.pk,
        "analysis": analysis.pk,
        "search": search.pk,
    }


# ---------------------------------------------------------------------------- the upgrade


def _do_waiting_work(ids: dict[str, int]) -> None:
    """What the workers do after the upgrade with the work queued before it: the reorganised code's tasks."""
    from dashboard.models import EvalStatus, SearchEvaluation
    from dashboard.packing.services import execute_analysis
    from dashboard.searches.coordinator import advance
    from dashboard.searches.execution import execute_evaluation
    from dashboard.traces.imports import execute_import

    assert execute_import(ids["import"], worker="after-upgrade") == "ready"
    assert execute_analysis(ids["analysis"], worker="after-upgrade") == "finished"
    for _ in range(100):
        pending = SearchEvaluation.objects.filter(search_id=ids["search"], status=EvalStatus.PENDING)
        todo = list(pending.values_list("pk", flat=True))
        if not todo:
            advance(ids["search"])
            if not SearchEvaluation.objects.filter(search_id=ids["search"], status=EvalStatus.PENDING).exists():
                break
        for pk in todo:
            execute_evaluation(pk, worker="after-upgrade")


def _get(client: Client, url: str, *needles: str) -> Any:
    resp = client.get(url)
    assert resp.status_code == 200, (url, resp.status_code)
    if needles:
        body = resp.content.decode() if not resp.streaming else b"".join(resp.streaming_content).decode()
        for needle in needles:
            assert needle in body, (url, needle)
    return resp


def _body(resp: Any) -> bytes:
    return b"".join(resp.streaming_content) if resp.streaming else resp.content


def _csv_rows(resp: Any) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(_body(resp).decode())))


def _check_experiment(client: Client, ids: dict[str, int]) -> None:
    from dashboard.experiments.downloads import EXPERIMENT_KINDS, RUN_KINDS
    from dashboard.models import Run

    pk, runs = ids["experiment"], list(Run.objects.filter(experiment_id=ids["experiment"]).order_by("seed"))
    _get(client, reverse("experiment-list"), "old experiment", "old sweep")
    _get(client, reverse("experiment-detail", args=[pk]), "old experiment", "greedy")
    assert _get(client, reverse("experiment-progress", args=[pk])).json()["status"] == "finished"
    jobs = sum(r.result.summary["jobs"] for r in runs)
    for kind in EXPERIMENT_KINDS:
        resp = _get(client, reverse("experiment-download", args=[pk, kind]))
        if kind == "summary.json":
            body = json.loads(_body(resp))
            stored = sorted(r.result.summary["mean_response_s"] for r in runs)
            assert sorted(x["summary"]["mean_response_s"] for x in body["runs"]) == stored
        elif kind == "summary.csv":
            assert len(_csv_rows(resp)) == len(runs)
        elif kind == "jobs.csv":
            assert len(_csv_rows(resp)) == jobs > 0
        elif kind == "jobs.parquet":
            assert pq.read_table(io.BytesIO(_body(resp))).num_rows == jobs
        elif kind == "archive.zip":
            assert any(n.endswith(".json") for n in zipfile.ZipFile(io.BytesIO(_body(resp))).namelist())
        elif kind == "series.json":
            assert len(json.loads(_body(resp))["runs"]) == len(runs)
    run = runs[0]
    for kind in RUN_KINDS:
        resp = _get(client, reverse("run-download", args=[pk, run.pk, kind]))
        if kind == "jobs.csv":
            assert len(_csv_rows(resp)) == run.result.summary["jobs"]


def _check_sweep(client: Client, ids: dict[str, int]) -> None:
    from dashboard.experiments.sweep_views import DATA_KINDS

    pk = ids["sweep"]
    _get(client, reverse("experiment-detail", args=[pk]), "old sweep", "load")
    sweep = _get(client, reverse("experiment-sweep", args=[pk])).json()
    assert sweep, "the sweep's charts"
    for kind in DATA_KINDS:
        url = reverse("experiment-sweep-data", args=[pk, kind])
        if kind.startswith("stacked"):  # a load sweep's chart is the metric's line, as before the move
            assert client.get(url).status_code == 404
            continue
        resp = _get(client, url)
        if kind.endswith(".csv"):
            rows = _csv_rows(resp)
            assert len(rows) == 2 and {v for r in rows for v in r.values()} >= {"0.5", "0.8"}, rows


def _check_packing(client: Client, ids: dict[str, int]) -> None:
    pk = ids["analysis"]
    _get(client, reverse("packing-list"), "old packing")
    _get(client, reverse("packing-detail", args=[pk]), "old packing")
    from dashboard.models import PackingAnalysis
    from simcore.packing.analysis import series_tables

    stored = PackingAnalysis.objects.get(pk=pk)
    assert stored.status == "finished" and stored.results
    results = json.loads(_body(_get(client, reverse("packing-download", args=[pk, "results.json"]))))
    assert results == json.loads(json.dumps({"analysis": pk, "code_version": stored.code_version, **stored.results}))
    for table, rows in series_tables(stored.results).items():
        assert len(_csv_rows(_get(client, reverse("packing-download", args=[pk, f"{table}.csv"])))) == len(rows)


def _check_search(client: Client, ids: dict[str, int]) -> None:
    from dashboard.models import Search
    from dashboard.searches.downloads import SEARCH_KINDS

    pk = ids["search"]
    search = Search.objects.get(pk=pk)
    assert search.status == "finished" and search.generations_done == SEARCH.generations
    _get(client, reverse("search-list"), "old search")
    _get(client, reverse("search-detail", args=[pk]), "old search")
    assert _get(client, reverse("search-progress", args=[pk])).json()["status"] == "finished"
    _get(client, reverse("search-charts", args=[pk]))
    for kind in SEARCH_KINDS:
        resp = _get(client, reverse("search-download", args=[pk, kind]))
        if kind == "search.json":
            assert len(json.loads(_body(resp))["generations"]) == SEARCH.generations


def _check_uploads_and_team(owner: Client, member: Client, ids: dict[str, int]) -> None:
    _get(owner, reverse("uploads"), "two kinds", "ready trace", "queued import")
    _get(owner, reverse("trace-import-detail", args=[ids["trace"]]), "ready trace")
    _get(owner, reverse("trace-import-detail", args=[ids["import"]]), "queued import", "ready")
    _get(owner, reverse("team-list"), "lab")
    _get(owner, reverse("team-detail", args=[ids["team"]]), "lab", "bob")
    # The member sees the team's work, through the same rules as before the move.
    _get(member, reverse("experiment-list"), "old experiment", "old sweep")
    _get(member, reverse("experiment-detail", args=[ids["experiment"]]), "old experiment")
    _get(member, reverse("packing-detail", args=[ids["analysis"]]), "old packing")
    _get(member, reverse("search-detail", args=[ids["search"]]), "old search")


def test_a_database_at_the_flat_layouts_head_upgrades_in_place_and_every_page_and_download_works() -> None:
    alice = User.objects.create_user("alice", password="alice-password-1")
    bob = User.objects.create_user("bob", password="bob-password-1")
    try:
        _migrate([("dashboard", None)])  # a database with no dashboard table: fresh
        ids = _fill(_migrate([HEAD]))
    finally:
        latest = _latest()
        _migrate(latest)  # type: ignore[arg-type]
    assert latest[0][1] >= HEAD[1]  # HEAD itself today: the move added no migration
    # Nothing of the models differs from the migrations: the move changed no table.
    call_command("makemigrations", "dashboard", "--check", "--dry-run", verbosity=0)

    _do_waiting_work(ids)
    owner, member = Client(), Client()
    owner.force_login(alice)
    member.force_login(bob)
    _check_experiment(owner, ids)
    _check_sweep(owner, ids)
    _check_packing(owner, ids)
    _check_search(owner, ids)
    _check_uploads_and_team(owner, member, ids)
