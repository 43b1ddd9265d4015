"""The entries the controller map holds: what a request may carry, and how an entry changes.

Pure functions over ``Entry`` so the provider and the reporter build entries the same
way; every refusal is a ``ProviderError`` in the protocol's family.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

import orjson

from compiler.contract.entry import entry_error
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import PRESENT, SOURCES, EntryKind, HostState, Source
from compiler.core.names import shown
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.controller_map.store import decode_docs

# Every kind whose provider is the controller map (docs/architecture.md). Volume quotas
# belong to the volume's directory provider; only pool quotas live here. Jobs are
# recorded by reporters only (``jobs.py``).
HELD_KINDS = tuple(sorted((EntryKind.COUNTER, EntryKind.DATASET, EntryKind.HOST,
                           EntryKind.HOST_GROUP, EntryKind.JOB, EntryKind.LICENSE,
                           EntryKind.QUOTA, EntryKind.STORAGE_POOL)))
CHANGE_FIELDS = frozenset({"amount", "attributes", "spec"})
# Spec keys the map itself records on a host, never a plan: when it entered its state
# (``since``, the lifecycle) and when a reporter last told of it (``seen``, P8).
RECORDED = ("since", "seen")


def invalid(message: str) -> ProviderError:
    return ProviderError(ErrorCode.INVALID_ARGUMENT, message)


def _mapping(doc: Mapping[str, Any], key: str, where: str) -> Mapping[str, Any]:
    value = doc.get(key)
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise invalid(f"{where}.{key} must be an object")
    return value


def _amount(value: Any, where: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid(f"{where}.amount must be a whole number >= 0, not {value!r}")
    return value


def _held_kind(doc: Mapping[str, Any], entry_id: str) -> str:
    kind = doc.get("kind") or entry_id.partition("/")[0]  # ids are '<kind>/<name>'
    if not isinstance(kind, str):
        raise invalid(f"{shown(entry_id)}: kind must be a string")
    if kind not in HELD_KINDS:
        raise invalid(
            f"{shown(entry_id)}: kind '{shown(kind)}' is not held by the controller map "
            f"(it holds {', '.join(HELD_KINDS)})"
        )
    return kind


def _source(doc: Mapping[str, Any], entry_id: str) -> str:
    source = doc.get("source", Source.CONFIG)
    if source not in SOURCES:
        raise invalid(f"{shown(entry_id)}: source must be one of {', '.join(SOURCES)}, "
                      f"not {source!r}")
    return str(source)


def _texts(doc: Mapping[str, Any], entry_id: str) -> tuple[str | None, str | None, str | None]:
    """``location``, ``owner`` and ``state``, each a string when given."""
    location, owner, state = doc.get("location"), doc.get("owner"), doc.get("state")
    for key, value in (("location", location), ("owner", owner), ("state", state)):
        if value is not None and not isinstance(value, str):
            raise invalid(f"{shown(entry_id)}: {key} must be a string")
    return location, owner, state


def _held_here(entry_id: str, kind: str, location: str | None, bound: object,
               provider: str) -> None:
    """Pool quotas only, and only entries bound to this provider (or to none)."""
    if kind == EntryKind.QUOTA and not (location or "").startswith("pool/"):
        raise invalid(
            f"{shown(entry_id)}: the controller map holds pool quotas only (location "
            "'pool/<name>'); volume quotas belong to the volume's directory provider"
        )
    if bound is not None and bound != provider:
        raise invalid(f"{shown(entry_id)} is bound to provider '{bound}', not '{provider}'")


def parse_entry(doc: Any, *, provider: str) -> Entry:
    """An entry a request carries, checked field by field (INVALID_ARGUMENT on the first
    fault): what the map holds, then the contract every entry obeys (``entry_error``)."""
    if not isinstance(doc, Mapping):
        raise invalid("params.entry must be an entry object")
    entry_id = doc.get("id")
    if not isinstance(entry_id, str):
        raise invalid("params.entry needs a string 'id'")
    kind = _held_kind(doc, entry_id)
    source = _source(doc, entry_id)
    location, owner, state = _texts(doc, entry_id)
    _held_here(entry_id, kind, location, doc.get("provider"), provider)
    entry = Entry(
        id=entry_id,
        kind=kind,
        state=state or PRESENT.value,
        source=source,
        provider=provider,
        location=location,
        amount=_amount(doc.get("amount"), shown(entry_id)),
        attributes=dict(_mapping(doc, "attributes", shown(entry_id))),
        spec=dict(_mapping(doc, "spec", shown(entry_id))),
        owner=owner,
    )
    fault = entry_error(entry)
    if fault is not None:
        field, why = fault
        shape = f"; an id of kind '{kind}' must look like '{kind}/<name>'" if field == "id" else ""
        raise invalid(f"{shown(entry_id)}: {why}{shape}")
    return entry


def stored_entries(path: object, rows: Iterable[tuple[str, str, str]]) -> list[dict[str, Any]]:
    """The documents of the map's rows (id, kind, document), each the entry its row says: a
    document of another id or kind, or one that is no JSON object, is a damaged map
    (FAILED_PRECONDITION), whose inventory would report what is not there."""
    rows = list(rows)
    try:
        docs = decode_docs(doc for _, _, doc in rows)
    except orjson.JSONDecodeError as err:
        raise ProviderError(ErrorCode.FAILED_PRECONDITION, f"controller map {path} is damaged: "
                            f"a row holds no JSON document ({err})") from None
    for (row_id, row_kind, _), doc in zip(rows, docs, strict=True):
        if not isinstance(doc, dict) or doc.get("id") != row_id or doc.get("kind") != row_kind:
            held = (f"the document of {shown(doc['id'])}" if isinstance(doc, dict)
                    and isinstance(doc.get("id"), str) else "a document of another entry")
            raise ProviderError(ErrorCode.FAILED_PRECONDITION, f"controller map {path} is "
                                f"damaged: row {shown(row_id)} (kind {shown(row_kind)}) holds "
                                f"{held}; restore the map from a good copy")
    return docs


def claim_owner(entry_owner: str | None, request_owner: str) -> str | None:
    """The owner a new entry gets: the request's tag, which must agree with the entry's."""
    if entry_owner and request_owner and entry_owner != request_owner:
        raise invalid(f"the entry names owner '{entry_owner}' but the request is '{request_owner}'")
    return request_owner or entry_owner or None


def with_state(entry: Entry, state: str, at: float) -> Entry:
    """The entry in a new state; a host records when it got there (``spec.since``)."""
    if entry.kind != EntryKind.HOST:
        return replace(entry, state=str(state))
    return replace(entry, state=str(state), spec={**entry.spec, "since": int(at)})


def with_seen(entry: Entry, at: float) -> Entry:
    """The host as a reporter event leaves it: ``spec.seen`` is the latest event's second.

    Recorded also for an event that changes no state (a rejoin after a controller
    restart), so the planner can tell which workers came back (P8); a late report of an
    older event never moves it back.
    """
    seen = max(int(at), int(entry.spec.get("seen", 0)))
    return entry if entry.spec.get("seen") == seen else replace(
        entry, spec={**entry.spec, "seen": seen})


def new_entry(parsed: Entry, owner: str | None, at: float) -> Entry:
    """A created entry: hosts start ``expected`` (the join confirms them), the rest available."""
    spec = {k: v for k, v in parsed.spec.items() if k not in RECORDED}
    entry = replace(parsed, owner=owner, spec=spec)
    if entry.kind == EntryKind.HOST:
        return with_state(entry, HostState.EXPECTED, at)
    return replace(entry, state=PRESENT.value)


def changed_content(current: Entry, desired: Entry | None, changes: Any) -> Entry:
    """The entry with amount, attributes and spec from the desired entry, then ``changes``.

    Identity, state, source and owner never change this way: states move only through the
    lifecycle, and ``spec.since`` and ``spec.seen`` stay what the map recorded.
    """
    fields: dict[str, Any] = {}
    if desired is not None:
        if desired.kind != current.kind:
            raise invalid(f"{current.id} is a {current.kind}, not a {desired.kind}")
        fields = {"amount": desired.amount, "attributes": desired.attributes, "spec": desired.spec}
    if changes is not None:
        if not isinstance(changes, Mapping) or not set(changes) <= CHANGE_FIELDS:
            raise invalid(f"params.changes must be an object with only {sorted(CHANGE_FIELDS)}")
        fields.update(changes)
    merged = {"attributes": current.attributes, "spec": current.spec, **fields}
    spec = dict(_mapping(merged, "spec", current.id))
    for key in RECORDED:
        spec.pop(key, None)
        if key in current.spec:
            spec[key] = current.spec[key]
    return replace(
        current,
        amount=_amount(fields.get("amount", current.amount), current.id),
        attributes=dict(_mapping(merged, "attributes", current.id)),
        spec=spec,
    )
