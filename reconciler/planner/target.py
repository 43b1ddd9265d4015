"""``--target ID …``: keep the matching actions plus every action they depend on."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence

from compiler.contract.supply_map import Entry
from compiler.core.globs import glob_matcher
from compiler.core.problems import Problem, Severity
from reconciler.plan import codes
from reconciler.plan.model import Action, Note

_MAGIC = frozenset("*?[")


def _unmatched(globs: Collection[str], entries: Iterable[Mapping[str, Entry]]) -> list[str]:
    maps = list(entries)
    out = []
    for glob in sorted(globs):
        if _MAGIC.isdisjoint(glob):
            found = any(glob in m for m in maps)
        else:
            rx = glob_matcher([glob])
            assert rx is not None
            found = any(rx.match(k) for m in maps for k in m)
        if not found:
            out.append(glob)
    return out


def select(
    actions: Sequence[Action],
    notes: Mapping[str, list[Note]],
    globs: Collection[str],
    maps: Iterable[Mapping[str, Entry]],
) -> tuple[list[Action], dict[str, list[Note]], list[Problem]]:
    """Actions on matching entries and their dependencies (transitively); matching notes."""
    rx = glob_matcher(globs)
    assert rx is not None
    by_id = {a.id: a for a in actions}
    keep: set[str] = set()
    stack = [a.id for a in actions if rx.match(a.entry)]
    while stack:
        action_id = stack.pop()
        if action_id not in keep:
            keep.add(action_id)
            stack.extend(by_id[action_id].depends_on)
    chosen = [a for a in actions if a.id in keep]
    kept_notes = {name: [n for n in items if rx.match(n.entry)] for name, items in notes.items()}
    problems = [
        codes.problem(codes.TARGET_MATCHES_NOTHING,
                      f"--target {glob!r} matches no entry in the desired or live map", glob,
                      severity=Severity.WARNING)
        for glob in _unmatched(globs, maps)
    ]
    return chosen, kept_notes, problems
