"""The proxy's loop driven step by step against a real SQLite and PostgreSQL store: it takes
the lease, publishes, answers a queued call with its lease's epoch, publishes the change as a
delta; and a lease it loses stops it serving that provider at once."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from reconciler.protocol import ErrorCode, Reply, Request
from reconciler.providers.registry import open_provider
from reconciler.state import StateStore
from tests.proxy.unit_kit import (
    OWNER,
    SITE,
    Running,
    create_volume,
    directory,
    postgres,
    proxy,
    record,
    sqlite,
)


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[StateStore]:
    with (postgres() if request.param == "postgresql"
          else sqlite(tmp_path / "state.sqlite")) as opened:
        record(opened, {"shared-fs": directory()}, ["shared-fs"], standby=["shared-fs"])
        yield opened


def published_ids(store: StateStore) -> list[str]:
    return [json.loads(text)["id"] for text in store.published_entries(SITE, "shared-fs")]


def test_take_lease_publish_answer_and_publish_again(store: StateStore, tmp_path: Path) -> None:
    host = tmp_path / "adm01"
    running = proxy(store, host)
    running.daemon.step()
    lease = store.provider_leases(SITE)["shared-fs"]
    assert (lease.holder, lease.instance) == ("proxy-a", running.ctx.me.instance)
    header = store.published_header(SITE, "shared-fs")
    assert header is not None and header.error is None and header.complete
    assert (header.epoch, header.entry_count, header.config_seq) == (lease.epoch, 0, 1)

    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1", 0))])
    assert running.daemon.step() == 1
    reply = store.call_replies(SITE, "shared-fs", ["op-1"])["op-1"]
    assert reply["ok"] is True and reply["result"]["entry"]["id"] == "volume/shared"
    assert (host / "fs" / "shared").is_dir()  # on the proxy's host, under its workdir
    assert published_ids(store) == []  # calls kept coming: published together, next
    assert running.daemon.step() == 0  # the queue is quiet: published now
    assert published_ids(store) == ["volume/shared"]
    first, again = running.events("published")
    assert (first["replace"], again["replace"], again["upserts"], again["deletes"]) == \
        (True, False, 1, 0)
    [call] = running.events("call")
    assert (call["op_id"], call["opcode"], call["epoch"], call["ok"]) == \
        ("op-1", "supply.update", lease.epoch, True)
    assert store.queue_depth(SITE) == {}
    # the provider saw the lease's epoch, not the 0 the call was queued with
    direct = open_provider("shared-fs", directory(), host)
    try:
        stale = direct.call(Request("update", op_id="x", epoch=lease.epoch - 1, owner=OWNER,
                                    params={"id": "volume/shared", "entry": {
                                        "id": "volume/shared", "spec": {"path": "/shared"}}}))
    finally:
        direct.close()
    assert stale.error is not None and stale.error.code is ErrorCode.ABORTED


def test_a_change_reply_marks_the_inventory_behind_until_it_is_published(
        store: StateStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """So a plan made as soon as the apply has its replies never reads the inventory from
    before them: each change's reply is written with the inventory marked behind (one
    transaction), and one publication covers the batch and clears the mark."""
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    behind_when_written: list[bool] = []
    real = store.finish_calls

    def finish(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        header = store.published_header(SITE, "shared-fs")
        behind_when_written.append(header is not None and header.changed is not None)

    monkeypatch.setattr(store, "finish_calls", finish)
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1")),
                                            ("op-2", create_volume("scratch", "op-2"))])
    assert running.daemon.step() == 2
    assert behind_when_written == [True]  # both replies in one transaction
    running.daemon.step()
    header = store.published_header(SITE, "shared-fs")
    assert header is not None and header.changed is None
    assert published_ids(store) == ["volume/scratch", "volume/shared"]
    assert len(running.events("published")) == 2  # the lease's first, then one for both


def test_nothing_changed_publishes_nothing_but_the_header(store: StateStore,
                                                          tmp_path: Path) -> None:
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    running.daemon.step()
    running.daemon.step()  # quiet: the change published
    lease = running.daemon.leases.held["shared-fs"]
    running.daemon.publisher.publish("shared-fs", lease)
    last = running.events("published")[-1]
    assert (last["upserts"], last["deletes"], last["entries"]) == (0, 0, 1)
    assert published_ids(store) == ["volume/shared"]


def steal(store: StateStore, running: Running) -> int:
    """Another proxy instance takes the lease, as after this one paused past its ttl."""
    store.release_leases(SITE, running.ctx.me.instance)
    lease = store.take_lease(SITE, "shared-fs", "proxy-b", "adm02:7:feed", 15, preferred=False)
    assert lease is not None
    return lease.epoch


def test_a_lease_lost_at_renewal_stops_the_provider(store: StateStore, tmp_path: Path) -> None:
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    assert "shared-fs" in running.daemon.running
    steal(store, running)
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    assert running.daemon.step() == 0  # the store fences the take: the call waits
    running.daemon.tick_leases()
    assert "shared-fs" not in running.daemon.running  # its transport closed
    assert running.daemon.leases.held == {}
    assert [e["provider"] for e in running.events("lease-lost")] == ["shared-fs"]
    assert running.events("provider-closed")
    assert store.queue_depth(SITE) == {"shared-fs": 1}
    assert not (tmp_path / "adm01" / "fs" / "shared").exists()


def test_a_lease_lost_mid_call_writes_no_reply_and_the_new_holder_redoes_it(
        store: StateStore, tmp_path: Path) -> None:
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    made = running.daemon.running.call
    stolen: list[int] = []

    def call_then_lose(provider: str, request: Request) -> Reply:
        reply = made(provider, request)
        stolen.append(steal(store, running))  # the proxy paused past its lease here
        return reply

    running.daemon.running.call = call_then_lose  # type: ignore[method-assign]
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume("shared", "op-1"))])
    assert running.daemon.step() == 1
    assert store.call_replies(SITE, "shared-fs", ["op-1"]) == {}
    assert "shared-fs" not in running.daemon.running and not running.daemon.leases.held
    [lost] = running.events("lease-lost")
    assert "proxy-b" in lost["why"]
    redo = store.take_calls(SITE, "adm02:7:feed", {"shared-fs": stolen[0]}, 10)
    assert [c.op_id for c in redo] == ["op-1"]


def test_sigterm_path_releases_every_lease_for_the_standby(store: StateStore,
                                                          tmp_path: Path) -> None:
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    running.daemon.shutdown("test")
    lease = store.provider_leases(SITE)["shared-fs"]
    assert lease.expires == 0
    standby = proxy(store, tmp_path / "adm02", "proxy-b")
    standby.daemon.step()
    taken = store.provider_leases(SITE)["shared-fs"]
    assert taken.holder == "proxy-b" and taken.epoch > lease.epoch
    assert [i.state for i in store.proxy_instances(SITE) if i.proxy == "proxy-a"] == ["stopped"]


def test_a_standby_waits_for_the_active_while_the_lease_was_never_held(
        store: StateStore, tmp_path: Path) -> None:
    standby = proxy(store, tmp_path / "adm02", "proxy-b")
    standby.daemon.step()
    assert store.provider_leases(SITE) == {}
    active = proxy(store, tmp_path / "adm01")
    active.daemon.step()
    assert store.provider_leases(SITE)["shared-fs"].holder == "proxy-a"
    standby.daemon.tick_leases()
    assert store.provider_leases(SITE)["shared-fs"].holder == "proxy-a"


def test_a_lapsed_lease_goes_to_the_peer_that_was_running(store: StateStore,
                                                          tmp_path: Path) -> None:
    crashed = store.take_lease(SITE, "shared-fs", "proxy-a", "adm01:1:dead", 0.05,
                               preferred=True)
    assert crashed is not None
    while store.store_now() <= crashed.expires:  # its holder died: the lease lapses
        time.sleep(0.01)
    restarted = proxy(store, tmp_path / "adm01")  # the crashed active, started again
    restarted.daemon.step()
    assert store.provider_leases(SITE)["shared-fs"].instance == "adm01:1:dead"
    peer = proxy(store, tmp_path / "adm02", "proxy-b")
    peer.daemon.leases.started -= 2 * 15  # it has stood by for two ttls
    peer.daemon.step()
    taken = store.provider_leases(SITE)["shared-fs"]
    assert (taken.holder, taken.epoch > crashed.epoch) == ("proxy-b", True)
    restarted.daemon.tick_leases()
    assert store.provider_leases(SITE)["shared-fs"].holder == "proxy-b"  # no take-back


def test_secrets_never_reach_a_reply_a_published_entry_or_the_log(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    canary = "canary7f3e9a"
    monkeypatch.setenv("XCE_TEST_PROXY_TOKEN", canary)
    store = sqlite(tmp_path / "state.sqlite")
    record(store, {"shared-fs": directory("env:XCE_TEST_PROXY_TOKEN")}, ["shared-fs"])
    running = proxy(store, tmp_path / "adm01")
    running.daemon.step()
    # a volume whose name is the secret: the provider echoes it in its reply and inventory
    store.enqueue_calls(SITE, "shared-fs", [("op-1", create_volume(canary, "op-1"))])
    running.daemon.step()
    reply: dict[str, Any] = store.call_replies(SITE, "shared-fs", ["op-1"])["op-1"]
    assert reply["ok"] is True and "(sensitive)" in json.dumps(reply)
    shown = [json.dumps(reply), *store.published_entries(SITE, "shared-fs"),
             running.stream.getvalue()]
    assert (tmp_path / "adm01" / "fs" / canary).is_dir()  # made, under its real name
    assert all(canary not in text for text in shown)
    assert running.events("call")
