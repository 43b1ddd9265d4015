"""Reporter events: what a worker join, the node manager or the scheduler tells the map.

Events come from the data plane, not from a site-config, so they carry no op_id, epoch
or owner tag; they move hosts through the PR-4 lifecycle (and jobs through theirs,
``jobs.py``) and bump the generation like any change. A batch is all or nothing: if one
entry refuses the event, none is recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind, HostState
from reconciler.providers.controller_map.entries import with_seen, with_state
from reconciler.providers.controller_map.lifecycle import (
    Event,
    Refused,
    awaiting_admission,
    next_state,
)
from reconciler.providers.controller_map.store import MapStore


class Cause(StrEnum):
    """Why an entry refused an event (each has its own problem code in ``xce-map``)."""

    UNKNOWN = "unknown"  # not in the map; only a join (a job's start) adds one
    STATE = "state"  # its state does not allow the event
    USER = "user"  # a job event that names no user, or another user than the job's


@dataclass(frozen=True, slots=True)
class Moved:
    """One entry whose state (or a job's record) changed; ``before`` is None for a new one."""

    id: str
    before: str | None
    after: str
    entry: Entry  # as the event left it


@dataclass(frozen=True, slots=True)
class Refusal:
    id: str
    cause: Cause
    reason: str


@dataclass(frozen=True, slots=True)
class Report:
    event: str
    moved: tuple[Moved, ...]
    unchanged: tuple[tuple[str, str], ...]  # (entry id, the state it already had)
    generation: int


class EventRefused(Exception):
    """The batch was not recorded; every entry that refused it is listed."""

    def __init__(self, refusals: Sequence[Refusal]) -> None:
        super().__init__(f"{len(refusals)} entries refused the event")
        self.refusals = tuple(refusals)


class Declined(Exception):
    """One entry refuses the event; ``record_batch`` collects these."""

    def __init__(self, entry_id: str, cause: Cause, reason: str) -> None:
        super().__init__(reason)
        self.refusal = Refusal(entry_id, cause, reason)


# One entry's step: the entry after the event (from the one before, None if absent), and
# whether that is a move worth reporting (False: only ``seen``, or nothing, changed).
Step = Callable[[str, Entry | None], tuple[Entry, bool]]


def record_batch(store: MapStore, event: str, ids: Sequence[str], step: Step) -> Report:
    """Apply ``step`` to every id in one transaction: all recorded, or none."""
    ids = list(dict.fromkeys(ids))
    moved: list[Moved] = []
    unchanged: list[tuple[str, str]] = []
    refusals: list[Refusal] = []
    changed: list[Entry] = []
    with store.change() as tx:
        current = tx.get_many(ids)
        for entry_id in ids:
            before = current.get(entry_id)
            try:
                after, move = step(entry_id, before)
            except Declined as err:
                refusals.append(err.refusal)
                continue
            if after != before:
                changed.append(after)
            if move:
                was = None if before is None else before.state
                moved.append(Moved(entry_id, was, after.state, after))
            else:
                unchanged.append((entry_id, after.state))
        if refusals:
            raise EventRefused(refusals)
        tx.put(changed)
        generation = tx.bump_generation() if changed else tx.generation()
    return Report(event, tuple(moved), tuple(unchanged), generation)


def discovered(host_id: str, provider: str, at: float) -> Entry:
    """A host that joined although no entry expected it: it waits for admission, unowned."""
    spec = {"since": int(at), "seen": int(at)}
    return Entry(host_id, EntryKind.HOST.value, HostState.JOINING.value, "discovered", provider,
                 spec=spec)


def _host_step(event: Event, at: float, provider: str) -> Step:
    def step(host_id: str, entry: Entry | None) -> tuple[Entry, bool]:
        if entry is None:
            if event is Event.JOIN:
                return discovered(host_id, provider, at), True
            reason = f"{host_id} is not in the controller map; only a join adds a host"
            raise Declined(host_id, Cause.UNKNOWN, reason)
        awaiting = awaiting_admission(entry.source, entry.owner)
        try:
            target = next_state(host_id, entry.state, event, awaiting=awaiting)
        except Refused as err:
            raise Declined(host_id, Cause.STATE, str(err)) from None
        after = entry if target is None else with_state(entry, target, at)
        return with_seen(after, at), target is not None

    return step


def record(store: MapStore, event: Event, hosts: Sequence[str], at: float, provider: str) -> Report:
    """Apply ``event`` to every host (bare names) in one transaction; each is ``seen`` at ``at``."""
    ids = [f"host/{h}" for h in hosts]
    return record_batch(store, event.value, ids, _host_step(event, at, provider))
