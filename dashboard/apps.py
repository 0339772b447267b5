from __future__ import annotations

import importlib

from django.apps import AppConfig
from django.conf import settings

#: The features whose rows are queued work (dashboard.common.queueing, .waiting, .repair).
FEATURES_WITH_WORK = ("experiments", "traces", "packing", "searches", "capacity")


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Scheduling experiments"

    def ready(self) -> None:
        # Sign-in throttling listens to Django's login signals.
        from dashboard.accounts import services as accounts  # noqa: F401

        # Each feature's background work registers with common's queueing, waiting notes and repair.
        for feature in FEATURES_WITH_WORK:
            importlib.import_module(f"dashboard.{feature}.work")

        # Deleting a run's records row, or an experiment, deletes their objects from the records storage.
        from dashboard.experiments import storage  # noqa: F401

        # Private schedulers or presets register themselves on import (see SIMCORE_PLUGINS).
        for module in settings.SIMCORE_PLUGINS:
            importlib.import_module(module)
