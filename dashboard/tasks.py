"""Every Celery task of the app, for the worker (Celery autodiscovers ``dashboard.tasks``).

Each feature owns its tasks (``dashboard.<feature>.tasks``); their names stay
``dashboard.<task>`` whatever module holds them, so queued messages and the
routes of dashboard.celery keep working across the move. Nothing in the app
imports this module: work is queued by task name (dashboard.common.queueing).
"""

from __future__ import annotations

from celery.signals import worker_ready, worker_shutdown

from dashboard.capacity.tasks import capacity_probe
from dashboard.common.repair import start_repair
from dashboard.common.workers import forget_me, remember_me
from dashboard.experiments.tasks import run_simulation
from dashboard.packing.tasks import run_packing_analysis
from dashboard.searches.tasks import advance_search, evaluate_policy
from dashboard.traces.tasks import import_trace

# Published first: the repair's first pass routes cells declined for memory by the live workers' limits.
worker_ready.connect(remember_me)
worker_ready.connect(start_repair)
worker_shutdown.connect(forget_me)

__all__ = [
    "advance_search",
    "capacity_probe",
    "evaluate_policy",
    "import_trace",
    "run_packing_analysis",
    "run_simulation",
]
