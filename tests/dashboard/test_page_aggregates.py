"""Pages under load (issue 25): what the sweep and experiment pages show is stored when a run finishes.

Runs are finished by the worker's own function (execute_run) in the test
process, as tests/dashboard/test_sweeps.py does, and once by the session's real
worker process. A page's reads are checked by their queries (django's
CaptureQueriesContext), never by their timings.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from django.apps import apps
from django.db import connection
from django.test.utils import CaptureQueriesContext

from dashboard.experiments import aggregates, charts, sweeps
from dashboard.experiments.execution import execute_run
from dashboard.experiments.results import chart_runs, runs_with_results
from dashboard.experiments.services import check_scenario, create_experiment
from dashboard.models import CellAggregate, Experiment, ExperimentCharts, Status
from tests.dashboard.conftest import wait_for

pytestmark = pytest.mark.django_db

#: google-like on 20 machines for a tenth of an hour: a cell takes well under a second.
BASE = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 0.1,
    "schedulers": ["greedy", "fcfs"],
    "seeds": [0, 1],
}


def grid(loads: list[float], **changes: Any) -> dict[str, Any]:
    return check_scenario({**BASE, **changes, "axes": [{"name": "load", "values": loads}]})


def run_all(exp: Experiment) -> None:
    for pk in exp.runs.filter(status=Status.PENDING).order_by("id").values_list("id", flat=True):
        assert execute_run(pk) == Status.FINISHED


def finished_ids(exp: Experiment, **where: Any) -> list[int]:
    return sorted(exp.runs.filter(status=Status.FINISHED, **where).values_list("id", flat=True))


def page_queries(client: Any, url: str) -> list[str]:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(url).status_code == 200
    return [q["sql"] for q in ctx.captured_queries]


def as_json(x: Any) -> Any:
    """What a JSON column gives back (tuples become lists)."""
    return json.loads(json.dumps(x))


def test_it_stores_a_cells_statistics_when_the_cell_finishes(owner):
    exp = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    first = exp.runs.order_by("id").first()
    assert first is not None
    assert execute_run(first.pk) == Status.FINISHED

    (row,) = CellAggregate.objects.filter(experiment=exp)
    assert (row.point_key, row.scheduler, row.run_ids) == (first.point_key, first.scheduler, [first.pk])
    assert row.stats["runs"] == 1


def test_its_stored_statistics_are_those_aggregated_from_every_summary(owner):
    exp = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    run_all(exp)

    stored = aggregates.sweep_table(exp, sweeps.ordered_runs(exp, page=True))
    assert stored.computed == 0  # every group read from its stored row
    for metric in ("mean_response_s", "p99_response_s", "utilization.cpu", "mean_completion_s"):
        assert stored.rows(metric) == sweeps.aggregated(sweeps.ordered_runs(exp), metric)
    assert CellAggregate.objects.filter(experiment=exp).count() == 4  # 2 loads x 2 schedulers, 2 seeds each


def test_the_sweep_page_reads_no_series_and_no_per_job_records(owner_client, owner):
    exp = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    run_all(exp)

    queries = page_queries(owner_client, f"/experiments/{exp.pk}/")
    assert not [q for q in queries if "runjobs" in q.lower()]
    assert not [q for q in queries if '"series"' in q]


def test_the_sweep_pages_queries_do_not_grow_with_its_cells(owner_client, owner):
    small = create_experiment(owner, grid([0.5]), name="small", reuse=False)
    big = create_experiment(owner, grid([0.5, 0.7, 0.9]), name="big", reuse=False)
    run_all(small)
    run_all(big)

    assert len(page_queries(owner_client, f"/experiments/{big.pk}/")) == len(
        page_queries(owner_client, f"/experiments/{small.pk}/")
    )
    assert len(page_queries(owner_client, f"/experiments/{big.pk}/sweep.json")) == len(
        page_queries(owner_client, f"/experiments/{small.pk}/sweep.json")
    )


def test_it_stores_an_experiments_charts_when_a_run_finishes(owner):
    exp = create_experiment(owner, {**BASE}, name="e", reuse=False)
    run_all(exp)

    stored = ExperimentCharts.objects.get(experiment=exp)
    assert stored.run_ids == finished_ids(exp)
    built = charts.all_charts(chart_runs(runs_with_results(exp)), profile=aggregates.profile_charts(exp.scenario))
    assert stored.figures == json.dumps(built)  # the builders' own text: chart order and every key's order


def test_the_experiment_page_reads_its_stored_charts_not_the_series(owner_client, owner):
    exp = create_experiment(owner, {**BASE}, name="e", reuse=False)
    run_all(exp)

    queries = page_queries(owner_client, f"/experiments/{exp.pk}/")
    assert not [q for q in queries if '"series"' in q or "runjobs" in q.lower()]


def test_a_page_of_results_stored_before_shows_the_same_numbers_and_writes_nothing(owner_client, owner):
    exp = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    run_all(exp)
    url = f"/experiments/{exp.pk}/"
    with_rows = owner_client.get(url).context["sweep"]["res"].rows
    CellAggregate.objects.filter(experiment=exp).delete()  # as before this change

    queries = page_queries(owner_client, url)
    without = owner_client.get(url).context["sweep"]["res"].rows

    assert without == with_rows
    assert not [q for q in queries if q.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]
    assert not CellAggregate.objects.filter(experiment=exp).exists()


def test_an_experiment_page_stored_before_builds_the_same_charts_and_writes_nothing(owner_client, owner):
    exp = create_experiment(owner, {**BASE}, name="e", reuse=False)
    run_all(exp)
    url = f"/experiments/{exp.pk}/"
    stored = as_json(owner_client.get(url).context["charts"])
    ExperimentCharts.objects.filter(experiment=exp).delete()

    queries = page_queries(owner_client, url)
    assert as_json(owner_client.get(url).context["charts"]) == stored
    assert not [q for q in queries if q.lstrip().upper().startswith(("INSERT", "UPDATE", "DELETE"))]


def test_the_migrations_backfill_stores_what_the_worker_stores(owner):
    exp = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    run_all(exp)
    by_worker = {(r.point_key, r.scheduler): (r.run_ids, r.stats) for r in CellAggregate.objects.filter(experiment=exp)}
    CellAggregate.objects.filter(experiment=exp).delete()

    aggregates.backfill(apps, exp)

    assert {(r.point_key, r.scheduler): (r.run_ids, r.stats) for r in CellAggregate.objects.all()} == by_worker


def test_cells_copied_from_the_result_cache_store_their_statistics(owner):
    first = create_experiment(owner, grid([0.5, 0.9]), name="g", reuse=False)
    run_all(first)

    again = create_experiment(owner, grid([0.5, 0.9]), name="again", reuse=True)

    assert again.runs.filter(status=Status.FINISHED).count() == 8  # every cell from the cache
    rows = CellAggregate.objects.filter(experiment=again)
    assert sorted(i for r in rows for i in r.run_ids) == finished_ids(again)
    table = aggregates.sweep_table(again, sweeps.ordered_runs(again, page=True))
    assert table.computed == 0
    assert table.rows("mean_response_s") == sweeps.aggregated(sweeps.ordered_runs(first), "mean_response_s")


def test_a_second_seed_finishing_updates_its_cells_statistics(owner):
    exp = create_experiment(owner, grid([0.5], schedulers=["greedy"]), name="g", reuse=False)
    ids = list(exp.runs.order_by("seed").values_list("id", flat=True))
    execute_run(ids[0])
    execute_run(ids[1])

    (row,) = CellAggregate.objects.filter(experiment=exp)
    assert row.run_ids == sorted(ids)
    assert row.stats["runs"] == 2
    assert row.stats["metrics"]["mean_response_s"][0] == 2  # n: both seeds gave a mean


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_sweep_run_by_a_real_worker_has_every_cells_statistics_stored(owner_client, owner):
    exp = wait_for(create_experiment(owner, grid([0.5, 0.9])), timeout=180)
    assert exp.status == Status.FINISHED

    table = aggregates.sweep_table(exp, sweeps.ordered_runs(exp, page=True))
    assert table.computed == 0
    assert table.rows("mean_response_s") == sweeps.aggregated(sweeps.ordered_runs(exp), "mean_response_s")
    assert owner_client.get(f"/experiments/{exp.pk}/").context["sweep"]["res"].rows == table.rows("mean_response_s")
