"""Capacity plans on uploaded cluster files and traces, driven in this process (the worker's code, called directly).

The stored plan names its uploads, never a path; a worker writes each upload once under its own var dir, at a
path its content hash names, and the plan it makes is the plan ``make_plan`` makes from the same files locally.
Uploads in use cannot be deleted; a plan may only use uploads its owner can see.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from dashboard.capacity import files, services
from dashboard.capacity.charts import curve_chart
from dashboard.capacity.forms import initial_from_plan
from dashboard.capacity.models import CapacityPlan, CapacityProbe
from dashboard.capacity.views import capacity_command
from dashboard.common.models import Status
from dashboard.traces import imports
from dashboard.traces.models import ClusterUpload, TraceUpload
from dashboard.traces.uploads import create_upload, delete_upload, upload_specs
from simcore import api
from simcore.clusterfile import write_cluster
from simcore.core.errors import ParameterError
from simcore.planning import PlanSpec
from simcore.traces.tracefile import write_trace
from tests.dashboard.test_capacity import drive, local_plan, same_answers

TARGET = "p99_wait_s<=30"


def _files() -> tuple[bytes, bytes]:
    """A 20-machine cluster (google-balanced, 2 per configuration) and six minutes of google-like on it."""
    cluster = api.resolve_cluster("google-balanced", {"machines_per_config": 2})
    workload = api.resolve_workload("google-like", cluster, 3, 0.9, 0.1)
    c, t = io.StringIO(), io.StringIO()
    write_cluster(cluster, c)
    write_trace(workload, t)
    return c.getvalue().encode(), t.getvalue().encode()


@pytest.fixture
def var_dir(settings: Any, tmp_path: Path) -> Path:
    settings.VAR_DIR = tmp_path / "var"
    return settings.VAR_DIR


def make_uploads(owner: User) -> tuple[ClusterUpload, TraceUpload, bytes, bytes]:
    """The two files of :func:`_files`, uploaded by ``owner`` (the trace imported by the worker's code, here)."""
    cbytes, tbytes = _files()
    cu = create_upload("cluster", owner, "small", "small.json", cbytes)
    tu = create_upload("trace", owner, "quarter", "quarter.csv", tbytes)
    assert imports.execute_import(tu.pk) == "ready"
    tu.refresh_from_db()
    return cu, tu, cbytes, tbytes  # type: ignore[return-value]


@pytest.fixture
def uploads(owner: User, var_dir: Path) -> tuple[ClusterUpload, TraceUpload, bytes, bytes]:
    return make_uploads(owner)


def local_spec(folder: Path, cbytes: bytes, tbytes: bytes) -> PlanSpec:
    """The plan of :func:`_request` on the same files in ``folder``, as ``simcore capacity`` would get it."""
    (folder / "small.json").write_bytes(cbytes)
    (folder / "quarter.csv").write_bytes(tbytes)
    return PlanSpec(
        cluster=str(folder / "small.json"),
        workload=str(folder / "quarter.csv"),
        schedulers=["greedy", "tetris"],
        target=TARGET,
        seeds=[0],
        curve_points=2,
    )


def _request(cu: ClusterUpload, tu: TraceUpload, **changes: Any) -> PlanSpec:
    scenario = {"load": None, "hours": None, "schedulers": ["greedy", "tetris"], "seeds": [0]}
    scenario.update(upload_specs(cu, tu))
    spec, _ = services.check_request(
        scenario, target=TARGET, curve_points=2, cluster_upload=cu, trace_upload=tu, **changes
    )
    return spec


@pytest.mark.django_db
def test_a_plan_on_uploads_is_the_plan_of_make_plan_on_the_same_files(uploads, owner, var_dir, tmp_path, client):
    cu, tu, cbytes, tbytes = uploads
    client.force_login(owner)
    spec = _request(cu, tu)
    # Stored: the uploads by their scenario names and the rows; no path of this host.
    assert (spec.cluster, spec.workload, spec.load) == ("cluster_small.json", "trace_quarter.csv", None)
    plan = drive(services.create_plan(owner, spec, cluster_upload=cu, trace_upload=tu))
    assert plan.status == Status.FINISHED, plan.error
    assert (plan.cluster_upload_id, plan.trace_upload_id) == (cu.pk, tu.pk)
    assert str(var_dir) not in str(plan.spec) + str(plan.result) + str(plan.bounds)
    assert (plan.result["cluster"], plan.result["workload"]) == ("cluster_small.json", "trace_quarter.csv")
    assert (plan.cluster_label, plan.workload_label) == ("small", "quarter")
    # The same files, locally, through simcore capacity's make_plan.
    local = local_plan(local_spec(tmp_path, cbytes, tbytes))
    same_answers(plan.result, local)
    assert all(isinstance(p["machines"], int) for p in local["plans"]), local["plans"]
    assert local["given_machines"] == 20 and local["jobs"] == tu.info["jobs"]
    # Each upload was written once, under the var dir, at a path its content hash names.
    written = sorted(p.relative_to(var_dir).as_posix() for p in var_dir.rglob("*") if p.is_file())
    assert written == sorted(
        [f"plan-uploads/{cu.sha256}/cluster_small.json", f"plan-uploads/{tu.sha256}/trace_quarter.csv"]
    )
    assert (var_dir / written[0]).read_bytes() in (cbytes, tbytes)
    # The command line names the files as their owner sent them.
    command = capacity_command(plan)
    assert command.startswith("simcore capacity --cluster small.json --workload quarter.csv --schedulers")
    # The statistic in words: the chart's axis and the answers' column.
    assert curve_chart(plan.result)["layout"]["yaxis"]["title"]["text"] == "99th percentile wait until start (s)"
    page = client.get(plan.get_absolute_url()).content.decode()
    assert "<th>99th percentile wait until start (s) at the answer (seed mean)</th>" in page


@pytest.mark.django_db
def test_an_upload_on_disk_is_not_read_from_the_database_again(uploads, django_assert_num_queries):
    cu, tu, _, tbytes = uploads
    path = files.materialise(tu, "trace_quarter.csv")
    assert path.read_bytes() == tbytes
    before = path.stat().st_mtime_ns
    with django_assert_num_queries(0):  # the row is at hand; the bytes are not fetched
        assert files.materialise(tu, "trace_quarter.csv") == path
    assert path.stat().st_mtime_ns == before
    assert not [p for p in path.parent.iterdir() if p.name.startswith(".writing-")]


@pytest.mark.django_db
def test_an_upload_in_use_by_a_plan_cannot_be_deleted(uploads, owner):
    cu, tu, _, _ = uploads
    services.create_plan(owner, _request(cu, tu), cluster_upload=cu, trace_upload=tu)
    for up in (cu, tu):
        with pytest.raises(ParameterError, match=r"is in use by 1 capacity plan\(s\) you can see; it stays so"):
            delete_upload(up)
    assert ClusterUpload.objects.filter(pk=cu.pk).exists() and TraceUpload.objects.filter(pk=tu.pk).exists()


def _form(cu: Any, tu: Any) -> dict[str, Any]:
    return {
        "name": "on uploads",
        "cluster": f"upload:{cu.pk}",
        "workload": f"upload:{tu.pk}",
        "load": "1",
        "schedulers": ["greedy"],
        "seeds": "0",
        "target": TARGET,
        "resize": "all",
        "curve_points": "0",
        "visibility": "private",
    }


@pytest.mark.django_db
def test_the_form_takes_the_owners_uploads_and_the_fork_keeps_them(uploads, owner_client, other, team, client):
    cu, tu, _, _ = uploads
    resp = owner_client.post(reverse("capacity-new"), _form(cu, tu))
    assert resp.status_code == 302, resp.context["form"].errors
    plan = CapacityPlan.objects.get()
    assert (plan.cluster_upload_id, plan.trace_upload_id, plan.spec["load"]) == (cu.pk, tu.pk, 1.0)
    assert CapacityProbe.objects.filter(plan=plan, round=0).count() == 1
    # Another user cannot pick them: not one of the choices, a field error, nothing stored.
    client.force_login(other)
    resp = client.post(reverse("capacity-new"), _form(cu, tu))
    assert resp.status_code == 400
    errors = resp.context["form"].errors
    assert "Select a valid choice" in " ".join(errors["cluster"]) and "workload" in errors
    assert CapacityPlan.objects.count() == 1
    # Shared with them (a team plan), the plan's fork offers its uploads, and keeps them.
    plan.team, plan.visibility = team, "team"
    plan.save(update_fields=["team", "visibility"])
    page = client.get(reverse("capacity-fork", args=[plan.pk]))
    assert page.status_code == 200
    assert page.context["form"].initial["cluster"] == f"upload:{cu.pk}"
    resp = client.post(reverse("capacity-fork", args=[plan.pk]), {**_form(cu, tu), "name": "fork"})
    assert resp.status_code == 302, resp.context["form"].errors
    fork = CapacityPlan.objects.get(name="fork")
    assert (fork.owner, fork.cluster_upload_id, fork.trace_upload_id, fork.forked_from_id) == (
        other,
        cu.pk,
        tu.pk,
        plan.pk,
    )
    assert initial_from_plan(fork)["workload"] == f"upload:{tu.pk}"


@pytest.mark.django_db
def test_the_api_takes_uploads_by_id_as_experiments_do(uploads, owner_client, other, team, client):
    cu, tu, _, _ = uploads
    body = {
        "scenario": {"cluster": {"upload": cu.pk}, "workload": {"upload": tu.pk}},
        "schedulers": ["greedy"],
        "seeds": [0],
        "target": TARGET,
    }
    resp = owner_client.post(reverse("api-capacity-list"), body, content_type="application/json")
    assert resp.status_code == 201, resp.content
    plan = CapacityPlan.objects.get(pk=resp.json()["id"])
    # No load given: the trace is replayed as recorded.
    assert (plan.cluster_upload_id, plan.trace_upload_id, plan.spec["load"]) == (cu.pk, tu.pk, None)
    assert plan.spec["cluster"] == "cluster_small.json"
    client.force_login(other)
    resp = client.post(reverse("api-capacity-list"), body, content_type="application/json")
    assert resp.status_code == 400
    assert resp.json() == {"scenario": {"cluster": {"upload": [f"no cluster upload {cu.pk} of yours"]}}}
    # A fork of a plan they can see (a team plan) keeps its uploads.
    plan.team, plan.visibility = team, "team"
    plan.save(update_fields=["team", "visibility"])
    resp = client.post(
        reverse("api-capacity-fork", args=[plan.pk]), {"changes": {"seeds": [1]}}, content_type="application/json"
    )
    assert resp.status_code == 201, resp.content
    fork = CapacityPlan.objects.get(pk=resp.json()["id"])
    assert (fork.cluster_upload_id, fork.trace_upload_id, fork.spec["seeds"], fork.spec["load"]) == (
        cu.pk,
        tu.pk,
        [1],
        None,
    )


@pytest.mark.django_db
def test_a_trace_and_a_cluster_of_other_resources_is_a_field_error(uploads, owner_client, owner):
    _, tu, _, _ = uploads
    gpu = (
        b'{"name": "gpus", "resources": ["gpu"], "configurations": [{"name": "A", "count": 4, "capacity": {"gpu": 1}}]}'
    )
    cu = create_upload("cluster", owner, "gpus", "gpus.json", gpu)
    resp = owner_client.post(reverse("capacity-new"), _form(cu, tu))
    assert resp.status_code == 400
    assert resp.context["form"].errors["workload"] == [
        "trace 'quarter' requests resources ['cpu', 'mem'] but cluster upload 'gpus' has ['gpu']; "
        "choose a cluster with the trace's resources"
    ]
    body = {"scenario": {"cluster": {"upload": cu.pk}, "workload": {"upload": tu.pk}}, "schedulers": ["greedy"]}
    resp = owner_client.post(reverse("api-capacity-list"), {**body, "target": TARGET}, content_type="application/json")
    assert resp.status_code == 400 and "requests resources" in resp.json()["scenario"]["workload"][0]
    assert CapacityPlan.objects.count() == 0
