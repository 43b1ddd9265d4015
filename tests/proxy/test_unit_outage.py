"""The proxy through a store outage and a slow provider: it keeps running, says so on
/healthz, finishes what the outage interrupted without making a call twice, and keeps its
lease through a provider call longer than the lease's ttl."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from reconciler.protocol import Reply, Request
from reconciler.state import StateStore
from reconciler.state.errors import store_failed
from tests.proxy.unit_kit import SITE, create_volume, directory, proxy, record, sqlite


def failing(store: StateStore, method: str, times: int) -> list[int]:
    """Make ``store.method`` fail as an unreachable store does, ``times`` times."""
    real = getattr(store, method)
    left = [times]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if left[0] > 0:
            left[0] -= 1
            raise store_failed(store.label, "server closed the connection unexpectedly")
        return real(*args, **kwargs)

    setattr(store, method, flaky)
    return left


def test_a_reply_the_outage_kept_from_the_store_is_written_after_it(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1")),
                                            ("op-2", create_volume("scratch", "op-2"))])
    failing(store, "finish_calls", 1)
    with pytest.raises(Exception, match="server closed the connection"):
        running.daemon.step()
    assert store.call_replies(SITE, "shared-fs", ["op-1", "op-2"]) == {}
    running.daemon.step()
    replies = store.call_replies(SITE, "shared-fs", ["op-1", "op-2"])
    assert {op: r["ok"] for op, r in replies.items()} == {"op-1": True, "op-2": True}
    assert [e["op_id"] for e in running.events("call")] == ["op-1", "op-2"]  # each made once


def test_the_loop_survives_the_outage_and_healthz_tells(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"])
    running = proxy(store, tmp_path / "adm01")
    left = failing(store, "applied_config", 2)
    seen: list[bool] = []
    health = running.ctx.metrics.health
    real = running.ctx.log.event
    stopping = threading.Event()

    def watch(event: str, **fields: Any) -> None:
        real(event, **fields)
        if event == "store-unreachable":
            seen.append(health.document()[0] == 503)
        if event == "published":
            stopping.set()

    running.ctx.log.event = watch  # type: ignore[method-assign]
    assert running.daemon.run(stopping) == 0
    assert left == [0] and seen and all(seen)
    kinds = [e["event"] for e in running.events()]
    assert kinds.index("store-unreachable") < kinds.index("store-reachable") < \
        kinds.index("published") < kinds.index("stopped")
    assert health.store_ok and store.provider_leases(SITE)["shared-fs"].expires == 0


class Slow:
    """A provider whose change takes ``seconds`` (a cloud API), on top of the real one."""

    def __init__(self, inner: Any, seconds: float) -> None:
        self.name, self.inner, self.seconds = inner.name, inner, seconds

    def call(self, request: Request) -> Reply:
        if request.verb == "create":
            time.sleep(self.seconds)
        reply: Reply = self.inner.call(request)
        return reply

    def close(self) -> None:
        self.inner.close()


def test_a_call_longer_than_the_ttl_keeps_the_lease(tmp_path: Path) -> None:
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory()}, ["shared-fs"], ttl=0.6)
    running = proxy(store, tmp_path / "adm01")
    daemon = running.daemon
    daemon.step()
    epoch = daemon.leases.held["shared-fs"].epoch
    transport = daemon.running.get("shared-fs")
    daemon.running._open["shared-fs"] = Slow(transport, 1.5)
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    daemon.keeper.start()
    try:
        assert daemon.step() == 1
    finally:
        daemon.keeper.stop()
    assert store.call_replies(SITE, "shared-fs", ["op-1"])["op-1"]["ok"] is True
    assert daemon.leases.held["shared-fs"].epoch == epoch
    assert not running.events("lease-lost")
