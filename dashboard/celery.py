"""The Celery app (Saleor's habit: settings under the CELERY_ namespace, tasks autodiscovered)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from celery import Celery
from celery.signals import worker_ready, worker_shutdown

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")

app = Celery("dashboard")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()

#: A file the worker creates once it consumes tasks and removes at shutdown; the launcher
#: and the test fixture wait for it (works with every broker, unlike a broadcast ping).
READY_FILE_ENV = "SIMCORE_WORKER_READY_FILE"


@worker_ready.connect
def _mark_ready(**_: Any) -> None:
    path = os.environ.get(READY_FILE_ENV)
    if path:
        Path(path).write_text(str(os.getpid()))


@worker_shutdown.connect
def _unmark_ready(**_: Any) -> None:
    path = os.environ.get(READY_FILE_ENV)
    if path:
        Path(path).unlink(missing_ok=True)
