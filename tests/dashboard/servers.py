"""A PostgreSQL server of a test's own, in a temporary folder, that the test may stop and start again.

The session's database is shared and is never stopped; a test of a database
outage starts this one (initdb + pg_ctl, as the ``postgres`` user when run
as root), migrates it, and points its own worker at it. Without the server
binaries the test is skipped locally and fails under CI=true.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bin() -> Path | None:
    """The folder of initdb and pg_ctl (the newest installed), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb")) or [p for p in [shutil.which("initdb")] if p]
    return Path(found[-1]).parent if found else None


def need_postgres_bin() -> Path:
    """The binaries' folder; skips the test without them, except under CI, where it fails."""
    bin_dir = postgres_bin()
    if bin_dir is None:
        if os.environ.get("CI") == "true":
            pytest.fail("the PostgreSQL server binaries (initdb, pg_ctl) are needed for the outage tests under CI")
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) here")
    return bin_dir


class OwnPostgres:
    """initdb into a temporary folder; :meth:`start`, :meth:`stop` (immediate, as a crash), :meth:`remove`."""

    def __init__(self, bin_dir: Path) -> None:
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="simcore-pg-"))
        self.port = _free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:
            shutil.chown(self.dir, "postgres", "postgres")
        self._run("initdb", "-D", str(self.dir / "data"), "-A", "trust", "-U", "postgres", "--no-sync", "-E", "UTF8")
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}/simcore"

    def _run(self, tool: str, *args: str) -> None:
        cmd = [str(self.bin / tool), *args]
        if self.as_root:
            cmd = ["runuser", "-u", "postgres", "--", *cmd]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, timeout=60)

    def start(self) -> None:
        options = f"-p {self.port} -k {self.dir} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-o", options, "-l", str(self.dir / "log"), "-w", "start")

    def stop(self) -> None:
        """As a crash or a network cut: connections drop at once."""
        self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")

    def create_and_migrate(self) -> None:
        import psycopg

        with psycopg.connect(f"postgresql://postgres@127.0.0.1:{self.port}/postgres", autocommit=True) as c:
            c.execute("CREATE DATABASE simcore")
        env = {**os.environ, "DATABASE_URL": self.url, "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings"}
        subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, check=True, timeout=180)

    def query(self, sql: str, *params: object) -> list[tuple[object, ...]]:
        import psycopg

        with psycopg.connect(self.url, connect_timeout=3) as c:
            return list(c.execute(sql, params).fetchall())  # type: ignore[arg-type]

    def remove(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.dir / "data"), "-m", "immediate", "-w", "stop")
        except subprocess.CalledProcessError:
            pass  # already stopped
        shutil.rmtree(self.dir, ignore_errors=True)


def wait_until(what: str, check: object, timeout: float = 60.0) -> float:
    """Poll ``check()`` until true; returns when (time.monotonic()). Fails after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        if time.monotonic() > deadline:
            raise AssertionError(f"not {what} after {timeout} s")
        time.sleep(0.1)
    return time.monotonic()
