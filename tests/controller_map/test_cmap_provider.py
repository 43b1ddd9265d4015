"""The controller-map provider on a real SQLite file: verbs, lifecycle, op_ids, epochs, owners."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest

from compiler.contract.provider_params import ControllerMapParams
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.controller_map.lifecycle import Event
from reconciler.providers.controller_map.provider import ControllerMapProvider
from reconciler.providers.controller_map.reporter import record
from reconciler.providers.controller_map.store import MapStore
from tests.controller_map.cmap import (
    OTHER,
    OWNER,
    T0,
    Clock,
    call,
    counter,
    generation,
    host,
    live,
    ok,
    refused,
)


def report(provider: ControllerMapProvider, event: Event, *names: str, at: float = T0) -> None:
    record(provider.store, event, names, at, provider.name)


def test_info_names_the_kinds_without_touching_the_disk(tmp_path: Path) -> None:
    p = ControllerMapProvider("ctl", ControllerMapParams(), tmp_path)
    info = ok(p, "info")
    assert info["name"] == "ctl"
    assert set(info["capabilities"]) == {
        "host", "host-group", "counter", "job", "license", "storage-pool", "dataset", "quota"
    }
    assert not (tmp_path / "providers").exists()


def test_map_file_defaults_under_the_workdir_and_follows_params_path(tmp_path: Path) -> None:
    ok(ControllerMapProvider("ctl", ControllerMapParams(), tmp_path), "probe")
    assert (tmp_path / "providers" / "ctl" / "map.sqlite").is_file()
    p = ControllerMapProvider("ctl", ControllerMapParams(path="maps/site.sqlite"), tmp_path)
    assert ok(p, "probe")["ready"] is True
    assert (tmp_path / "maps" / "site.sqlite").is_file()
    mode = sqlite3.connect(tmp_path / "maps" / "site.sqlite").execute("PRAGMA journal_mode")
    assert mode.fetchone()[0] == "wal"


def test_create_host_starts_expected_with_since_and_owner(
    provider: ControllerMapProvider,
) -> None:
    result = ok(provider, "create", entry=host("cn1"))
    entry = live(provider)["host/cn1"]
    assert result["entry"] == entry
    assert entry["state"] == "expected"
    assert entry["spec"] == {"join_deadline": 1800, "since": int(T0)}
    assert entry["owner"] == OWNER and entry["provider"] == "controller"
    assert entry["source"] == "config"


def test_create_counter_is_available_with_its_amount(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=counter("slots", "host/cn1", 64))
    entry = live(provider)["counter/slots@host/cn1"]
    assert (entry["state"], entry["amount"], entry["location"]) == ("available", 64, "host/cn1")
    assert "since" not in entry.get("spec", {})


@pytest.mark.parametrize(
    ("entry", "needle"),
    [
        ({"id": "volume/shared", "kind": "volume", "source": "config"}, "not held"),
        ({"id": "quota/shared/user/alice", "kind": "quota", "location": "volume/shared"},
         "pool quotas"),
        ({"id": "counter/x", "kind": "host"}, "must look like"),
        ({**counter("slots", "host/cn1", -1)}, "amount"),
        ({**counter("slots", "host/cn1", 1), "provider": "other"}, "bound to provider"),
        ({**counter("slots", "host/cn1", 1), "owner": OTHER}, "owner"),
    ],
)
def test_create_rejects_what_the_map_does_not_hold(
    provider: ControllerMapProvider, entry: dict[str, object], needle: str
) -> None:
    reply = call(provider, "create", entry=entry)
    assert reply.error is not None
    assert reply.error.code is ErrorCode.INVALID_ARGUMENT
    assert needle in reply.error.message
    assert live(provider) == {}


def test_pool_quota_is_held(provider: ControllerMapProvider) -> None:
    quota = {"id": "quota/scratch/project/astro", "kind": "quota", "source": "config",
             "location": "pool/scratch", "amount": 10}
    ok(provider, "create", entry=quota)
    assert live(provider)["quota/scratch/project/astro"]["amount"] == 10


def test_changes_need_an_op_id(provider: ControllerMapProvider) -> None:
    assert refused(provider, "create", op_id="", entry=host("cn1")) is ErrorCode.INVALID_ARGUMENT


def test_create_twice_is_already_exists(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    assert refused(provider, "create", entry=host("cn1")) is ErrorCode.ALREADY_EXISTS
    assert generation(provider) == 1


def test_same_op_id_twice_applies_once_and_returns_the_first_reply(
    provider: ControllerMapProvider, clock: Clock
) -> None:
    first = call(provider, "create", op_id="op-a", entry=host("cn1"))
    clock.advance(60)
    second = call(provider, "create", op_id="op-a", entry=host("cn1"))
    assert first.ok and second.ok
    assert second.result == first.result
    assert generation(provider) == 1
    assert live(provider)["host/cn1"]["spec"]["since"] == int(T0)


def test_replayed_op_id_does_not_undo_later_changes(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    report(provider, Event.JOIN, "cn1")
    report(provider, Event.AVAILABLE, "cn1")
    drained = ok(provider, "update", op_id="drain-1", id="host/cn1", action="drain")
    report(provider, Event.DRAINED, "cn1")
    ok(provider, "update", id="host/cn1", action="release")
    again = ok(provider, "update", op_id="drain-1", id="host/cn1", action="drain")
    assert again == drained
    assert live(provider)["host/cn1"]["state"] == "released"


def test_op_id_reused_for_another_request_is_refused(provider: ControllerMapProvider) -> None:
    ok(provider, "create", op_id="op-a", entry=host("cn1"))
    code = refused(provider, "create", op_id="op-a", entry=host("cn2"))
    assert code is ErrorCode.INVALID_ARGUMENT
    assert set(live(provider)) == {"host/cn1"}


def test_stale_epoch_is_aborted_and_changes_nothing(provider: ControllerMapProvider) -> None:
    ok(provider, "create", epoch=5, entry=host("cn1"))
    reply = call(provider, "create", epoch=4, entry=host("cn2"))
    assert reply.error is not None and reply.error.code is ErrorCode.ABORTED
    assert reply.error.retryable is False
    assert set(live(provider)) == {"host/cn1"}
    ok(provider, "create", epoch=5, entry=host("cn3"))


def test_a_newer_epoch_is_remembered_even_when_its_change_fails(
    provider: ControllerMapProvider,
) -> None:
    ok(provider, "create", epoch=1, entry=host("cn1"))
    assert refused(provider, "delete", epoch=9, id="host/none") is ErrorCode.NOT_FOUND
    assert refused(provider, "create", epoch=8, entry=host("cn2")) is ErrorCode.ABORTED


def test_epoch_survives_a_restart(tmp_path: Path) -> None:
    first = ControllerMapProvider("ctl", ControllerMapParams(), tmp_path)
    ok(first, "create", epoch=7, entry=counter("gpu", "host/g1", 4) | {"provider": "ctl"})
    first.close()
    second = ControllerMapProvider("ctl", ControllerMapParams(), tmp_path)
    entry = counter("gpu", "host/g2", 4) | {"provider": "ctl"}
    assert refused(second, "create", epoch=6, entry=entry) is ErrorCode.ABORTED
    assert generation(second) == 1


def test_co_managed_entries_are_never_touched(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=counter("slots", "host/cn1", 8))
    before = live(provider)
    cid = "counter/slots@host/cn1"
    assert refused(provider, "update", owner=OTHER, id=cid, changes={"amount": 1}) is (
        ErrorCode.FAILED_PRECONDITION
    )
    assert refused(provider, "delete", owner=OTHER, id=cid) is ErrorCode.FAILED_PRECONDITION
    other = counter("slots", "host/cn1", 8) | {"owner": OTHER}
    assert refused(provider, "create", owner=OTHER, entry=other) is ErrorCode.FAILED_PRECONDITION
    assert live(provider) == before


def test_host_lifecycle_through_plan_and_reporter(
    provider: ControllerMapProvider, clock: Clock
) -> None:
    ok(provider, "create", entry=host("cn1"))
    steps: list[tuple[str, int]] = []

    def seen() -> None:
        entry = live(provider)["host/cn1"]
        steps.append((entry["state"], entry["spec"]["since"]))

    seen()
    report(provider, Event.JOIN, "cn1", at=T0 + 10)
    seen()
    report(provider, Event.AVAILABLE, "cn1", at=T0 + 20)
    seen()
    clock.advance(30)
    ok(provider, "update", id="host/cn1", action="drain")
    seen()
    report(provider, Event.DRAINED, "cn1", at=T0 + 40)
    seen()
    clock.advance(20)
    ok(provider, "update", id="host/cn1", action="release")
    seen()
    base = int(T0)
    assert steps == [
        ("expected", base), ("joining", base + 10), ("available", base + 20),
        ("draining", base + 30), ("drained", base + 40), ("released", base + 50),
    ]


@pytest.mark.parametrize("state_events", [(), (Event.JOIN,), (Event.JOIN, Event.AVAILABLE)])
def test_release_needs_drained_lost_or_never_joined(
    provider: ControllerMapProvider, state_events: tuple[Event, ...]
) -> None:
    ok(provider, "create", entry=host("cn1"))
    for event in state_events:
        report(provider, event, "cn1")
    reply = call(provider, "update", id="host/cn1", action="release")
    if not state_events:  # expected, never joined: an orphan the plan may release
        assert reply.ok and live(provider)["host/cn1"]["state"] == "released"
    else:
        assert reply.error is not None
        assert reply.error.code is ErrorCode.FAILED_PRECONDITION
        assert "drain it first" in reply.error.message


def test_a_lost_host_may_be_released(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    report(provider, Event.JOIN, "cn1")
    report(provider, Event.LOST, "cn1")
    ok(provider, "delete", id="host/cn1", action="release")  # release carried by delete
    assert live(provider)["host/cn1"]["state"] == "released"


def test_drain_of_a_never_joined_host_is_refused(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    code = refused(provider, "update", id="host/cn1", action="drain")
    assert code is ErrorCode.FAILED_PRECONDITION
    assert refused(provider, "update", id="counter/x@site", action="drain") is ErrorCode.NOT_FOUND


def test_repeating_a_done_step_changes_nothing(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    report(provider, Event.JOIN, "cn1")
    first = ok(provider, "update", id="host/cn1", action="drain")
    again = ok(provider, "update", id="host/cn1", action="drain")
    assert first["changed"] is True and again["changed"] is False
    assert again["generation"] == first["generation"] == generation(provider)


def test_delete_removes_only_resting_hosts(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry=host("cn1"))
    report(provider, Event.JOIN, "cn1")
    assert refused(provider, "delete", id="host/cn1") is ErrorCode.FAILED_PRECONDITION
    report(provider, Event.LOST, "cn1")
    ok(provider, "update", id="host/cn1", action="release")
    deleted = ok(provider, "delete", id="host/cn1")
    assert deleted["entry"]["state"] == "released"
    assert live(provider) == {}
    assert refused(provider, "delete", id="host/cn1") is ErrorCode.NOT_FOUND


def test_a_released_host_can_be_created_again(
    provider: ControllerMapProvider, clock: Clock
) -> None:
    ok(provider, "create", entry=host("cn1"))
    ok(provider, "update", id="host/cn1", action="release")
    clock.advance(100)
    ok(provider, "create", entry=host("cn1"))
    entry = live(provider)["host/cn1"]
    assert (entry["state"], entry["spec"]["since"]) == ("expected", int(T0) + 100)


def test_discovered_host_awaits_admission_then_is_admitted(
    provider: ControllerMapProvider, clock: Clock
) -> None:
    report(provider, Event.JOIN, "stray1", at=T0 + 5)
    entry = live(provider)["host/stray1"]
    assert entry == {
        "id": "host/stray1", "kind": "host", "state": "joining", "source": "discovered",
        "provider": "controller", "spec": {"since": int(T0) + 5, "seen": int(T0) + 5},
    }
    assert "owner" not in entry  # owner null: nobody has claimed it
    clock.advance(50)
    admitted = ok(provider, "update", entry=host("stray1"), action="admit")["entry"]
    assert admitted["state"] == "available" and admitted["owner"] == OWNER
    assert admitted["source"] == "discovered"
    assert admitted["attributes"]["group"] == "cpu"
    assert admitted["spec"] == {"join_deadline": 1800, "since": int(T0) + 50,
                                "seen": int(T0) + 5}
    code = refused(provider, "update", id="host/stray1", action="admit")
    assert code is ErrorCode.FAILED_PRECONDITION


def test_discovered_host_can_be_rejected_and_deleted(provider: ControllerMapProvider) -> None:
    report(provider, Event.JOIN, "stray1")
    ok(provider, "update", id="host/stray1", action="reject")
    assert live(provider)["host/stray1"]["state"] == "released"
    report(provider, Event.JOIN, "stray2")
    ok(provider, "delete", id="host/stray2")
    assert "host/stray2" not in live(provider)


def test_update_changes_amount_and_content_but_not_state(
    provider: ControllerMapProvider,
) -> None:
    ok(provider, "create", entry=counter("slots", "host/cn1", 8))
    ok(provider, "update", id="counter/slots@host/cn1", changes={"amount": 16})
    assert live(provider)["counter/slots@host/cn1"]["amount"] == 16
    ok(provider, "create", entry=host("cn1"))
    report(provider, Event.JOIN, "cn1")
    result = ok(provider, "update", entry=host("cn1", rack="r7"))
    entry = live(provider)["host/cn1"]
    assert result["changed"] is True
    assert entry["attributes"]["rack"] == "r7"
    assert entry["state"] == "joining" and entry["spec"]["since"] == int(T0)
    same = ok(provider, "update", entry=host("cn1", rack="r7"))
    assert same["changed"] is False


def test_update_of_a_missing_entry_or_bad_changes(provider: ControllerMapProvider) -> None:
    assert refused(provider, "update", id="counter/x@site", changes={}) is ErrorCode.NOT_FOUND
    ok(provider, "create", entry=counter("slots", "host/cn1", 8))
    code = refused(provider, "update", id="counter/slots@host/cn1", changes={"state": "gone"})
    assert code is ErrorCode.INVALID_ARGUMENT
    code = refused(provider, "update", id="counter/slots@host/cn1", action="stage")
    assert code is ErrorCode.INVALID_ARGUMENT


def test_generation_grows_with_every_change_only(provider: ControllerMapProvider) -> None:
    seen = [generation(provider)]
    ok(provider, "create", entry=host("cn1"))
    seen.append(generation(provider))
    report(provider, Event.JOIN, "cn1")
    seen.append(generation(provider))
    report(provider, Event.JOIN, "cn1")  # already joining: nothing changed
    seen.append(generation(provider))
    refused(provider, "create", entry=host("cn1"))
    seen.append(generation(provider))
    ok(provider, "create", entry=counter("slots", "host/cn1", 8))
    seen.append(generation(provider))
    assert seen == [0, 1, 2, 2, 2, 3]


def test_two_providers_on_one_file_share_generation(tmp_path: Path) -> None:
    a = ControllerMapProvider("controller", ControllerMapParams(), tmp_path)
    b = ControllerMapProvider("controller", ControllerMapParams(), tmp_path)
    ok(a, "create", entry=host("cn1"))
    ok(b, "create", entry=host("cn2"))
    assert refused(a, "create", entry=host("cn2")) is ErrorCode.ALREADY_EXISTS
    inventory = ok(a, "inventory")
    assert inventory["generation"] == 2 and inventory["complete"] is True
    assert [e["id"] for e in inventory["entries"]] == ["host/cn1", "host/cn2"]


def test_capacity_sums_storage_pools_and_pool_quotas(provider: ControllerMapProvider) -> None:
    for name, size in (("scratch", 1000), ("archive", 500)):
        pool = {"id": f"storage-pool/{name}", "kind": "storage-pool", "source": "config",
                "location": f"pool/{name}", "amount": size}
        ok(provider, "create", entry=pool)
    quota = {"id": "quota/scratch/project/a", "kind": "quota", "source": "config",
             "location": "pool/scratch", "amount": 300}
    ok(provider, "create", entry=quota)
    assert ok(provider, "capacity") == {"total": 1500, "used": 300, "free": 1200}
    assert ok(provider, "capacity", id="storage-pool/archive") == {
        "total": 500, "used": 0, "free": 500
    }
    assert refused(provider, "capacity", id="storage-pool/none") is ErrorCode.NOT_FOUND


def test_a_file_that_is_not_a_map_is_reported_not_raised(tmp_path: Path) -> None:
    (tmp_path / "junk.sqlite").write_bytes(b"not a database at all, honestly" * 100)
    p = ControllerMapProvider("ctl", ControllerMapParams(path="junk.sqlite"), tmp_path)
    assert ok(p, "probe")["ready"] is False
    reply = call(p, "inventory")
    assert reply.error is not None
    assert reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert "junk.sqlite" in reply.error.message


def test_a_busy_map_is_unavailable_and_retryable(tmp_path: Path) -> None:
    path = tmp_path / "map.sqlite"
    MapStore(path).close()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(ProviderError) as caught:
            MapStore(path, timeout=0.05)
        assert caught.value.code is ErrorCode.UNAVAILABLE and caught.value.retryable
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_unknown_verb_is_invalid(provider: ControllerMapProvider) -> None:
    assert refused(provider, "frobnicate") is ErrorCode.INVALID_ARGUMENT


def test_parallel_writers_lose_nothing(tmp_path: Path) -> None:
    """Threads on one provider and a second provider on the same file: every change counts."""
    shared = ControllerMapProvider("controller", ControllerMapParams(), tmp_path)
    second = ControllerMapProvider("controller", ControllerMapParams(), tmp_path)

    def create_many(p: ControllerMapProvider, start: int) -> None:
        for i in range(start, start + 50):
            ok(p, "create", entry=counter("slots", f"host/cn{i:04d}", i))

    threads = [
        threading.Thread(target=create_many, args=(shared if n % 2 else second, n * 50))
        for n in range(6)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    inventory = ok(shared, "inventory")
    assert len(inventory["entries"]) == 300
    assert inventory["generation"] == 300


def test_kind_may_be_left_to_the_id(provider: ControllerMapProvider) -> None:
    ok(provider, "create", entry={"id": "license/matlab@site", "location": "site", "amount": 10})
    entry = live(provider)["license/matlab@site"]
    assert (entry["kind"], entry["source"], entry["amount"]) == ("license", "config", 10)
