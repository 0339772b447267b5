"""Settings for the test suite: the production settings, with a test secret and plain HTTP.

DEBUG stays off, as in production (Django's test runner forces it off anyway);
the test client and the live server speak plain HTTP, so the HTTPS redirect
and secure cookies are off. ``test_security`` checks the real production
settings with ``manage.py check --deploy`` in a separate process.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-" + "x" * 40)
os.environ.setdefault("SIMCORE_HTTPS", "0")
os.environ.setdefault("SIMCORE_STATIC_COLLECTED", "0")  # no collectstatic before tests: serve static/ as it is
# No kernel warm-up in the tests' workers (dashboard.celery; they inherit this environment): the tests' own
# runs compile what they use, and compiling every kernel besides would take a core from them.
# test_kernel_warm_up asks for it explicitly.
os.environ.setdefault("SIMCORE_WARM_KERNELS", "0")

# Per-job records in a folder of this test process (dashboard.experiments.storage), which the workers it starts
# inherit through the environment: never the checkout's var/records, where test databases of other sessions
# would number their runs alike. One folder per pytest-xdist process too: each has its own test database, whose
# runs are numbered like the other's, and a process inherits the controller's environment when it starts.
_process = os.environ.get("PYTEST_XDIST_WORKER", "main")
if not os.environ.get("SIMCORE_STORAGE_URL") or os.environ.get("SIMCORE_TEST_RECORDS_OF") not in (None, _process):
    import atexit
    import shutil
    import tempfile

    _records = tempfile.mkdtemp(prefix=f"simcore-test-records-{_process}-")
    os.environ["SIMCORE_STORAGE_URL"] = f"file://{_records}"
    os.environ["SIMCORE_TEST_RECORDS_OF"] = _process
    atexit.register(shutil.rmtree, _records, True)

from dashboard.settings import *  # noqa: E402,F403

# No collectstatic before tests: serve static/ as it is (production uses whitenoise's hashed manifest).
STORAGES = {**STORAGES, "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}  # noqa: F405
