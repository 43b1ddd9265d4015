"""Dependencies between actions and the stable apply order.

A parent (volume, host group, host, dataset; ``plan.parents``) is created before what lives
in or on it and removed after it. Each action lists the ids of the actions it waits for, so
the applier can run independent actions in parallel and skip the dependents of one that failed.

A plan may hold half a million actions: each is looked at once, its parents read straight
from its JSON, the sort runs in C loops over keys worked out once per (verb, kind), and only
the few the sort puts before what they wait for are moved.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from operator import attrgetter

from reconciler.plan.model import Action, Group, Verb
from reconciler.plan.parents import Parents, parents_of_json
from reconciler.planner.kinds import PHASE_CONSTRUCT, order_key, phase_of
from reconciler.planner.locality import claim_edges

# verb -> (it constructs, it destroys), looked up once per action rather than worked out
_ROLE = {verb: (phase_of(verb) == PHASE_CONSTRUCT, verb.group is Group.DESTROY)
         for verb in Verb}
_ENTRY, _VERB_KIND = attrgetter("entry"), attrgetter("verb", "kind")


def link_and_order(actions: Iterable[Action]) -> tuple[Action, ...]:
    """Fill ``depends_on`` and sort by (phase, kind order, id): deterministic for any input.
    A host group's or host's write that claims a copy waits for the copy's stage instead
    of the other way round (``claim_edges``), and is moved after it. What lives in or on
    that holder (its hosts, their counters, its cache counter) does not wait for that
    write: jobs need the copy, creating a host does not (PR-5: placement prefers a copy
    and never waits for one), and a host's entry names its group itself; so a copy that
    fails to stage holds back the group's write alone, not its hosts and counters.

    ``actions`` are the planner's own, made for this plan and not yet handed to anyone:
    ``depends_on`` is set on them in place (``_waiting``)."""
    by_entry = {a.entry: a for a in actions}
    deps: dict[str, set[str]] = {}  # action id -> what it waits for
    claims = claim_edges(by_entry)
    for waiting, awaited in claims:
        deps.setdefault(waiting, set()).add(awaited)
    _link_parents(by_entry, deps, reversed_claims={(awaited, waiting)
                                                   for waiting, awaited in claims},
                  claiming={waiting for waiting, _ in claims})
    ordered = _sorted(by_entry.values())
    if claims:
        ordered = _after_what_they_wait_for(ordered, deps)
    for action in ordered:
        _waiting(action, deps.get(action.id))
    return tuple(ordered)


def _sorted(actions: Iterable[Action]) -> list[Action]:
    """``actions`` in ``order_key`` order: by entry id, then (stable) by (phase, kind order),
    whose key is worked out once per (verb, kind), not once per action."""
    by_id = sorted(actions, key=_ENTRY)  # ids are unique: no two keys are ever equal
    pairs = list(map(_VERB_KIND, by_id))
    rank = {pair: order_key(*pair, "")[:2] for pair in set(pairs)}
    positions = sorted(range(len(by_id)), key=list(map(rank.__getitem__, pairs)).__getitem__)
    return list(map(by_id.__getitem__, positions))


def _waiting(action: Action, on: set[str] | None) -> None:
    """Set ``action``'s ``depends_on`` (sorted ids) where it waits for anything. In place,
    on a frozen action: a copy of each would cost more than all of the ordering."""
    if on:
        object.__setattr__(action, "depends_on", tuple(sorted(on)))


def _link_parents(by_entry: Mapping[str, Action], deps: dict[str, set[str]], *,
                  reversed_claims: set[tuple[str, str]], claiming: set[str]) -> None:
    """Add the edges between each action and its parents' actions to ``deps``: a
    construction waits for its parent's, unless a claim turned that edge round or the
    parent's write claims a copy; a parent's removal waits for its children's."""
    find = by_entry.get
    memo: Parents = {}
    for action in by_entry.values():
        constructive, destroying = _ROLE[action.verb]
        subject = action.before if destroying else (action.after or action.before)
        assert subject is not None
        for parent_id in parents_of_json(subject, memo):
            parent = find(parent_id)
            if parent is None or parent is action:
                continue
            parent_constructs, parent_destroys = _ROLE[parent.verb]
            if constructive and parent_constructs:
                if parent.id not in claiming and (action.id, parent.id) not in reversed_claims:
                    deps.setdefault(action.id, set()).add(parent.id)
            elif destroying and parent_destroys:  # a parent goes only after its children
                deps.setdefault(parent.id, set()).add(action.id)


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
        waits = deps.get(action.id)
        if waits and not placed.issuperset(waits):
            awaited = [d for d in waits if d not in placed]
            missing[action.id] = len(awaited)
            for awaited_id in awaited:
                held.setdefault(awaited_id, []).append((position, action))
            continue
        out.append(action)
        placed.add(action.id)
        if action.id in held:
            _release(action.id, held, missing, placed, out)
    return out


def _release(done: str, held: dict[str, list[tuple[int, Action]]], missing: dict[str, int],
             placed: set[str], out: list[Action]) -> None:
    """Place the actions held back for ``done`` once they wait for nothing else, the earliest
    first, and in turn those held back for them."""
    ready: list[tuple[int, Action]] = []
    for position, waiter in held.pop(done, ()):
        missing[waiter.id] -= 1
        if missing[waiter.id] == 0:
            heapq.heappush(ready, (position, waiter))
    while ready:
        _, placing = heapq.heappop(ready)
        out.append(placing)
        placed.add(placing.id)
        for position, waiter in held.pop(placing.id, ()):
            missing[waiter.id] -= 1
            if missing[waiter.id] == 0:
                heapq.heappush(ready, (position, waiter))
