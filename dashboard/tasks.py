"""Celery tasks: thin adapters from an id to dashboard.services / dashboard.imports."""

from __future__ import annotations

from celery import shared_task

from dashboard import imports, services


@shared_task(name="dashboard.run_simulation", ignore_result=True)
def run_simulation(run_id: int) -> str:
    """Claim run ``run_id``, simulate it with simcore, store its results (see services.execute_run)."""
    worker = run_simulation.request.hostname or ""
    return services.execute_run(run_id, worker=worker)


@shared_task(name="dashboard.import_trace", ignore_result=True)
def import_trace(upload_id: int) -> str:
    """Claim trace upload ``upload_id``, convert it with simcore.importer, store it (see imports.execute_import)."""
    worker = import_trace.request.hostname or ""
    return imports.execute_import(upload_id, worker=worker)
