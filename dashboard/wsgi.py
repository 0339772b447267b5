"""WSGI entry point for gunicorn: ``gunicorn dashboard.wsgi``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "dashboard.settings")
application = get_wsgi_application()

# Load the scheduler and preset registries now, not in the first request that validates a scenario:
# importing every scheduler module (about 0.1 s) would otherwise be that request's server time.
from simcore.presets import CLUSTERS, WORKLOADS  # noqa: E402
from simcore.schedulers import SCHEDULERS  # noqa: E402

for _registry in (SCHEDULERS, CLUSTERS, WORKLOADS):
    _registry.names()
