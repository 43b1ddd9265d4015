"""The controller map provider: the controller's own supply map, embedded in SQLite.

For trials, tests and small sites the controller's map of hosts, counters, pools and
datasets lives in one local file; an adapter for a real controller's API server will
speak the same protocol later, so the planner and the applier cannot tell them apart.
The protocol is the built-in skeleton's (``reconciler.providers.base``): the epoch (an
older one is ABORTED), the op_id (a repeat returns the first reply) and the owner tag
(co-managed entries are never touched: the skeleton's ``fence_owner``, read here from the
map) are checked in the same transaction of the map file that makes the change.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from compiler.contract.provider_params import ControllerMapParams
from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind, HostState
from reconciler.protocol import ErrorCode, ProviderError, Request
from reconciler.providers.base import ProviderSkeleton
from reconciler.providers.controller_map.entries import (
    HELD_KINDS,
    changed_content,
    claim_owner,
    invalid,
    new_entry,
    parse_entry,
    stored_entries,
    with_state,
)
from reconciler.providers.controller_map.jobs import refuse_planned
from reconciler.providers.controller_map.lifecycle import (
    PLAN_ACTIONS,
    RESTING,
    Event,
    Refused,
    awaiting_admission,
    next_state,
)
from reconciler.providers.controller_map.store import MapStore, Txn


def map_path(name: str, params: ControllerMapParams, workdir: Path) -> Path:
    """``params.path`` (relative to the workdir) or ``<workdir>/providers/<name>/map.sqlite``."""
    if params.path is None:
        return workdir / "providers" / name / "map.sqlite"
    return workdir / params.path  # an absolute path replaces the workdir


@dataclass(frozen=True, slots=True)
class _Outcome:
    entry: Entry
    changed: bool


def _refused(err: Refused) -> ProviderError:
    return ProviderError(ErrorCode.FAILED_PRECONDITION, str(err))


def _action(params: Mapping[str, Any], verb: str) -> Event | None:
    """The lifecycle step a request names; the verb's own name means a plain change."""
    raw = params.get("action")
    if raw is None or raw == verb:
        return None
    if verb != "create" and raw in {e.value for e in PLAN_ACTIONS}:
        return Event(raw)
    known = ", ".join(sorted(e.value for e in PLAN_ACTIONS))
    raise invalid(f"{verb}: action '{raw}' is not one the controller map takes ({known})")


def _target_id(params: Mapping[str, Any], desired: Entry | None) -> str:
    entry_id = params.get("id")
    if entry_id is None and desired is not None:
        return desired.id
    if not isinstance(entry_id, str) or not entry_id:
        raise invalid("the request needs params.id or params.entry")
    if desired is not None and desired.id != entry_id:
        raise invalid(f"params.id {entry_id} and params.entry.id {desired.id} differ")
    return entry_id


class ControllerMapProvider(ProviderSkeleton[Txn]):
    """The built-in ``controller-map`` provider; the built-in transport calls ``handle``."""

    kind = "controller-map"
    version = "1.0"
    capabilities = HELD_KINDS

    def __init__(
        self,
        name: str,
        params: ControllerMapParams,
        workdir: Path,
        *,
        now: Callable[[], float] = time.time,
    ) -> None:
        super().__init__(name, params, workdir)
        self.map_file = map_path(name, params, workdir)
        self._now = now
        self._store: MapStore | None = None
        self._opening = threading.Lock()

    def close(self) -> None:
        with self._opening:
            if self._store is not None:
                self._store.close()
                self._store = None

    @property
    def store(self) -> MapStore:
        """The map file, opened on first use so that constructing a provider is free."""
        with self._opening:
            if self._store is None:
                self._store = MapStore(self.map_file, now=self._now)
            return self._store

    def book(self) -> AbstractContextManager[Txn]:
        return self.store.change()

    def holder(self, book: Txn, entry_id: str) -> str | None:
        current = book.get(entry_id)
        return None if current is None else current.owner

    def probe(self) -> dict[str, Any]:
        try:
            with self.store.read() as tx:
                generation = tx.generation()
        except ProviderError as err:
            return {"ready": False, "message": err.message}
        return {"ready": True, "generation": generation}

    def inventory_result(self, params: Mapping[str, Any]) -> dict[str, Any]:
        """Every entry, and the serving session (P8: the planner settles after a restart)."""
        with self.store.read() as tx:
            generation, rows, session = tx.generation(), tx.rows(), tx.session()
        return {"generation": generation, "complete": True,
                "entries": stored_entries(self.map_file, rows),
                "session": session.to_json()}

    def capacity(self, params: Mapping[str, Any]) -> dict[str, int]:
        """Storage-pool capacity; ``used`` is what pool quotas commit (the map holds no usage)."""
        with self.store.read() as tx:
            rows = tx.amounts((EntryKind.STORAGE_POOL.value, EntryKind.QUOTA.value))
        pools = {
            "pool/" + ident.removeprefix("storage-pool/"): amount or 0
            for kind, ident, _, amount in rows
            if kind == EntryKind.STORAGE_POOL
        }
        wanted = params.get("id")
        if wanted is not None:
            location = "pool/" + str(wanted).removeprefix("storage-pool/")
            if location not in pools:
                raise ProviderError(ErrorCode.NOT_FOUND, f"no storage pool {wanted}")
            pools = {location: pools[location]}
        total = sum(pools.values())
        used = sum(amount or 0 for kind, _, loc, amount in rows
                   if kind == EntryKind.QUOTA and loc in pools)
        return {"total": total, "used": used, "free": max(total - used, 0)}

    def change(self, book: Txn, request: Request) -> dict[str, Any]:
        """One change; the generation grows only when the map did change."""
        outcome = self._change(book, request, self._now())
        generation = book.bump_generation() if outcome.changed else book.generation()
        return {"entry": outcome.entry.to_json(), "changed": outcome.changed,
                "generation": generation}

    def _change(self, tx: Txn, request: Request, now: float) -> _Outcome:
        params = request.params
        refuse_planned(params)
        action = _action(params, request.verb)
        if request.verb == "create":
            return self._create(tx, params, request.owner, now)
        if request.verb == "delete" and action is None:
            return self._delete(tx, params)
        return self._update(tx, params, action, request.owner, now)

    def _desired(self, params: Mapping[str, Any]) -> Entry | None:
        doc = params.get("entry")
        return None if doc is None else parse_entry(doc, provider=self.name)

    def _current(self, tx: Txn, entry_id: str) -> Entry:
        """The entry a change names (the skeleton has fenced it by owner already)."""
        current = tx.get(entry_id)
        if current is None:
            raise ProviderError(ErrorCode.NOT_FOUND, f"{entry_id} is not in the controller map")
        return current

    def _create(self, tx: Txn, params: Mapping[str, Any], owner: str, now: float) -> _Outcome:
        desired = self._desired(params)
        if desired is None:
            raise invalid("create needs params.entry")
        entry_owner = claim_owner(desired.owner, owner)
        current = tx.get(desired.id)
        if current is not None and (
            current.kind != EntryKind.HOST or current.state != HostState.RELEASED
        ):
            raise ProviderError(
                ErrorCode.ALREADY_EXISTS, f"{desired.id} already exists ({current.state})"
            )
        entry = new_entry(desired, entry_owner, now)  # a released host comes back as expected
        tx.put([entry])
        return _Outcome(entry, True)

    def _update(
        self, tx: Txn, params: Mapping[str, Any], action: Event | None, owner: str, now: float
    ) -> _Outcome:
        desired = self._desired(params)
        if desired is not None:
            claim_owner(desired.owner, owner)
        current = self._current(tx, _target_id(params, desired))
        entry = current if action is None else self._step(current, action, owner, now)
        if desired is not None or params.get("changes") is not None:
            entry = changed_content(entry, desired, params.get("changes"))
        if entry != current:
            tx.put([entry])
        return _Outcome(entry, entry != current)

    def _step(self, host: Entry, event: Event, owner: str, now: float) -> Entry:
        """One lifecycle step a plan asks for (drain, release, admit, reject)."""
        if host.kind != EntryKind.HOST:
            raise invalid(f"'{event.value}' applies to hosts; {host.id} is a {host.kind}")
        if event is Event.ADMIT and not owner:
            raise invalid(f"admitting {host.id} needs the request's owner tag")
        try:
            target = next_state(
                host.id, host.state, event, awaiting=awaiting_admission(host.source, host.owner)
            )
        except Refused as err:
            raise _refused(err) from None
        if target is None:
            return host
        moved = with_state(host, target, now)
        return replace(moved, owner=owner) if event is Event.ADMIT else moved

    def _delete(self, tx: Txn, params: Mapping[str, Any]) -> _Outcome:
        current = self._current(tx, _target_id(params, self._desired(params)))
        if current.kind == EntryKind.HOST and not (
            current.state in RESTING or awaiting_admission(current.source, current.owner)
        ):
            raise ProviderError(
                ErrorCode.FAILED_PRECONDITION,
                f"{current.id} is {current.state}; drain and release it before deleting it",
            )
        tx.delete(current.id)
        return _Outcome(current, True)
