"""Reporter events: what a worker join or the node manager tells the controller map.

Events come from the data plane, not from a site-config, so they carry no op_id, epoch
or owner tag; they move hosts through the PR-4 lifecycle and bump the generation like
any change. A batch is all or nothing: if one host refuses the event, none is recorded.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compiler.supply_map import Entry
from reconciler.providers.controller_map.entries import with_state
from reconciler.providers.controller_map.lifecycle import (
    Event,
    HostState,
    Refused,
    awaiting_admission,
    next_state,
)
from reconciler.providers.controller_map.store import MapStore


@dataclass(frozen=True, slots=True)
class Moved:
    """One host that changed state; ``before`` is None for a newly discovered host."""

    id: str
    before: str | None
    after: str


@dataclass(frozen=True, slots=True)
class Refusal:
    id: str
    unknown: bool  # the host is not in the map at all (only a join may bring a new one)
    reason: str


@dataclass(frozen=True, slots=True)
class Report:
    event: Event
    moved: tuple[Moved, ...]
    unchanged: tuple[tuple[str, str], ...]  # (host id, the state it already had)
    generation: int


class EventRefused(Exception):
    """The batch was not recorded; every host that refused it is listed."""

    def __init__(self, refusals: Sequence[Refusal]) -> None:
        super().__init__(f"{len(refusals)} host(s) refused the event")
        self.refusals = tuple(refusals)


def discovered(host_id: str, provider: str, at: float) -> Entry:
    """A host that joined although no entry expected it: it waits for admission, unowned."""
    since = {"since": int(at)}
    return Entry(host_id, "host", HostState.JOINING.value, "discovered", provider, spec=since)


def record(store: MapStore, event: Event, hosts: Sequence[str], at: float, provider: str) -> Report:
    """Apply ``event`` to every host (bare names) in one transaction."""
    ids = list(dict.fromkeys(f"host/{h}" for h in hosts))
    moved: list[Moved] = []
    unchanged: list[tuple[str, str]] = []
    refusals: list[Refusal] = []
    changed: list[Entry] = []
    with store.change() as tx:
        current = tx.get_many(ids)
        for host_id in ids:
            entry = current.get(host_id)
            if entry is None:
                if event is Event.JOIN:
                    changed.append(discovered(host_id, provider, at))
                    moved.append(Moved(host_id, None, HostState.JOINING.value))
                else:
                    reason = f"{host_id} is not in the controller map; only a join adds a host"
                    refusals.append(Refusal(host_id, True, reason))
                continue
            awaiting = awaiting_admission(entry.source, entry.owner)
            try:
                target = next_state(host_id, entry.state, event, awaiting=awaiting)
            except Refused as err:
                refusals.append(Refusal(host_id, False, str(err)))
                continue
            if target is None:
                unchanged.append((host_id, entry.state))
            else:
                changed.append(with_state(entry, target, at))
                moved.append(Moved(host_id, entry.state, target.value))
        if refusals:
            raise EventRefused(refusals)
        tx.put(changed)
        generation = tx.bump_generation() if changed else tx.generation()
    return Report(event, tuple(moved), tuple(unchanged), generation)
