"""Foreign CSVs on the upload page and in the API: map the columns, preview, import; saved maps; same default cluster.

The imports run the worker's code path (``imports.execute_import``) in this process, as the other upload tests do.
"""

from __future__ import annotations

import gzip
from typing import Any

import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client

from dashboard.models import ApiToken, ImportStatus, TraceUpload
from dashboard.traces import imports
from dashboard.traces.models import TraceDraft, TraceMapping
from simcore.traces import importer
from simcore.traces.tracefile import read_trace

ALIBABA = (
    b"task_name,instance_num,job_name,task_type,status,start_time,end_time,plan_cpu,plan_mem\n"
    b"M1,1,j_1,1,Terminated,100,160,100,0.39\n"
    b"R2_1,2,j_1,1,Terminated,90,200,50,0.2\n"
    b"M3,1,j_2,1,Running,300,,100,0.1\n"
    b"M4,1,j_3,1,Terminated,310,,200,0.5\n"
    b"M5,1,j_3,1,Terminated,320,330,300,0.5\n"
)
MAP = "submit_s=start_time,duration_s=end_time-start_time,cpu=plan_cpu/100,mem=plan_mem"
PICKS = {
    "submit_s_col": "start_time",
    "duration_s_col": "end_time",
    "duration_s_minus": "start_time",
    "cpu_col": "plan_cpu",
    "cpu_op": "/",
    "cpu_factor": "100",
    "mem_col": "plan_mem",
    "where": "status=Terminated",
    "on_error": "skip",
}
URL = "/uploads/trace/map/"


def _api(user: User) -> Client:
    return Client(HTTP_AUTHORIZATION=f"Bearer {ApiToken.issue(user, 't')[1]}")


def _send(client: Any, content: bytes = ALIBABA, name: str = "batch_task.csv") -> Any:
    return client.post(URL, {"name": "ali", "file": SimpleUploadedFile(name, content)})


def _ready(up: TraceUpload) -> TraceUpload:
    assert imports.execute_import(up.pk) == ImportStatus.READY, TraceUpload.objects.get(pk=up.pk).error
    up.refresh_from_db()
    return up


# -- the page ---------------------------------------------------------------------------------------


def test_the_page_shows_the_header_and_first_rows_after_the_file_is_sent(owner_client: Any) -> None:
    assert _send(owner_client).status_code == 302
    page = owner_client.get(URL).content.decode()
    assert "<th>plan_cpu</th>" in page and "<td>R2_1</td>" in page
    assert 'id="map-form"' in page and 'id="import-button"' not in page  # preview first


def test_the_preview_shows_the_converted_jobs_by_hand(owner_client: Any) -> None:
    _send(owner_client)
    resp = owner_client.post(URL, {**PICKS, "action": "preview"})
    page = resp.content.decode()
    assert resp.status_code == 200 and MAP in page
    # M1: submit 100, 110-... duration 160-100 = 60, cpu 100/100 = 1; R2_1: 90, 110, 0.5; M5: 320, 10, 3.
    rows = page.split('id="preview"')[1].split("</table>")[0]
    assert rows.count("<tr>") == 4  # the header and three jobs (M3 is Running, M4 has no end time)
    assert "<td>60</td>" in rows and "<td>110</td>" in rows and "<td>0.5</td>" in rows
    assert "batch_task.csv, line 5: end_time: empty" in page
    assert 'id="import-button"' in page


def test_import_from_the_page_stores_the_mapped_trace_and_the_map(owner: User, owner_client: Any) -> None:
    _send(owner_client)
    resp = owner_client.post(URL, {**PICKS, "save_as": "alibaba batch", "action": "import"})
    assert resp.status_code == 302 and resp.url == "/uploads/"
    up = TraceUpload.objects.get()
    assert up.options["map"] == MAP and up.options["where"] == "status=Terminated"
    assert not TraceDraft.objects.exists()
    assert TraceMapping.objects.get(owner=owner, name="alibaba batch").column_map == MAP
    up = _ready(up)
    # M5 asks for 3 cpus: larger than every google-2011 machine, dropped as the CLI drops it.
    assert up.info["jobs"] == 2 and up.info["rows_skipped"] == 1 and up.info["jobs_dropped"] == 2
    wl = read_trace(gzip.decompress(bytes(up.content_gz)))
    np.testing.assert_array_equal(wl.submit, [90.0, 100.0])
    np.testing.assert_array_equal(wl.work, [110.0, 60.0])
    assert any("default 'google-2011'" in n for n in up.report["notes"])


@pytest.mark.parametrize(
    "changes,field,words",
    [
        ({"cpu_col": "nope"}, "cpu_col", "Select a valid choice"),
        ({"duration_s_minus": "end_time"}, "duration_s_minus", "minus itself"),
        ({"cpu_factor": "0"}, "cpu_factor", "divide by zero"),
        ({"cpu_factor": ""}, "cpu_factor", "a scale needs both"),
        ({"submit_s_col": ""}, "submit_s_col", "pick a column"),
        ({"column_map": MAP}, None, "ambiguous"),
        ({"where": "state=Terminated"}, "where", "unknown column(s) state"),
        ({"where": "status"}, "where", "expected column=value"),
    ],
)
def test_bad_choices_are_form_errors(owner_client: Any, changes: dict[str, str], field: str | None, words: str) -> None:
    _send(owner_client)
    resp = owner_client.post(URL, {**PICKS, **changes, "action": "import"})
    assert resp.status_code == 400 and not TraceUpload.objects.exists()
    form = resp.context["form"]
    errors = form.errors.get(field or "__all__", [])
    assert any(words in e for e in errors), form.errors


def test_a_typed_map_with_a_column_minus_itself_is_a_form_error(owner_client: Any) -> None:
    _send(owner_client)
    typed = MAP.replace("end_time-start_time", "end_time-end_time")
    resp = owner_client.post(URL, {"column_map": typed, "on_error": "skip", "action": "import"})
    assert resp.status_code == 400 and not TraceUpload.objects.exists()
    assert resp.context["form"].errors["column_map"] == [
        "--map 'duration_s=end_time-end_time': duration_s = end_time-end_time is always 0 (end_time minus itself); "
        "subtract another column"
    ]


def test_a_typed_map_with_an_unknown_column_is_a_form_error(owner_client: Any) -> None:
    _send(owner_client)
    resp = owner_client.post(URL, {"column_map": MAP.replace("plan_mem", "mem_plan"), "on_error": "skip"})
    assert resp.status_code == 400
    assert "unknown column(s) mem_plan; the header has task_name" in resp.context["form"].errors["column_map"][0]


def test_a_file_without_a_header_is_refused_on_the_first_step(owner_client: Any) -> None:
    resp = _send(owner_client, b"\n\n# only a comment\n")
    assert resp.status_code == 400 and "no header line" in resp.content.decode()
    assert not TraceDraft.objects.exists()


def test_a_saved_map_fills_the_form_and_is_private(owner: User, owner_client: Any, other: User) -> None:
    m = TraceMapping.objects.create(owner=owner, name="ali", column_map=MAP, where="status=Terminated")
    _send(owner_client)
    page = owner_client.get(f"{URL}?mapping={m.pk}").content.decode()
    assert MAP in page
    bob = Client()
    bob.force_login(other)
    _send(bob)
    assert bob.get(f"{URL}?mapping={m.pk}").status_code == 404
    assert bob.post(f"/uploads/trace/map/{m.pk}/delete/").status_code == 404
    assert TraceMapping.objects.filter(pk=m.pk).exists()


# -- the API ----------------------------------------------------------------------------------------


def test_api_saves_lists_and_deletes_maps_of_their_owner_only(owner: User, other: User) -> None:
    api = _api(owner)
    resp = api.post("/api/trace-mappings/", {"name": "ali", "map": MAP, "where": "status = Terminated"},
                    content_type="application/json")  # fmt: skip
    assert resp.status_code == 201 and resp.json()["where"] == "status=Terminated"
    pk = resp.json()["id"]
    assert [m["name"] for m in api.get("/api/trace-mappings/").json()["results"]] == ["ali"]
    bob = _api(other)
    assert bob.get("/api/trace-mappings/").json()["results"] == []
    assert bob.get(f"/api/trace-mappings/{pk}/").status_code == 404
    assert bob.delete(f"/api/trace-mappings/{pk}/").status_code == 404
    assert api.delete(f"/api/trace-mappings/{pk}/").status_code == 204


def test_api_a_bad_map_is_a_400_naming_it(owner: User) -> None:
    resp = _api(owner).post("/api/trace-mappings/", {"name": "x", "map": MAP + "/0"}, content_type="application/json")
    assert resp.status_code == 400 and "divide by zero" in resp.json()["map"][0]


def test_api_upload_with_a_saved_map_imports_the_foreign_csv(owner: User) -> None:
    m = TraceMapping.objects.create(owner=owner, name="ali", column_map=MAP, where="status=Terminated")
    resp = _api(owner).post(
        "/api/uploads/trace/",
        {"file": SimpleUploadedFile("b.csv", ALIBABA), "mapping": m.pk, "on_error": "skip", "cluster": "google-2011"},
    )
    assert resp.status_code == 201, resp.content
    up = _ready(TraceUpload.objects.get(pk=resp.json()["id"]))
    assert up.info["jobs"] == 2 and up.report["rows_skipped"] == {"end_time: empty": 1}


def test_api_upload_with_an_unknown_column_is_a_400_before_any_import(owner: User) -> None:
    resp = _api(owner).post(
        "/api/uploads/trace/", {"file": SimpleUploadedFile("b.csv", ALIBABA), "map": MAP.replace("end_time", "end")}
    )
    assert resp.status_code == 400 and not TraceUpload.objects.exists()
    assert "missing column(s) end" in resp.json()["map"][0]


SELF_MINUS = MAP.replace("end_time-start_time", "end_time-end_time")
SELF_MINUS_ERROR = "map: duration_s = end_time-end_time is always 0 (end_time minus itself); subtract another column"


def test_api_upload_with_a_column_minus_itself_is_a_400_naming_the_target(owner: User) -> None:
    resp = _api(owner).post("/api/uploads/trace/", {"file": SimpleUploadedFile("b.csv", ALIBABA), "map": SELF_MINUS})
    assert resp.status_code == 400 and not TraceUpload.objects.exists()
    assert resp.json()["map"] == [SELF_MINUS_ERROR]


def test_api_a_saved_map_with_a_column_minus_itself_is_a_400(owner: User) -> None:
    resp = _api(owner).post("/api/trace-mappings/", {"name": "x", "map": SELF_MINUS}, content_type="application/json")
    assert resp.status_code == 400 and resp.json()["map"] == [SELF_MINUS_ERROR]
    assert not TraceMapping.objects.exists()


def test_api_on_error_skip_applies_to_a_project_csv(owner: User) -> None:
    csv = b"submit_s,duration_s,cpu,mem\n0,10,0.5,0.1\n1,,0.5,0.1\n"
    resp = _api(owner).post("/api/uploads/trace/", {"file": SimpleUploadedFile("t.csv", csv), "on_error": "skip"})
    up = _ready(TraceUpload.objects.get(pk=resp.json()["id"]))
    assert up.info["jobs"] == 1 and up.report["rows_skipped"] == {"duration_s: empty": 1}


# -- the CLI and the dashboard agree ------------------------------------------------------------------


def test_the_dashboard_and_the_cli_keep_the_same_jobs_of_a_csv(owner: User, owner_client: Any) -> None:
    csv = b"submit_s,duration_s,cpu,mem\n0,10,0.5,0.1\n1,10,1.5,0.1\n2,10,1.0,0.2\n"
    resp = owner_client.post(
        "/uploads/", {"kind": "trace", "trace-file": SimpleUploadedFile("t.csv", csv), "trace-format": "csv"}
    )
    assert resp.status_code == 302
    up = _ready(TraceUpload.objects.get())
    cli = importer.summary(importer.import_trace("csv", [csv]))
    assert up.info["jobs"] == cli["jobs"] == 2
    assert up.report["dropped"] == cli["dropped"] == {"request larger than every machine of the cluster": 1}
    assert up.report["cluster"]["name"] == cli["cluster"]["name"] == "google-2011"


def test_a_gzipped_csv_goes_through_the_page_too(owner_client: Any) -> None:
    assert _send(owner_client, gzip.compress(ALIBABA), "batch_task.csv.gz").status_code == 302
    assert "<td>R2_1</td>" in owner_client.get(URL).content.decode()
    assert owner_client.post(URL, {**PICKS, "action": "import"}).status_code == 302
    up = _ready(TraceUpload.objects.get())
    assert up.filename == "ali.csv" and up.info["jobs"] == 2
