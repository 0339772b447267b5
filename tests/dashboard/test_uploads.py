"""Uploaded clusters and traces: validated on upload, stored in the database, usable in experiments."""

from __future__ import annotations

import gzip
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import override_settings
from django.urls import reverse

from dashboard.experiments.execution import execute_run
from dashboard.experiments.results import write_experiment_archive
from dashboard.models import ClusterUpload, Experiment, ImportStatus, Status, TraceUpload
from dashboard.traces import imports
from simcore import archive
from tests.dashboard.conftest import CLUSTER, TRACE


def upload(client, kind, name, content, filename):
    return client.post(
        reverse("uploads"), {"kind": kind, f"{kind}-name": name, f"{kind}-file": SimpleUploadedFile(filename, content)}
    )


def test_a_valid_cluster_and_trace_are_stored_and_run(owner_client, owner):
    assert upload(owner_client, "cluster", "mine", json.dumps(CLUSTER).encode(), "c.json").status_code == 302
    assert upload(owner_client, "trace", "t", gzip.compress(TRACE.encode(), mtime=0), "t.csv.gz").status_code == 302
    # Traces are imported by a worker; here its code path runs in this process (no broker inside the test).
    t = TraceUpload.objects.get()
    assert t.status == ImportStatus.PENDING and not ExperimentFormChoices(owner_client, t)
    assert imports.execute_import(t.pk) == ImportStatus.READY
    c, t = ClusterUpload.objects.get(), TraceUpload.objects.get()
    assert not t.inputs.exists()  # the raw files go once the trace is stored
    assert c.info == {"machines": 12, "configurations": 2, "resources": ["cpu", "mem"]} and c.owner == owner
    assert t.info["jobs"] == 200 and t.content() == gzip.compress(TRACE.encode(), mtime=0)
    assert "mine" in owner_client.get(reverse("uploads")).content.decode()

    resp = owner_client.post(
        reverse("experiment-new"),
        {
            "cluster": f"upload:{c.pk}",
            "workload": f"upload:{t.pk}",
            "load": "1",
            "schedulers": ["greedy"],
            "seeds": "0",
        },
    )
    assert resp.status_code == 302
    exp = Experiment.objects.get()
    assert exp.scenario["cluster"] == {"file": "cluster_c.json", "name": "mine"}
    assert exp.cluster_label == "mine" and exp.workload_label == "t"
    # The worker's code path, in this process: the files come from the database, not a disk.
    run = exp.runs.get()
    assert execute_run(run.pk) == Status.FINISHED
    run.refresh_from_db()
    assert run.result.summary["jobs"] == 200 and run.result.summary["machines"] == 12
    # The archive carries the uploads and re-runs to the same numbers.
    import io

    buf = io.BytesIO()
    write_experiment_archive(exp, buf)
    arch = archive.read_archive(io.BytesIO(buf.getvalue()))
    assert set(arch.files) == {"cluster_c.json", "trace_t.csv.gz"}


def test_uploads_are_private(owner_client, other):
    ClusterUpload.objects.create(
        owner=other,
        name="secret-cluster",
        filename="c.json",
        content_gz=gzip.compress(b"{}"),
        size_bytes=2,
        sha256="",
        info={},
    )
    assert "secret-cluster" not in owner_client.get(reverse("uploads")).content.decode()
    assert "secret-cluster" not in owner_client.get(reverse("experiment-new")).content.decode()


def ExperimentFormChoices(client, trace):  # noqa: N802 - reads like the question it answers
    """Whether the new-experiment form offers ``trace``."""
    html = client.get(reverse("experiment-new")).content.decode()
    workload_select = html.split('name="workload"', 1)[1].split("</select>", 1)[0]
    return f'value="upload:{trace.pk}"' in workload_select


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"submit_s,duration_s,cpu,mem\n1,10,0.1,0.1\n2,ten,0.1,0.1\n", "t.csv, line 3, column 'duration_s'"),
        (b"submit_s,cpu\n1,0.1\n", "duration_s"),
    ],
)
def test_a_bad_csv_trace_fails_its_import_with_the_line_and_stores_nothing(owner_client, content, message):
    assert upload(owner_client, "trace", "bad", content, "t.csv").status_code == 302
    t = TraceUpload.objects.get()
    assert imports.execute_import(t.pk) == ImportStatus.FAILED
    t.refresh_from_db()
    assert message in t.error and "/tmp/" not in t.error
    assert bytes(t.content_gz) == b"" and not t.inputs.exists() and not ExperimentFormChoices(owner_client, t)
    page = owner_client.get(reverse("uploads")).content.decode().replace("&#x27;", "'")
    assert message in page


@pytest.mark.parametrize(
    ("kind", "content", "filename", "message"),
    [
        ("cluster", b'{"name": "x", "resources": ["cpu"],\n "configurations": [}', "c.json", "line 2"),
        (
            "cluster",
            json.dumps(
                {**CLUSTER, "configurations": [{"name": "a", "count": -1, "capacity": {"cpu": 1, "mem": 1}}]}
            ).encode(),
            "c.json",
            "count",
        ),
        ("cluster", b"\x00\x01binary", "c.json", "c.json"),
        ("trace", b"submit_s,duration_s\x00,cpu,mem\n", "t.csv", "binary, not text"),
        ("trace", b"submit_s,duration_s\n1,2\n", "t.csv.gz", "not gzip-compressed"),
        ("trace", b"", "t.csv", "The submitted file is empty"),
        ("cluster", b"", "c.json", "The submitted file is empty"),
    ],
)
def test_bad_files_get_a_message_next_to_the_file_field_and_store_nothing(
    owner_client, kind, content, filename, message
):
    resp = upload(owner_client, kind, "bad", content, filename)
    assert resp.status_code == 400
    html = resp.content.decode().replace("&#x27;", "'").replace("&quot;", '"')
    assert f'id="error-{kind}-file"' in html
    err = html.split(f'id="error-{kind}-file">', 1)[1].split("</p>", 1)[0]
    assert message in err
    assert "/tmp/" not in err  # names the user's file, not our temp copy
    assert ClusterUpload.objects.count() == 0 and TraceUpload.objects.count() == 0


def test_a_missing_file_is_reported(owner_client):
    resp = owner_client.post(reverse("uploads"), {"kind": "trace", "trace-name": "x"})
    assert resp.status_code == 400 and 'id="error-trace-file"' in resp.content.decode()
    assert TraceUpload.objects.count() == 0


@override_settings(SIMCORE_MAX_UPLOAD_MB=1)
def test_a_file_over_the_limit_is_refused(owner_client):
    resp = upload(owner_client, "trace", "big", b"0" * (1024 * 1024 + 10), "t.csv")
    assert resp.status_code == 400 and "the limit is 1 MB" in resp.content.decode()
    assert TraceUpload.objects.count() == 0


def test_an_unknown_upload_kind_is_refused(owner_client):
    resp = owner_client.post(reverse("uploads"), {"kind": "model"})
    assert resp.status_code == 400
