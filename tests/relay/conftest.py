"""A site with one proxied provider, and a stand-in for its proxy that uses the store's API.

The provider is the apply tests' slow exec provider (``tests/apply/slow_provider.py``); the
stand-in holds its lease, publishes its inventory and answers the calls queued for it, as
``xce-proxy`` does, so the client side is tested on a real store without a proxy process.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.supply_map import Entry
from reconciler.protocol import Reply, Request
from reconciler.providers.registry import open_provider
from reconciler.state import StateStore
from reconciler.state.postgres_backend import PostgresBackend
from reconciler.state.sql_store import SqlStore
from reconciler.state.sqlite_backend import SqliteBackend
from reconciler.state.urls import PostgresTarget, parse_target
from tests.apply.conftest import OWNER, SCRIPT, Site, volume
from tests.state.conftest import pg_admin, pg_target, sqlite_target, target  # noqa: F401
from tests.state.targets import Target

SITE = "test"  # the site key of tests.apply.conftest's maps
PROVIDER = "slow"
PROXY = "p1"
ALLOWLISTS = {PROXY: {"role": "proxy", "host": "adm01", "providers": [PROVIDER],
                      "opcodes": [{"name": "supply.update", "id": 7, "providers": [PROVIDER]}]}}


def in_process(site: Site, **extra: Any) -> dict[str, Any]:
    """The slow provider's binding, run in this process."""
    return {"kind": "exec", "command": [sys.executable, str(SCRIPT), str(site.home)],
            "timeout": 30, **extra}


def proxied(site: Site, **extra: Any) -> dict[str, Any]:
    """The same provider, run only inside proxy ``p1``."""
    return in_process(site, proxy=PROXY, via="proxy", **extra)


def write_bindings(site: Site, binding: dict[str, Any], settings: dict[str, float] | None = None,
                   allowlists: dict[str, Any] | None = None) -> None:
    """bindings.json (and allowlists.json) as xce-compile writes them for a proxied site."""
    doc: dict[str, Any] = {"providers": {PROVIDER: binding},
                           "proxies": {PROXY: {"host": "adm01", "active": [PROVIDER],
                                               "standby": []}}}
    if binding.get("via") == "proxy":
        doc["proxy_settings"] = {"inventory_max_age": 600, "publish_interval": 60,
                                 "lease_ttl": 15, **(settings or {})}
    build = site.desired_file.parent
    (build / "bindings.json").write_bytes(orjson.dumps(doc))
    (build / "allowlists.json").write_bytes(orjson.dumps(
        {"schema": 1, "proxies": ALLOWLISTS if allowlists is None else allowlists}))


class CountingStore(SqlStore):
    """The store, counting the transactions that queue calls (one per ``enqueue_calls``);
    ``round_trip``: seconds each takes beyond its own, as over a network to PostgreSQL (a
    local SQLite file commits in a tenth of a millisecond, before another thread arrives)."""

    def __init__(self, url: str, round_trip: float = 0.0) -> None:
        where = parse_target(url)
        super().__init__(PostgresBackend(where) if isinstance(where, PostgresTarget)
                         else SqliteBackend(where.path))
        self.round_trip = round_trip
        self.enqueues = 0
        self.queued = 0

    def enqueue_calls(self, site: str, provider: str,
                      calls: Sequence[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
        self.enqueues += 1
        self.queued += len(calls)
        time.sleep(self.round_trip)
        return super().enqueue_calls(site, provider, calls)


@dataclass
class StandIn:
    """Stands in for ``xce-proxy p1``: holds the provider's lease, publishes its inventory,
    and answers queued calls with the provider run in this process."""

    site: Site
    store: StateStore
    instance: str = "adm01:1:stand-in"
    epoch: int = 0
    answered: list[str] = field(default_factory=list)  # op_ids, in order

    def take(self) -> None:
        lease = self.store.take_lease(SITE, PROVIDER, PROXY, self.instance, 60, preferred=True)
        assert lease is not None
        self.epoch = lease.epoch

    def _call(self, request: Request) -> Reply:
        transport = open_provider(PROVIDER, in_process(self.site), self.site.workdir)
        try:
            return transport.call(request)
        finally:
            transport.close()

    def publish(self) -> None:
        """A full publication of what the provider answers now."""
        info = self._call(Request("info"))
        inventory = self._call(Request("inventory", owner=OWNER))
        assert inventory.ok, inventory
        result = inventory.result
        self.store.publish_inventory(
            SITE, PROVIDER, self.instance, self.epoch, generation=result["generation"],
            complete=result["complete"], session=result.get("session"), info=info.to_json(),
            config_seq=0, upserts=[(e["id"], orjson.dumps(e).decode())
                                   for e in result["entries"]],
            deletes=[], replace=True)

    def publish_error(self, error: str) -> None:
        self.store.publish_error(SITE, PROVIDER, self.instance, self.epoch, error=error,
                                 config_seq=0)

    def serve_once(self) -> int:
        """Answer the calls queued now, in parallel as a proxy makes them, under the lease's
        epoch; how many."""
        calls = self.store.take_calls(SITE, self.instance, {PROVIDER: self.epoch}, 100)
        with ThreadPoolExecutor(max_workers=8) as pool:
            replies = list(pool.map(lambda c: self._call(
                replace(Request.from_json(c.request), epoch=self.epoch)), calls))
        for call, reply in zip(calls, replies, strict=True):
            self.store.finish_call(SITE, call.call_id, self.instance, self.epoch,
                                   reply.to_json())
            self.answered.append(call.op_id)
        if calls:
            self.publish()
        return len(calls)


@contextmanager
def serving(stand_in: StandIn) -> Iterator[StandIn]:
    """The stand-in answering queued calls in a thread until the block ends: it polls the
    queue, as a proxy does."""
    stop = threading.Event()
    failed: list[BaseException] = []

    def loop() -> None:
        try:
            while not stop.is_set():
                if not stand_in.serve_once():
                    stop.wait(0.005)
        except BaseException as err:  # shown by the test, not lost in the thread
            failed.append(err)

    thread = threading.Thread(target=loop, name="stand-in proxy")
    thread.start()
    try:
        yield stand_in
    finally:
        stop.set()
        thread.join()
    assert not failed, failed


@contextmanager
def taking(stand_in: StandIn) -> Iterator[threading.Event]:
    """The stand-in taking queued calls and never answering them, as a proxy killed mid-call;
    the event is set once it took one."""
    stop, took = threading.Event(), threading.Event()

    def loop() -> None:
        while not stop.is_set():
            calls = stand_in.store.take_calls(SITE, stand_in.instance,
                                              {PROVIDER: stand_in.epoch}, 100)
            if calls:
                took.set()
            stop.wait(0.005)

    thread = threading.Thread(target=loop, name="stand-in proxy, dying mid-call")
    thread.start()
    try:
        yield took
    finally:
        stop.set()
        thread.join()


@pytest.fixture
def site(tmp_path: Path, target: Target) -> Site:  # noqa: F811 - the imported fixture
    return Site(tmp_path, target)


@pytest.fixture
def stand_in(site: Site) -> Iterator[StandIn]:
    with site.store() as store:
        helper = StandIn(site, store)
        helper.take()
        yield helper


def volumes(count: int, prefix: str = "v") -> list[Entry]:
    return [volume(f"{prefix}{i}") for i in range(1, count + 1)]
