"""Fixtures: users, a small scenario, and a real Celery worker process.

The worker is a separate ``celery -A dashboard worker`` process (not eager
mode) pointed at pytest-django's test database: PostgreSQL's test database
when DATABASE_URL is set (CI), else the SQLite test file; its broker is Redis
when REDIS_URL is set, else the filesystem transport. Each test session uses
its own queue name, so a ``make run`` worker on the same broker never takes
the tests' tasks.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.contrib.auth.models import User

from dashboard.celery import READY_FILE_ENV, both_queues
from dashboard.models import Experiment, Membership, Role, Status, Team

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "test-artifacts"

#: A scenario small enough for a test (50 machines, ~6,000 jobs, about a second per run).
SMALL = {
    "cluster": {"preset": "google-balanced", "params": {"machines_per_config": 2}},
    "workload": {"preset": "google-like", "params": {}},
    "load": 0.9,
    "hours": 1.0,
    "drain": False,
    "schedulers": ["greedy", "fcfs"],
    "scheduler_params": {},
    "seeds": [0],
}


#: A valid new-experiment form submission (the form tests and others start from it).
GOOD = {
    "name": "x",
    "cluster": "preset:google-balanced",
    "cluster__google-balanced__machines_per_config": "2",
    "workload": "preset:google-like",
    "load": "0.9",
    "hours": "1",
    "schedulers": ["greedy", "fcfs"],
    "seeds": "0",
}

#: A small valid cluster file and trace (uploads, API and fuzz tests).
CLUSTER = {
    "name": "two-kinds",
    "resources": ["cpu", "mem"],
    "configurations": [
        {"name": "big", "count": 4, "capacity": {"cpu": 1.0, "mem": 1.0}},
        {"name": "small", "count": 8, "capacity": {"cpu": 0.5, "mem": 0.25}},
    ],
}

TRACE = "# simcore trace v1\n# horizon_s: 600\nsubmit_s,duration_s,cpu,mem\n" + "".join(
    f"{i * 2.5},{30 + (i % 7) * 10},{0.1 + (i % 3) * 0.1},{0.05 + (i % 4) * 0.05}\n" for i in range(200)
)


def small_scenario(**changes: Any) -> dict[str, Any]:
    return {**SMALL, **changes}


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings: Any) -> None:
    # The default hasher spends ~1 s of CPU per password on purpose; tests need no such protection.
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture
def owner(db: None) -> User:
    return User.objects.create_user("alice", password="alice-password-1")


@pytest.fixture
def other(db: None) -> User:
    return User.objects.create_user("bob", password="bob-password-1")


@pytest.fixture
def outsider(db: None) -> User:
    """A user of another team: sees none of alice's team's experiments."""
    user = User.objects.create_user("carol", password="carol-password-1")
    Membership.objects.create(team=Team.objects.create(name="elsewhere"), user=user, role=Role.OWNER)
    return user


@pytest.fixture
def viewer(db: None) -> User:
    return User.objects.create_user("dave", password="dave-password-1")


@pytest.fixture
def team(owner: User, other: User, viewer: User) -> Team:
    """alice owns it, bob is a member, dave a viewer."""
    t = Team.objects.create(name="lab")
    Membership.objects.create(team=t, user=owner, role=Role.OWNER)
    Membership.objects.create(team=t, user=other, role=Role.MEMBER)
    Membership.objects.create(team=t, user=viewer, role=Role.VIEWER)
    return t


@pytest.fixture
def owner_client(client: Any, owner: User) -> Any:
    client.force_login(owner)
    return client


def _test_database_url() -> str:
    """The test database as DATABASE_URL, for the worker processes a test starts (the platform's own rule)."""
    from dashboard.management.commands.bench_reproduction import this_database_url

    url = this_database_url()
    assert url, "PostgreSQL tests need DATABASE_URL"
    return url


@pytest.fixture(scope="session")
def celery_worker(django_db_setup: None, django_db_blocker: Any, tmp_path_factory: Any) -> Iterator[str]:
    """A real worker process on this session's queue; yields the queue name."""
    from dashboard.celery import app

    queue = f"simcore-test-{uuid.uuid4().hex[:8]}"
    app.conf.task_default_queue = queue
    ready = tmp_path_factory.mktemp("worker") / "ready"
    env = {
        **os.environ,
        "DATABASE_URL": _test_database_url(),
        READY_FILE_ENV: str(ready),
        "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
        # Its own queue also for what its periodic repair re-queues.
        "SIMCORE_TASK_QUEUE": queue,
    }
    if not os.environ.get("REDIS_URL"):
        env["SIMCORE_BROKER_DIR"] = str(Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"]).parent)
    log = ARTIFACTS / "celery-worker.log"
    ARTIFACTS.mkdir(exist_ok=True)
    with open(log, "w") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "dashboard",
                "worker",
                "--concurrency",
                "1",
                "-Q",
                ",".join(both_queues(queue)),
                "--without-gossip",
                "--without-mingle",
                "--without-heartbeat",
                "--loglevel",
                "INFO",
            ],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        deadline = time.monotonic() + 60
        while not ready.exists():
            if proc.poll() is not None:
                raise RuntimeError(f"celery worker exited with {proc.returncode}; see {log}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"celery worker not ready after 60 s; see {log}")
            time.sleep(0.1)
        yield queue
    finally:
        # Cold shutdown (SIGQUIT): nothing is running any more, and a warm one waits seconds for the broker.
        proc.send_signal(signal.SIGQUIT)
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def purge_queues(queue: str) -> None:
    """Empty ``queue`` and its long twin on the real broker (as a broker restarted with nothing on disk would)."""
    from kombu.exceptions import ChannelError

    from dashboard.celery import app

    with app.connection_for_write() as conn:
        for name in both_queues(queue):
            try:
                conn.default_channel.queue_purge(name)
            except ChannelError:  # Redis: an empty queue does not exist
                pass


@pytest.fixture
def own_queue() -> Iterator[str]:
    """The task queues pointed at two of this test's own on the real broker (no consumer), emptied afterwards."""
    from dashboard.celery import app

    before = app.conf.task_default_queue
    app.conf.task_default_queue = f"simcore-test-own-{uuid.uuid4().hex[:8]}"
    try:
        yield app.conf.task_default_queue
    finally:
        purge_queues(app.conf.task_default_queue)
        app.conf.task_default_queue = before


def wait_for(experiment: Experiment, timeout: float = 90.0) -> Experiment:
    """Poll until every run of ``experiment`` has left pending/running."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        experiment.refresh_from_db()
        active = experiment.runs.filter(status__in=[Status.PENDING, Status.RUNNING]).exists()
        if not active and experiment.status not in (Status.PENDING, Status.RUNNING):
            return experiment
        time.sleep(0.2)
    states = list(experiment.runs.values_list("scheduler", "status", "fraction"))
    raise AssertionError(f"experiment {experiment.pk} still active after {timeout} s: {states}")
