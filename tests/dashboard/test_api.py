"""The REST API: token authentication, the pages' features, the same permission rules."""

from __future__ import annotations

import csv
import io
import json

import numpy as np
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.experiments.execution import execute_run
from dashboard.experiments.services import create_experiment
from dashboard.models import ApiToken, Experiment, Status, Visibility
from dashboard.traces import imports
from tests.dashboard.conftest import CLUSTER, TRACE, small_scenario


class Api:
    """A client sending one user's token, as a script would."""

    def __init__(self, user) -> None:
        _, self.secret = ApiToken.issue(user, "test")
        self.c = Client(HTTP_AUTHORIZATION=f"Bearer {self.secret}")

    def get(self, url: str, **params):
        return self.c.get(url, params)

    def post(self, url: str, body=None):
        return self.c.post(url, json.dumps(body or {}), content_type="application/json")

    def patch(self, url: str, body):
        return self.c.patch(url, json.dumps(body), content_type="application/json")

    def delete(self, url: str):
        return self.c.delete(url)


def test_requests_without_a_valid_token_get_401(owner):
    c = Client()
    assert c.get("/api/experiments/").status_code == 401
    assert c.get("/api/experiments/", HTTP_AUTHORIZATION="Bearer sc_nope").status_code == 401
    assert c.get("/api/experiments/", HTTP_AUTHORIZATION="Bearer").status_code == 401
    _, secret = ApiToken.issue(owner, "t")
    assert c.get("/api/me/", HTTP_AUTHORIZATION=f"Token {secret}").json()["username"] == "alice"
    assert ApiToken.objects.get().last_used is not None


def test_a_script_creates_an_experiment_follows_it_and_reads_the_same_results_as_the_pages(owner):
    api = Api(owner)
    resp = api.post("/api/experiments/", {"name": "from-a-notebook", "scenario": small_scenario(seeds=[0, 3])})
    assert resp.status_code == 201, resp.content
    body = resp.json()
    exp = Experiment.objects.get(pk=body["id"])
    assert body["owner"] == "alice" and body["visibility"] == "private" and body["share_url"] is None
    assert sorted((r["scheduler"], r["seed"]) for r in body["runs"]) == [
        ("fcfs", 0),
        ("fcfs", 3),
        ("greedy", 0),
        ("greedy", 3),
    ]
    assert body["page_url"].endswith(exp.get_absolute_url())
    prog = api.get(f"/api/experiments/{exp.pk}/progress/").json()
    assert prog["status"] == "pending" and {r["status"] for r in prog["runs"]} == {"pending"}
    for run in exp.runs.all():  # the worker's code path, in this process
        assert execute_run(run.pk) == Status.FINISHED
    exp.refresh_status()
    assert api.get(f"/api/experiments/{exp.pk}/").json()["status"] == "finished"
    summ = api.get(f"/api/experiments/{exp.pk}/summary/").json()
    stored = {(r.scheduler, r.seed): r.result.summary for r in exp.runs.select_related("result")}
    assert {(r["scheduler"], r["seed"]): r["summary"] for r in summ["runs"]} == stored
    assert summ["scenario"]["seeds"] == [0, 3]
    series = api.get(f"/api/experiments/{exp.pk}/series/").json()
    assert len(series["runs"]) == 4 and "cdf" in series["runs"][0]["series"]
    run = exp.runs.get(scheduler="greedy", seed=3)
    assert api.get(f"/api/runs/{run.pk}/").json()["fraction"] == 1.0
    body = b"".join(api.get(f"/api/runs/{run.pk}/download/jobs.csv").streaming_content).decode()
    rows = list(csv.DictReader(io.StringIO(body)))
    assert len(rows) == stored[("greedy", 3)]["jobs"]
    resp_s = np.array([float(r["response_s"]) for r in rows if r["response_s"]])
    assert resp_s.mean() == pytest.approx(stored[("greedy", 3)]["mean_response_s"], rel=1e-12)
    # An Accept header asking for JSON does not stop a CSV download.
    r = api.c.get(f"/api/experiments/{exp.pk}/download/summary.csv", HTTP_ACCEPT="application/json")
    assert r.status_code == 200 and r["Content-Type"].startswith("text/csv")
    assert api.get(f"/api/experiments/{exp.pk}/download/nope").status_code == 404
    listed = api.get("/api/experiments/", status="finished").json()
    assert listed["count"] == 1 and listed["results"][0]["id"] == exp.pk


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schedulers": ["nope"]}, "is not a valid choice"),
        ({"hours": 10_000}, "less than or equal to 8760"),
        ({"seeds": list(range(51))}, "no more than 50"),
        ({"load": "lots"}, "A valid number is required"),
        ({"cluster": {"preset": "google-balanced", "params": {"machines_per_config": 10**9}}}, "SIMCORE_MAX_MACHINES"),
        ({"cluster": {"preset": "google-balanced", "params": {"bogus": 1}}}, "has no parameter 'bogus'"),
        ({"cluster": {"preset": "ncbi-heterogeneous", "params": {"profile": "/etc/passwd"}}}, "names a server file"),
        ({"cluster": {"upload": 12345}}, "no cluster upload 12345 of yours"),
        ({"cluster": {}}, "either 'preset'"),
    ],
)
def test_bad_scenarios_get_400_naming_the_problem_and_store_nothing(owner, change, message):
    resp = Api(owner).post("/api/experiments/", {"scenario": small_scenario(**change)})
    assert resp.status_code == 400
    assert message in json.dumps(resp.json())
    assert Experiment.objects.count() == 0


def test_teams_and_roles_apply_to_the_api(owner, other, viewer, outsider, team):
    exp = create_experiment(owner, small_scenario(), team=team, visibility=Visibility.TEAM)
    url = f"/api/experiments/{exp.pk}/"
    assert Api(outsider).get(url).status_code == 404
    assert Api(outsider).post(url + "cancel/").status_code == 404
    bob = Api(other)
    assert bob.get(url).status_code == 200 and bob.get(url).json()["share_url"] is None
    assert bob.post(url + "cancel/").status_code == 403
    assert bob.patch(url, {"visibility": "public"}).status_code == 403
    assert Api(viewer).post("/api/experiments/", {"scenario": small_scenario(), "team": team.pk}).status_code == 400
    assert bob.post("/api/experiments/", {"scenario": small_scenario(), "team": 999}).status_code == 400
    # The owner shares and revokes a public link.
    alice = Api(owner)
    share = alice.patch(url, {"visibility": "public"}).json()["share_url"]
    assert share and Client().get(share).status_code == 200
    new = alice.post(url + "share-link/").json()["share_url"]
    assert new != share and Client().get(share).status_code == 404
    assert alice.delete(url + "share-link/").status_code == 204
    assert Client().get(new).status_code == 404
    exp.refresh_from_db()
    assert exp.visibility == Visibility.TEAM
    # A team owner may cancel a member's team experiment.
    bobs = create_experiment(other, small_scenario(), team=team, visibility=Visibility.TEAM)
    resp = alice.post(f"/api/experiments/{bobs.pk}/cancel/")
    assert resp.status_code == 200 and {r["status"] for r in resp.json()["runs"]} == {"cancelled"}
    teams = alice.get("/api/teams/").json()
    assert [(t["name"], t["role"]) for t in teams] == [("lab", "owner")]
    assert {m["username"]: m["role"] for m in teams[0]["members"]} == {
        "alice": "owner",
        "bob": "member",
        "dave": "viewer",
    }
    assert Api(outsider).get(f"/api/teams/{team.pk}/").status_code == 404


def test_uploads_and_forks_through_the_api(owner, other, team):
    alice = Api(owner)
    resp = alice.c.post(
        "/api/uploads/cluster/", {"name": "mine", "file": SimpleUploadedFile("c.json", json.dumps(CLUSTER).encode())}
    )
    assert resp.status_code == 201 and resp.json()["info"]["machines"] == 12
    cid = resp.json()["id"]
    resp = alice.c.post("/api/uploads/trace/", {"file": SimpleUploadedFile("t.csv", TRACE.encode())})
    assert resp.status_code == 201 and resp.json()["status"] == "pending"
    tid = resp.json()["id"]
    # Not usable before its import has run (the worker's code path, in this process).
    early = small_scenario(workload={"upload": tid}, schedulers=["greedy"])
    resp = alice.post("/api/experiments/", {"scenario": early})
    assert resp.status_code == 400 and "is pending" in resp.content.decode()
    assert imports.execute_import(tid) == "ready"
    assert alice.get(f"/api/uploads/trace/{tid}/").json()["info"]["jobs"] == 200
    bad = alice.c.post("/api/uploads/cluster/", {"file": SimpleUploadedFile("c.json", b'{"name": ')})
    assert bad.status_code == 400 and "c.json" in bad.json()["file"][0]
    assert [u["id"] for u in alice.get("/api/uploads/cluster/").json()["results"]] == [cid]
    assert Api(other).get(f"/api/uploads/cluster/{cid}/").status_code == 404
    sc = small_scenario(cluster={"upload": cid}, workload={"upload": tid}, schedulers=["greedy"], hours=None)
    resp = alice.post("/api/experiments/", {"scenario": sc, "team": team.pk, "visibility": "team"})
    assert resp.status_code == 201, resp.content
    src = Experiment.objects.get(pk=resp.json()["id"])
    assert src.scenario["cluster"] == {"file": "cluster_c.json", "name": "mine"}
    # bob cannot name alice's upload himself, but can fork her experiment, changing the seeds.
    bob = Api(other)
    assert bob.post("/api/experiments/", {"scenario": sc}).status_code == 400
    resp = bob.post(f"/api/experiments/{src.pk}/fork/", {"changes": {"seeds": [4, 5]}})
    assert resp.status_code == 201, resp.content
    fork = Experiment.objects.get(pk=resp.json()["id"])
    assert fork.owner == other and fork.forked_from == src and fork.cluster_upload_id == cid
    assert fork.scenario == {**src.scenario, "seeds": [4, 5]}
    assert execute_run(fork.runs.first().pk) == Status.FINISHED


def test_the_catalog_lists_registries_without_server_file_parameters(owner):
    cat = Api(owner).get("/api/catalog/").json()
    from simcore.schedulers import SCHEDULERS

    assert [s["name"] for s in cat["schedulers"]] == SCHEDULERS.names()
    assert all(p["name"] != "profile" for c in cat["clusters"] + cat["workloads"] for p in c["params"])


def test_the_openapi_schema_is_served(client, db):
    schema = client.get("/api/openapi.json").json()
    assert schema["openapi"].startswith("3.")
    assert {
        "/api/experiments/",
        "/api/experiments/{id}/progress/",
        "/api/uploads/{kind}/",
        "/api/runs/{id}/download/{kind}",
    } <= set(schema["paths"])
    assert schema["components"]["securitySchemes"]["tokenAuth"]["scheme"] == "bearer"
