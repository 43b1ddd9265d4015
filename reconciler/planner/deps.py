"""Dependencies between actions and the stable apply order.

A parent (volume, host group, host, dataset; ``plan.parents``) is created before what lives
in or on it and removed after it. Each action lists the ids of the actions it waits for, so
the applier can run independent actions in parallel and skip the dependents of one that failed.

A plan may hold half a million actions: each is looked at once, its parents read straight
from its JSON, and only the few the sort puts before what they wait for are moved.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import fields
from operator import attrgetter

from reconciler.plan.model import Action, Group, Verb
from reconciler.plan.parents import parents_of_json
from reconciler.planner.kinds import PHASE_CONSTRUCT, order_key, phase_of
from reconciler.planner.locality import claim_edges

# verb -> (it constructs, it destroys), looked up once per action rather than worked out
_ROLE = {verb: (phase_of(verb) == PHASE_CONSTRUCT, verb.group is Group.DESTROY)
         for verb in Verb}


def link_and_order(actions: Iterable[Action]) -> tuple[Action, ...]:
    """Fill ``depends_on`` and sort by (phase, kind order, id): deterministic for any input.
    A host group's or host's write that claims a copy waits for the copy's stage instead
    of the other way round (``claim_edges``), and is moved after it. What lives in or on
    that holder (its hosts, their counters, its cache counter) does not wait for that
    write: jobs need the copy, creating a host does not (PR-5: placement prefers a copy
    and never waits for one), and a host's entry names its group itself; so a copy that
    fails to stage holds back the group's write alone, not its hosts and counters."""
    by_entry = {a.entry: a for a in actions}
    deps: defaultdict[str, set[str]] = defaultdict(set)  # action id -> what it waits for
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
    return tuple(_waiting(a, deps.get(a.id)) for a in ordered)


# Action's fields before and after ``depends_on``, read in one call each: a copy made this
# way costs half of ``dataclasses.replace``, which matters for half a million actions.
_FIELDS = [f.name for f in fields(Action)]
_AT = _FIELDS.index("depends_on")
_HEAD, _TAIL = attrgetter(*_FIELDS[:_AT]), attrgetter(*_FIELDS[_AT + 1:])


def _waiting(action: Action, on: set[str] | None) -> Action:
    """``action`` with ``depends_on`` set; itself when it already says so (none)."""
    depends_on = tuple(sorted(on)) if on else ()
    if depends_on == action.depends_on:
        return action
    fields_in_order = (*_HEAD(action), depends_on, *_TAIL(action))
    return Action(*fields_in_order)


def _link_parents(action: Action, by_entry: Mapping[str, Action],
                  deps: defaultdict[str, set[str]], *,
                  reversed_claims: set[tuple[str, str]], claiming: set[str]) -> None:
    """Add the edges between ``action`` and its parents' actions to ``deps``: a construction
    waits for its parent's, unless a claim turned that edge round or the parent's write claims
    a copy; a parent's removal waits for its children's."""
    constructive, destroying = _ROLE[action.verb]
    subject = action.before if destroying else (action.after or action.before)
    assert subject is not None
    for parent_id in parents_of_json(subject):
        parent = by_entry.get(parent_id)
        if parent is None or parent is action:
            continue
        parent_constructs, parent_destroys = _ROLE[parent.verb]
        if constructive and parent_constructs:
            if (action.id, parent.id) not in reversed_claims and parent.id not in claiming:
                deps[action.id].add(parent.id)
        elif destroying and parent_destroys:
            deps[parent.id].add(action.id)  # a parent goes only after its children


def _after_what_they_wait_for(ordered: list[Action], deps: Mapping[str, set[str]]) -> list[Action]:
    """The sorted order, but each action after what it waits for (Kahn's algorithm, taking
    the earliest ready action first): the same order wherever the sort already was one.
    The sorted actions are walked in turn; one that waits for an action not yet placed is
    held back, and placed, in sorted order, as soon as the last of those is."""
    placed: set[str] = set()
    held: dict[str, list[tuple[int, Action]]] = {}  # awaited id -> (position, held action)
    missing: dict[str, int] = {}  # held action id -> how many it still waits for
    out: list[Action] = []
    for position, action in enumerate(ordered):
        awaited = [d for d in deps.get(action.id, ()) if d not in placed]
        if awaited:
            missing[action.id] = len(awaited)
            for awaited_id in awaited:
                held.setdefault(awaited_id, []).append((position, action))
            continue
        ready = [(position, action)]
        while ready:  # the earliest action ready first: those held back come before this one
            _, placing = heapq.heappop(ready)
            out.append(placing)
            placed.add(placing.id)
            for position_then, waiter in held.pop(placing.id, ()):
                missing[waiter.id] -= 1
                if missing[waiter.id] == 0:
                    heapq.heappush(ready, (position_then, waiter))
    return out
