"""Hosts that share no disk, on one machine: network namespaces joined by a bridge, a TCP forwarder, processes.

:class:`Lab` makes a bridge in the root namespace and one network namespace
per host (iproute2: ``ip netns add``, a veth pair per host with one end on the
bridge), with addresses in a private /24 nobody else on this machine uses.
PostgreSQL and Redis listen on 127.0.0.1 only (and their configuration is not
ours to change), so a :class:`Forwarder` in the test process listens on the
bridge's address and relays each connection to 127.0.0.1: a host reaches
them as it would reach a database server on its network. Every host gets a
fresh var directory (``SIMCORE_VAR_DIR``), HOME and TMPDIR of its own; what
it shares with the others is the code and its virtual environment (the
image, in a deployment), the database, the broker, and nothing else.

Names carry a random suffix, so parallel runs do not collide; :meth:`Lab.close`
stops the processes, then removes the namespaces and the bridge (the veth
pairs go with their namespaces), whatever state a failed test left.
"""

from __future__ import annotations

import asyncio
import ipaddress
import os
import random
import shutil
import signal
import subprocess
import threading
import time
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import pytest

from dashboard.celery import READY_FILE_ENV

ROOT = Path(__file__).resolve().parents[2]


def require_namespaces() -> None:
    """Skip unless network namespaces can be made here (root, iproute2); under CI=true fail instead."""
    why = ""
    if os.geteuid() != 0:
        why = "making network namespaces needs root"
    elif shutil.which("ip") is None:
        why = "iproute2's ip command is not installed"
    else:
        probe = f"scprobe{uuid.uuid4().hex[:6]}"
        made = subprocess.run(["ip", "netns", "add", probe], capture_output=True, text=True)
        if made.returncode != 0:
            why = f"ip netns add failed: {made.stderr.strip()}"
        else:
            subprocess.run(["ip", "netns", "del", probe], capture_output=True)
    if why:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail(f"{why} (CI=true: the test across network namespaces must run)")
        pytest.skip(why)


def _ip(*args: str) -> None:
    done = subprocess.run(["ip", *args], capture_output=True, text=True, timeout=30)
    if done.returncode != 0:
        raise RuntimeError(f"ip {' '.join(args)}: {done.stderr.strip()}")


def _free_subnet() -> ipaddress.IPv4Network:
    """A /24 in 10.200.0.0-10.254.255.0 that no address or route of this machine touches."""
    taken = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    taken += subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    for _ in range(100):
        net = ipaddress.IPv4Network(f"10.{random.randint(200, 254)}.{random.randint(0, 255)}.0/24")
        if f"{net.network_address}".rsplit(".", 1)[0] + "." not in taken:
            return net
    raise RuntimeError("no free private /24 for the test's network")


# ---------------------------------------------------------------------------- the forwarder


class Forwarder:
    """Relays TCP connections from ``listen_host`` to services on 127.0.0.1, in a thread of the test process.

    One listening port per service (chosen by the kernel, so parallel runs do
    not collide); :attr:`ports` maps the service's name to it.
    """

    def __init__(self, listen_host: str, targets: Mapping[str, tuple[str, int]]) -> None:
        self.listen_host = listen_host
        self.targets = dict(targets)
        self.ports: dict[str, int] = {}
        #: Connections relayed so far, per service (a test can tell the hops were taken).
        self.connections: Counter[str] = Counter()
        self._loop = asyncio.new_event_loop()
        self._servers: list[asyncio.Server] = []
        self._ready = threading.Event()
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._main, name="netns-forwarder", daemon=True)

    def start(self) -> Forwarder:
        self._thread.start()
        self._ready.wait(10)
        if self._error is not None or not self._ready.is_set():
            raise RuntimeError(f"the forwarder did not start: {self._error!r}")
        return self

    def _main(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._loop.run_until_complete(self._listen())
        except BaseException as e:  # reported by start()
            self._error = e
            self._ready.set()
            return
        self._ready.set()
        self._loop.run_forever()
        for task in asyncio.all_tasks(self._loop):
            task.cancel()
        self._loop.run_until_complete(asyncio.sleep(0))
        self._loop.close()

    async def _listen(self) -> None:
        for name, target in self.targets.items():

            async def handle(
                r: asyncio.StreamReader, w: asyncio.StreamWriter, name: str = name, target: tuple[str, int] = target
            ) -> None:
                self.connections[name] += 1
                await self._relay(target, r, w)

            server = await asyncio.start_server(handle, self.listen_host, 0)
            self._servers.append(server)
            self.ports[name] = int(server.sockets[0].getsockname()[1])

    @staticmethod
    async def _pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
        try:
            while data := await src.read(1 << 16):
                dst.write(data)
                await dst.drain()
        except (ConnectionError, OSError):
            pass
        finally:
            dst.close()

    async def _relay(self, target: tuple[str, int], r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        try:
            ur, uw = await asyncio.open_connection(*target)
        except OSError:
            w.close()
            return
        await asyncio.gather(self._pipe(r, uw), self._pipe(ur, w))

    def close(self) -> None:
        if not self._thread.is_alive():
            return

        def stop() -> None:
            for s in self._servers:
                s.close()
            self._loop.stop()

        self._loop.call_soon_threadsafe(stop)
        self._thread.join(10)


# ---------------------------------------------------------------------------- hosts and their processes


@dataclass
class Host:
    """One namespace: its name, address on the bridge, var directory, and the processes started in it."""

    role: str
    netns: str
    ip: str
    var: Path
    procs: list[tuple[subprocess.Popen[bytes], Path]] = field(default_factory=list)


class Lab:
    """The bridge, one namespace per host role, the forwarder to PostgreSQL and Redis; :meth:`close` undoes all.

    ``database_url`` and ``redis_url`` are the test process's (127.0.0.1);
    the hosts get the same database name and Redis number at the bridge's
    address. :meth:`env` is the one place that says what a host's processes
    are given. Their output goes to ``log_dir/<role>-<n>.log``.
    """

    def __init__(self, roles: Sequence[str], database_url: str, redis_url: str, tmp: Path, log_dir: Path) -> None:
        self.tag = uuid.uuid4().hex[:6]
        self.queue = f"simcore-test-netns-{self.tag}"
        self.hosts: dict[str, Host] = {}
        self.forwarder: Forwarder | None = None
        self.bridge = f"scb{self.tag}"
        self._bridge_made = False
        self.log_dir = log_dir
        self.log_dir.mkdir(parents=True, exist_ok=True)
        net = _free_subnet()
        addresses = [str(a) for a in net.hosts()]
        self.gateway = addresses[0]
        try:
            _ip("link", "add", self.bridge, "type", "bridge")
            self._bridge_made = True
            _ip("addr", "add", f"{self.gateway}/24", "dev", self.bridge)
            _ip("link", "set", self.bridge, "up")
            for i, role in enumerate(roles, start=1):
                folder = tmp / f"host-{role}"
                for sub in ("var", "home", "tmp"):
                    (folder / sub).mkdir(parents=True)
                host = Host(role, f"sc{self.tag}{role}", addresses[i], folder / "var")
                self.hosts[role] = host
                outside, inside = f"scv{self.tag}{i}h", f"scv{self.tag}{i}n"
                _ip("netns", "add", host.netns)
                _ip("link", "add", outside, "type", "veth", "peer", "name", inside, "netns", host.netns)
                _ip("link", "set", outside, "master", self.bridge, "up")
                _ip("-n", host.netns, "addr", "add", f"{host.ip}/24", "dev", inside)
                _ip("-n", host.netns, "link", "set", inside, "up")
                _ip("-n", host.netns, "link", "set", "lo", "up")
            self.forwarder = Forwarder(
                self.gateway, {"postgres": _host_port(database_url, 5432), "redis": _host_port(redis_url, 6379)}
            ).start()
        except BaseException:
            self.close()
            raise
        self.database_url = _moved(database_url, self.gateway, self.forwarder.ports["postgres"])
        self.redis_url = _moved(redis_url, self.gateway, self.forwarder.ports["redis"])
        self.s3: Any = None
        self.bucket = f"simcore-netns-{self.tag}"
        try:
            self._start_s3()
        except BaseException:
            self.close()
            raise

    def _start_s3(self) -> None:
        """The per-job records store every host reaches: an S3-compatible server on the bridge's address.

        No real S3 runs here, so it is moto's S3 server (HTTP, the S3 protocol), as in test_record_storage;
        a filesystem folder under one host's var directory could not be read by the others.
        """
        from moto.moto_server.threaded_moto_server import ThreadedMotoServer

        self.s3 = ThreadedMotoServer(ip_address=self.gateway, port=0, verbose=False)
        self.s3.start()
        host, port = self.s3.get_host_and_port()
        self.s3_endpoint = f"http://{host}:{port}"
        self.s3_bucket().create()

    def s3_bucket(self) -> Any:
        """The records bucket, as boto3 sees it from the test process."""
        import boto3

        s3 = boto3.resource(
            "s3",
            endpoint_url=self.s3_endpoint,
            aws_access_key_id="netns",
            aws_secret_access_key="netns",
            region_name="us-east-1",
        )
        return s3.Bucket(self.bucket)

    # -- what every host's processes are given: the one place to add a setting (a storage backend, say)

    def shared_services(self) -> dict[str, str]:
        """The services every host reaches over the network: the database and the broker (and, later, storage).

        Per-job records kept on a filesystem under one host's var directory could not be read by another:
        a storage backend every host reaches (S3-compatible) belongs here, beside the database and the broker.
        """
        return {
            "DATABASE_URL": self.database_url,
            "REDIS_URL": self.redis_url,
            "SIMCORE_STORAGE_URL": f"s3://{self.bucket}/records",
            "AWS_S3_ENDPOINT_URL": self.s3_endpoint,
            "AWS_ACCESS_KEY_ID": "netns",
            "AWS_SECRET_ACCESS_KEY": "netns",
            "AWS_S3_REGION_NAME": "us-east-1",
        }

    def env(self, host: Host) -> dict[str, str]:
        """The whole environment of a process on ``host``: nothing inherited from the test process but PATH."""
        return {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            # Its own home, temporary folder and var directory (where the product writes locally: numba's cache).
            "HOME": str(host.var.parent / "home"),
            "TMPDIR": str(host.var.parent / "tmp"),
            "SIMCORE_VAR_DIR": str(host.var),
            "STATIC_ROOT": str(host.var / "static"),
            "PYTHONPATH": str(ROOT),
            "DJANGO_SETTINGS_MODULE": "tests.dashboard.settings",
            "SIMCORE_WARM_KERNELS": "0",
            "SIMCORE_TASK_QUEUE": self.queue,
            "ALLOWED_HOSTS": ",".join(h.ip for h in self.hosts.values()),
            READY_FILE_ENV: str(host.var / "ready"),
            **self.shared_services(),
        }

    def copy_kernels(self, role: str) -> int:
        """Give ``role`` a copy of the test process's compiled kernels (numba's cache); returns the files copied.

        A copy, not a shared folder: the cache is a build product of the code (an image would carry it), not
        the platform's state, and each host writes what it compiles more into its own var directory only.
        """
        from simcore.compiled import jit

        src = jit.cache_dir() / jit.source_key()
        if not src.is_dir():
            return 0
        dst = self.hosts[role].var / "numba-cache" / jit.source_key()
        shutil.copytree(src, dst, dirs_exist_ok=True)
        return sum(1 for _ in dst.iterdir())

    def run(self, role: str, argv: Sequence[str]) -> subprocess.CompletedProcess[str]:
        """Run ``argv`` to its end in ``role``'s namespace with :meth:`env`."""
        host = self.hosts[role]
        cmd = ["ip", "netns", "exec", host.netns, *argv]
        return subprocess.run(cmd, cwd=ROOT, env=self.env(host), capture_output=True, text=True, timeout=60)

    def start(self, role: str, argv: Sequence[str]) -> subprocess.Popen[bytes]:
        """Start ``argv`` in ``role``'s namespace with :meth:`env`, in a session of its own (its children too)."""
        host = self.hosts[role]
        log = self.log_dir / f"{role}-{len(host.procs)}.log"
        out: IO[bytes]
        with open(log, "wb") as out:
            proc = subprocess.Popen(
                ["ip", "netns", "exec", host.netns, *argv],
                cwd=ROOT,
                env=self.env(host),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        host.procs.append((proc, log))
        return proc

    def log_tail(self, chars: int = 3000) -> str:
        parts = []
        for host in self.hosts.values():
            for _, log in host.procs:
                text = log.read_text(errors="replace") if log.exists() else ""
                parts.append(f"--- {log.name}\n{text[-chars:]}")
        return "\n".join(parts)

    def wait_ready(self, role: str, timeout: float = 120.0) -> None:
        """Wait for the worker on ``role`` to consume tasks (its ready file, dashboard.celery)."""
        host = self.hosts[role]
        proc, log = host.procs[-1]
        deadline = time.monotonic() + timeout
        while not (host.var / "ready").exists():
            if proc.poll() is not None:
                raise RuntimeError(f"the worker on {role} exited with {proc.returncode}:\n{self.log_tail()}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"the worker on {role} not ready after {timeout} s:\n{self.log_tail()}")
            time.sleep(0.1)

    def close(self) -> None:
        """Stop every process (its whole session), then remove the namespaces and the bridge."""
        _stop_all([proc for host in self.hosts.values() for proc, _ in host.procs])
        if self.forwarder is not None:
            self.forwarder.close()
        if getattr(self, "s3", None) is not None:
            self.s3.stop()
        for host in self.hosts.values():
            subprocess.run(["ip", "netns", "del", host.netns], capture_output=True)
        if self._bridge_made:
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)


def _stop_all(procs: Sequence[subprocess.Popen[bytes]]) -> None:
    """Kill each process's whole session: it, a worker's pool and heartbeat helpers, gunicorn's workers.

    SIGKILL, as a host that goes away: the test has nothing running any more and leaves nothing on the
    broker (the fixture purges its queues), and the gentlest shutdowns (SIGQUIT: Celery's cold one,
    gunicorn's quick one) took 4.7 s each, in parallel, on a loaded machine.
    """
    for proc in procs:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    for proc in procs:
        proc.wait(timeout=30)


def _host_port(url: str, default_port: int) -> tuple[str, int]:
    parts = urlsplit(url)
    return parts.hostname or "127.0.0.1", parts.port or default_port


def _moved(url: str, host: str, port: int) -> str:
    """``url`` with its host and port replaced (user, password, path and query kept)."""
    parts = urlsplit(url)
    auth = parts.netloc.rsplit("@", 1)[0] + "@" if "@" in parts.netloc else ""
    return urlunsplit((parts.scheme, f"{auth}{host}:{port}", parts.path, parts.query, parts.fragment))
