"""Dependencies between actions and the stable apply order.

A parent (volume, host group, host, dataset) is created before what lives in or on it and
removed after it. Each action lists the ids of the actions it waits for, so the applier
can run independent actions in parallel and skip the dependents of one that failed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import replace

from compiler.contract.supply_map import Entry
from reconciler.plan.model import Action, Group
from reconciler.planner.kinds import PHASE_CONSTRUCT, order_key, phase_of
from reconciler.planner.locality import claim_edges

_LOCATION_PARENTS = {
    "host": ("host/",),
    "group": ("host-group/",),
    "pool": ("storage-pool/", "license/"),
    "volume": ("volume/",),
}


def _location_parents(location: str | None) -> list[str]:
    if not location:
        return []
    prefix, _, name = location.partition("/")
    ids = [p + name for p in _LOCATION_PARENTS.get(prefix, ())]
    return [i + "@site" if i.startswith("license/") else i for i in ids]


def parents(entry: Entry) -> list[str]:
    """Ids of the entries this one needs to exist first (they may or may not exist)."""
    kind = entry.kind
    name = entry.id.partition("/")[2]
    location = entry.location
    if location is None and "@" in name and kind == "counter":
        location = name.partition("@")[2]
    out = _location_parents(location)
    if kind == "host":
        group = entry.attributes.get("group")
        if group:
            out.append(f"host-group/{group}")
        out.append(f"instance/{name}")
    elif kind == "instance":
        group = entry.spec.get("group")
        if group:
            out.append(f"host-group/{group}")
    elif kind == "volume-dir":
        out.append("volume/" + name.partition("/")[0])
    elif kind == "job-dir":  # job-dir/<volume>/<user>/<job>: evicted before its user dir goes
        out.append("volume-dir/" + name.rpartition("/")[0])
    elif kind == "quota":
        target, scope, subject = [*name.split("/", 2), "", ""][:3]
        if location is None:
            out.append(f"volume/{target}")
        if scope == "user" and (location is None or location.startswith("volume/")):
            out.append(f"volume-dir/{target}/{subject}")
    elif kind == "dataset-copy":
        dataset = entry.spec.get("dataset") or "@".join(name.split("@")[:2])
        out.append(f"dataset/{dataset}")
    return out


def _subject(action: Action) -> Entry:
    doc = action.before if action.verb.group is Group.DESTROY else (action.after or action.before)
    assert doc is not None
    return Entry.from_json(doc)


def link_and_order(actions: Iterable[Action]) -> tuple[Action, ...]:
    """Fill ``depends_on`` and sort by (phase, kind order, id): deterministic for any input.
    A host group's or host's write that claims a copy waits for the copy's stage instead
    of the other way round (``claim_edges``), and is moved after it. What lives in or on
    that holder (its hosts, their counters, its cache counter) does not wait for that
    write: jobs need the copy, creating a host does not (PR-5: placement prefers a copy
    and never waits for one), and a host's entry names its group itself; so a copy that
    fails to stage holds back the group's write alone, not its hosts and counters."""
    by_entry = {a.entry: a for a in actions}
    deps: dict[str, set[str]] = {a.id: set() for a in by_entry.values()}
    claims = claim_edges(by_entry)
    for waiting, awaited in claims:
        deps[waiting].add(awaited)
    reversed_claims = {(awaited, waiting) for waiting, awaited in claims}
    claiming = {waiting for waiting, _ in claims}
    for action in by_entry.values():
        constructive = phase_of(action.verb) == PHASE_CONSTRUCT
        for parent_id in parents(_subject(action)):
            parent = by_entry.get(parent_id)
            if parent is None or parent is action:
                continue
            if constructive and phase_of(parent.verb) == PHASE_CONSTRUCT:
                if (action.id, parent.id) not in reversed_claims and parent.id not in claiming:
                    deps[action.id].add(parent.id)
            elif action.verb.group is parent.verb.group is Group.DESTROY:
                deps[parent.id].add(action.id)  # a parent goes only after its children
    ordered = sorted(by_entry.values(), key=lambda a: order_key(a.verb, a.kind, a.entry))
    if claims:
        ordered = _after_what_they_wait_for(ordered, deps)
    return tuple(replace(a, depends_on=tuple(sorted(deps[a.id]))) for a in ordered)


def _after_what_they_wait_for(ordered: list[Action], deps: dict[str, set[str]]) -> list[Action]:
    """The sorted order, but each action after what it waits for (Kahn's algorithm, taking
    the earliest ready action first): the same order wherever the sort already was one."""
    position = {a.id: i for i, a in enumerate(ordered)}
    waiting = {a.id: len(deps[a.id]) for a in ordered}
    dependents: dict[str, list[str]] = {a.id: [] for a in ordered}
    for action_id, awaited in deps.items():
        for parent in awaited:
            dependents[parent].append(action_id)
    ready = [position[a] for a, n in waiting.items() if n == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        action = ordered[heapq.heappop(ready)]
        out.append(action)
        for dependent in dependents[action.id]:
            waiting[dependent] -= 1
            if waiting[dependent] == 0:
                heapq.heappush(ready, position[dependent])
    return out
