"""simcore is a plain library: importing all of it must not pull in Django or Celery."""

from __future__ import annotations

import subprocess
import sys

CODE = """
import importlib, pkgutil, sys
import simcore
for m in pkgutil.walk_packages(simcore.__path__, 'simcore.'):
    if m.name.endswith('__main__'):
        continue
    importlib.import_module(m.name)
from simcore.schedulers import SCHEDULERS
from simcore.presets import CLUSTERS, WORKLOADS
SCHEDULERS.names(); CLUSTERS.names(); WORKLOADS.names()
bad = sorted(k for k in sys.modules if k.split('.')[0] in {'django', 'celery', 'kombu', 'dashboard'})
print(','.join(bad))
"""


def test_simcore_never_imports_django_or_celery() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
