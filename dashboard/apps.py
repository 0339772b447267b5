from __future__ import annotations

import importlib

from django.apps import AppConfig
from django.conf import settings


class DashboardConfig(AppConfig):
    name = "dashboard"
    verbose_name = "Scheduling experiments"

    def ready(self) -> None:
        # Sign-in throttling listens to Django's login signals.
        from dashboard import accounts  # noqa: F401

        # Private schedulers or presets register themselves on import (see SIMCORE_PLUGINS).
        for module in settings.SIMCORE_PLUGINS:
            importlib.import_module(module)
