"""A capacity plan through a real Celery worker process, one task per probe: the answers of ``simcore capacity``."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from dashboard.capacity import services
from dashboard.capacity.models import CapacityPlan, CapacityProbe, ProbeStatus
from dashboard.common.models import Status
from tests.dashboard.test_capacity import local_plan, same_answers, spec_of


def _wait(plan: CapacityPlan, timeout: float = 180.0) -> tuple[CapacityPlan, list[tuple[int, int]]]:
    """The plan once it ended, and the (round, probes done) pairs its progress showed on the way."""
    seen: list[tuple[int, int]] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        p = services.progress_payload(plan)
        if not seen or seen[-1] != (p["round"], p["probes_done"]):
            seen.append((p["round"], p["probes_done"]))
        if not plan.is_active:
            return plan, seen
        time.sleep(0.1)
    raise AssertionError(f"plan {plan.pk} still {plan.status} after {timeout} s (round {plan.round})")


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_worker_makes_the_plan_of_simcore_capacity_one_task_per_probe(owner):
    spec = spec_of()
    plan, seen = _wait(services.create_plan(owner, spec, name="tiny"))
    assert plan.status == Status.FINISHED, plan.error
    local = local_plan(spec)
    same_answers(plan.result, local)
    probes = CapacityProbe.objects.filter(plan=plan)
    assert all(p.status == ProbeStatus.DONE and p.attempts == 1 and p.worker for p in probes)
    # One row (one task) per size and seed of each round; the bounds in round 0.
    assert probes.filter(round=0).count() == 1
    assert probes.filter(round__gt=0).count() == len({(p.round, p.machines, p.seed) for p in probes if p.round})
    # Progress only moves forward, ending at the plan's rounds and every probe stored.
    assert seen == sorted(seen) and seen[-1] == (local["rounds"], probes.filter(round__gt=0).count())
    assert (plan.started_at is not None) and plan.finished_at > plan.started_at


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("celery_worker")
def test_a_worker_takes_a_plans_uploads_from_the_database_onto_its_own_disk(owner, settings, tmp_path):
    """The worker has its own var dir (the session's default), this process another: the trace reaches the worker
    through the database only, written once at the path its hash names, and the plan is make_plan's."""
    from django.conf import settings as worker_default

    from tests.dashboard.test_capacity_uploads import _request, local_spec, make_uploads

    worker_var = Path(worker_default.VAR_DIR)
    settings.VAR_DIR = tmp_path / "this-process"
    cu, tu, cbytes, tbytes = make_uploads(owner)
    on_worker = worker_var / "plan-uploads" / tu.sha256 / "trace_quarter.csv"
    on_worker.unlink(missing_ok=True)  # a run before this one left it: it must come from the database again
    spec = _request(cu, tu)
    plan, _ = _wait(services.create_plan(owner, spec, cluster_upload=cu, trace_upload=tu))
    assert plan.status == Status.FINISHED, plan.error
    assert on_worker.read_bytes() == tbytes
    assert not (settings.VAR_DIR / "plan-uploads" / tu.sha256).exists()  # this process never read the trace
    same_answers(plan.result, local_plan(local_spec(tmp_path, cbytes, tbytes)))
