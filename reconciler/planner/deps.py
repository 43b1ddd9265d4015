"""Dependencies between actions and the stable apply order.

A parent (volume, host group, host, dataset; ``plan.parents``) is created before what lives
in or on it and removed after it. Each action lists the ids of the actions it waits for, so
the applier can run independent actions in parallel and skip the dependents of one that failed.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import replace

from compiler.contract.supply_map import Entry
from reconciler.plan.model import Action, Group
from reconciler.plan.parents import parents
from reconciler.planner.kinds import PHASE_CONSTRUCT, order_key, phase_of
from reconciler.planner.locality import claim_edges


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
        _link_parents(action, by_entry, deps, reversed_claims=reversed_claims, claiming=claiming)
    ordered = sorted(by_entry.values(), key=lambda a: order_key(a.verb, a.kind, a.entry))
    if claims:
        ordered = _after_what_they_wait_for(ordered, deps)
    return tuple(replace(a, depends_on=tuple(sorted(deps[a.id]))) for a in ordered)


def _link_parents(action: Action, by_entry: Mapping[str, Action], deps: dict[str, set[str]], *,
                  reversed_claims: set[tuple[str, str]], claiming: set[str]) -> None:
    """Add the edges between ``action`` and its parents' actions to ``deps``: a construction
    waits for its parent's, unless a claim turned that edge round or the parent's write claims
    a copy; a parent's removal waits for its children's."""
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
