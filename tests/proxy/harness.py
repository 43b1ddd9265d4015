"""Proxies as real processes, for the system tests (issue 24, "Tests, with real parts").

Each ``xce-proxy`` runs from the venv as a separate process, with a folder of its own standing
for its host (its working directory and log) and an environment of its own: only there are
the site's secrets (a canary value per proxy). Both proxies name the same ``--workdir``: the
providers' data (the shared filesystem, the dataset caches, the simulated cloud account) is
what a shared mount gives both hosts. ``xce-plan`` and ``xce-apply`` run as processes too,
with an environment that holds none of the secrets.

What a test waits for is an event: a proxy's JSON log line (each line rings a ``Doorbell``),
a row in the store checked at each ring, a process's end. Signals are real: SIGKILL,
SIGSTOP/SIGCONT, SIGTERM.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg

from reconciler.pipeline import compile_desired
from reconciler.relay.config import record_config
from reconciler.state import StateStore, open_store
from tests.apply.events import Doorbell
from tests.conftest import EXAMPLE_SITE, ROOT

BIN = ROOT / ".venv" / "bin"
SITE = "hpc-east"  # the example site's name, under which the store keeps its rows
TOKEN_ENV = "BURST_API_TOKEN"  # the example's cloud credential (env:)
FLEXLM_FILE = "/etc/xce/secrets/flexlm"  # the example's license credential (file:)
# What the test's own commands must not inherit (a developer may have them set).
SECRET_ENV = (TOKEN_ENV, "XCE_STATE_URL", "PGPASSWORD")
WAIT_LIMIT = 120.0  # seconds any one wait may take before the test fails


@dataclass(frozen=True)
class Timings:
    """The site's ``proxies:`` settings for a test: short, so takeovers take seconds."""

    lease_ttl: str = "3s"
    publish_interval: str = "1s"
    inventory_max_age: str = "10m"


DEFAULT_TIMINGS = Timings()


def proxied_site(dest: Path, secrets: Path, timings: Timings = DEFAULT_TIMINGS) -> Path:
    """A copy of the example site with every provider that has a proxy served by it.

    Its cloud and license simulators are the leaky ones (``tests/proxy/leaky_sim.py``), its
    license credential a file under ``secrets`` (standing for the proxy hosts'
    ``/etc/xce/secrets``), and its dataset sources an absolute path: a proxy has no site
    folder for a site-relative one to be under."""
    shutil.copytree(EXAMPLE_SITE, dest, ignore=shutil.ignore_patterns(".xce"))
    site_yaml = dest / "site.yaml"
    site_yaml.write_text(site_yaml.read_text() + (
        "  proxies:\n"
        "    serve: all\n"
        f"    lease_ttl: {timings.lease_ttl}\n"
        f"    publish_interval: {timings.publish_interval}\n"
        f"    inventory_max_age: {timings.inventory_max_age}\n"))
    providers = dest / "providers.yaml"
    text = providers.read_text()
    for old, new in (
        ("reconciler.testdoubles.sim_provider, cloud]", "tests.proxy.leaky_sim, cloud]"),
        ("reconciler.testdoubles.sim_provider, license]", "tests.proxy.leaky_sim, license]"),
        (f"file:{FLEXLM_FILE}", f"file:{secrets / 'flexlm'}"),
        ("source_base: sample-data", f"source_base: {dest / 'sample-data'}"),
    ):
        assert old in text, f"the example's providers.yaml no longer has {old!r}"
        text = text.replace(old, new)
    providers.write_text(text)
    return dest


def ci_env() -> dict[str, str]:
    """The environment of the test's xce-plan and xce-apply: no secret of any provider."""
    env = {k: v for k, v in os.environ.items() if k not in SECRET_ENV}
    env.update(NO_COLOR="1", PYTHONPATH=str(ROOT))  # the leaky simulator is a test module
    return env


@dataclass
class Run:
    """A finished command: its exit code and streams."""

    argv: list[str]
    code: int
    out: str
    err: str

    def __str__(self) -> str:
        return f"{' '.join(self.argv)} exited {self.code}\n{self.out[-3000:]}\n{self.err[-3000:]}"


@dataclass
class Proxy:
    """One ``xce-proxy run NAME`` process with its own home (its host) and environment."""

    name: str
    home: Path
    argv: list[str]
    env: dict[str, str]
    bell: Doorbell
    proc: subprocess.Popen[str] | None = None
    runs: int = 0  # how many times it was started (each start's log is kept)

    @property
    def log(self) -> Path:
        return self.home / f"proxy-{self.runs}.log"

    def start(self) -> Proxy:
        assert self.proc is None or self.proc.poll() is not None, f"{self.name} runs already"
        self.runs += 1
        self.proc = self.bell.popen(self.argv, self.log, cwd=self.home, env=self.env,
                                    stdout=subprocess.DEVNULL)
        return self

    def signal(self, sig: signal.Signals) -> None:
        assert self.proc is not None
        self.proc.send_signal(sig)

    def kill(self) -> None:
        """SIGKILL, and reap it: its pid is gone, as after a crash of its host."""
        self.signal(signal.SIGKILL)
        assert self.proc is not None
        self.proc.wait()

    def stop(self, timeout: float = 30) -> int:
        """SIGTERM (the service manager's stop) and wait for it to exit."""
        assert self.proc is not None
        if self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGCONT)  # a paused one cannot handle SIGTERM
            self.proc.terminate()
        return self.proc.wait(timeout)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def lines(self, run: int | None = None) -> list[str]:
        """Every log line of a run (default: the current one), as written."""
        path = self.home / f"proxy-{run or self.runs}.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def events(self, event: str | None = None, run: int | None = None) -> list[dict[str, Any]]:
        """The JSON log lines of a run, those of one ``event`` kind when given."""
        found = []
        for line in self.lines(run):
            with contextlib.suppress(ValueError):
                doc = json.loads(line)
                if isinstance(doc, dict) and (event is None or doc.get("event") == event):
                    found.append(doc)
        return found

    def all_text(self) -> str:
        """Every log of every run, for the canary search and failure messages."""
        return "\n".join("\n".join(self.lines(run)) for run in range(1, self.runs + 1))


@dataclass
class Cluster:
    """A proxied site, its providers' shared data, its store and its proxies."""

    root: Path
    site: Path
    state_url: str  # what the test's commands use
    proxy_state_url: str  # what the proxies use (through a Forwarder, when one is cut)
    bell: Doorbell
    proxy_env: Mapping[str, Mapping[str, str]]  # proxy name -> its secrets
    canaries: list[str] = field(default_factory=list)  # every secret value the proxies hold
    proxies: dict[str, Proxy] = field(default_factory=dict)
    cli_runs: list[Run] = field(default_factory=list)

    @property
    def workdir(self) -> Path:
        return self.root / "shared"  # the providers' data, which every proxy host mounts

    def proxy(self, name: str, *extra: str) -> Proxy:
        """``name``'s process (made on first use, not started)."""
        if name not in self.proxies:
            home = self.root / "hosts" / name
            home.mkdir(parents=True, exist_ok=True)
            env = {**ci_env(), **self.proxy_env.get(name, {})}
            argv = [str(BIN / "xce-proxy"), "run", name, "--state", self.proxy_state_url,
                    "--workdir", str(self.workdir), *extra]
            self.proxies[name] = Proxy(name, home, argv, env, self.bell)
        return self.proxies[name]

    def start(self, *names: str) -> list[Proxy]:
        return [self.proxy(name).start() for name in names]

    def command(self, tool: str, *args: str, state: str | None = None) -> list[str]:
        return [str(BIN / tool), *args, "--workdir", str(self.workdir),
                "--state", state or self.state_url]

    def run(self, tool: str, *args: str, state: str | None = None, timeout: float = 300) -> Run:
        """``tool`` (xce-plan, xce-apply, xce-drift) run to its end, in CI's environment,
        against the cluster's store (or ``state``)."""
        argv = self.command(tool, *args, state=state)
        done = subprocess.run(argv, cwd=self.root, env=ci_env(), capture_output=True, text=True,
                              timeout=timeout, check=False)
        run = Run(argv, done.returncode, done.stdout, done.stderr)
        self.cli_runs.append(run)
        return run

    def spawn(self, tool: str, *args: str, log: Path) -> subprocess.Popen[str]:
        """``tool`` in the background, its stderr teed to ``log`` (each line rings the bell)."""
        return self.bell.popen(self.command(tool, *args), log, cwd=self.root, env=ci_env(),
                               stdout=subprocess.PIPE)

    def wait(self, until: Callable[[], bool], what: str,
             proc: subprocess.Popen[str] | None = None, limit: float = WAIT_LIMIT) -> bool:
        """Wait, at each log line of any process, until ``until`` holds (True) or ``proc``
        ended (False); fails after ``limit`` seconds (the proxies log all the time, so the
        bell's own check for a quiet minute would never fire)."""
        deadline = time.monotonic() + limit

        def reached() -> bool:
            assert time.monotonic() < deadline, f"still waiting for {what} after {limit:.0f} s"
            return until()

        return self.bell.wait(reached, proc, what)

    def wait_event(self, name: str, event: str, count: int = 1, **fields: Any) -> dict[str, Any]:
        """Wait for the ``count``-th log line ``event`` of proxy ``name``'s current run whose
        fields include ``fields``; that line."""
        proxy = self.proxy(name)

        def found() -> list[dict[str, Any]]:
            return [e for e in proxy.events(event)
                    if all(e.get(k) == v for k, v in fields.items())]

        reached = self.wait(lambda: len(found()) >= count, f"{name}: {event} {fields} ×{count}",
                            proxy.proc)
        assert reached, f"{name} exited before {event} {fields}:\n" + proxy.all_text()[-5000:]
        return found()[count - 1]

    def settled(self) -> bool:
        """Whether every proxy has published each provider it called since that call: the
        reply is written first, the provider's inventory published right after."""
        for proxy in self.proxies.values():
            pending: set[str] = set()
            for event in proxy.events():
                if event.get("event") == "call":
                    pending.add(event["provider"])
                elif event.get("event") in ("published", "lease-lost", "lease-released"):
                    pending.discard(event.get("provider", ""))
            if pending and proxy.running:
                return False
        return True

    def wait_settled(self) -> None:
        self.wait(self.settled, "the inventories published after the last calls")

    @contextlib.contextmanager
    def store(self) -> Iterator[StateStore]:
        with open_store(self.state_url, self.root / "unused.sqlite", env={}) as opened:
            yield opened

    def record_config(self, edit: Callable[[dict[str, Any]], None] | None = None) -> int:
        """Record the site's config in the store as an apply does before its first call
        (``reconciler.relay.config``), without applying anything: the proxies' bootstrap in a
        test that needs no apply. ``edit`` may change the proxies' allowlists first."""
        desired = compile_desired(self.site)
        allowlists = copy.deepcopy(dict(desired.proxy_allowlists))
        if edit is not None:
            edit(allowlists)
        with self.store() as store:
            return record_config(store, desired.supply.site_key, desired.bindings, allowlists,
                                 "tests/proxy")

    def stop_all(self) -> None:
        for proxy in self.proxies.values():
            if proxy.running:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proxy.stop(timeout=15)
            if proxy.running:
                proxy.kill()


class Forwarder:
    """A TCP relay in front of the store's server that a test can cut: ``down`` closes every
    connection and stops listening (the store is unreachable: connections are refused),
    ``up`` listens again on the same port."""

    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self._lock = threading.Lock()
        self._conns: list[socket.socket] = []
        self._listener: socket.socket | None = None
        probe = socket.socket()
        probe.bind(("127.0.0.1", 0))
        self.port: int = probe.getsockname()[1]
        probe.close()
        self.up()

    def up(self) -> None:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", self.port))
        listener.listen(64)
        self._listener = listener
        threading.Thread(target=self._accept, args=(listener,), daemon=True).start()

    def down(self) -> None:
        with self._lock:
            listener, self._listener = self._listener, None
            conns, self._conns = self._conns, []
        if listener is not None:
            with contextlib.suppress(OSError):
                listener.shutdown(socket.SHUT_RDWR)
            listener.close()
        for conn in conns:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
            conn.close()

    def _accept(self, listener: socket.socket) -> None:
        while True:
            try:
                client, _ = listener.accept()
            except OSError:
                return  # down
            try:
                server = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                if self._listener is not listener:
                    client.close()
                    server.close()
                    return
                self._conns += [client, server]
            for src, dst in ((client, server), (server, client)):
                threading.Thread(target=_pump, args=(src, dst), daemon=True).start()


def _pump(src: socket.socket, dst: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := src.recv(1 << 16):
            dst.sendall(data)
    for sock in (src, dst):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def raw_sql(url: str, sql: str, params: Sequence[Any] = ()) -> int:
    """Run one write outside the store, as an operator would (``?`` placeholders); the
    number of rows it changed."""
    if not url.startswith("postgresql:"):
        with contextlib.closing(sqlite3.connect(url, isolation_level=None)) as conn:
            return conn.execute(sql, tuple(params)).rowcount
    with psycopg.connect(url, autocommit=True) as pg:
        return pg.execute(sql.replace("?", "%s"), tuple(params)).rowcount


def store_rows(url: str) -> dict[str, list[str]]:
    """Every row of every table of the store at ``url``, as text: what a canary must not be
    in. SQLite and PostgreSQL both (a PostgreSQL URL's ``search_path`` names its schema)."""
    if not url.startswith("postgresql:"):
        with contextlib.closing(sqlite3.connect(url)) as conn:
            tables = [r[0] for r in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table'")]
            return {t: [repr(row) for row in conn.execute(f'SELECT * FROM "{t}"')]
                    for t in tables}
    with psycopg.connect(url, autocommit=True) as pg:
        tables = [r[0] for r in pg.execute(
            "SELECT table_name FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'")]
        return {t: [repr(row) for row in pg.execute(f'SELECT * FROM "{t}"')] for t in tables}
