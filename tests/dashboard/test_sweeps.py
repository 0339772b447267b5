"""Sweeps on the platform: one grammar for form, API and CLI, cells as runs, aggregates, cache, extend, retry.

Cells are run here by calling the worker's own function (execute_run) in the
test process; tests/dashboard/test_sweep_workers.py runs them on real worker
processes.
"""

from __future__ import annotations

import csv
import io
import json
import re
import shlex
from datetime import timedelta
from html import unescape
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from django.utils.html import escape as html_escape

from dashboard.experiments import cache, sweeps
from dashboard.experiments.execution import execute_run
from dashboard.experiments.jobs import run_jobs
from dashboard.experiments.services import check_scenario, create_experiment
from dashboard.models import ApiToken, Experiment, Run, RunResult, Status, Visibility
from simcore.cli import build_parser, main, sweep_plan
from simcore.sweep.scenario import cell_scenario, scenario_of
from simcore.sweep.scenario import cells as sweep_cells
from simcore.sweep.scenario import points as sweep_points
from simcore.sweep.scenario import scenario_of as sweep_scenario_of
from tests.dashboard.conftest import GOOD

pytestmark = pytest.mark.django_db

#: A grid small enough for a test: google-like on 20 machines, a quarter hour, phi does not apply: vary load.
BASE = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 0.25,
    "schedulers": ["greedy", "fcfs"],
    "seeds": [0, 1],
}
TEXTS = ["load=0.5:0.9:0.4", "hours=0.1,0.2"]
CLI_BASE = "--cluster google-balanced --machines-per-config 2 --workload google-like --hours 0.25 --load 0.9"


def sweep_scenario(vary: list[str] | None = None, **changes: Any) -> dict[str, Any]:
    from simcore.sweep.grammar import parse_axes

    sc = {**BASE, **changes}
    axes = parse_axes(vary or ["load=0.5,0.9"], sc["cluster"]["preset"], sc["workload"]["preset"], sc["schedulers"])
    return check_scenario({**sc, "axes": [{"name": a.name, "values": list(a.values)} for a in axes]})


def api_client(user: Any) -> Client:
    _, secret = ApiToken.issue(user, "t")
    return Client(HTTP_AUTHORIZATION=f"Bearer {secret}")


def api_post(c: Client, url: str, body: dict[str, Any]) -> Any:
    return c.post(url, json.dumps(body), content_type="application/json")


def run_all(exp: Experiment) -> None:
    for pk in exp.runs.filter(status=Status.PENDING).order_by("id").values_list("id", flat=True):
        assert execute_run(pk) == Status.FINISHED


def cli_plan_axes(texts: list[str]) -> list[dict[str, Any]]:
    argv = shlex.split(f"sweep {CLI_BASE} --schedulers greedy,fcfs --seeds 0-1") + [
        x for t in texts for x in ("--vary", t)
    ]
    return scenario_of(sweep_plan(build_parser().parse_args(argv)))["axes"]


# ---------------------------------------------------------------------------- one grammar


def test_the_form_the_api_and_the_cli_read_a_grid_the_same_way(owner_client, owner):
    form = {**GOOD, "hours": "0.25", "seeds": "0-1", "vary": "\n".join(TEXTS), "reuse": "on"}
    resp = owner_client.post("/experiments/new/", form)
    assert resp.status_code == 302, resp.content.decode()[:2000]
    from_form = Experiment.objects.get().scenario["axes"]
    resp = api_post(api_client(owner), "/api/experiments/", {"scenario": {**BASE, "vary": TEXTS}})
    assert resp.status_code == 201, resp.content
    from_api = Experiment.objects.get(pk=resp.json()["id"]).scenario["axes"]
    expected = [{"name": "load", "values": [0.5, 0.9]}, {"name": "hours", "values": [0.1, 0.2]}]
    assert from_form == from_api == cli_plan_axes(TEXTS) == expected


BAD = "load=0.9:0.5:0.1"
SAYS = "--vary load: range '0.9:0.5:0.1' goes backwards"


def test_a_bad_axis_gets_the_same_message_from_the_form(owner_client):
    resp = owner_client.post("/experiments/new/", {**GOOD, "vary": BAD})
    assert resp.status_code == 400
    assert SAYS in resp.context["form"].errors["vary"][0]
    assert not Experiment.objects.exists()


def test_a_bad_axis_gets_the_same_message_from_the_api(owner):
    resp = api_post(api_client(owner), "/api/experiments/", {"scenario": {**BASE, "vary": [BAD]}})
    assert resp.status_code == 400 and resp.json() == {"detail": SAYS}


def test_a_bad_axis_gets_the_same_message_from_the_cli(capsys):
    code = main(shlex.split(f"sweep {CLI_BASE} --schedulers greedy --vary {BAD}"))
    assert code == 2 and capsys.readouterr().err == f"simcore: error: {SAYS}\n"


#: Issue 25's grid: each axis passes its own bound (1,000 values), the grid is 10^9 runs.
BILLION = ["load=0.001:1:0.001", "hours=0.001:1:0.001", "machines-per-config=1:1000:1"]
BILLION_SAYS = (
    "the grid has 1,000,000,000 runs (3 axes of 1,000, 1,000 and 1,000 values x 1 scheduler x 1 seed); "
    "at most 200 (setting SIMCORE_MAX_RUNS)"
)


def test_a_billion_run_grid_is_refused_by_the_api_naming_its_size(owner, settings):
    settings.SIMCORE_MAX_RUNS = 200
    body = {"scenario": {**BASE, "schedulers": ["greedy"], "seeds": [0], "vary": BILLION}}
    resp = api_post(api_client(owner), "/api/experiments/", body)
    assert resp.status_code == 400 and resp.json() == {"detail": BILLION_SAYS}
    assert not Experiment.objects.exists() and not Run.objects.exists()


def test_a_billion_run_grid_is_a_field_error_of_the_form(owner_client, settings):
    settings.SIMCORE_MAX_RUNS = 200
    resp = owner_client.post("/experiments/new/", {**GOOD, "schedulers": ["greedy"], "vary": "\n".join(BILLION)})
    assert resp.status_code == 400
    assert resp.context["form"].errors["vary"] == [BILLION_SAYS]
    assert not Experiment.objects.exists()


def test_a_billion_run_grid_gets_the_same_message_from_the_cli(capsys, monkeypatch):
    monkeypatch.delenv("SIMCORE_MAX_RUNS", raising=False)
    code = main(shlex.split(f"sweep {CLI_BASE} --schedulers greedy " + " ".join(f"--vary {t}" for t in BILLION)))
    assert code == 2 and capsys.readouterr().err == f"simcore: error: {BILLION_SAYS}\n"


def test_the_form_lets_an_axis_override_its_prefilled_field(owner_client):
    # The form always sends phi's field (prefilled with its default): varying phi is not a conflict.
    form = {
        **GOOD,
        "workload": "preset:lotes-phi",
        "workload__lotes-phi__phi": "0.009",
        "vary": "phi=0,0.006",
    }
    assert owner_client.post("/experiments/new/", form).status_code == 302
    sc = Experiment.objects.get().scenario
    assert sc["axes"] == [{"name": "phi", "values": [0.0, 0.006]}] and "phi" not in sc["workload"]["params"]


# ---------------------------------------------------------------------------- cells


def test_every_cell_is_one_run_with_its_point(owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.7,0.9"]))
    got = sorted((r.point["load"], r.scheduler, r.seed) for r in exp.runs.all())
    assert got == sorted((x, s, seed) for x in (0.5, 0.7, 0.9) for s in ("greedy", "fcfs") for seed in (0, 1))
    assert {r.point_key for r in exp.runs.all()} == {'[["load",0.5]]', '[["load",0.7]]', '[["load",0.9]]'}


def test_a_grid_over_the_run_limit_is_refused_naming_its_size(owner, settings):
    settings.SIMCORE_MAX_RUNS = 10
    with pytest.raises(
        Exception, match=r"the grid has 12 runs \(1 axis of 3 values x 2 schedulers x 2 seeds\); at most 10"
    ):
        sweep_scenario(["load=0.5,0.7,0.9"])


def test_a_worker_runs_a_cell_at_its_own_point(owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    run_all(exp)
    by_load = {r.point["load"]: r.result.summary for r in exp.runs.select_related("result")}
    assert by_load[0.5]["load"] == 0.5 and by_load[0.9]["load"] == 0.9
    assert by_load[0.5]["jobs"] < by_load[0.9]["jobs"]


# ---------------------------------------------------------------------------- aggregates


def _finish_by_hand(run: Run, value: float, stable: bool = True) -> None:
    Run.objects.filter(pk=run.pk).update(status=Status.FINISHED, fraction=1.0)
    RunResult.objects.create(
        run=run, summary={"scheduler": run.scheduler, "mean_response_s": value, "stable": stable}, series={}
    )


def test_the_aggregate_is_mean_t_interval_min_max_and_unstable_count_by_hand(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0, 1, 2]))
    for run, value, stable in zip(exp.runs.order_by("seed"), (1.0, 2.0, 6.0), (True, False, True), strict=True):
        _finish_by_hand(run, value, stable)
    body = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()
    (row,) = body["rows"]
    # mean 3, s = sqrt(7), t(0.975, 2) = 4.30265: half width 4.30265 * sqrt(7) / sqrt(3) = 6.57241
    assert (row["mean"], row["min"], row["max"], row["unstable"], row["n"]) == (3.0, 1.0, 6.0, 1, 3)
    assert row["ci95_low"] == pytest.approx(3 - 6.57241, abs=1e-5)
    assert row["ci95_high"] == pytest.approx(3 + 6.57241, abs=1e-5)
    assert body["progress"]["finished"] == 3 and body["progress"]["cells"] == 3


def test_the_charts_data_downloads_as_csv_and_parquet_with_the_same_numbers(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0, 1]))
    for run, value in zip(exp.runs.order_by("point_key", "seed"), (1.0, 3.0, 10.0, 20.0), strict=True):
        _finish_by_hand(run, value)
    text = owner_client.get(f"/experiments/{exp.pk}/sweep/metric.csv").content.decode()
    rows = [line.split(",") for line in text.splitlines()]
    assert rows[0][:6] == ["point.load", "scheduler", "metric", "runs", "n", "mean"]
    assert [(r[0], r[1], float(r[5])) for r in rows[1:]] == [("0.5", "greedy", 2.0), ("0.9", "greedy", 15.0)]
    resp = owner_client.get(f"/experiments/{exp.pk}/sweep/metric.parquet")
    table = pq.read_table(io.BytesIO(b"".join(resp.streaming_content))).to_pylist()
    assert [(t["point.load"], t["mean"], t["min"], t["max"]) for t in table] == [
        (0.5, 2.0, 1.0, 3.0),
        (0.9, 15.0, 10.0, 20.0),
    ]
    assert owner_client.get(f"/experiments/{exp.pk}/sweep/stacked.csv").status_code == 404  # not a stacked chart


def test_the_grid_eta_is_the_remaining_work_at_the_pace_so_far(owner, monkeypatch):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    now = timezone.now()
    monkeypatch.setattr(sweeps.timezone, "now", lambda: now)
    a, b, c, d = exp.runs.order_by("id")
    Run.objects.filter(pk=a.pk).update(status=Status.FINISHED, started_at=now - timedelta(seconds=100))
    Run.objects.filter(pk=b.pk).update(status=Status.RUNNING, started_at=now - timedelta(seconds=50), fraction=0.5)
    p = sweeps.progress(exp, list(exp.runs.all()))
    # 1.5 cells of work in 100 s; 2.5 left (c, d pending and half of b): 2.5 * 100 / 1.5 s.
    assert p["eta_s"] == pytest.approx(2.5 * 100 / 1.5)
    assert (p["finished"], p["running"], p["pending"], p["cached"]) == (1, 1, 2, 0)


def test_the_grid_eta_leaves_out_the_time_spent_compiling_kernels(owner, monkeypatch):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy", "fcfs"], seeds=[0, 1]))
    now = timezone.now()
    monkeypatch.setattr(sweeps.timezone, "now", lambda: now)
    a, b, c, d = exp.runs.order_by("id")
    # a: started 100 s ago, finished 20 s ago, of which 60 s compiling its kernel; b: half done, 50 s so far.
    Run.objects.filter(pk=a.pk).update(
        status=Status.FINISHED, started_at=now - timedelta(seconds=100), finished_at=now - timedelta(seconds=20)
    )
    RunResult.objects.create(run=a, summary={"scheduler": a.scheduler, "compile_s": 60.0}, series={})
    Run.objects.filter(pk=b.pk).update(status=Status.RUNNING, started_at=now - timedelta(seconds=50), fraction=0.5)
    p = sweeps.progress(exp, list(exp.runs.all()))
    # busy 80 + 50 = 130 s, 60 of them compiling: the 100 s elapsed count 100 * 70 / 130 s of simulating;
    # 1.5 cells done in that, 2.5 left: 2.5 * (100 * 70 / 130) / 1.5 = 89.74 s (the compile in: 166.7 s).
    assert p["eta_s"] == pytest.approx(2.5 * (100 * 70 / 130) / 1.5)
    assert p["eta_s"] == pytest.approx(89.7436, abs=1e-4)


# ---------------------------------------------------------------------------- the result cache


def test_a_repeated_sweep_comes_from_the_cache_with_the_same_results(owner_client, owner):
    sc = sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0])
    first = create_experiment(owner, sc, reuse=True)
    run_all(first)
    again = create_experiment(owner, sc, reuse=True)
    assert again.cached == 2 and again.runs.filter(status=Status.FINISHED).count() == 2
    again.refresh_from_db()
    assert again.status == Status.FINISHED
    for new in again.runs.select_related("result", "cached_from"):
        old = first.runs.select_related("result").get(point_key=new.point_key)
        assert new.cached_from_id == old.pk and new.result.summary == old.result.summary
        mine, theirs = run_jobs(new), run_jobs(old)
        assert mine.keys() == theirs.keys()
        for k in mine:
            np.testing.assert_array_equal(mine[k], theirs[k])  # NaN (never finished) equal to NaN
    page = owner_client.get(f"/experiments/{again.pk}/").content.decode()
    assert "2 of 2 runs came from the result cache" in page
    assert owner_client.get(f"/experiments/{again.pk}/sweep.json").json()["progress"]["cached"] == 2


def test_without_reuse_nothing_comes_from_the_cache(owner):
    sc = sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0])
    run_all(create_experiment(owner, sc))
    assert create_experiment(owner, sc, reuse=False).cached == 0


def test_another_seed_scheduler_parameter_or_code_version_is_no_hit(owner, monkeypatch):
    sc = sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0])
    run_all(create_experiment(owner, sc, reuse=True))
    assert create_experiment(owner, {**sc, "seeds": [1]}, reuse=True).cached == 0
    other = check_scenario({**sc, "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 3}}})
    assert create_experiment(owner, other, reuse=True).cached == 0
    monkeypatch.setattr(cache, "current_version", lambda: "0.1.0+gdifferent")
    assert create_experiment(owner, sc, reuse=True).cached == 0


def test_runs_of_others_are_never_reused(owner, outsider):
    sc = sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0])
    run_all(create_experiment(outsider, sc, reuse=True))
    assert create_experiment(owner, sc, reuse=True).cached == 0


# ---------------------------------------------------------------------------- extend and retry


def test_extending_a_finished_sweep_adds_only_the_missing_cells(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    run_all(exp)
    before = {r.pk: (r.finished_at, r.result.summary) for r in exp.runs.select_related("result")}
    resp = owner_client.post(f"/experiments/{exp.pk}/extend/", {"seeds": "1", "vary": "load=0.5,0.9"})
    assert resp.status_code == 302
    exp.refresh_from_db()
    assert exp.scenario["seeds"] == [0, 1] and exp.scenario["axes"] == [{"name": "load", "values": [0.5, 0.9]}]
    cells = sorted((r.point["load"], r.seed) for r in exp.runs.all())
    assert cells == [(0.5, 0), (0.5, 1), (0.9, 0), (0.9, 1)]
    kept = {r.pk: (r.finished_at, r.result.summary) for r in exp.runs.filter(pk__in=before).select_related("result")}
    assert kept == before  # the cell it had was not run again
    assert exp.runs.filter(status=Status.PENDING).count() == 3
    done = sweeps.extend(exp, seeds="0-1", vary=["load=0.9"])  # everything it names exists: nothing new
    assert done == {"cells": 0, "queued": 0, "cached": 0}


def test_extending_cannot_add_an_axis_the_sweep_does_not_have(owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    with pytest.raises(Exception, match=r"--vary hours: this experiment does not vary it \(its axes: load\)"):
        sweeps.extend(exp, vary=["hours=0.5"])
    with pytest.raises(Exception, match="give more seeds"):
        sweeps.extend(exp)


def test_extending_a_sweep_past_the_run_limit_is_refused_and_changes_nothing(owner, settings):
    settings.SIMCORE_MAX_RUNS = 200
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"]))
    with pytest.raises(Exception) as e:
        sweeps.extend(exp, vary=["load=0.001:1:0.001"])
    assert str(e.value) == (
        "the grid has 4,000 runs (1 axis of 1,000 values x 2 schedulers x 2 seeds); at most 200 "
        "(setting SIMCORE_MAX_RUNS)"
    )
    exp.refresh_from_db()
    assert exp.scenario["axes"] == [{"name": "load", "values": [0.5, 0.9]}] and exp.runs.count() == 8


def test_a_failed_cell_is_retried_alone(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    bad, good = exp.runs.order_by("point_key")
    Run.objects.filter(pk=bad.pk).update(status=Status.FAILED, error="boom")
    assert execute_run(good.pk) == Status.FINISHED
    good_before = Run.objects.get(pk=good.pk).finished_at
    assert owner_client.post(f"/runs/{bad.pk}/retry/").status_code == 302
    assert not Run.objects.filter(pk=bad.pk).exists()
    new = exp.runs.get(point_key=bad.point_key)
    assert new.status == Status.PENDING and new.point == bad.point and new.error == ""
    assert Run.objects.get(pk=good.pk).finished_at == good_before
    assert execute_run(new.pk) == Status.FINISHED
    with pytest.raises(Exception, match="only a failed or cancelled run can be retried"):
        sweeps.retry(Run.objects.get(pk=new.pk))


def test_only_the_owner_extends_or_retries(client, owner, other, team):
    exp = create_experiment(
        owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]), team=team, visibility=Visibility.TEAM
    )
    run = exp.runs.get()
    Run.objects.filter(pk=run.pk).update(status=Status.FAILED)
    client.force_login(other)  # a member of the team: sees it, cannot change it
    assert client.get(f"/experiments/{exp.pk}/").status_code == 200
    assert client.post(f"/experiments/{exp.pk}/extend/", {"seeds": "1"}).status_code == 403
    assert client.post(f"/runs/{run.pk}/retry/").status_code == 403
    assert exp.runs.count() == 1 and Run.objects.get(pk=run.pk).status == Status.FAILED


# ---------------------------------------------------------------------------- paper reproductions


def test_a_reproduction_runs_in_one_click_and_its_page_puts_the_paper_beside_ours(owner_client, owner):
    form = {
        "reproduction": "profile-fig13",
        "profile-fig13-seeds": "1",
        "profile-fig13-hours": "1",
        "profile-fig13-machines_per_type": "0",
    }
    resp = owner_client.post("/reproduce/", form)
    assert resp.status_code == 302
    exp = Experiment.objects.get()
    assert exp.reproduction == {"name": "profile-fig13", "scale": {"seeds": 1, "hours": 1.0, "machines_per_type": 0}}
    assert exp.runs.count() == 2 * 5  # two clusters x five schedulers x one trace
    run_all(exp)
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    assert "Reproduction: Figure 13" in page and "20% better than FCFS" in page
    assert 'id="chart-stacked"' in page and "Where we differ from the papers" in page
    body = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()
    comps = body["reproduction"]["comparisons"]
    assert len(comps) == 8 and all(c["ours_relative_pct"] is not None for c in comps)
    fcfs = {r["point"]["cluster"]: r["mean"] for r in body["rows"] if r["scheduler"] == "fcfs"}
    for c in comps:
        mine = next(r for r in body["rows"] if r["scheduler"] == c["scheduler"] and r["point"] == c["point"])
        assert c["ours_relative_pct"] == pytest.approx(
            100 * (mine["mean"] - fcfs[c["point"]["cluster"]]) / fcfs[c["point"]["cluster"]]
        )
    stacked = owner_client.get(f"/experiments/{exp.pk}/sweep/stacked.csv").content.decode().splitlines()
    assert stacked[0].startswith("point.cluster,scheduler,runs,n,mean_wait_s,mean_run_s,mean_completion_s")
    assert len(stacked) == 1 + 10


def test_a_bad_reproduction_scale_is_a_form_error(owner_client):
    resp = owner_client.post("/reproduce/", {"reproduction": "lotes-fig11", "lotes-fig11-machines_per_config": "0"})
    assert resp.status_code == 400 and not Experiment.objects.exists()
    assert "Ensure this value is greater than or equal to 1" in resp.content.decode()


def test_the_api_lists_and_starts_reproductions_and_reads_a_sweep(owner):
    c = api_client(owner)
    names = [r["name"] for r in c.get("/api/reproductions/").json()]
    assert names == ["lotes-fig10", "lotes-fig11", "lotes-fig12", "lotes-fig13", "profile-fig12", "profile-fig13"]
    resp = api_post(
        c, "/api/reproductions/lotes-fig11/", {"scale": {"machines_per_config": 1, "hours": 0.1, "seeds": 1}}
    )
    assert resp.status_code == 201, resp.content
    exp_id = resp.json()["id"]
    assert len(resp.json()["runs"]) == 6 * 3 and resp.json()["cached"] == 0
    body = c.get(f"/api/experiments/{exp_id}/sweep/").json()
    assert body["progress"]["cells"] == 18 and body["reproduction"]["figure"] == "Figure 11"
    assert body["command"].startswith("simcore sweep --cluster google-balanced --workload lotes-phi --load 0.97")
    bad = api_post(c, "/api/reproductions/lotes-fig11/", {"scale": {"machines_per_config": 0}})
    assert bad.status_code == 400 and "machines_per_config" in bad.json()["detail"]
    assert api_post(c, "/api/reproductions/nope/", {}).status_code == 404


def test_the_api_extends_a_sweep_and_retries_a_cell(owner):
    c = api_client(owner)
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    resp = api_post(c, f"/api/experiments/{exp.pk}/extend/", {"vary": ["load=0.6"], "seeds": "1"})
    assert resp.status_code == 200 and resp.json()["cells"] == 3
    run = exp.runs.order_by("id").first()
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)
    resp = c.post(f"/api/runs/{run.pk}/retry/")
    assert resp.status_code == 201 and resp.json()["status"] == "pending" and resp.json()["point"] == run.point
    bad = api_post(c, f"/api/experiments/{exp.pk}/extend/", {"vary": ["omega=0.1"]})
    assert bad.status_code == 400 and "--vary omega does not apply" in bad.json()["detail"]


def test_a_fork_of_a_sweep_keeps_its_axes_in_the_grammar(owner):
    c = api_client(owner)
    exp = create_experiment(owner, sweep_scenario(["load=0.5:0.9:0.4"], schedulers=["greedy"], seeds=[0]))
    resp = api_post(c, f"/api/experiments/{exp.pk}/fork/", {"changes": {"seeds": [1]}})
    assert resp.status_code == 201, resp.content
    assert Experiment.objects.get(pk=resp.json()["id"]).scenario["axes"] == [{"name": "load", "values": [0.5, 0.9]}]


def test_cancelling_a_sweep_cancels_every_cell_that_has_not_ended(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    done, pending = exp.runs.order_by("point_key")
    assert execute_run(done.pk) == Status.FINISHED
    assert owner_client.post(f"/experiments/{exp.pk}/cancel/").status_code == 302
    assert dict(exp.runs.values_list("pk", "status")) == {done.pk: Status.FINISHED, pending.pk: Status.CANCELLED}
    body = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()
    assert (body["progress"]["finished"], body["progress"]["cancelled"]) == (1, 1)


def test_an_unknown_metric_is_named_on_the_page_and_a_404_for_its_data(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    run_all(exp)
    page = owner_client.get(f"/experiments/{exp.pk}/?metric=nope").content.decode()
    assert "--metric &#x27;nope&#x27; is not a numeric summary key" in page and "showing mean_response_s" in page
    assert owner_client.get(f"/experiments/{exp.pk}/sweep/metric.csv?metric=nope").status_code == 404
    text = owner_client.get(f"/experiments/{exp.pk}/sweep/metric.csv?metric=utilization.cpu").content.decode()
    assert text.splitlines()[1].split(",")[2] == "utilization.cpu"


def test_every_row_of_the_summary_downloads_carries_its_point(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    runs = list(exp.runs.order_by("point_key"))
    _finish_by_hand(runs[0], 1.0)
    Run.objects.filter(pk=runs[1].pk).update(status=Status.CANCELLED)  # a cancelled cell keeps its point too
    text = owner_client.get(f"/experiments/{exp.pk}/download/summary.csv").content.decode()
    rows = list(csv.DictReader(io.StringIO(text)))
    assert sorted((r["point.load"], r["status"]) for r in rows) == [("0.5", "finished"), ("0.9", "cancelled")]
    body = owner_client.get(f"/experiments/{exp.pk}/download/summary.json").json()
    assert sorted((r["point"]["load"], r["status"]) for r in body["runs"]) == [(0.5, "finished"), (0.9, "cancelled")]


# ---------------------------------------------------------------------------- issue 28: what a sweep's page says


def _text(html: str) -> str:
    """What a reader sees of a page: no scripts (the charts' JSON), no tags (their attributes: ids, URLs)."""
    html = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    return re.sub(r"\s+([,.;])", r"\1", re.sub(r"\s+", " ", unescape(re.sub(r"<[^>]+>", " ", html))))


def test_a_load_sweeps_header_gives_the_loads_swept_not_the_base_load(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0], load=0.7))
    text = _text(owner_client.get(f"/experiments/{exp.pk}/").content.decode())
    assert "Load swept: 0.5, 0.9 of \u03bb* (one value per cell)." in text
    assert "Load asked" not in text and "0.7" not in text


def test_a_load_sweeps_command_varies_the_load_without_fixing_it_and_reproduces_the_grid(owner_client, owner):
    sc = sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0], load=0.7)
    exp = create_experiment(owner, sc)
    command = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()["command"]
    assert "--load" not in command.replace("--load-", "") and "--vary load=0.5,0.9" in command
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    assert html_escape(command) in page
    plan = sweep_scenario_of(sweep_plan(build_parser().parse_args(shlex.split(command)[1:])))
    assert sweep_cells(plan) == sweep_cells(sc)
    assert [cell_scenario(plan, p) for p in sweep_points(plan)] == [cell_scenario(sc, p) for p in sweep_points(sc)]


def _cancel(run: Run) -> None:
    Run.objects.filter(pk=run.pk).update(status=Status.CANCELLED)


def test_a_sweep_with_one_cell_cancelled_and_the_rest_finished_is_finished_and_says_so(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.7,0.9"], schedulers=["greedy"], seeds=[0]))
    a, b, c = exp.runs.order_by("point_key")
    _finish_by_hand(a, 1.0)
    _finish_by_hand(b, 2.0)
    _cancel(c)
    assert exp.refresh_status() == Status.FINISHED
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    assert re.search(r'id="experiment-status" class="status finished">finished, 1 of 3 cells cancelled<', page)
    body = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()
    assert (body["status"], body["status_text"]) == ("finished", "finished, 1 of 3 cells cancelled")
    progress = owner_client.get(f"/experiments/{exp.pk}/progress.json").json()
    assert progress["status_text"] == "finished, 1 of 3 cells cancelled"


def test_the_list_and_the_api_say_the_same_partial_cancel(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    a, b = exp.runs.order_by("point_key")
    _finish_by_hand(a, 1.0)
    _cancel(b)
    exp.refresh_status()
    assert "finished, 1 of 2 cells cancelled" in owner_client.get(reverse("experiment-list")).content.decode()
    body = api_client(owner).get(f"/api/experiments/{exp.pk}/").json()
    assert (body["status"], body["status_text"]) == ("finished", "finished, 1 of 2 cells cancelled")


def test_every_cell_cancelled_is_a_cancelled_sweep(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    for r in exp.runs.all():
        _cancel(r)
    assert exp.refresh_status() == Status.CANCELLED
    assert api_client(owner).get(f"/api/experiments/{exp.pk}/").json()["status_text"] == "cancelled"


def test_the_sweep_page_names_metrics_and_axes_never_by_their_keys(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0, 1]))
    for run, value in zip(exp.runs.order_by("point_key", "seed"), (1.0, 3.0, 10.0, 20.0), strict=True):
        _finish_by_hand(run, value)
    text = _text(owner_client.get(f"/experiments/{exp.pk}/").content.decode())
    assert "Mean wait until start (s), mean over seeds" in text and "Load (of \u03bb*)" in text
    assert "mean_response_s" not in text and "Mean mean" not in text
    figure = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()["figures"]["chart-sweep"]
    assert figure["layout"]["yaxis"]["title"]["text"] == "Mean wait until start (s)"
    assert "mean_response_s" not in json.dumps(figure)


def test_a_t_interval_below_zero_is_shown_from_zero_on_the_page_and_kept_in_the_downloads(owner_client, owner):
    # Seeds 0.1 and 5.0: mean 2.55, t-interval 2.55 +- 12.706 * 2.45 = [-28.6, 33.7]; a wait cannot be negative.
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0, 1]))
    for run, value in zip(exp.runs.order_by("seed"), (0.1, 5.0), strict=True):
        _finish_by_hand(run, value)
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    assert '<span class="clipped" title="the t-interval\'s own lower bound: -28.58">[0*, 33.68]</span>' in page
    (row,) = owner_client.get(f"/experiments/{exp.pk}/sweep.json").json()["rows"]
    assert row["ci95_low"] == pytest.approx(2.55 - 12.7062 * 2.45, abs=1e-3) and row["ci95_clipped"] is True
    text = owner_client.get(f"/experiments/{exp.pk}/sweep/metric.csv").content.decode()
    (rec,) = csv.DictReader(io.StringIO(text))
    assert float(rec["ci95_low"]) == pytest.approx(row["ci95_low"]) and rec["ci95_clipped"] == "True"


# ---------------------------------------------------------------------------- issue 28: a sweep's runs elsewhere


def test_the_packing_run_picker_names_each_cells_point(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    for r in exp.runs.all():
        _finish_by_hand(r, 1.0)
    page = owner_client.get("/packing/new/").content.decode()
    title = html_escape(exp.title)
    assert f"#{exp.pk} {title}: greedy seed 0 at load=0.5" in page
    assert f"#{exp.pk} {title}: greedy seed 0 at load=0.9" in page


def test_the_compare_page_lists_and_draws_each_cells_point(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    a, b = exp.runs.order_by("point_key")
    for r in (a, b):
        _finish_by_hand(r, 1.0)
    page = owner_client.get(f"/compare/?run={a.pk}&run={b.pk}").content.decode()
    assert '<td class="point">load=0.5</td>' in page and '<td class="point">load=0.9</td>' in page
    # Two groups, not one scheduler's two "seeds": the cells at load 0.5 and 0.9 are no seeds of each other.
    assert f"#{exp.pk} greedy at load=0.5 s0" in page and f"#{exp.pk} greedy at load=0.9 s0" in page


# ---------------------------------------------------------------------------- issue 26: wait until start


def test_the_summary_table_says_wait_until_start_linked_to_its_definition(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    _finish_by_hand(exp.runs.get(), 1.0)
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    link = '<a class="definition" href="/docs/guide/metrics/#wait-until-start" title="what this is: the documentation">'
    assert f"<th>{link}Mean wait until start (s)</a></th>" in page
    assert f"<th>{link}p90 wait until start (s)</a></th>" in page
    assert "resp." not in page and "Response time" not in page


def test_the_downloads_keep_their_keys_and_point_to_their_definitions(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    _finish_by_hand(exp.runs.get(), 1.0)
    body = owner_client.get(f"/experiments/{exp.pk}/download/summary.json").json()
    assert body["runs"][0]["summary"]["mean_response_s"] == 1.0  # the key scripts read is unchanged
    assert body["columns"]["summary"]["mean_response_s"] == {
        "name": "Mean wait until start",
        "unit": "s",
        "definition": "/docs/guide/metrics/#wait-until-start",
    }
    for url in ("download/summary.csv", "download/jobs.csv", "sweep/metric.csv"):
        resp = owner_client.get(f"/experiments/{exp.pk}/{url}")
        assert resp["Link"] == '</docs/guide/metrics/#downloads>; rel="describedby"', url
    text = owner_client.get(f"/experiments/{exp.pk}/download/summary.csv").content.decode()
    assert text.splitlines()[0].startswith("run,scheduler,seed,point.load,")  # the header is the first line
    page = owner_client.get(f"/experiments/{exp.pk}/").content.decode()
    assert 'id="download-columns" href="/docs/guide/metrics/#downloads"' in page


def test_every_row_of_the_job_and_series_downloads_carries_its_point(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5,0.9"], schedulers=["greedy"], seeds=[0]))
    run_all(exp)
    jobs = {r.point["load"]: r.result.summary["jobs"] for r in exp.runs.select_related("result")}
    body = b"".join(owner_client.get(f"/experiments/{exp.pk}/download/jobs.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert list(rows[0])[:5] == ["run", "scheduler", "seed", "point.load", "job"]
    assert {x: sum(1 for r in rows if float(r["point.load"]) == x) for x in jobs} == jobs
    resp = owner_client.get(f"/experiments/{exp.pk}/download/jobs.parquet")
    table = pq.read_table(io.BytesIO(b"".join(resp.streaming_content)))
    assert sorted(set(table.column("point.load").to_pylist())) == [0.5, 0.9] and table.num_rows == sum(jobs.values())
    series = list(csv.DictReader(io.StringIO(owner_client.get(f"/experiments/{exp.pk}/download/series.csv").text)))
    assert {r["point.load"] for r in series} == {"0.5", "0.9"}
    body = owner_client.get(f"/experiments/{exp.pk}/download/series.json").json()
    assert sorted(r["point"]["load"] for r in body["runs"]) == [0.5, 0.9]


def test_the_wait_charts_link_their_definition(owner_client, owner):
    exp = create_experiment(owner, sweep_scenario(["load=0.5"], schedulers=["greedy"], seeds=[0]))
    a = exp.runs.get()
    _finish_by_hand(a, 1.0)
    page = owner_client.get(f"/compare/?run={a.pk}").content.decode()
    assert 'id="charts-definitions"><a class="definition" href="/docs/guide/metrics/#wait-until-start"' in page
