"""The one table from what a proxy does to the controller opcode its allowlist must grant.

A proxy runs the providers as the ``proxy`` role (policies/roles.yaml): each provider call
it makes, each inventory it publishes and each lease it takes is one opcode of the catalog
(policies/opcodes.yaml), checked against the proxy's scoped allowlist before it is done
(``refusals.py``). A call maps by its protocol verb and the kind of the entry it is about
(``params.id`` / ``params.entry.id``): making or returning a host or an instance is
provisioning, borrowing a license spends, any other change updates supply, reads query it.
A verb the table does not name maps to no opcode, and so is refused (deny by default).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.contract.vocabulary import EntryKind
from reconciler.protocol import OPTIONAL_VERBS
from reconciler.providers.base import request_targets

PROVISION_CREATE = "provision.create"
PROVISION_RETURN = "provision.return"
SUPPLY_UPDATE = "supply.update"
SUPPLY_QUERY = "supply.query"
SUPPLY_BORROW = "supply.borrow"
INVENTORY_PUBLISH = "supply.inventory-publish"
LEASE_ACQUIRE = "lease.acquire"  # checked before a lease is taken; renewing and giving back
# what was granted are not checked again (lease.renew, lease.release): a proxy that may no
# longer take a lease still hands the one it holds over at once

# the classes of entry kinds the table tells apart; ANY stands for every kind (or none)
PROVISIONED = "provisioned"  # what a provisioning provider makes and returns
BORROWED = "borrowed"  # what a license server lends
ANY = "any"
_CLASS_OF = {EntryKind.HOST.value: PROVISIONED, EntryKind.INSTANCE.value: PROVISIONED,
             EntryKind.LICENSE.value: BORROWED}

# (protocol verb, class of the entry's kind) -> opcode; looked up with the class, then ANY
TABLE: Mapping[tuple[str, str], str] = {
    ("info", ANY): SUPPLY_QUERY,
    ("probe", ANY): SUPPLY_QUERY,
    ("capacity", ANY): SUPPLY_QUERY,
    ("inventory", ANY): SUPPLY_QUERY,
    ("create", PROVISIONED): PROVISION_CREATE,
    ("delete", PROVISIONED): PROVISION_RETURN,  # delete, release, reject of a host/instance
    ("create", BORROWED): SUPPLY_BORROW,
    ("update", BORROWED): SUPPLY_BORROW,
    ("create", ANY): SUPPLY_UPDATE,  # create, stage
    ("update", ANY): SUPPLY_UPDATE,  # update, admit, drain
    ("delete", ANY): SUPPLY_UPDATE,  # delete, evict
    **{(verb, ANY): SUPPLY_UPDATE for verb in OPTIONAL_VERBS},  # publish, expand, snapshot…
}


def kind_class(params: Mapping[str, Any]) -> str:
    """The class of the kind a request's params are about; ANY when they name no entry."""
    for target in request_targets(params):
        found = _CLASS_OF.get(target.partition("/")[0])
        if found is not None:
            return found
    return ANY


def opcode_of(verb: str, params: object) -> str | None:
    """The opcode a call of ``verb`` with ``params`` needs; None when the table has none."""
    found = kind_class(params) if isinstance(params, Mapping) else ANY
    return TABLE.get((verb, found)) or TABLE.get((verb, ANY))
