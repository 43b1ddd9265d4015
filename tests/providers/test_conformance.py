"""One protocol conformance suite, run against every provider in ``kit.SUBJECTS``."""

from __future__ import annotations

from typing import Any

import pytest

from reconciler.live import entry_errors
from reconciler.protocol import (
    CORE_VERBS,
    OPTIONAL,
    Capabilities,
    ErrorCode,
    ProviderError,
    Request,
    TopologyRequirement,
)
from tests.helpers import call, ok
from tests.providers.kit import OWNER, Subject, inventory


def test_info_names_the_provider_and_its_verbs(subject: Subject) -> None:
    info = ok(subject.transport, "info")
    assert info["name"] == subject.name
    assert isinstance(info["version"], str) and info["version"]
    assert info["capabilities"] and all(isinstance(c, str) for c in info["capabilities"])
    assert set(CORE_VERBS) <= set(info["verbs"])


def test_info_declares_each_optional_capability_or_why_not(subject: Subject) -> None:
    """Offered, with its verbs listed, or not offered, with a reason; and the kit has a
    check of every one declared (a capability nobody exercises is not a capability)."""
    info = ok(subject.transport, "info")
    caps = Capabilities.from_info(info)
    assert set(caps.offers) == set(subject.optional)
    assert set(info["unsupported"]) == set(OPTIONAL) - set(caps.offers)
    for cap, verbs in OPTIONAL.items():
        listed = set(verbs) & set(info["verbs"])
        if cap in caps.offers:
            assert listed == set(verbs) and caps.offers[cap].kinds
        else:
            assert not listed and isinstance(info["unsupported"][cap], str)
            assert len(info["unsupported"][cap]) > 20  # a reason, not a placeholder


def needing(subject: Subject, capability: str) -> list[Request]:
    """Well-formed requests that need ``capability`` and nothing else."""
    target = subject.sample(3)["id"]
    where = {"id": target, "location": "group/gpu"}
    place = TopologyRequirement(requisite=({"rack": "r1"},))
    asks: dict[str, list[tuple[str, dict[str, Any], TopologyRequirement | None]]] = {
        "publish": [("publish", {**where, "access": "read-only"}, None),
                    ("unpublish", where, None)],
        "expand": [("expand", {"id": target, "required_bytes": 1}, None)],
        "snapshot": [("snapshot", {"id": target, "name": "before"}, None)],
        "topology": [("create", {"entry": subject.sample(3)}, place)],
    }
    return [Request(verb, op_id=f"needs-{capability}", epoch=1, owner=OWNER, params=params,
                    topology=topology) for verb, params, topology in asks[capability]]


@pytest.mark.parametrize("capability", sorted(OPTIONAL))
def test_an_optional_capability_works_if_declared_else_is_a_typed_refusal(
    subject: Subject, capability: str
) -> None:
    t = subject.transport
    caps = Capabilities.from_info(ok(t, "info"))
    if capability in caps.offers:
        subject.optional[capability](t)
        return
    before = inventory(t)
    for request in needing(subject, capability):
        with pytest.raises(ProviderError) as by_caller:
            caps.check(request)  # the caller refuses it without sending it
        reply = t.call(request)  # and the provider refuses it too, changing nothing
        assert not reply.ok and reply.error is not None, reply.to_json()
        for err in (by_caller.value, reply.error):
            assert err.code is ErrorCode.UNIMPLEMENTED and err.retryable is False
            assert caps.why_not(capability) in err.message and subject.name in err.message
    assert inventory(t) == before


def test_probe_is_ready(subject: Subject) -> None:
    assert ok(subject.transport, "probe")["ready"] is True


def test_inventory_is_a_complete_snapshot_of_valid_entries(subject: Subject) -> None:
    t = subject.transport
    ok(t, "create", op_id="c1", epoch=1, owner=OWNER, params={"entry": subject.sample(1)})
    result = ok(t, "inventory")
    assert result["complete"] is True
    assert isinstance(result["generation"], int) and result["generation"] >= 1
    for doc in result["entries"]:
        assert entry_errors(doc) == [], doc
        assert doc.get("provider", subject.name) == subject.name  # its binding's name, or none
    created = {e["id"]: e for e in result["entries"]}[subject.sample(1)["id"]]
    assert created["owner"] == OWNER


def test_same_op_id_twice_changes_nothing_twice(subject: Subject) -> None:
    t, entry = subject.transport, subject.sample(2)
    first = ok(t, "create", op_id="op-a", epoch=1, owner=OWNER, params={"entry": entry})
    assert entry["id"] in inventory(t)
    ok(t, "delete", op_id="op-b", epoch=1, owner=OWNER, params={"id": entry["id"]})
    assert entry["id"] not in inventory(t)
    again = ok(t, "create", op_id="op-a", epoch=1, owner=OWNER, params={"entry": entry})
    assert again == first  # the first reply, replayed
    assert entry["id"] not in inventory(t)  # … and the entry was not created a second time


def test_stale_epoch_is_aborted_and_changes_nothing(subject: Subject) -> None:
    t = subject.transport
    ok(t, "create", op_id="e5", epoch=5, owner=OWNER, params={"entry": subject.sample(1)})
    stale = call(t, "create", op_id="e4", epoch=4, owner=OWNER, params={"entry": subject.sample(2)})
    assert not stale.ok and stale.error is not None
    assert stale.error.code is ErrorCode.ABORTED and stale.error.retryable is False
    assert subject.sample(2)["id"] not in inventory(t)
    ok(t, "create", op_id="e5b", epoch=5, owner=OWNER, params={"entry": subject.sample(3)})


def test_stale_epoch_is_aborted_even_for_an_op_id_already_applied(subject: Subject) -> None:
    """The epoch is checked before the op_id: a superseded applier learns to stop at once."""
    t = subject.transport
    request = {"op_id": "r1", "owner": OWNER, "params": {"entry": subject.sample(1)}}
    first = ok(t, "create", epoch=3, **request)
    ok(t, "create", op_id="r2", epoch=4, owner=OWNER, params={"entry": subject.sample(2)})
    stale = call(t, "create", epoch=3, **request)
    assert not stale.ok and stale.error is not None
    assert stale.error.code is ErrorCode.ABORTED
    assert ok(t, "create", epoch=4, **request) == first  # the newer applier still replays it


def test_op_id_reused_by_another_owner_is_refused(subject: Subject) -> None:
    """The owner is part of the request: replaying one owner's reply to another would lie."""
    if subject.name == "notes":
        pytest.skip("the example external provider keeps no fingerprint (docs/providers.md)")
    t, entry = subject.transport, subject.sample(1)
    ok(t, "create", op_id="o1", epoch=1, owner=OWNER, params={"entry": entry})
    other = call(t, "create", op_id="o1", epoch=1, owner="site/other", params={"entry": entry})
    assert not other.ok and other.error is not None
    assert other.error.code is ErrorCode.INVALID_ARGUMENT
    assert "o1" in other.error.message
    assert inventory(t)[entry["id"]]["owner"] == OWNER


def test_an_entry_another_owner_made_is_never_changed(subject: Subject) -> None:
    """Issue 19 §5: owner fencing is every provider's, not the controller map's alone."""
    t, entry = subject.transport, subject.sample(1)
    ok(t, "create", op_id="w1", epoch=1, owner=OWNER, params={"entry": entry})
    before = inventory(t)
    asks = [("update", {"entry": entry}), ("delete", {"id": entry["id"], "destroy": True}),
            ("create", {"entry": entry})]
    for n, (verb, params) in enumerate(asks):
        reply = call(t, verb, op_id=f"w-other-{n}", epoch=1, owner="site/other", params=params)
        assert reply.error is not None, (verb, reply.to_json())
        assert reply.error.code is ErrorCode.FAILED_PRECONDITION, (verb, reply.to_json())
        assert f"owned by '{OWNER}', not 'site/other'" in reply.error.message
    assert inventory(t) == before
    ok(t, "delete", op_id="w2", epoch=1, owner=OWNER, params={"id": entry["id"], "destroy": True})
    assert entry["id"] not in inventory(t)  # its own owner still may


def test_unknown_verb_is_invalid_argument(subject: Subject) -> None:
    reply = call(subject.transport, "explode", op_id="x", epoch=1)
    assert not reply.ok and reply.error is not None
    assert reply.error.code is ErrorCode.INVALID_ARGUMENT


def test_generation_grows_with_changes(subject: Subject) -> None:
    t = subject.transport
    g0 = ok(t, "inventory")["generation"]
    ok(t, "create", op_id="g1", epoch=1, owner=OWNER, params={"entry": subject.sample(1)})
    g1 = ok(t, "inventory")["generation"]
    g2 = ok(t, "inventory")["generation"]
    assert g1 > g0
    assert g2 >= g1


def test_capacity_reports_bytes(subject: Subject) -> None:
    cap = ok(subject.transport, "capacity")
    assert {"total", "used", "free"} <= set(cap)
    assert all(isinstance(cap[k], int) and cap[k] >= 0 for k in ("total", "used", "free"))
