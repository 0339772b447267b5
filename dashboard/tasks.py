"""Celery tasks: thin adapters from an id to dashboard.services / dashboard.imports."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from dashboard import imports, services

log = logging.getLogger(__name__)


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


@worker_ready.connect
def fail_lost_work(**_: Any) -> None:
    """At worker start-up, mark failed the work of workers that died (a restarted machine's runs, say).

    The same stale-heartbeat rule as the pages apply (dashboard.models.fail_lost_runs):
    work another live worker holds has a fresh heartbeat and is left alone.
    Runs in the worker's main process, which then closes its connection (the
    pool's processes have their own).
    """
    from django.db import DatabaseError, connections

    from dashboard.models import fail_lost_imports, fail_lost_runs

    try:
        runs, uploads = fail_lost_runs(), fail_lost_imports()
    except DatabaseError as e:  # the worker still starts; the pages apply the rule when they are read
        log.warning("could not check for work lost by dead workers: %s", e)
        return
    finally:
        connections.close_all()
    log.info(
        "start-up check for work lost by dead workers: %d run(s) %s, %d trace import(s) %s marked failed",
        len(runs),
        runs,
        len(uploads),
        uploads,
    )
