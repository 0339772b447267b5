"""WfCommons instances uploaded from the browser: imported by a real worker into the project's CSV with
job, task and parents columns, errors shown with the file and JSON path, experiments run on them."""

from __future__ import annotations

import html
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from dashboard.models import Experiment, ImportStatus, Status, TraceImportFile, TraceUpload
from dashboard.traces import imports
from dashboard.traces.uploads import usable_traces
from simcore.traces import importer
from simcore.traces.tracefile import read_trace, write_trace
from tests.dashboard.conftest import wait_for

DATA = Path(__file__).resolve().parents[1] / "data" / "wfcommons"
FORKJOIN = (DATA / "forkjoin-v1.4.json").read_bytes()
CHAIN = (DATA / "helloworld-chain-5-chameleon.json").read_bytes()


def _upload(client: Client, files: list[tuple[str, bytes]], **fields: Any) -> Any:
    data: dict[str, Any] = {
        "kind": "trace",
        "trace-name": fields.pop("name", "wf"),
        "trace-format": "wfcommons",
        "trace-file": [SimpleUploadedFile(n, c) for n, c in files],
    }
    data.update({f"trace-{k}": v for k, v in fields.items()})
    return client.post(reverse("uploads"), data)


def _wait(client: Client, pk: int, timeout: float = 120.0) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = client.get(reverse("trace-import-progress", args=[pk])).json()
        if p["status"] not in ("pending", "running"):
            return p  # type: ignore[no-any-return]
        time.sleep(0.05)
    raise AssertionError(f"import {pk} still active after {timeout} s")


def _text(resp: Any) -> str:
    return html.unescape(resp.content.decode())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_wfcommons_instances_are_imported_by_the_worker_and_an_experiment_runs_on_them(owner_client, owner):
    # Given two instances uploaded together (the 1.4 fork-join and the published 1.6 chain)
    resp = _upload(owner_client, [("forkjoin-v1.4.json", FORKJOIN), ("chain.json", CHAIN)], cluster="dse-2020")
    assert resp.status_code == 302
    up = TraceUpload.objects.get()
    # When the worker has imported them
    last = _wait(owner_client, up.pk)
    assert last["status"] == "ready", last
    up.refresh_from_db()
    # Then the stored trace is simcore's import of the same bytes: two jobs, 10 tasks, 10 edges
    files = []
    for name, content in (("forkjoin-v1.4.json", FORKJOIN), ("chain.json", CHAIN)):
        f = io.BytesIO(content)
        f.name = name
        files.append(f)
    expected = importer.import_trace("wfcommons", files, cluster="dse-2020", name="wf")
    buf = io.BytesIO()
    write_trace(expected.workload, buf)
    assert up.content() == buf.getvalue()
    assert up.info["jobs"] == 10 and up.info["task_jobs"] == 2 and up.info["resources"] == ["cores"]
    wl = read_trace(io.BytesIO(up.content()))
    assert wl.graph is not None and wl.graph.job_size.tolist() == [5, 5] and wl.graph.n_edges == 10
    assert up.content().decode().splitlines()[3] == "submit_s,duration_s,cores,job,task,parents"
    assert up.report["kept_but_changed"] == {"asked for more cores than the largest machine: clipped to it": 1}
    assert [i["critical_path_s"] for i in up.report["instances"]] == [65.0, pytest.approx(501.24)]
    assert up.cluster_upload is None and not TraceImportFile.objects.exists()

    # An experiment on dse-2020 runs the two workflows to the end (their arrival window is empty).
    resp = owner_client.post(
        reverse("experiment-new"),
        {
            "cluster": "preset:dse-2020",
            "workload": f"upload:{up.pk}",
            "load": "1",
            "schedulers": ["greedy"],
            "seeds": "0",
        },
    )
    assert resp.status_code == 302, resp.context["form"].errors
    exp = wait_for(Experiment.objects.get())
    assert exp.status == Status.FINISHED, list(exp.runs.values_list("scheduler", "error"))
    s = exp.runs.get().result.summary
    assert s["task_jobs"] == s["task_jobs_finished"] == 2 and s["completed"] == 10
    assert s["mean_jms_s"] == pytest.approx((65.0 + 501.24) / 2)


def test_a_bad_instance_fails_the_import_with_the_json_path_and_stores_nothing(owner_client, owner):
    doc = json.loads(FORKJOIN)
    doc["workflow"]["tasks"][0]["parents"] = ["merge"]  # merge -> split -> ... -> merge
    assert _upload(owner_client, [("loop.json", json.dumps(doc).encode())]).status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.FAILED
    up.refresh_from_db()
    message = (
        "loop.json: workflow.tasks[0] (id 'split'): the parents form a cycle: 'split' -> 'work_1' -> 'merge' -> 'split'"
    )
    assert up.error == message
    assert bytes(up.content_gz) == b"" and usable_traces(owner).count() == 0 and not TraceImportFile.objects.exists()
    assert message in _text(owner_client.get(reverse("uploads")))


def test_a_wfcommons_upload_refuses_a_time_window_in_the_request(owner_client):
    resp = _upload(owner_client, [("forkjoin-v1.4.json", FORKJOIN)], start_s="10")
    assert resp.status_code == 400
    assert "start_s apply to google2011 and swf traces, not to wfcommons instances" in _text(resp)
    assert not TraceUpload.objects.exists()


def test_a_wfcommons_upload_must_be_a_json_file(owner_client):
    resp = _upload(owner_client, [("instance.txt", FORKJOIN)])
    assert resp.status_code == 400
    assert "instance.txt: a WfCommons instance must be a .json or .json.gz or .gz file" in _text(resp)
    assert not TraceUpload.objects.exists()
