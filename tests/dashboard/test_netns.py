"""Hosts that share no disk (issue 29): the web server and two workers in network namespaces of their own.

Three namespaces made by the test (tests/dashboard/netns.py): ``web`` runs the
production web server (gunicorn, as ``make run`` starts it), ``short`` the
worker of the short queue (experiment runs, sweep cells, search evaluations)
and ``long`` the worker of the long queue (trace imports, packing analyses,
search coordination), as docker-compose.yml splits them. Each has its own
var directory, HOME and TMPDIR; they reach PostgreSQL and Redis over the
bridge, through the test's forwarder. Everything is done over HTTP against
the web namespace's address, as a script on another machine would: upload a
cluster file and a trace, then an experiment, a sweep, packing analyses (of
one of its runs, and of the trace itself) and a search on them; each result must equal what the
library computes for the same scenario in this process, must have been made
by the worker of the right namespace, and must come back in the downloads
the web namespace serves.

The packing analysis of a run reads the per-job records the *other* worker
stored: the one path where a worker needs what another host produced.
"""

from __future__ import annotations

import csv
import io
import json
import os
import sys
import time
import zipfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import requests
from django.contrib.auth.models import User

from dashboard import launcher
from dashboard.celery import app
from dashboard.models import ApiToken, PackingAnalysis, Run, RunRecordsObject, SearchEvaluation, Status, TraceUpload
from simcore.cli import main
from simcore.clusterfile import read_cluster
from simcore.packing.analysis import AnalysisSpec, analyse
from simcore.packing.sources import from_result, from_trace
from simcore.scenario import run_scenario
from simcore.sweep.scenario import cell_scenario
from simcore.traces.tracefile import read_trace_with_priority
from tests.dashboard.conftest import ARTIFACTS, CLUSTER, TRACE, _test_database_url, purge_queues
from tests.dashboard.netns import Lab, require_namespaces

pytestmark = [pytest.mark.django_db(transaction=True)]

PORT = 8000
#: Summary keys that are measurements of the machine, not results of the scenario.
TIMING = ("wall_s", "jobs_per_s", "compile_s")


def untimed(summary: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in summary.items() if k not in TIMING}


def same_json(x: Any) -> Any:
    """``x`` as stored and served (JSON: tuples become lists, numpy numbers plain ones)."""
    return json.loads(json.dumps(x, default=float))


@pytest.fixture
def lab(transactional_db: None, tmp_path: Path) -> Iterator[Lab]:
    """The namespaces, the forwarder, the web server and both workers, all ready; removed whatever happens.

    Depends on ``transactional_db``, so that its processes stop (and close their connections) before the
    test database is emptied.
    """
    require_namespaces()
    if not (os.environ.get("DATABASE_URL") and os.environ.get("REDIS_URL")):
        why = "hosts need a database and a broker they reach over the network (DATABASE_URL and REDIS_URL)"
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(why + " (CI=true)")
        pytest.skip(why)
    logs = ARTIFACTS / "netns"  # kept after the run, as the other worker tests' logs
    lab = Lab(["web", "short", "long"], _test_database_url(), os.environ["REDIS_URL"], tmp_path, logs)
    try:
        before = app.conf.task_default_queue
        app.conf.task_default_queue = lab.queue  # the launcher's commands name this lab's queues
        try:
            named = launcher.commands(lab.hosts["web"].ip, PORT, workers=1, long_workers=1)
        finally:
            app.conf.task_default_queue = before
        for role, name in (("short", "short-queue worker"), ("long", "long-queue worker")):
            argv = list(named[name])
            argv[argv.index("-n") + 1] = f"{role}-{lab.tag}@%h"  # this lab's workers, told apart by name
            lab.copy_kernels(role)
            lab.start(role, argv)
        lab.start("web", named["web server"])
        lab.wait_ready("short")
        lab.wait_ready("long")
        _wait_for_web(lab)
        yield lab
    finally:
        lab.close()
        purge_queues(lab.queue)  # what a stopped worker left on the broker (nothing, unless the test failed)


def _wait_for_web(lab: Lab, timeout: float = 120.0) -> None:
    proc, _ = lab.hosts["web"].procs[-1]
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(f"http://{lab.hosts['web'].ip}:{PORT}/api/", timeout=5).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the web server did not answer:\n{lab.log_tail()}")
        time.sleep(0.2)


class Remote:
    """The REST API of the web namespace, over the network, with a token (no proxy from the environment)."""

    def __init__(self, lab: Lab, token: str) -> None:
        self.base = f"http://{lab.hosts['web'].ip}:{PORT}"
        self.s = requests.Session()
        self.s.trust_env = False
        self.s.headers["Authorization"] = f"Bearer {token}"

    def get(self, path: str) -> requests.Response:
        return self.s.get(self.base + path, timeout=30)

    def json(self, path: str) -> Any:
        resp = self.get(path)
        assert resp.status_code == 200, (path, resp.status_code, resp.text[:2000])
        return resp.json()

    def post(self, path: str, body: dict[str, Any] | None = None, **files: tuple[str, bytes]) -> Any:
        if files:
            resp = self.s.post(self.base + path, data=body or {}, files=files, timeout=30)
        else:
            resp = self.s.post(self.base + path, json=body or {}, timeout=30)
        assert resp.status_code == 201, (path, resp.status_code, resp.text[:2000])
        return resp.json()

    def until(self, path: str, done: Callable[[Any], bool], lab: Lab, timeout: float = 180.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            body = self.json(path)
            if done(body):
                return body
            if time.monotonic() > deadline:
                raise AssertionError(f"{path} not done after {timeout} s: {str(body)[:2000]}\n{lab.log_tail()}")
            time.sleep(0.3)


def _ended(body: dict[str, Any]) -> bool:
    return body["status"] not in (Status.PENDING, Status.RUNNING)


def test_web_server_and_workers_in_namespaces_of_their_own_share_only_the_database_and_the_broker(
    lab: Lab, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The hosts reach PostgreSQL and Redis only over the network: their own loopback has neither.
    probe = "import socket, sys; s = socket.socket(); sys.exit(s.connect_ex(('127.0.0.1', int(sys.argv[1]))) == 0)"
    for role in lab.hosts:
        for port in (5432, 6379):
            assert lab.run(role, [sys.executable, "-c", probe, str(port)]).returncode == 0, (role, port)
    user = User.objects.create_user("alice", password="alice-password-1")
    _, secret = ApiToken.issue(user, "netns")
    api = Remote(lab, secret)
    short, long = f"short-{lab.tag}@", f"long-{lab.tag}@"

    # The files as a user has them (the library reads the same bytes below).
    c_path, t_path = tmp_path / "c.json", tmp_path / "t.csv"
    c_path.write_text(json.dumps(CLUSTER))
    t_path.write_text(TRACE)

    # Uploads: the cluster is checked in the request, the trace imported by the long queue's worker.
    cid = api.post("/api/uploads/cluster/", {"name": "two-kinds"}, file=("c.json", c_path.read_bytes()))["id"]
    tid = api.post("/api/uploads/trace/", {"name": "t"}, file=("t.csv", t_path.read_bytes()))["id"]
    trace = api.until(f"/api/uploads/trace/{tid}/", lambda b: b["status"] not in ("pending", "running"), lab)
    assert trace["status"] == "ready" and trace["info"]["jobs"] == 200, trace
    assert TraceUpload.objects.get(pk=tid).worker.startswith(long)

    place = {"cluster": {"upload": cid}, "workload": {"upload": tid}, "load": 2.0, "hours": None}

    def files_of(scenario: dict[str, Any]) -> dict[str, Path]:
        return {scenario["cluster"]["file"]: c_path, scenario["workload"]["file"]: t_path}

    # An experiment.
    body = {"name": "netns", "scenario": {**place, "schedulers": ["greedy"], "seeds": [0]}}
    exp = api.post("/api/experiments/", body)
    exp = api.until(f"/api/experiments/{exp['id']}/", _ended, lab)
    assert exp["status"] == Status.FINISHED, exp
    out = run_scenario(exp["scenario"], "greedy", 0, files_of(exp["scenario"]))
    served = api.json(f"/api/experiments/{exp['id']}/download/summary.json")
    (record,) = served["runs"]
    assert untimed(record["summary"]) == untimed(same_json(out.summary))
    # Twice the recorded rate over half the window: jobs wait, and the last ones are still running at its end.
    assert record["summary"]["jobs"] == 200 and record["summary"]["mean_response_s"] > 0
    run = Run.objects.get(pk=record["run"])
    assert run.worker.startswith(short) and run.heartbeat_at is not None
    # Its per-job records, served by the web namespace from what the short worker stored in the S3 store
    # that every host reaches (not under the short worker's var directory).
    stored = RunRecordsObject.objects.get(run=run)
    [obj] = [o for o in lab.s3_bucket().objects.filter(Prefix="records/") if o.key == f"records/{stored.key}"]
    assert obj.size == stored.size > 0
    assert not list((lab.hosts["short"].var).rglob("*.parquet"))
    jobs = api.get(f"/api/runs/{run.pk}/download/jobs.csv")
    assert jobs.status_code == 200
    rows = list(csv.DictReader(io.StringIO(jobs.text)))
    want = out.jobs_columns()
    assert len(rows) == len(want["job"]) == 200
    for col in ("submit_s", "start_s", "finish_s"):  # a job not started or finished: an empty field
        got = np.array([float(r[col] or "nan") for r in rows])
        np.testing.assert_allclose(got, want[col], rtol=1e-12, equal_nan=True, err_msg=col)

    # The experiment's archive (scenario, uploads, results), which `simcore rerun` reads: the uploads from the database.
    archive = api.get(f"/api/experiments/{exp['id']}/download/archive.zip")
    assert archive.status_code == 200
    with zipfile.ZipFile(io.BytesIO(archive.content)) as z:
        names = z.namelist()
    assert {exp["scenario"]["cluster"]["file"], exp["scenario"]["workload"]["file"]} <= {Path(n).name for n in names}

    # A sweep: every cell on the short worker, each equal to the library's run of its cell's scenario.
    body = {"name": "netns sweep", "scenario": {**place, "schedulers": ["greedy"], "seeds": [0], "vary": ["load=1,3"]}}
    sweep = api.post("/api/experiments/", body)
    sweep = api.until(f"/api/experiments/{sweep['id']}/", _ended, lab)
    assert sweep["status"] == Status.FINISHED, sweep
    cells = api.json(f"/api/experiments/{sweep['id']}/download/summary.json")["runs"]
    assert sorted(c["point"]["load"] for c in cells) == [1.0, 3.0]
    for cell in cells:
        mine = run_scenario(cell_scenario(sweep["scenario"], cell["point"]), "greedy", 0, files_of(sweep["scenario"]))
        assert untimed(cell["summary"]) == untimed(same_json(mine.summary)), cell["point"]
    assert {
        w.split("@")[0] + "@" for w in Run.objects.filter(experiment_id=sweep["id"]).values_list("worker", flat=True)
    } == {short}

    # A packing analysis of the experiment's run, on the long worker: it reads the records the short one stored.
    spec = {"techniques": ["utilisation", "holes", "inflation"], "units": [0.5], "factors": [1, 1.5], "taus": [0]}
    pa = api.post("/api/packing/", {"source": {"run": run.pk}, "time_s": 300, "spec": spec})
    pa = api.until(f"/api/packing/{pa['id']}/", _ended, lab)
    assert pa["status"] == Status.FINISHED, pa
    want_pa = same_json(
        analyse(from_result(out.result, out.workload, out.cluster, 300.0), AnalysisSpec.from_dict(pa["spec"]))
    )
    assert pa["results"] == want_pa
    assert "note" not in pa["results"]["snapshot"], "simulated again instead of reading the stored records"
    assert PackingAnalysis.objects.get(pk=pa["id"]).worker.startswith(long)
    downloaded = api.json(f"/api/packing/{pa['id']}/download/results.json")
    assert downloaded.pop("analysis") == pa["id"] and downloaded.pop("code_version") == pa["code_version"]
    assert downloaded == want_pa

    # A packing analysis of the trace itself on the uploaded machines (no simulation), on the long worker.
    source = {"trace": tid, "cluster": {"upload": cid}}
    # A trace records no placements: its snapshot is placed in arrival order.
    pt = api.post("/api/packing/", {"source": source, "time_s": 300, "spec": {**spec, "placed_by": "arrival"}})
    pt = api.until(f"/api/packing/{pt['id']}/", _ended, lab)
    assert pt["status"] == Status.FINISHED, pt
    cluster = read_cluster(c_path)
    with t_path.open("rb") as f:
        wl, priority = read_trace_with_priority(f, resources=cluster.resources, name="t")
    snapshot = from_trace(wl, cluster, 300.0, priority=priority)
    assert pt["results"] == same_json(analyse(snapshot, AnalysisSpec.from_dict(pt["spec"])))
    assert pt["results"]["snapshot"]["tasks"] > 0
    assert PackingAnalysis.objects.get(pk=pt["id"]).worker.startswith(long)

    # A search: coordinated by the long worker, its policies evaluated by the short one; the elites of simcore explore.
    body = {"name": "netns search", "scenario": place, "population": 4, "generations": 2, "seed": 3}
    search = api.post("/api/searches/", body)
    search = api.until(f"/api/searches/{search['id']}/", _ended, lab)
    assert search["status"] == Status.FINISHED, search
    argv = ["explore", "--cluster", str(c_path), "--workload", str(t_path), "--load", "2"]
    assert main([*argv, "--population", "4", "--generations", "2", "--seed", "3", "--quiet"]) == 0
    cli = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    served = api.json(f"/api/searches/{search['id']}/download/search.json")
    assert [[e["elite"], e["fitness"]] for e in cli["elite_sequence"]] == [
        [g["policy"], g["fitness"]] for g in served["elites"]
    ]
    assert len(served["elites"]) == 2
    workers = set(SearchEvaluation.objects.filter(search_id=search["id"]).values_list("worker", flat=True))
    assert workers and all(w.startswith(short) for w in workers)

    # Every host's database and broker connections went through the bridge.
    assert lab.forwarder is not None
    assert lab.forwarder.connections["postgres"] > 0 and lab.forwarder.connections["redis"] > 0
