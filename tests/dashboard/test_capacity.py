"""Capacity plans on the platform, driven in this process (the worker's code, called directly).

The coordinator must give exactly the plan of ``simcore capacity``'s ``make_plan``
for the same spec; it must issue each round once however often it is called;
bad requests are refused naming the field, with nothing stored; permissions are
those of experiments (owner, teammate, outsider).
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

from dashboard.capacity import services
from dashboard.capacity.charts import curve_chart
from dashboard.capacity.coordinator import advance
from dashboard.capacity.execution import execute_probe
from dashboard.capacity.models import CapacityPlan, CapacityProbe, PlanPhase, ProbeStatus
from dashboard.common.models import Status, Visibility
from simcore.planning import PlanSpec, make_plan
from simcore.planning.local import LocalProbes

#: A tiny plan: 20 machines of google-balanced (2 per configuration), a quarter hour of google-like (about
#: 1,500 jobs), two schedulers, two seeds, three curve points: 5 rounds, a few seconds in all.
SCENARIO: dict[str, Any] = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 0.25,
    "schedulers": ["greedy", "tetris"],
    "seeds": [0, 1],
}
TARGET = "p99_wait_s<=30"

#: The same plan as the new-plan form sends it.
FORM = {
    "name": "tiny",
    "cluster": "preset:google-balanced",
    "cluster__google-balanced__machines_per_config": "2",
    "workload": "preset:google-like",
    "load": "0.9",
    "hours": "0.25",
    "schedulers": ["greedy", "tetris"],
    "seeds": "0,1",
    "target": TARGET,
    "resize": "all",
    "curve_points": "3",
    "visibility": "private",
}


def spec_of(**changes: Any) -> PlanSpec:
    spec, _ = services.check_request(
        {**SCENARIO, **changes.pop("scenario", {})},
        target=changes.pop("target", TARGET),
        curve_points=changes.pop("curve_points", 3),
        **changes,
    )
    return spec


def drive(plan: CapacityPlan) -> CapacityPlan:
    """What the workers do: run every pending probe until the plan ends."""
    for _ in range(1000):
        pending = list(CapacityProbe.objects.filter(plan=plan, status=ProbeStatus.PENDING).values_list("pk", flat=True))
        if not pending:
            advance(plan.pk)
            plan.refresh_from_db()
            if not plan.is_active:
                return plan
            continue
        for pk in pending:
            execute_probe(pk, worker="test")
    raise AssertionError("the plan did not end")


def local_plan(spec: PlanSpec) -> dict[str, Any]:
    with LocalProbes(spec, 1) as run:
        return make_plan(spec, run)


def same_answers(stored: dict[str, Any], local: dict[str, Any]) -> None:
    """The same machines per scheduler and the same curve (sizes, values per seed, met)."""
    assert [(p["scheduler"], p["machines"]) for p in stored["plans"]] == [
        (p["scheduler"], p["machines"]) for p in local["plans"]
    ]
    for a, b in zip(stored["plans"], local["plans"], strict=True):
        assert [(c["machines"], c["met"], c["values"]) for c in a["curve"]] == [
            (c["machines"], c["met"], c["values"]) for c in b["curve"]
        ]
        assert a["verification"] == b["verification"]
    for key in ("rounds", "probes", "bounds", "given_machines", "jobs", "max_machines"):
        assert stored[key] == local[key], key


@pytest.fixture
def finished(owner: User) -> CapacityPlan:
    return drive(services.create_plan(owner, spec_of(), name="tiny"))


@pytest.mark.django_db
def test_the_platform_gives_the_plan_of_simcore_capacity(finished):
    plan = finished
    assert plan.status == Status.FINISHED, plan.error
    local = local_plan(spec_of())
    same_answers(plan.result, local)
    assert plan.phase == PlanPhase.DONE and plan.note == ""
    # One task per probe: round 0 the bounds, then one row per size and seed of each round.
    rounds = CapacityProbe.objects.filter(plan=plan).values_list("round", flat=True)
    assert sorted(set(rounds)) == list(range(plan.round + 1))
    p = services.progress_payload(plan)
    assert p["status"] == "finished" and p["phase"] == "done"
    assert p["round"] == local["rounds"]
    assert p["answers"] == {e["scheduler"]: e["machines"] for e in local["plans"]}
    assert p["bounds"]["compaction"] == local["bounds"]["compaction"]["machines"]
    assert p["bounds"]["lambda_star"] == local["bounds"]["lambda_star"]["machines"]
    assert p["probes_done"] == CapacityProbe.objects.filter(plan=plan, round__gt=0).count()


@pytest.mark.django_db
def test_a_round_is_issued_once_however_often_the_coordinator_is_called(owner):
    from simcore.planning import prepare, probe

    spec = spec_of()
    plan = services.create_plan(owner, spec)
    bounds = CapacityProbe.objects.get(plan=plan, round=0)
    CapacityProbe.objects.filter(pk=bounds.pk).update(status=ProbeStatus.DONE, result=prepare(spec))
    assert advance(plan.pk) == "next"
    for _ in range(3):
        assert advance(plan.pk) == "waiting"
    first = list(CapacityProbe.objects.filter(plan=plan, round=1).values_list("machines", "seed", "schedulers"))
    bound = prepare(spec)
    # The first round probes both starts, lambda*'s size and compaction's, in every seed.
    starts = sorted({bound["low"], bound["high"]})
    assert sorted(first) == [(m, s, ["greedy", "tetris"]) for m in starts for s in (0, 1)]
    plan.refresh_from_db()
    assert (plan.round, plan.search_round, plan.phase) == (1, 1, PlanPhase.SEARCH)
    assert plan.wanted == ", ".join(f"{m:,} (greedy, tetris)" for m in starts)
    # Progress while a round runs: one of its two probes stored.
    row = CapacityProbe.objects.filter(plan=plan, round=1).first()
    CapacityProbe.objects.filter(pk=row.pk).update(
        status=ProbeStatus.DONE, result=probe(spec, row.machines, row.seed, row.schedulers).to_dict()
    )
    assert advance(plan.pk) == "waiting"
    p = services.progress_payload(plan)
    total = 2 * len(starts)
    assert (p["phase"], p["round"], p["round_done"], p["round_total"], p["probes_done"]) == ("search", 1, 1, total, 1)
    assert p["bounds"] == {
        "given": 20,
        "floor": bound["floor"],
        "ceiling": 80,
        "compaction": bound["compaction"]["machines"],
        "lambda_star": bound["lambda_star"]["machines"],
    }
    # A duplicate task of a stored probe changes nothing.
    assert execute_probe(row.pk, worker="again") == ProbeStatus.DONE


@pytest.mark.django_db
def test_an_unreachable_target_ends_as_a_finished_plan_that_says_so(owner):
    spec = spec_of(target="max_wait_s<0", max_machines=24, curve_points=0, scenario={"schedulers": ["greedy"]})
    plan = drive(services.create_plan(owner, spec))
    assert plan.status == Status.FINISHED, plan.error
    assert plan.note.startswith(
        "target max_wait_s<0 is not reachable up to 24 machines: greedy: not reachable up to 24"
    )
    assert plan.result["plans"][0]["machines"] is None
    page = Client()
    page.force_login(owner)
    html = page.get(plan.get_absolute_url()).content.decode()
    assert "not reachable up to 24 machines" in html and "Traceback" not in html


@pytest.mark.django_db
def test_downloads_hold_every_probe_with_its_numbers(finished, owner_client):
    plan = finished
    base = reverse("capacity-download", args=[plan.pk, "probes.csv"])
    resp = owner_client.get(base)
    assert resp.status_code == 200
    assert resp["Link"] == '</docs/guide/capacity-plans/#downloads>; rel="describedby"'
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    expected = [
        (p.round, name, p.machines, p.seed, p.result["values"][name], p.result["met"][name], p.result["runs"][name])
        for p in CapacityProbe.objects.filter(plan=plan, round__gt=0).order_by("round", "machines", "seed")
        for name in p.schedulers
    ]
    assert len(rows) == len(expected) == plan.result["probes"]  # one row per scheduler run
    for r, (rnd, name, m, seed, value, met, run) in zip(rows, expected, strict=True):
        assert (int(r["round"]), r["scheduler"], int(r["machines"]), int(r["seed"])) == (rnd, name, m, seed)
        assert float(r["value"]) == value and r["met"] == str(met) and r["statistic"] == "p99_wait_s"
        assert int(r["jobs"]) == run["jobs"] and int(r["started"]) == run["started"]
        assert float(r["wall_s"]) == run["wall_s"]
    # Every curve point of the plan is the mean of its probes' values.
    curve = {(e["scheduler"], c["machines"]): c for e in plan.result["plans"] for c in e["curve"]}
    for (name, m), c in curve.items():
        values = [float(r["value"]) for r in rows if r["scheduler"] == name and int(r["machines"]) == m]
        assert c["mean"] == pytest.approx(sum(values) / len(values))
    pq_resp = owner_client.get(reverse("capacity-download", args=[plan.pk, "probes.parquet"]))
    assert pq_resp["Link"] == resp["Link"]
    table = pq.read_table(io.BytesIO(b"".join(pq_resp.streaming_content)))
    assert table.num_rows == len(rows)
    assert table.column("value").to_pylist() == [float(r["value"]) for r in rows]
    assert table.column("met").to_pylist() == [r["met"] == "True" for r in rows]
    body = json.loads(owner_client.get(reverse("capacity-download", args=[plan.pk, "plan.json"])).content)
    assert body["result"]["plans"] == plan.result["plans"] and body["spec"]["target"] == TARGET
    assert owner_client.get(reverse("capacity-download", args=[plan.pk, "x.csv"])).status_code == 404


@pytest.mark.django_db
def test_the_chart_draws_a_line_per_scheduler_the_target_and_the_answers(finished):
    fig = curve_chart(finished.result)
    names = [t["name"] for t in fig["data"]]
    entries = finished.result["plans"]
    lines = [t for t in fig["data"] if t["name"] in ("greedy", "tetris")]
    assert [t["name"] for t in lines] == ["greedy", "tetris"]
    for t, e in zip(lines, entries, strict=True):
        pts = [c for c in e["curve"] if c["mean"] is not None]
        assert t["x"] == [c["machines"] for c in pts]
        assert t["y"] == pytest.approx([c["mean"] for c in pts], rel=1e-5)
        assert t["error_y"]["array"] == pytest.approx([c["max"] - c["mean"] for c in pts], rel=1e-4, abs=1e-6)
    for e in entries:
        assert f"{e['scheduler']}: {e['machines']:,} machines" in names
    target = next(t for t in fig["data"] if t["name"] == f"target {TARGET}")
    assert target["y"] == [30.0, 30.0]


# ---------------------------------------------------------------------------- bad input


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"target": "p99_latency_s<=60"}, "target", "unknown statistic 'p99_latency_s'"),
        ({"target": "p99_wait_s=60"}, "target", "a target is an upper bound"),
        ({"target": "p99 wait under a minute"}, "target", "expected STATISTIC<=VALUE"),
        ({"target": "p99_wait_s<=soon"}, "target", "is not a number"),
        ({"max_machines": "500"}, "max_machines", "above the limit of 100 machines per cluster"),
        ({"cluster": "preset:no-such-cluster"}, "cluster", "no-such-cluster"),
        ({"schedulers": ["greedy", "no-such-scheduler"]}, "schedulers", "no-such-scheduler"),
        ({"resize": "G99"}, "resize", "give 'all'"),
    ],
)
def test_the_form_names_the_bad_field_and_stores_nothing(owner_client, monkeypatch, changes, field, words):
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", "100")
    resp = owner_client.post(reverse("capacity-new"), {**FORM, **changes})
    assert resp.status_code == 400
    errors = resp.context["form"].errors
    assert field in errors, errors
    assert words in " ".join(errors[field])
    assert CapacityPlan.objects.count() == 0 and CapacityProbe.objects.count() == 0


def _api_body(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "tiny",
        "scenario": {k: SCENARIO[k] for k in ("cluster", "workload", "load", "hours")},
        "schedulers": ["greedy", "tetris"],
        "seeds": [0, 1],
        "target": TARGET,
        "curve_points": 3,
    }
    body.update(changes)
    return body


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("changes", "path", "words"),
    [
        ({"target": "p99_latency_s<=60"}, ("target",), "unknown statistic"),
        ({"target": "wait<60s"}, ("target",), "unknown statistic 'wait'"),
        ({"target": "p99_wait_s>=60"}, ("target",), "a target is an upper bound"),
        ({"max_machines": 500}, ("max_machines",), "above the limit of 100 machines"),
        (
            {"scenario": {**_api_body()["scenario"], "cluster": {"preset": "no-such-cluster"}}},
            ("scenario", "cluster"),
            "no-such-cluster",
        ),
        (
            {"scenario": {**_api_body()["scenario"], "workload": {"preset": "no-such-workload"}}},
            ("scenario", "workload"),
            "no-such-workload",
        ),
        ({"schedulers": ["no-such-scheduler"]}, ("schedulers",), "no-such-scheduler"),
    ],
)
def test_the_api_answers_400_naming_the_field_and_stores_nothing(owner_client, monkeypatch, changes, path, words):
    monkeypatch.setenv("SIMCORE_MAX_MACHINES", "100")
    resp = owner_client.post(reverse("api-capacity-list"), _api_body(**changes), content_type="application/json")
    assert resp.status_code == 400, resp.content
    err: Any = resp.json()
    for key in path:
        err = err[key]
    assert words in json.dumps(err), resp.json()
    assert CapacityPlan.objects.count() == 0 and CapacityProbe.objects.count() == 0


# ---------------------------------------------------------------------------- pages, API, sharing, fork


@pytest.mark.django_db
def test_the_form_stores_a_plan_and_its_bounds_probe(owner_client, owner):
    resp = owner_client.post(reverse("capacity-new"), FORM)
    plan = CapacityPlan.objects.get()
    assert resp.status_code == 302 and resp["Location"] == plan.get_absolute_url()
    assert PlanSpec.from_dict(plan.spec) == spec_of()
    assert list(CapacityProbe.objects.filter(plan=plan).values_list("round", "status")) == [(0, "pending")]
    page = owner_client.get(plan.get_absolute_url()).content.decode()
    assert "computing the bounds" in page and "simcore capacity --cluster google-balanced" in page
    assert "--machines-per-config 2" in page and "--target &#x27;p99_wait_s&lt;=30&#x27;" in page
    listing = owner_client.get(reverse("capacity-list")).content.decode()
    assert plan.get_absolute_url() in listing
    assert reverse("capacity-list") in owner_client.get(reverse("experiment-list")).content.decode()  # the menu


@pytest.mark.django_db
def test_another_user_cannot_see_an_unshared_plan(finished, other):
    bob = Client()
    bob.force_login(other)
    pk = finished.pk
    for url in (
        reverse("capacity-detail", args=[pk]),
        reverse("capacity-progress", args=[pk]),
        reverse("capacity-download", args=[pk, "probes.csv"]),
        reverse("capacity-fork", args=[pk]),
        reverse("api-capacity-detail", args=[pk]),
        reverse("api-capacity-plan", args=[pk]),
        reverse("api-capacity-download", args=[pk, "probes.csv"]),
    ):
        assert bob.get(url).status_code == 404, url
    assert finished.get_absolute_url() not in bob.get(reverse("capacity-list")).content.decode()
    assert bob.get(reverse("api-capacity-list")).json()["count"] == 0
    assert Client().get(reverse("capacity-detail", args=[pk])).status_code == 302  # to the sign-in page


@pytest.mark.django_db
def test_a_public_link_shows_the_plan_read_only_until_revoked(finished, owner_client):
    owner_client.post(reverse("capacity-share", args=[finished.pk]), {"visibility": Visibility.PUBLIC})
    finished.refresh_from_db()
    token = finished.share_token
    assert token
    anyone = Client()
    page = anyone.get(reverse("shared-capacity-detail", args=[token]))
    assert page.status_code == 200 and b"chart-capacity" in page.content and b"share-form" not in page.content
    assert anyone.get(reverse("shared-capacity-download", args=[token, "probes.csv"])).status_code == 200
    owner_client.post(reverse("capacity-revoke-link", args=[finished.pk]))
    assert anyone.get(reverse("shared-capacity-detail", args=[token])).status_code == 404


@pytest.mark.django_db
def test_a_teammate_sees_a_team_plan(owner, other, team):
    plan = services.create_plan(owner, spec_of(), team=team, visibility=Visibility.TEAM)
    bob = Client()
    bob.force_login(other)
    assert bob.get(plan.get_absolute_url()).status_code == 200
    assert bob.post(reverse("capacity-share", args=[plan.pk]), {"visibility": "public"}).status_code == 403


@pytest.mark.django_db
def test_fork_pre_fills_the_form_with_the_plan(owner_client, owner):
    plan = services.create_plan(owner, spec_of(target="mean_wait_s<=2", max_machines=60, curve_points=2), name="source")
    form = owner_client.get(reverse("capacity-fork", args=[plan.pk])).context["form"]
    assert form.initial["target"] == "mean_wait_s<=2"
    assert form.initial["max_machines"] == 60 and form.initial["curve_points"] == 2
    assert form.initial["cluster"] == "preset:google-balanced"
    assert form.initial["cluster__google-balanced__machines_per_config"] == 2
    assert form.initial["schedulers"] == ["greedy", "tetris"] and form.initial["seeds"] == "0,1"
    assert form.initial["name"] == "source (fork)"


@pytest.mark.django_db
def test_the_api_makes_reads_and_forks_a_plan(owner_client, owner):
    resp = owner_client.post(reverse("api-capacity-list"), _api_body(), content_type="application/json")
    assert resp.status_code == 201, resp.content
    body = resp.json()
    plan = CapacityPlan.objects.get(pk=body["id"])
    assert PlanSpec.from_dict(plan.spec) == spec_of()
    assert body["progress"]["phase"] == "bounds" and body["target"] == TARGET
    assert owner_client.get(reverse("api-capacity-list")).json()["count"] == 1
    fork = owner_client.post(
        reverse("api-capacity-fork", args=[plan.pk]),
        {"changes": {"target": "mean_wait_s<=5"}},
        content_type="application/json",
    )
    assert fork.status_code == 201, fork.content
    forked = CapacityPlan.objects.get(pk=fork.json()["id"])
    assert forked.forked_from_id == plan.pk and forked.spec == {**plan.spec, "target": "mean_wait_s<=5"}
    assert forked.name == f"{plan.title} (fork)"
    bad = owner_client.post(
        reverse("api-capacity-fork", args=[plan.pk]), {"changes": {"engine": "x"}}, content_type="application/json"
    )
    assert bad.status_code == 400 and "engine" in bad.content.decode()
    cancel = owner_client.post(reverse("api-capacity-cancel", args=[plan.pk]))
    assert cancel.json()["status"] == "cancelled"
    assert CapacityProbe.objects.get(plan=plan).status == ProbeStatus.CANCELLED
