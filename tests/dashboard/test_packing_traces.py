"""Packing from an imported trace (issue 28): its own machines by default, a priority filter, and pages that say
why the numbers look as they do (a snapshot that does not fit, knees pending at f = 1, plain numbers, size, ETA).

The trace is tests/data's Google 2011 sample imported through the upload page and the worker's code path
(``imports.execute_import``): five tasks, of which at t = 66 s of its window two run, one of priority 0 and
one of priority 9 (cpu 0.4, mem 0.1).
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from dashboard.models import ImportStatus, PackingAnalysis, PackingSource, Status, TraceUpload
from dashboard.packing import reading
from dashboard.packing.forms import initial_from
from dashboard.packing.services import SourceChoice, create_analysis, execute_analysis, progress_payload
from dashboard.traces import imports
from simcore.core.errors import ParameterError
from simcore.presets import CLUSTERS
from tests.dashboard.conftest import TRACE
from tests.dashboard.test_packing import finished_run

pytestmark = pytest.mark.django_db

GOOGLE_TASKS = (Path(__file__).resolve().parents[1] / "data" / "google2011" / "task_events.csv").read_bytes()
T = "66"


def google_trace(client: Any, owner: User) -> TraceUpload:
    client.force_login(owner)
    resp = client.post(
        reverse("uploads"),
        {
            "kind": "trace",
            "trace-name": "g",
            "trace-format": "google2011",
            "trace-file": SimpleUploadedFile("task_events.csv", GOOGLE_TASKS),
        },
    )
    assert resp.status_code == 302
    trace = TraceUpload.objects.get()
    assert imports.execute_import(trace.pk) == ImportStatus.READY
    trace.refresh_from_db()
    return trace


def trace_form(trace: TraceUpload, **over: Any) -> dict[str, Any]:
    """What the form posts after following the trace's "packing analysis" link, with a small spec."""
    data: dict[str, Any] = {
        "source": "trace",
        "trace": str(trace.pk),
        "trace_cluster": "derived",
        "time_s": T,
        "techniques": ["utilisation", "holes", "inflation"],
        "placed_by": "arrival",
        "repack_with": "arrival",
        "orderings": ["arrival"],
        "units": "0.5",
        "factors": "1,1.5",
        "taus": "0",
        "trials": "1",
        "seed": "0",
        "visibility": "private",
    }
    data.update(over)
    return data


def _text(resp: Any) -> str:
    return resp.content.decode().replace("&#x27;", "'").replace("&quot;", '"').replace("&gt;", ">")


# ---------------------------------------------------------------------------- the machines its import read it against


def test_a_google_import_without_machine_events_is_analysed_on_the_machines_it_was_read_against(
    client: Any, owner: User
) -> None:
    trace = google_trace(client, owner)
    assert trace.cluster_upload_id is None  # no machine_events: the import derived no machines
    page = client.get(reverse("packing-new"), {"trace": trace.pk})
    # The first choice, what the form posts when the user changes nothing.
    assert re.search(
        r'id="id_trace_cluster">\s*<option value="derived"[^>]*>the machines of its import</option>',
        page.content.decode(),
    )
    resp = client.post(reverse("packing-new"), trace_form(trace))
    assert resp.status_code == 302, _text(resp)
    a = PackingAnalysis.objects.get()
    assert a.source_spec["cluster"] == {"preset": "google-2011", "from_import": True}
    assert "cluster 'google-2011' (the machines its import read it against)" in a.label
    assert initial_from(a)["trace_cluster"] == "derived"  # analysed again the same way
    assert execute_analysis(a.pk) == Status.FINISHED
    a.refresh_from_db()
    assert a.results["snapshot"]["machines"] == CLUSTERS.get("google-2011").build().n_machines
    assert a.results["snapshot"]["tasks"] == 2


# ---------------------------------------------------------------------------- the priority filter


def test_a_minimum_priority_keeps_the_production_tasks_running_at_t(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    resp = client.post(reverse("packing-new"), trace_form(trace, min_priority="9"))
    assert resp.status_code == 302, _text(resp)
    a = PackingAnalysis.objects.get()
    assert a.source_spec["min_priority"] == 9 and "(priority >= 9)" in a.label
    assert initial_from(a)["min_priority"] == 9
    assert execute_analysis(a.pk) == Status.FINISHED
    a.refresh_from_db()
    snap = a.results["snapshot"]
    assert snap["tasks"] == 1 and snap["meta"]["below_min_priority"] == 1
    total_cpu = float(CLUSTERS.get("google-2011").build().total_capacity()[0])
    assert a.results["utilisation"]["utilisation"]["cpu"]["p"] == pytest.approx(0.4 / total_cpu)  # the 0.4-cpu task


def test_a_minimum_priority_no_running_task_reaches_is_a_form_error_and_nothing_is_stored(
    client: Any, owner: User
) -> None:
    trace = google_trace(client, owner)
    resp = client.post(reverse("packing-new"), trace_form(trace, min_priority="10"))
    assert resp.status_code == 400
    assert 'id="error-min_priority"' in resp.content.decode()
    assert "none of the 2 tasks running at t = 66 s has priority 10 or more" in _text(resp)
    assert not PackingAnalysis.objects.exists()


def test_a_trace_that_records_no_priorities_says_so_on_the_priority_field(client: Any, owner: User) -> None:
    client.force_login(owner)
    client.post(
        reverse("uploads"),
        {"kind": "trace", "trace-name": "t", "trace-file": SimpleUploadedFile("t.csv", TRACE.encode())},
    )
    trace = TraceUpload.objects.get()
    assert imports.execute_import(trace.pk) == ImportStatus.READY
    resp = client.post(reverse("packing-new"), trace_form(trace, time_s="100", min_priority="9"))
    assert resp.status_code == 400
    assert 'id="error-min_priority"' in resp.content.decode()
    assert "trace 't' records no task priorities" in _text(resp)
    assert not PackingAnalysis.objects.exists()


def test_a_minimum_priority_applies_to_trace_snapshots_only(owner: User) -> None:
    run = finished_run(owner)
    with pytest.raises(ParameterError, match="min_priority applies to a trace's snapshot"):
        create_analysis(owner, SourceChoice(PackingSource.RUN, run=run, min_priority=9), time_s=1800, spec={})
    assert not PackingAnalysis.objects.exists()


def test_the_api_takes_a_minimum_priority_with_a_trace(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    spec = {"techniques": ["utilisation"], "placed_by": "arrival", "trials": 1}
    resp = client.post(
        reverse("api-packing-list"),
        {"source": {"trace": trace.pk, "min_priority": 9}, "time_s": 66, "spec": spec},
        content_type="application/json",
    )
    assert resp.status_code == 201, resp.content
    assert resp.json()["source_spec"] == {
        "trace": trace.pk,
        "cluster": {"preset": "google-2011", "from_import": True},
        "min_priority": 9,
    }


def test_the_api_names_a_bad_minimum_priority(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    resp = client.post(
        reverse("api-packing-list"),
        {"source": {"trace": trace.pk, "min_priority": "nine"}, "time_s": 66, "spec": {"placed_by": "arrival"}},
        content_type="application/json",
    )
    assert resp.status_code == 400
    assert "min_priority must be an integer from 0" in json.dumps(resp.json()["source"]["min_priority"])
    assert not PackingAnalysis.objects.exists()


# ---------------------------------------------------------------------------- what the page says


def _tiny_cluster(client: Any) -> None:
    """One machine of 0.3 cpu: the priority-9 task (0.4 cpu) fits nowhere."""
    tiny = {
        "name": "tiny",
        "resources": ["cpu", "mem"],
        "configurations": [{"name": "s", "count": 1, "capacity": {"cpu": 0.3, "mem": 0.3}}],
    }
    client.post(
        reverse("uploads"),
        {
            "kind": "cluster",
            "cluster-name": "tiny",
            "cluster-file": SimpleUploadedFile("c.json", json.dumps(tiny).encode()),
        },
    )


def test_a_snapshot_that_does_not_fit_its_cluster_says_so_and_its_knees_say_pending_at_f_1(
    client: Any, owner: User
) -> None:
    trace = google_trace(client, owner)
    _tiny_cluster(client)
    from dashboard.models import ClusterUpload

    up = ClusterUpload.objects.get(name="tiny")
    resp = client.post(reverse("packing-new"), trace_form(trace, trace_cluster=f"upload:{up.pk}"))
    assert resp.status_code == 302, _text(resp)
    a = PackingAnalysis.objects.get()
    assert execute_analysis(a.pk) == Status.FINISHED
    page = _text(client.get(a.get_absolute_url()))
    warning = re.search(r'<p class="warning" id="fit-warning">(.*?)</p>', page, re.S)
    assert warning is not None
    assert "does not fit its cluster: 1 of 2 tasks stay pending (placed by arrival)" in warning.group(1)
    assert "minimum priority 9" in warning.group(1)  # every priority was kept: the hint says what to do
    knees = re.search(r'<p class="note" id="knees">(.*?)</p>', page, re.S)
    assert knees is not None and knees.group(1).count("pending at f = 1") == 4


def test_a_snapshot_that_fits_has_no_warning_and_numeric_knees(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    client.post(reverse("packing-new"), trace_form(trace))
    a = PackingAnalysis.objects.get()
    assert execute_analysis(a.pk) == Status.FINISHED
    page = _text(client.get(a.get_absolute_url()))
    assert 'id="fit-warning"' not in page
    assert "horizontal-all 1.5" in page and "pending at f = 1" not in page


@pytest.mark.parametrize(
    ("value", "text"),
    [(86400.0, "86,400"), (142969, "142,969"), (1.35, "1.35"), (0.0123, "0.0123"), (1e-7, "0.0000001"), (None, "-")],
)
def test_numbers_are_written_plainly(value: Any, text: str) -> None:
    assert reading.plain(value) == text


def test_times_are_written_in_seconds_with_hours_or_minutes_beside() -> None:
    assert reading.duration(86400.0) == "86,400 s (24 h)"
    assert reading.duration(1800) == "1,800 s (30 min)"
    assert reading.duration(66) == "66 s"


def test_the_page_writes_the_snapshot_time_plainly_and_no_scientific_notation(client: Any, owner: User) -> None:
    run = finished_run(owner)
    a = create_analysis(owner, SourceChoice(PackingSource.RUN, run=run), time_s=1800, spec={"trials": 1})
    a.results = {"snapshot": {"machines": 12583, "tasks": 142969, "pending": 34660, "resources": ["cpu"]}}
    a.status = Status.FINISHED
    a.save()
    client.force_login(owner)
    page = _text(client.get(a.get_absolute_url()))
    assert "t = 1,800 s (30 min)" in page
    assert "<td>12,583</td>" in page and "<td>142,969</td>" in page and "<td>34,660</td>" in page
    assert not re.search(r"\d\.\d+e[+-]\d", page)


# ---------------------------------------------------------------------------- size and ETA while it runs


def test_progress_gives_the_snapshot_size_once_built(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    client.post(reverse("packing-new"), trace_form(trace))
    a = PackingAnalysis.objects.get()
    assert progress_payload(a)["size"] == ""  # not built yet
    assert execute_analysis(a.pk) == Status.FINISHED
    machines = CLUSTERS.get("google-2011").build().n_machines
    assert progress_payload(a)["size"] == f"2 tasks on {machines:,} machines"
    a.refresh_from_db()
    assert a.snapshot_size["pending"] == 2  # a trace's tasks all start pending


def test_a_running_analysis_shows_its_size_and_an_eta(client: Any, owner: User) -> None:
    trace = google_trace(client, owner)
    client.post(reverse("packing-new"), trace_form(trace))
    a = PackingAnalysis.objects.get()
    PackingAnalysis.objects.filter(pk=a.pk).update(
        status=Status.RUNNING,
        fraction=0.5,
        snapshot_size={"tasks": 56053, "machines": 12583, "pending": 56053, "analysing_since": time.time() - 60},
    )
    page = _text(client.get(a.get_absolute_url()))
    assert '<span id="snapshot-size">(56,053 tasks on 12,583 machines)</span>' in page
    assert re.search(r'<small class="eta" id="packing-eta">about (59|60|61|62) s left</small>', page)
    payload = client.get(reverse("packing-progress", args=[a.pk])).json()
    assert payload["size"] == "56,053 tasks on 12,583 machines" and payload["eta"].startswith("about ")


@pytest.mark.parametrize(
    ("fraction", "elapsed", "text"),
    [(0.5, 60, "about 60 s left"), (0.25, 60, "about 3 min left"), (0.1, 600, "about 1.5 h left"), (0.01, 5, "")],
)
def test_the_eta_assumes_the_rest_goes_at_the_rate_so_far(fraction: float, elapsed: float, text: str) -> None:
    assert reading.eta(fraction, 1000.0, 1000.0 + elapsed) == text
