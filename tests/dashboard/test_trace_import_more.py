"""Alibaba and Azure traces uploaded from the browser: the CLI's readers, and the page's utilisation estimate."""

from __future__ import annotations

from pathlib import Path

from django.urls import reverse

from dashboard.models import ImportStatus, TraceUpload
from dashboard.traces import imports
from simcore.traces import importer
from tests.dashboard.test_trace_import import _page_upload, _text
from tests.simcore.test_traces_azure import VMS, _db

ALIBABA = (Path(__file__).resolve().parents[1] / "data" / "alibaba" / "batch_task.csv").read_bytes()


def test_an_alibaba_upload_imports_with_the_assumed_cluster_and_warns_it_is_nearly_idle(owner_client):
    assert _page_upload(owner_client, "alibaba", [("batch_task.csv", ALIBABA)]).status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY
    up.refresh_from_db()
    assert up.info["jobs"] == 4 and up.info["format"] == "alibaba"
    # The assumed cluster is stored beside the trace, as SWF's parallel computer is.
    assert up.cluster_upload is not None and up.cluster_upload.info["machines"] == 4000
    direct = importer.summary(importer.import_trace("alibaba", [ALIBABA]))
    assert up.report["utilisation_estimate"] == direct["utilisation_estimate"]
    page = _text(owner_client.get(reverse("trace-import-detail", args=[up.pk])))
    assert 'id="report-utilisation"' in page and "nearly idle" in page


def test_an_azure_database_upload_imports_its_vm_requests(owner_client, tmp_path):
    db = _db(tmp_path / "packing.sqlite", VMS).read_bytes()
    assert _page_upload(owner_client, "azure", [("packing.sqlite", db)]).status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY, up.error
    up.refresh_from_db()
    assert up.info["jobs"] == 4
    assert up.report["utilisation_estimate"]["cpu"] > 0


def test_a_file_that_is_not_a_database_is_refused_in_the_request(owner_client):
    resp = _page_upload(owner_client, "azure", [("packing.sqlite", b"not sqlite")])
    assert resp.status_code == 400
    assert "not an Azure packing trace database" in _text(resp)
    assert TraceUpload.objects.count() == 0
