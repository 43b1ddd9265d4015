"""What every plan rendering shares: symbols per verb, value formatting, grouped notes."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import orjson

from compiler.core.hostlist import fold_subjects
from compiler.core.text_limits import TEXT_LIMIT, shorten
from compiler.core.types import COUNT_COUNTERS
from compiler.core.units import SIZE_UNITS, format_size
from reconciler.plan.codes import FOUND_NOT_MADE
from reconciler.plan.model import Action, Group, Note, Plan, Verb

SYMBOL = {Group.ADD: "+", Group.CHANGE: "~", Group.DESTROY: "-"}
NOTE_TITLES = {
    "orphans": "Orphans",
    "drift_reported": "Drift reported, not acted on",
    "pending": "Pending (waiting, no action)",
    "co_managed": "Co-managed (not ours, never touched)",
}


def entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def symbol(verb: Verb) -> str:
    return SYMBOL[verb.group]


def value(v: object) -> str:
    return shorten(orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode())


def amount_text(counter: str, amount: object) -> str:
    """A counter's amount as a reviewer reads it: a count as a number, a size of whole MiB
    or more in binary units (``256GiB``)."""
    mib = SIZE_UNITS["MiB"]
    if (isinstance(amount, int) and not isinstance(amount, bool) and counter not in COUNT_COUNTERS
            and amount >= mib and amount % mib == 0):
        return format_size(amount)
    return value(amount)


@dataclass(frozen=True, slots=True)
class Counted:
    """A counter on one line of a folded list: its id, what it says (``mem 256GiB``, or
    ``mem 256GiB → 512GiB``) and what follows on the line (the plan's provider, reason)."""

    entry: str
    what: str
    tail: str = ""


def counter_what(entry_id: str, before: object, after: object) -> str:
    """``mem 256GiB``, ``mem 256GiB → 512GiB`` (``before`` None: added; ``after``: gone)."""
    name = entry_id.removeprefix("counter/").partition("@")[0]
    if before is None or after is None:
        return f"{name} {amount_text(name, after if before is None else before)}"
    return f"{name} {amount_text(name, before)} → {amount_text(name, after)}"


def _counter_order(c: Counted) -> tuple[bool, str]:
    name = c.entry.removeprefix("counter/").partition("@")[0]
    return name not in COUNT_COUNTERS, name  # counts first: "slots 64, mem 256GiB"


def fold_counters(counted: Iterable[Counted]) -> list[tuple[str, str, tuple[str, ...]]]:
    """Counters at hosts gathered per host, and the hosts with the same counters, amounts and
    tail folded into one line (``counters of host/cn[0001-0500]: slots 64, mem 256GiB``: not
    read as creating the hosts), in order of
    first appearance, as (line, tail, the counter ids it shows); a counter elsewhere has a
    line of its own (``counter/capacity@volume/shared: 500TiB``)."""
    hosts: dict[str, list[Counted]] = {}
    order: list[str | Counted] = []
    for c in counted:
        location = c.entry.partition("@")[2]
        if not location.startswith("host/"):
            order.append(c)
            continue
        if location not in hosts:
            order.append(location)
        hosts.setdefault(location, []).append(c)
    lines: dict[tuple[tuple[str, ...], tuple[str, ...]], tuple[list[str], list[str]]] = {}
    out: list[tuple[tuple[str, ...], tuple[str, ...]] | Counted] = []
    for item in order:
        if isinstance(item, Counted):
            out.append(item)
            continue
        listed = sorted(hosts[item], key=_counter_order)
        key = (tuple(c.what for c in listed), tuple(dict.fromkeys(c.tail for c in listed)))
        if key not in lines:
            out.append(key)
        held, ids = lines.setdefault(key, ([], []))
        held.append(item)
        ids.extend(c.entry for c in listed)
    return [(f"{shorten(item.entry)}: {item.what.partition(' ')[2]}", item.tail, (item.entry,))
            if isinstance(item, Counted) else
            (f"counters of {shorten(fold_subjects(lines[item][0]), TEXT_LIMIT)}: "
             f"{', '.join(item[0])}",
             "; ".join(item[1]), tuple(lines[item][1])) for item in out]


def change_lines(action: Action) -> list[str]:
    """``path: before → after`` per changed field."""
    return [f"{shorten(c.path)}: {value(c.before)} → {value(c.after)}" for c in action.changes]


def action_line(action: Action) -> str:
    tag = "  (destructive)" if action.destructive else ""
    provider = f"  [{shorten(action.provider)}]" if action.provider else ""
    return (f"{action.verb:<8} {shorten(action.entry)}{provider}  "
            f"{shorten(action.reason, TEXT_LIMIT)}{tag}")


@dataclass(frozen=True, slots=True)
class ActionGroup:
    """Actions of one verb on one kind at one provider (and, for hosts, in one host group),
    as a reviewer reads them together."""

    verb: Verb
    kind: str
    provider: str | None
    host_group: str | None
    actions: tuple[Action, ...]

    def line(self) -> str:
        """``- release 3 host [ctl]: host/cn[04-05] (group cpu)``: ids folded as hostlists."""
        provider = f" [{shorten(self.provider)}]" if self.provider else ""
        folded = shorten(fold_subjects(a.entry for a in self.actions), TEXT_LIMIT)
        group = f" (group {shorten(self.host_group)})" if self.host_group else ""
        return (f"{symbol(self.verb)} {self.verb} {len(self.actions)} {shorten(self.kind)}"
                f"{provider}: {folded}{group}")


def _host_group(action: Action) -> str:
    """The host group a host belongs to (its ``group`` attribute), "" for other entries."""
    entry = action.after if action.after is not None else action.before
    attributes = (entry or {}).get("attributes")
    group = attributes.get("group") if isinstance(attributes, dict) else None
    return group if isinstance(group, str) else ""


def _urgency(verb: Verb) -> tuple[bool, bool, bool]:
    """Destroys first, then removals counted as changes (drain), changes, and adds last."""
    return (verb.group is not Group.DESTROY, not verb.removes, verb.group is Group.ADD)


def group_actions(actions: Sequence[Action]) -> list[ActionGroup]:
    """The actions by verb, kind, provider and host group, destroys first; apply order
    within each."""
    groups: dict[tuple[Verb, str, str, str], list[Action]] = {}
    for a in actions:
        groups.setdefault((a.verb, a.kind, a.provider or "", _host_group(a)), []).append(a)
    order = list(Verb)
    keys = sorted(groups, key=lambda k: (_urgency(k[0]), k[1], order.index(k[0]), k[2:]))
    return [ActionGroup(verb, kind, provider or None, host or None,
                        tuple(groups[verb, kind, provider, host]))
            for verb, kind, provider, host in keys]


def note_line(note: Note) -> str:
    provider = f"  [{shorten(note.provider)}]" if note.provider else ""
    return f"{shorten(note.entry)}{provider}  {shorten(note.reason, TEXT_LIMIT)}"


def unknown_groups(notes: Iterable[Note]) -> list[tuple[str, str, list[str]]]:
    """(provider, reason, entry ids) of the unknown entries, by provider and reason."""
    groups: dict[tuple[str, str], list[str]] = {}
    for n in notes:
        groups.setdefault((n.provider or "(none)", n.reason), []).append(n.entry)
    return [(p, why, ids) for (p, why), ids in sorted(groups.items())]


def unknown_by_provider(notes: Iterable[Note]) -> list[tuple[str, str, str]]:
    """(provider, what, reason): one line per provider and reason, not per entry. Entries
    of a silent provider share its reason; an entry unknown because of what its decision
    read has a reason of its own, and the line names it (``what`` is the entry id then)."""
    return [(shorten(p), shorten(ids[0]) if len(ids) == 1 else entries(len(ids)),
             shorten(why, TEXT_LIMIT)) for p, why, ids in unknown_groups(notes)]


def outcome_line(plan: Plan) -> str | None:
    """What a plan without actions says instead of its summary line (None: it has actions,
    or unknown entries that may well differ)."""
    if plan.actions or plan.unknown:
        return None
    if plan.reported:
        return (f"No actions to apply; what is reported above ({entries(plan.reported)}: "
                "orphans, drift not corrected) is not acted on.")
    found = sum(1 for p in plan.problems if p.code == FOUND_NOT_MADE)
    if found:  # found untagged and different: not a match, though nothing is planned
        return (f"No actions to apply, yet not in sync: warning {FOUND_NOT_MADE} names "
                f"{entries(found)} made by hand, left as found until adopted.")
    return "No changes. The live supply matches the configuration."


def summary_line(plan: Plan) -> str:
    s = plan.summary
    return (f"Plan: {s.get('add', 0)} to add, {s.get('change', 0)} to change, "
            f"{s.get('destroy', 0)} to destroy.")
