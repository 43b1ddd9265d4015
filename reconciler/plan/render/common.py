"""What every plan rendering shares: symbols per verb, value formatting, grouped notes."""

from __future__ import annotations

from collections.abc import Iterable

import orjson

from reconciler.plan.model import Action, Group, Note, Plan, Verb

SYMBOL = {Group.ADD: "+", Group.CHANGE: "~", Group.DESTROY: "-"}
NOTE_TITLES = {
    "orphans": "Orphans",
    "drift_reported": "Drift reported, not acted on",
    "pending": "Pending (waiting, no action)",
    "co_managed": "Co-managed (not ours, never touched)",
}


# Longest value shown whole: a live id or value may be huge (a provider's bug or a hostile
# inventory), and a plan must stay readable and small. The plan JSON and file keep it all.
DISPLAY_LIMIT = 200
TEXT_LIMIT = 1000  # reasons and messages: they name ids and carry a provider's words


def shorten(text: str, limit: int = DISPLAY_LIMIT) -> str:
    """``text`` if short enough, else its start and end around how much was left out."""
    if len(text) <= limit:
        return text
    head, tail = text[: limit * 3 // 4], text[-(limit // 8):]
    return f"{head}…[{len(text) - len(head) - len(tail)} more characters]…{tail}"


def entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def symbol(verb: Verb) -> str:
    return SYMBOL[verb.group]


def value(v: object) -> str:
    return shorten(orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode())


def change_lines(action: Action) -> list[str]:
    """``path: before → after`` per changed field."""
    return [f"{shorten(c.path)}: {value(c.before)} → {value(c.after)}" for c in action.changes]


def action_line(action: Action) -> str:
    tag = "  (destructive)" if action.destructive else ""
    provider = f"  [{shorten(action.provider)}]" if action.provider else ""
    return (f"{action.verb:<8} {shorten(action.entry)}{provider}  "
            f"{shorten(action.reason, TEXT_LIMIT)}{tag}")


def note_line(note: Note) -> str:
    provider = f"  [{shorten(note.provider)}]" if note.provider else ""
    return f"{shorten(note.entry)}{provider}  {shorten(note.reason, TEXT_LIMIT)}"


def unknown_by_provider(notes: Iterable[Note]) -> list[tuple[str, str, str]]:
    """(provider, what, reason): one line per provider and reason, not per entry. Entries
    of a silent provider share its reason; an entry unknown because of what its decision
    read has a reason of its own, and the line names it (``what`` is the entry id then)."""
    groups: dict[tuple[str, str], list[str]] = {}
    for n in notes:
        groups.setdefault((n.provider or "(none)", n.reason), []).append(n.entry)
    return [(shorten(p), shorten(ids[0]) if len(ids) == 1 else entries(len(ids)),
             shorten(why, TEXT_LIMIT)) for (p, why), ids in sorted(groups.items())]


def outcome_line(plan: Plan) -> str | None:
    """What a plan without actions says instead of its summary line (None: it has actions,
    or unknown entries that may well differ)."""
    if plan.actions or plan.unknown:
        return None
    if plan.reported:
        return (f"No actions to apply; what is reported above ({entries(plan.reported)}: "
                "orphans, drift not corrected) is not acted on.")
    return "No changes. The live supply matches the configuration."


def summary_line(plan: Plan) -> str:
    s = plan.summary
    return (f"Plan: {s.get('add', 0)} to add, {s.get('change', 0)} to change, "
            f"{s.get('destroy', 0)} to destroy.")
