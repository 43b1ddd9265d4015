"""Rules for kinds whose life is just create / update / delete (volumes, quotas, counters, …)."""

from __future__ import annotations

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import RUNNING, EntryKind
from reconciler.plan.model import FieldChange, Verb
from reconciler.plan.parents import parents
from reconciler.planner.builder import Builder
from reconciler.planner.compare import field_changes


def update_reason(entry: Entry, changes: tuple[FieldChange, ...]) -> str:
    """Say what changes in words; for quotas whether the limit is raised or lowered."""
    parts: list[str] = []
    other: list[str] = []
    for c in changes:
        if c.path == "amount" and isinstance(c.before, int) and isinstance(c.after, int):
            if entry.kind == EntryKind.QUOTA:
                verb = "raise" if c.after > c.before else "lower"
                parts.append(f"{verb} quota from {c.before} to {c.after}")
            else:
                parts.append(f"amount {c.before} → {c.after}")
        else:
            other.append(c.path)
    if other:
        parts.append("differs in " + ", ".join(other))
    return "; ".join(parts)


def plan_update(b: Builder, desired: Entry, live: Entry, *, state: bool = True) -> None:
    """Update when the compared fields differ; ``state=False`` where the kind's rule owns state."""
    changes = field_changes(desired, live, state=state)
    if changes:
        after = desired.to_json() if state else {**desired.to_json(), "state": live.state}
        b.act(Verb.UPDATE, desired, update_reason(desired, changes), before=live, after=after,
              changes=changes)


def _leaving_host(b: Builder, live: Entry) -> Entry | None:
    """The host this entry lives on (a counter), if it leaves config but still runs jobs:
    its supply goes with its release, not while its jobs use it."""
    for parent_id in parents(live):
        host = b.read(parent_id) if parent_id.startswith("host/") else None
        if host is not None and host.state in RUNNING and parent_id not in b.desired:
            return host
    return None


def plan_generic(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    if desired is None:
        assert live is not None
        host = _leaving_host(b, live)
        if host is not None:
            b.note("pending", live, f"not in config: removed once {host.id} is drained "
                   f"(it is {host.state})")
            return
        b.act(Verb.DELETE, live, "not in config", before=live, after=None, unacted="orphans")
    elif live is None:
        b.act(Verb.CREATE, desired, "not in the live map", before=None, after=desired.to_json())
    else:
        plan_update(b, desired, live)
