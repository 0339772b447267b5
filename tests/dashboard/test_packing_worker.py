"""A packing analysis started from the form runs in a real Celery worker and stores the library's numbers."""

from __future__ import annotations

import json
import time

import pytest
from django.urls import reverse

from dashboard.experiments.services import create_experiment
from dashboard.models import PackingAnalysis, Status
from simcore.packing.analysis import AnalysisSpec, analyse
from simcore.packing.sources import from_result
from simcore.scenario import run_scenario
from tests.dashboard.conftest import small_scenario, wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.usefixtures("celery_worker")]


def wait_for_analysis(pk: int, timeout: float = 120.0) -> PackingAnalysis:
    """Poll until the analysis has left pending/running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        a = PackingAnalysis.objects.get(pk=pk)
        if not a.is_active:
            return a
        time.sleep(0.2)
    raise AssertionError(f"packing analysis {pk} still {a.status} ({a.stage}, {a.fraction:.0%}) after {timeout} s")


def test_an_analysis_of_a_run_finishes_in_the_worker_with_the_librarys_numbers(owner_client, owner):
    exp = wait_for(create_experiment(owner, small_scenario(schedulers=["tetris"])))
    run = exp.runs.get()
    assert run.status == Status.FINISHED
    form = {
        "source": "run",
        "run": str(run.pk),
        "time_s": "1800",
        "techniques": ["utilisation", "holes", "inflation", "compaction", "compare"],
        "placed_by": "as-is",
        "repack_with": "arrival",
        "orderings": ["arrival", "cpu"],
        "schedulers": ["greedy"],
        "units": "0.05,0.3,0.6",
        "factors": "1,1.25,1.5",
        "taus": "0,0.006,0.01",
        "trials": "3",
        "seed": "7",
        "visibility": "private",
    }
    resp = owner_client.post(reverse("packing-new"), form)
    assert resp.status_code == 302, resp.content.decode()[:3000]
    a = wait_for_analysis(PackingAnalysis.objects.get().pk)
    assert a.status == Status.FINISHED, a.error
    assert a.fraction == 1.0 and a.worker and a.code_version and a.heartbeat_at is not None

    # The library on the same state: the run simulated again under its scenario and seed, taken at 1800 s.
    out = run_scenario(exp.scenario, "tetris", 0)
    spec = AnalysisSpec.from_dict(a.spec)
    want = json.loads(json.dumps(analyse(from_result(out.result, out.workload, out.cluster, 1800.0), spec)))
    assert a.results == want
    assert spec.seed == 7 and spec.schedulers == ("greedy",) and a.results["snapshot"]["tasks"] > 100

    page = owner_client.get(a.get_absolute_url()).content.decode()
    assert 'id="chart-compare-compaction"' in page and "greedy (scheduler)" in page
    progress = owner_client.get(reverse("packing-progress", args=[a.pk])).json()
    assert progress == {
        "id": a.pk,
        "status": "finished",
        "fraction": 1.0,
        "stage": "done",
        "error": "",
        "waiting": "",
        "size": f"{a.results['snapshot']['tasks']} tasks on {a.results['snapshot']['machines']} machines",
        "eta": "",  # none once finished
    }
