"""The count target (identical copies) on the mapping page's pickers and in the API (issue 26, item 7)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import User

from dashboard.models import TraceUpload
from dashboard.traces.models import TraceMapping
from tests.dashboard.test_trace_mapping import MAP, PICKS, URL, _api, _ready, _send

COUNTED = MAP + ",count=instance_num"


def test_the_count_picker_makes_each_row_that_many_jobs(owner_client: Any) -> None:
    _send(owner_client)
    page = owner_client.get(URL).content.decode()
    assert "identical copies (count)" in page
    resp = owner_client.post(URL, {**PICKS, "count_col": "instance_num", "action": "import"})
    assert resp.status_code == 302
    up = _ready(TraceUpload.objects.get())
    assert up.options["map"] == COUNTED
    # Kept rows: M1 (1 instance, cpu 1) and R2_1 (2 instances, cpu 0.5); M5 (cpu 3) is too big for google-2011.
    assert up.info["jobs"] == 3
    assert "count=instance_num: each row became that many identical jobs (3 rows -> 4 jobs)" in up.report["notes"]


def test_a_count_picker_with_a_scale_but_no_column_is_a_form_error(owner_client: Any) -> None:
    _send(owner_client)
    resp = owner_client.post(URL, {**PICKS, "count_op": "*", "count_factor": "2", "action": "preview"})
    assert resp.status_code == 400
    assert any("identical copies (count): pick the column" in e for e in resp.context["form"].errors["count_col"])


def test_api_saves_a_map_with_count_and_a_constant(owner: User) -> None:
    text = COUNTED.replace("submit_s=start_time", "submit_s=start_time+1078")
    resp = _api(owner).post("/api/trace-mappings/", {"name": "ali", "map": text}, content_type="application/json")
    assert resp.status_code == 201 and resp.json()["map"] == text
    assert TraceMapping.objects.get(owner=owner).column_map == text


def test_api_a_malformed_constant_is_a_400_naming_the_item(owner: User) -> None:
    text = MAP.replace("submit_s=start_time", "submit_s=start_time+")
    resp = _api(owner).post("/api/trace-mappings/", {"name": "x", "map": text}, content_type="application/json")
    assert resp.status_code == 400
    assert resp.json()["map"][0] == "map: submit_s=start_time+: '+' needs a number after it, e.g. start_time+1078"


def test_api_upload_with_a_negative_count_fails_naming_the_line(owner: User) -> None:
    from django.core.files.uploadedfile import SimpleUploadedFile

    content = b"submit,dur,cpu,n\n0,10,0.5,2\n5,10,0.5,-3\n"
    resp = _api(owner).post(
        "/api/uploads/trace/",
        {"file": SimpleUploadedFile("c.csv", content), "map": "submit_s=submit,duration_s=dur,cpu=cpu,count=n"},
    )
    assert resp.status_code == 201, resp.content
    from dashboard.models import ImportStatus
    from dashboard.traces import imports

    up = TraceUpload.objects.get(pk=resp.json()["id"])
    assert imports.execute_import(up.pk) == ImportStatus.FAILED
    up.refresh_from_db()
    assert "c.csv, line 3: count=n is negative (-3)" in up.error


def test_the_upload_page_labels_a_mid_trace_google_estimate_a_lower_bound(owner_client: Any) -> None:
    from django.urls import reverse

    from dashboard.models import ImportStatus
    from dashboard.traces import imports
    from tests.dashboard.test_trace_import import _page_upload, _text
    from tests.simcore.test_traces_google2011 import _row

    part = "".join(_row(t, 2, 0, ev, cpu=0.5, mem=0.5) for t, ev in ((1000, 0), (1000, 1), (1100, 4))).encode()
    assert _page_upload(owner_client, "google2011", [("part-00003-of-00500.csv", part)]).status_code == 302
    up = TraceUpload.objects.get()
    assert imports.execute_import(up.pk) == ImportStatus.READY, up.error
    up.refresh_from_db()
    assert up.report["utilisation_estimate_is"].startswith("a lower bound: the input begins mid-trace")
    page = _text(owner_client.get(reverse("trace-import-detail", args=[up.pk])))
    assert "Utilisation estimate (a lower bound: the input begins mid-trace (first event at 1000 s)" in page
    assert "the input begins mid-trace (first event at 1000 s, not at 0: part 00000 is not read)" in page
