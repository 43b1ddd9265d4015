"""The store's side of proxies (issue 24): applied configurations, provider leases and their
epochs, fenced publishing, the call queue; on real SQLite and real PostgreSQL."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import orjson
import pytest

from reconciler.state import LeaseLost, StateStore
from reconciler.state.proxy_records import ProviderLease
from reconciler.state.runs import lock_name
from tests.state.targets import Target

SITE = "east"
TTL = 30.0


def _lapse(target: Target, provider: str) -> None:
    """The lease's holder stopped renewing long ago (its end is put in the past, as time
    passing would)."""
    target.raw("UPDATE provider_leases SET expires = 1 WHERE site = ? AND provider = ?",
               (SITE, provider))


def _take(store: StateStore, provider: str, instance: str, proxy: str = "px-a",
          ttl: float = TTL) -> ProviderLease:
    lease = store.take_lease(SITE, provider, proxy, instance, ttl, preferred=True)
    assert lease is not None, f"{instance} could not take {provider}"
    return lease


def _publish(store: StateStore, lease: ProviderLease, entries: Mapping[str, object], *,
             deletes: tuple[str, ...] = (), replace: bool = False, generation: int = 1) -> None:
    store.publish_inventory(
        SITE, lease.provider, lease.instance, lease.epoch, generation=generation,
        complete=True, session={"since": 5.0}, info={"version": "1"}, config_seq=3,
        upserts=[(k, orjson.dumps(v).decode()) for k, v in entries.items()],
        deletes=deletes, replace=replace,
    )


def _docs(store: StateStore, provider: str = "fs") -> list[object]:
    return [orjson.loads(doc) for doc in store.published_entries(SITE, provider)]


def _request(op_id: str, verb: str = "create") -> dict[str, object]:
    return {"verb": verb, "op_id": op_id, "epoch": 0, "owner": "", "params": {}, "secrets": {}}


# -- applied configurations ------------------------------------------------------------


def test_config_seq_grows_only_when_the_configuration_changed(store: StateStore) -> None:
    one: dict[str, Any] = {"providers": {"fs": {"via": "proxy"}}}
    two: dict[str, Any] = {"providers": {"fs": {}}}
    allow = {"px-a": {"fs": ["supply.query"]}}
    assert store.applied_config(SITE) is None
    assert store.record_config(SITE, one, allow, "runner-1") == 1
    assert store.record_config(SITE, one, allow, "runner-2") == 1  # same digest: no new row
    assert store.record_config(SITE, two, allow, "runner-2") == 2
    assert store.record_config(SITE, one, allow, "runner-3") == 3  # back again: still grows
    assert store.record_config("west", two, {}, "runner-3") == 1
    latest = store.applied_config(SITE)
    assert latest is not None
    assert (latest.seq, latest.bindings, latest.allowlists, latest.applied_by) == (
        3, one, allow, "runner-3")
    assert latest.digest.startswith("sha256:")
    assert store.config_sites() == ["east", "west"]


# -- leases and epochs -----------------------------------------------------------------


def test_a_lease_is_taken_renewed_and_released(store: StateStore) -> None:
    apply_epoch = store.next_epoch(lock_name(SITE))  # an in-process apply ran first
    lease = _take(store, "fs", "h1:1:a")
    assert lease.epoch > apply_epoch and lease.holder == "px-a"
    assert lease.held(store.store_now()) and not lease.held(lease.expires)
    # another instance cannot take a held lease, preferred or not
    assert store.take_lease(SITE, "fs", "px-b", "h2:2:b", TTL, preferred=True) is None
    assert store.take_lease(SITE, "fs", "px-b", "h2:2:b", TTL, preferred=False) is None
    again = _take(store, "fs", "h1:1:a", ttl=2 * TTL)  # ours already: renewed, same epoch
    assert again.epoch == lease.epoch and again.expires > lease.expires
    renewed = store.renew_leases(SITE, "h1:1:a", 3 * TTL)
    assert list(renewed) == ["fs"] and renewed["fs"].epoch == lease.epoch
    assert renewed["fs"].expires > again.expires
    assert store.renew_leases(SITE, "h2:2:b", TTL) == {}
    store.release_leases(SITE, "h1:1:a")
    assert store.provider_leases(SITE)["fs"].expires == 0
    assert store.renew_leases(SITE, "h1:1:a", TTL) == {}  # released: not renewed
    standby = store.take_lease(SITE, "fs", "px-b", "h2:2:b", TTL, preferred=False)
    assert standby is not None and standby.epoch > lease.epoch  # released: taken at once


def test_release_of_named_providers_keeps_the_others(store: StateStore) -> None:
    for provider in ("fs", "map", "net"):
        _take(store, provider, "h1:1:a")
    store.release_leases(SITE, "h1:1:a", ["fs", "net"])
    store.release_leases(SITE, "h1:1:a", [])
    now = store.store_now()
    assert {p: lease.held(now) for p, lease in store.provider_leases(SITE).items()} == {
        "fs": False, "map": True, "net": False}


def test_a_lapsed_lease_goes_to_the_next_holder_with_a_greater_epoch(
    store: StateStore,
) -> None:
    first = _take(store, "fs", "h1:1:a", ttl=0.05)
    while store.store_now() <= first.expires:  # wait on the store's clock for the lapse
        time.sleep(0.01)
    assert store.renew_leases(SITE, "h1:1:a", TTL) == {}  # lapsed: not renewed
    apply_epoch = store.next_epoch(lock_name(SITE))
    second = store.take_lease(SITE, "fs", "px-b", "h2:2:b", TTL, preferred=False)
    assert second is not None and second.holder == "px-b"
    assert second.epoch > apply_epoch > first.epoch
    assert store.next_epoch(lock_name(SITE)) > second.epoch  # one counter for both
    # the first holder coming back finds it taken, and gets nothing
    assert store.take_lease(SITE, "fs", "px-a", "h1:1:a", TTL, preferred=True) is None
    assert store.provider_leases(SITE)["fs"].instance == "h2:2:b"


def test_instances_racing_for_a_lease_exactly_one_wins(target: Target) -> None:
    contenders, rounds = 4, 5
    stores = [target.open() for _ in range(contenders)]
    try:
        for round_ in range(rounds):
            provider = f"p{round_}"
            barrier = threading.Barrier(contenders)
            won: list[ProviderLease | None] = [None] * contenders

            def race(i: int, provider: str = provider, barrier: threading.Barrier = barrier,
                     won: list[ProviderLease | None] = won) -> None:
                barrier.wait(timeout=30)
                won[i] = stores[i].take_lease(SITE, provider, f"px-{i}", f"h:{i}:t", TTL,
                                              preferred=i == 0)

            threads = [threading.Thread(target=race, args=(i,)) for i in range(contenders)]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join(timeout=60)
            winners = [lease for lease in won if lease is not None]
            assert len(winners) == 1, won
            assert stores[0].provider_leases(SITE)[provider].instance == winners[0].instance
        # each round drew exactly one epoch, in order: no loser advanced the counter
        epochs = [lease.epoch for lease in stores[0].provider_leases(SITE).values()]
        assert sorted(epochs) == list(range(1, rounds + 1))
    finally:
        for store in stores:
            store.close()


# -- fenced writes ---------------------------------------------------------------------


def test_writes_after_the_lease_lapsed_raise_and_change_nothing(
    store: StateStore, target: Target
) -> None:
    lease = _take(store, "fs", "h1:1:a")
    _publish(store, lease, {"vol/a": {"n": 1}}, replace=True)
    store.enqueue_calls(SITE, "fs", [("op-1", _request("op-1"))])
    [call] = store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 10)
    header = store.published_header(SITE, "fs")
    _lapse(target, "fs")

    with pytest.raises(LeaseLost) as caught:
        _publish(store, lease, {"vol/b": {"n": 2}}, replace=True, generation=2)
    message = caught.value.problems[0].message
    assert "'fs'" in message and "h1:1:a" in message and f"epoch {lease.epoch}" in message
    assert "lapsed" in message
    with pytest.raises(LeaseLost):
        store.publish_error(SITE, "fs", "h1:1:a", lease.epoch, error="boom", config_seq=4)
    with pytest.raises(LeaseLost):
        store.finish_call(SITE, call.call_id, "h1:1:a", lease.epoch, {"ok": True, "result": {}})
    store.enqueue_calls(SITE, "fs", [("op-2", _request("op-2"))])
    assert store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 10) == []

    assert store.published_header(SITE, "fs") == header
    assert _docs(store) == [{"n": 1}]
    assert store.call_replies(SITE, "fs", ["op-1", "op-2"]) == {}
    assert store.queue_depth(SITE) == {"fs": 2}


def test_a_superseded_holder_is_told_who_holds_the_lease_now(
    store: StateStore, target: Target
) -> None:
    old = _take(store, "fs", "h1:1:a")
    _lapse(target, "fs")
    new = _take(store, "fs", "h2:2:b", proxy="px-b")
    with pytest.raises(LeaseLost) as caught:
        _publish(store, old, {"vol/x": {}}, replace=True)
    assert caught.value.current == new
    assert f"held by proxy px-b (instance h2:2:b) at epoch {new.epoch}" in (
        caught.value.problems[0].message)
    # the same instance under an older epoch is fenced too
    with pytest.raises(LeaseLost):
        _publish(store, ProviderLease(SITE, "fs", "px-b", "h2:2:b", old.epoch, 0, 0), {})
    assert store.published_header(SITE, "fs") is None


# -- published inventories -------------------------------------------------------------


def test_delta_publish_upserts_and_deletes_and_replace_starts_over(store: StateStore) -> None:
    lease = _take(store, "fs", "h1:1:a")
    _publish(store, lease, {"vol/a": {"n": 1}, "vol/b": {"n": 2}, "vol/c": {"n": 3}},
             replace=True)
    _publish(store, lease, {"vol/b": {"n": 20}, "vol/d": {"n": 4}}, deletes=("vol/a",),
             generation=2)
    assert _docs(store) == [{"n": 20}, {"n": 3}, {"n": 4}]  # by entry id
    header = store.published_header(SITE, "fs")
    assert header is not None
    assert (header.proxy, header.epoch, header.generation, header.entry_count,
            header.config_seq, header.complete, header.session, header.info, header.error) == (
        "px-a", lease.epoch, 2, 3, 3, True, {"since": 5.0}, {"version": "1"}, None)
    assert abs(header.published - store.store_now()) < 60
    _publish(store, lease, {"vol/z": {"n": 26}}, replace=True, generation=3)
    assert _docs(store) == [{"n": 26}]
    assert store.published_headers(SITE)["fs"].entry_count == 1


def test_a_failed_read_keeps_the_entries_and_says_why(store: StateStore) -> None:
    lease = _take(store, "fs", "h1:1:a")
    error = store.publish_error(SITE, "fs", lease.instance, lease.epoch, error="timed out",
                                config_seq=1)
    assert (error.error, error.generation, error.entry_count, error.info) == (
        "timed out", None, 0, None)
    _publish(store, lease, {"vol/a": {"n": 1}}, replace=True, generation=7)
    failed = store.publish_error(SITE, "fs", lease.instance, lease.epoch,
                                 error="connection refused", config_seq=4)
    assert (failed.error, failed.generation, failed.entry_count, failed.config_seq) == (
        "connection refused", 7, 1, 4)
    assert _docs(store) == [{"n": 1}]
    _publish(store, lease, {}, generation=8)
    cleared = store.published_header(SITE, "fs")
    assert cleared is not None and cleared.error is None and cleared.generation == 8


def test_a_large_inventory_is_replaced_in_one_go(store: StateStore) -> None:
    lease = _take(store, "fs", "h1:1:a")
    count = 20_000
    entries = {f"vol/{i:06d}": {"i": i} for i in range(count)}
    started = time.perf_counter()
    _publish(store, lease, entries, replace=True)
    assert time.perf_counter() - started < 20  # one executemany, not a statement a round trip
    assert store.published_header(SITE, "fs").entry_count == count  # type: ignore[union-attr]
    _publish(store, lease, {"vol/000001": {"i": -1}}, deletes=("vol/000000",))
    docs = _docs(store)
    assert len(docs) == count - 1 and docs[0] == {"i": -1}


# -- the call queue --------------------------------------------------------------------


def test_reenqueue_answers_successes_and_requeues_failures(store: StateStore) -> None:
    lease = _take(store, "fs", "h1:1:a")
    held = {"fs": lease.epoch}
    calls = [(op, _request(op)) for op in ("op-ok", "op-bad", "op-wait")]
    assert store.enqueue_calls(SITE, "fs", calls) == {}
    taken = {c.op_id: c for c in store.take_calls(SITE, "h1:1:a", held, 2)}
    assert sorted(taken) == ["op-bad", "op-ok"]  # oldest first, up to the limit
    assert taken["op-ok"].request == _request("op-ok")
    ok = {"ok": True, "result": {"id": "vol/a"}}
    bad = {"ok": False, "error": {"code": "UNAVAILABLE", "message": "x", "retryable": True}}
    store.finish_call(SITE, taken["op-ok"].call_id, "h1:1:a", lease.epoch, ok)
    store.finish_call(SITE, taken["op-bad"].call_id, "h1:1:a", lease.epoch, bad)
    assert store.call_replies(SITE, "fs", ["op-ok", "op-bad", "op-wait"]) == {
        "op-ok": ok, "op-bad": bad}
    assert store.queue_depth(SITE) == {"fs": 1}

    again = store.enqueue_calls(SITE, "fs", calls)
    assert again == {"op-ok": ok}  # done well: answered, not queued again
    assert store.call_replies(SITE, "fs", ["op-bad"]) == {}  # failed: queued anew
    assert store.queue_depth(SITE) == {"fs": 2}  # op-wait stayed queued once
    retaken = store.take_calls(SITE, "h1:1:a", held, 10)
    assert sorted(c.op_id for c in retaken) == ["op-bad", "op-wait"]
    assert taken["op-bad"].call_id in {c.call_id for c in retaken}  # the same row
    # taken under our epoch and not finished: a retried take returns the same calls again
    assert {c.call_id for c in store.take_calls(SITE, "h1:1:a", held, 10)} == {
        c.call_id for c in retaken}


def test_calls_taken_under_an_older_epoch_are_taken_again(
    store: StateStore, target: Target
) -> None:
    old = _take(store, "fs", "h1:1:a")
    store.enqueue_calls(SITE, "fs", [("op-1", _request("op-1"))])
    store.enqueue_calls(SITE, "map", [("op-9", _request("op-9"))])
    [call] = store.take_calls(SITE, "h1:1:a", {"fs": old.epoch, "map": old.epoch}, 10)
    assert call.provider == "fs"  # map's lease is not ours: its call is left for its holder
    _lapse(target, "fs")  # the holder died mid-call
    new = _take(store, "fs", "h2:2:b", proxy="px-b")
    [redo] = store.take_calls(SITE, "h2:2:b", {"fs": new.epoch}, 10)
    assert (redo.call_id, redo.op_id) == (call.call_id, "op-1")
    with pytest.raises(LeaseLost):
        store.finish_call(SITE, call.call_id, "h1:1:a", old.epoch, {"ok": True, "result": {}})
    reply = {"ok": True, "result": {"n": 1}}
    store.finish_call(SITE, redo.call_id, "h2:2:b", new.epoch, reply)
    assert store.call_replies(SITE, "fs", ["op-1"]) == {"op-1": reply}
    assert store.queue_depth(SITE) == {"map": 1}


def test_a_take_run_again_returns_the_calls_it_took_and_not_others(store: StateStore) -> None:
    """A COMMIT cut off yet gone through must not strand its calls until the next epoch:
    the run again (same instance, same epoch) returns them; another instance gets none."""
    lease = _take(store, "fs", "h1:1:a")
    store.enqueue_calls(SITE, "fs", [("op-1", _request("op-1"))])
    [first] = store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 10)
    [again] = store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 10)
    assert again.call_id == first.call_id
    assert store.take_calls(SITE, "h9:9:z", {"fs": lease.epoch}, 10) == []  # not its lease
    store.finish_call(SITE, first.call_id, "h1:1:a", lease.epoch, {"ok": True, "result": {}})
    assert store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 10) == []  # done: never again


def test_a_batch_larger_than_one_statement_is_queued_and_answered(store: StateStore) -> None:
    lease = _take(store, "fs", "h1:1:a")
    ops = [f"op-{i:04d}" for i in range(1200)]
    store.enqueue_calls(SITE, "fs", [(op, _request(op)) for op in ops])
    taken = store.take_calls(SITE, "h1:1:a", {"fs": lease.epoch}, 2000)
    assert [c.op_id for c in taken] == ops
    for call in taken:
        store.finish_call(SITE, call.call_id, "h1:1:a", lease.epoch, {"ok": True, "result": {}})
    assert len(store.call_replies(SITE, "fs", ops)) == len(ops)
    assert len(store.enqueue_calls(SITE, "fs", [(op, _request(op)) for op in ops])) == len(ops)


# -- refusals and instances ------------------------------------------------------------


def test_refusals_and_instances_are_recorded(store: StateStore) -> None:
    store.record_refusal(SITE, "px-a", "fs", "provision.create", "default deny", "op-1")
    store.record_refusal(SITE, "px-a", "fs", "supply.update", "fs: supply.query", "op-2")
    store.record_refusal("west", "px-w", "fs", "supply.update", "default deny", "op-3")
    assert [(r.opcode, r.rule, r.op_id) for r in store.refusals(SITE)] == [
        ("provision.create", "default deny", "op-1"), ("supply.update", "fs: supply.query",
                                                       "op-2")]
    store.proxy_seen(SITE, "px-a", "h1:1:a", "h1", 1, "starting")
    [first] = store.proxy_instances(SITE)
    store.proxy_seen(SITE, "px-a", "h1:1:a", "h1", 1, "active")
    store.proxy_seen(SITE, "px-b", "h2:2:b", "h2", 2, "standby")
    seen = store.proxy_instances(SITE)
    assert [(i.proxy, i.instance, i.state) for i in seen] == [
        ("px-a", "h1:1:a", "active"), ("px-b", "h2:2:b", "standby")]
    assert seen[0].started == first.started and seen[0].seen >= first.seen
