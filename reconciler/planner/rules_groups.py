"""Host groups (PR-4): a group leaves config before its hosts leave the cluster.

Removing a group from config also removes its hosts, which drain and are released over
several plans (rules_hosts.py). The group's entry goes last: while any live host still
names it (``attributes.group``, in any state but ``released``), its delete waits in
``pending`` with the hosts and their states; once none is left, it is deleted as any other
entry no config claims.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind, HostState
from compiler.core.hostlist import compress
from reconciler.planner.builder import Builder
from reconciler.planner.rules_generic import plan_generic

_INDEX = "hosts-by-group"
# The order a host's states are listed in: along its life.
_STATES = (HostState.EXPECTED, HostState.JOINING, HostState.AVAILABLE, HostState.DRAINING,
           HostState.DRAINED, HostState.LOST)


def _index(live: Mapping[str, Entry], desired: Mapping[str, Entry]) -> dict[str, list[str]]:
    """Group name -> ids of the live hosts that still hold it: one pass over the live map.
    A host config moves to another group is not held (its update, earlier in the same
    plan, takes it out)."""
    out: dict[str, list[str]] = {}
    for entry in live.values():
        if entry.kind != EntryKind.HOST or entry.state == HostState.RELEASED:
            continue
        group = entry.attributes.get("group")
        if not isinstance(group, str):
            continue
        wanted = desired.get(entry.id)
        if wanted is not None and wanted.attributes.get("group") != group:
            continue
        out.setdefault(group, []).append(entry.id)
    return out


def _hosts_held(b: Builder, group: str) -> list[Entry]:
    """The live hosts still in ``group``, each read through the builder, so the decision is
    unknown when one of them is. The index is built once per plan, when the first group is
    removed."""
    index = b.index(_INDEX, lambda live: _index(live, b.desired))
    held = (b.read(host_id) for host_id in index.get(group, ()))
    return [h for h in held if h is not None]


def _states(hosts: list[Entry]) -> str:
    counts = Counter(h.state for h in hosts)
    order = sorted(counts, key=lambda s: (_STATES.index(s) if s in _STATES else len(_STATES), s))
    return ", ".join(f"{counts[s]} {s}" for s in order)


def plan_group(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    """A group config removed waits for its hosts; anything else is plan_generic's."""
    if desired is not None or live is None:
        plan_generic(b, desired, live)
        return
    group = live.id.partition("/")[2]
    hosts = _hosts_held(b, group)
    if hosts:
        n = len(hosts)
        names = compress(h.id.partition("/")[2] for h in hosts)
        b.note("pending", live, f"not in config: deleted once its {n} host{'s' * (n != 1)} "
               f"{'are' if n != 1 else 'is'} drained and released: {names} ({_states(hosts)})")
        return
    why = b.blind_to_kind(EntryKind.HOST)
    if why is not None:
        b.note("unknown", live, f"{why}; would delete it once none of its hosts is left")
        return
    plan_generic(b, None, live)
