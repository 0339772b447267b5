"""Celery tasks: thin adapters from a run id to dashboard.services."""

from __future__ import annotations

from celery import shared_task

from dashboard import services


@shared_task(name="dashboard.run_simulation", ignore_result=True)
def run_simulation(run_id: int) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see services.execute_run)."""
    worker = run_simulation.request.hostname or ""
    return services.execute_run(run_id, worker=worker)
