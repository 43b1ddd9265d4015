"""What every plan rendering shares: symbols per verb, value formatting, grouped notes."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

import orjson

from reconciler.plan_model import ADD_VERBS, CHANGE_VERBS, Action, Note, Plan
from reconciler.plan_render.redact import redact_path

SYMBOL = {**dict.fromkeys(ADD_VERBS, "+"), **dict.fromkeys(CHANGE_VERBS, "~")}
NOTE_TITLES = {
    "orphans": "Orphans",
    "drift_reported": "Drift reported, not acted on",
    "pending": "Pending (waiting, no action)",
    "co_managed": "Co-managed (not ours, never touched)",
}


def entries(n: int) -> str:
    return f"{n} entry" if n == 1 else f"{n} entries"


def symbol(verb: str) -> str:
    return SYMBOL.get(verb, "-")


def value(v: object) -> str:
    return orjson.dumps(v, option=orjson.OPT_SORT_KEYS).decode()


def change_lines(action: Action) -> list[str]:
    """``path: before → after`` per changed field, secrets redacted."""
    return [
        f"{c.path}: {value(redact_path(c.path, c.before))} → "
        f"{value(redact_path(c.path, c.after))}"
        for c in action.changes
    ]


def action_line(action: Action) -> str:
    tag = "  (destructive)" if action.destructive else ""
    provider = f"  [{action.provider}]" if action.provider else ""
    return f"{action.action:<8} {action.entry}{provider}  {action.reason}{tag}"


def note_line(note: Note) -> str:
    provider = f"  [{note.provider}]" if note.provider else ""
    return f"{note.entry}{provider}  {note.reason}"


def unknown_by_provider(notes: Iterable[Note]) -> list[tuple[str, int, str]]:
    """(provider, entry count, reason): one line per silent provider, not per entry."""
    counts: Counter[str] = Counter()
    reasons: dict[str, str] = {}
    for n in notes:
        name = n.provider or "(none)"
        counts[name] += 1
        reasons.setdefault(name, n.reason)
    return [(p, counts[p], reasons[p]) for p in sorted(counts)]


def summary_line(plan: Plan) -> str:
    s = plan.summary
    return (f"Plan: {s.get('add', 0)} to add, {s.get('change', 0)} to change, "
            f"{s.get('destroy', 0)} to destroy.")
