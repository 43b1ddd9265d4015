"""The protocol's CSI-shaped parts: topology in requests and inventories, and the optional
capabilities a provider declares (the one check the caller and the providers share)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from compiler.contract.supply_map import Entry
from compiler.core.canonical import digest_of
from reconciler.live import gather_live
from reconciler.protocol import (
    Capabilities,
    ErrorCode,
    Offer,
    ProviderError,
    Request,
    TopologyRequirement,
)
from reconciler.providers.base import fingerprint
from reconciler.providers.registry import open_provider
from tests.helpers import ok
from tests.providers.kit import OWNER, notes_binding

WISH = TopologyRequirement(requisite=({"rack": "A01"}, {"rack": "A02"}),
                           preferred=({"rack": "A02", "site.example/pod": "p7"},))


def over_the_wire(request: Request) -> Request:
    return Request.from_json(orjson.loads(orjson.dumps(request.to_json())))


def test_a_topology_survives_the_wire_and_is_absent_when_not_asked() -> None:
    request = Request("create", op_id="c1", epoch=3, owner=OWNER, topology=WISH,
                      params={"entry": {"id": "note/a"}})
    assert over_the_wire(request) == request
    assert request.to_json()["topology"] == {
        "requisite": [{"rack": "A01"}, {"rack": "A02"}],
        "preferred": [{"rack": "A02", "site.example/pod": "p7"}]}
    plain = Request("create", op_id="c1", params={"entry": {"id": "note/a"}})
    assert "topology" not in plain.to_json() and over_the_wire(plain).topology is None


@pytest.mark.parametrize(("topology", "words"), [
    ("rack=A01", "must be an object"),
    ({"requisite": [{"rack": "A01"}], "zone": []}, "must be an object"),
    ({}, "names no segment"),
    ({"requisite": {"rack": "A01"}}, "must be a list"),
    ({"requisite": [{}]}, "non-empty object"),
    ({"requisite": [{"-rack": "A01"}]}, "is not a topology key"),
    ({"requisite": [{"rack row": "A01"}]}, "is not a topology key"),
    ({"requisite": [{"rack": 1}]}, "not a non-empty string"),
    ({"requisite": [{"rack": ""}]}, "not a non-empty string"),
    ({"preferred": [{"rack": "A\n01"}]}, "control character"),
    ({"preferred": [{"rack": "A\u202e01"}]}, "invisible character"),
    ({"preferred": [{"rack": "A" * 256}]}, "at most 255"),
])
def test_a_malformed_topology_is_an_invalid_argument(topology: Any, words: str) -> None:
    doc = {"verb": "create", "params": {}, "topology": topology}
    with pytest.raises(ProviderError) as err:
        Request.from_json(doc)
    assert err.value.code is ErrorCode.INVALID_ARGUMENT and words in err.value.message


def test_a_topology_chooses_a_preferred_allowed_place() -> None:
    a01, a02 = {"rack": "A01", "switch": "s1"}, {"rack": "A02", "site.example/pod": "p7"}
    b01 = {"rack": "B01"}
    assert WISH.allows(a01) and WISH.allows(a02) and not WISH.allows(b01)
    assert WISH.choose([b01, a01, a02]) == a02  # preferred wins over list order
    assert WISH.choose([b01, a01]) == a01  # else the first allowed
    assert WISH.choose([b01]) is None
    assert TopologyRequirement(preferred=({"rack": "B01"},)).choose([a01, b01]) == b01


def test_inventory_topology_reaches_the_live_map_through_a_real_transport(
    tmp_path: Path,
) -> None:
    """A create's topology goes out over JSON lines, the note's place comes back in the
    inventory (``attributes.topology``) and lands in the live map as it was sent."""
    binding = notes_binding(tmp_path, "notes", "jsonl")
    t = open_provider("notes", binding, tmp_path)
    wish = TopologyRequirement(requisite=({"switch": "s1"},), preferred=({"rack": "r2"},))
    ok(t, "create", op_id="n1", epoch=1, owner=OWNER, topology=wish,
       params={"entry": {"id": "note/placed"}})
    t.close()
    live = gather_live({"providers": {"notes": binding}, "proxies": {}}, tmp_path, OWNER).live
    placed = live.entries["note/placed"]
    assert placed.attributes == {"topology": {"rack": "r2", "switch": "s1"}}
    assert Entry.from_json(orjson.loads(orjson.dumps(placed.to_json()))) == placed


def test_a_topology_is_part_of_what_makes_a_request_the_same() -> None:
    plain = Request("create", owner=OWNER, params={"entry": {"id": "note/a"}})
    # Without one, a fingerprint is what it always was: recorded ops still replay.
    assert fingerprint(plain) == digest_of({"verb": "create", "owner": OWNER,
                                            "params": {"entry": {"id": "note/a"}}})
    placed = Request("create", owner=OWNER, params=plain.params, topology=WISH)
    elsewhere = Request("create", owner=OWNER, params=plain.params,
                        topology=TopologyRequirement(requisite=({"rack": "B01"},)))
    assert len({fingerprint(plain), fingerprint(placed), fingerprint(elsewhere)}) == 3


CAPS = Capabilities("fs", {"publish": Offer(("volume-dir",), ("read-only",)),
                           "topology": Offer(("volume",), places=({"rack": "A01"},))},
                    {"expand": "quotas are fixed here"})


def refused(caps: Capabilities, request: Request) -> tuple[ErrorCode, str]:
    with pytest.raises(ProviderError) as err:
        caps.check(request)
    return err.value.code, err.value.message


def test_capabilities_survive_info() -> None:
    info = {"name": "fs", **CAPS.info_json()}
    assert info["verbs"][-2:] == ["publish", "unpublish"] and "expand" not in info["verbs"]
    assert info["unsupported"] == {"expand": "quotas are fixed here",
                                   "snapshot": "its info does not declare it"}
    again = Capabilities.from_info(orjson.loads(orjson.dumps(info)))
    assert again.offers == CAPS.offers and again.why_not("expand") == "quotas are fixed here"


def test_a_provider_older_than_the_optional_capabilities_offers_none() -> None:
    old = Capabilities.from_info({"name": "sim", "verbs": ["info", "inventory"],
                                  "optional": {"teleport": {"kinds": ["x"]}}})
    assert old.offers == {}
    code, message = refused(old, Request("expand", params={"id": "quota/a/user/b",
                                                            "required_bytes": 1}))
    assert code is ErrorCode.UNIMPLEMENTED
    assert message == ("provider 'sim' does not offer expand (optional capability 'expand'): "
                       "its info does not declare it")
    with pytest.raises(ProviderError) as err:
        Capabilities.from_info({"optional": {"publish": {"kinds": "volume-dir"}}})
    assert err.value.code is ErrorCode.INTERNAL and "optional.publish" in err.value.message


def test_the_check_names_what_is_not_offered() -> None:
    where = {"id": "volume-dir/v/alice", "location": "group/gpu"}
    cases = [
        (Request("publish", params={**where, "access": "read-write"}),
         ErrorCode.UNIMPLEMENTED, "does not offer read-write publish; it offers read-only"),
        (Request("publish", params={**where, "id": "volume/v", "access": "read-only"}),
         ErrorCode.UNIMPLEMENTED, "for volume entries, only for volume-dir"),
        (Request("publish", params={**where, "access": "sideways"}),
         ErrorCode.INVALID_ARGUMENT, "params.access"),
        (Request("snapshot", params={"id": "volume/v"}),
         ErrorCode.UNIMPLEMENTED, "optional capability 'snapshot'"),
        (Request("update", params={"entry": {"id": "volume/v"}}, topology=WISH),
         ErrorCode.INVALID_ARGUMENT, "topology goes with create only"),
        (Request("create", params={"entry": {"id": "volume-dir/v/a"}}, topology=WISH),
         ErrorCode.UNIMPLEMENTED, "create with a topology for volume-dir entries"),
    ]
    for request, code, words in cases:
        got, message = refused(CAPS, request)
        assert got is code and words in message, (request, message)
    CAPS.check(Request("publish", params={**where, "access": "read-only"}))
    CAPS.check(Request("create", params={"entry": {"id": "volume/v"}}, topology=WISH))
    CAPS.check(Request("delete", params={"id": "volume/v"}))  # core verbs pass untouched
