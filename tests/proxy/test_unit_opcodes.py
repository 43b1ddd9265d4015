"""The one table from a proxy's acts to controller opcodes: every verb the applier sends
maps to an opcode of the catalog, and the right one for the kind it touches."""

from __future__ import annotations

from pathlib import Path

import pytest
from ruamel.yaml import YAML

from compiler.contract.vocabulary import EntryKind
from reconciler.apply.ops import request_for
from reconciler.plan.model import Action, Verb
from reconciler.protocol import OPTIONAL_VERBS, VERBS
from reconciler.proxy import opcodes
from reconciler.proxy.opcodes import TABLE, opcode_of

CATALOG = Path(__file__).resolve().parents[2] / "policies" / "opcodes.yaml"


def catalog() -> set[str]:
    return {op["name"] for op in YAML(typ="safe").load(CATALOG.read_text())["opcodes"]}


def action(verb: Verb, kind: str) -> Action:
    entry = {"id": f"{kind}/x1", "kind": kind, "state": "available", "source": "config"}
    before = None if verb.creates else entry
    after = None if verb.protocol == "delete" else entry
    return Action(id=f"{verb.value}:{kind}/x1", verb=verb, entry=f"{kind}/x1", kind=kind,
                  provider="p", reason="test", before=before, after=after)


@pytest.mark.parametrize("verb", list(Verb))
@pytest.mark.parametrize("kind", [k.value for k in EntryKind])
def test_every_request_the_applier_sends_maps_to_a_catalog_opcode(verb: Verb, kind: str) -> None:
    request = request_for(action(verb, kind), "op", 3, "site/x", destroy=True)
    found = opcode_of(request.verb, request.params)
    assert found in catalog(), (verb, kind, request.to_json())


@pytest.mark.parametrize(("verb", "kind", "expected"), [
    (Verb.CREATE, "instance", "provision.create"),
    (Verb.CREATE, "host", "provision.create"),
    (Verb.RELEASE, "instance", "provision.return"),
    (Verb.REJECT, "host", "provision.return"),
    (Verb.DELETE, "instance", "provision.return"),
    (Verb.UPDATE, "instance", "supply.update"),
    (Verb.DRAIN, "host", "supply.update"),
    (Verb.CREATE, "license", "supply.borrow"),
    (Verb.UPDATE, "license", "supply.borrow"),
    (Verb.CREATE, "volume-dir", "supply.update"),
    (Verb.STAGE, "dataset-copy", "supply.update"),
    (Verb.EVICT, "dataset-copy", "supply.update"),
    (Verb.DELETE, "quota", "supply.update"),
])
def test_the_kind_decides_between_provisioning_spending_and_updating(
        verb: Verb, kind: str, expected: str) -> None:
    request = request_for(action(verb, kind), "op", 3, "site/x")
    assert opcode_of(request.verb, request.params) == expected


def test_reads_query_and_optional_verbs_update() -> None:
    for verb in ("info", "probe", "capacity", "inventory"):
        assert opcode_of(verb, {}) == "supply.query"
    for verb in OPTIONAL_VERBS:
        assert opcode_of(verb, {"id": "volume/x", "location": "host/a"}) == "supply.update"
        assert opcode_of(verb, {"id": "instance/x"}) == "supply.update"
    assert {verb for verb, _ in TABLE} == set(VERBS)


def test_a_verb_the_table_does_not_name_has_no_opcode() -> None:
    assert opcode_of("format-disk", {"id": "volume/x"}) is None
    assert opcode_of("create", "not params") == "supply.update"


def test_every_opcode_the_proxy_names_is_in_the_catalog() -> None:
    named = {value for name, value in vars(opcodes).items()
             if name.isupper() and isinstance(value, str) and "." in value}
    assert named >= {"lease.acquire", "supply.inventory-publish"}
    assert named | set(TABLE.values()) <= catalog()
