"""Findings from the plan: the planner's decisions, classified, never a second comparison.

Every difference the report shows is one the planner decided on: an action (the plan
corrects it) or a note (orphans, drift reported, co-managed, unknown). Field detail is the
action's own changes, or, for a note, the planner's ``field_changes`` on the two entries —
one definition of what differs. Values and texts are redacted here, through
``compiler.core.secrets``, before any rendering or the ledger sees them.
"""

from __future__ import annotations

import shlex
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.secrets import Redactor
from reconciler.drift.model import Category, FieldDiff, Finding
from reconciler.drift.steps import FIX_PLAN, next_step
from reconciler.plan.model import Action, Note, Plan
from reconciler.planner.compare import field_changes

_NOTED = (("orphans", Category.ORPHAN), ("drift_reported", Category.NOT_CORRECTED),
          ("co_managed", Category.CO_MANAGED))


@dataclass(frozen=True, slots=True)
class Fixer:
    """How the command that corrects a finding reads: ``xce-plan`` on the same site (or
    compiled map) for just that entry, then ``xce-apply`` of that plan."""

    site_args: tuple[str, ...]  # ("site-config",) or ("--desired", "build/supply-map.json")

    def command(self, action: Action) -> str:
        plan = ["xce-plan", *self.site_args, "--target", action.entry, "--out", FIX_PLAN]
        apply = ["xce-apply", *(["--allow-destroy"] if action.destructive else []), FIX_PLAN]
        return f"{shlex.join(plan)} && {shlex.join(apply)}"

    def step(self, category: Category, entry: str, kind: str, provider: str | None,
             reason: str) -> str:
        """What to do next about a finding the plan does not correct (steps.py)."""
        return next_step(category, entry, kind, provider, reason, self.site_args)


def _category(action: Action) -> Category:
    if action.verb.removes:
        return Category.EXTRA
    if action.verb.creates and action.before is None:
        return Category.MISSING
    return Category.DIFFERS


@dataclass(frozen=True, slots=True)
class _Maps:
    desired: SupplyMap
    live: SupplyMap
    redact: Redactor

    def states(self, entry_id: str) -> tuple[str | None, str | None]:
        d, lv = self.desired.entries.get(entry_id), self.live.entries.get(entry_id)
        return (None if d is None else d.state), (None if lv is None else lv.state)

    def diffs(self, pairs: Iterable[tuple[str, Any, Any]]) -> tuple[FieldDiff, ...]:
        r = self.redact
        return tuple(FieldDiff(path, r.value(path, d), r.value(path, lv)) for path, d, lv in pairs)


def _action(m: _Maps, fixer: Fixer, a: Action) -> Finding:
    desired_state, live_state = m.states(a.entry)
    return Finding(
        _category(a), a.entry, a.kind, a.provider, m.redact.text(a.reason),
        desired_state, live_state, m.diffs((c.path, c.after, c.before) for c in a.changes),
        fix=fixer.command(a))


def _note_pairs(desired: Entry | None, live: Entry | None) -> Iterator[tuple[str, Any, Any]]:
    """What differs between the two entries a note is about, by the planner's comparison;
    an entry that another provider reports than config binds it to says so too."""
    if desired is None or live is None:
        return
    if live.provider is not None and live.provider != desired.provider:
        yield "provider", desired.provider, live.provider
    yield from ((c.path, c.after, c.before) for c in field_changes(desired, live))


def _note(m: _Maps, category: Category, n: Note) -> Finding:
    d, lv = m.desired.entries.get(n.entry), m.live.entries.get(n.entry)
    return Finding(
        category, n.entry, n.kind, n.provider, m.redact.text(n.reason),
        None if d is None else d.state, None if lv is None else lv.state,
        m.diffs(_note_pairs(d, lv)))


def _unknown(m: _Maps, notes: Sequence[Note]) -> list[Finding]:
    """One finding per provider that did not report (the entries it holds are unknown,
    never absent), and one per entry unknown for a reason of its own (an id two providers
    report, a decision resting on an unknown entry)."""
    silent = m.live.unknown
    held = Counter(n.provider for n in notes if n.provider in silent)
    found = [Finding(Category.UNKNOWN, f"provider/{name}", "provider", name,
                     m.redact.text(f"did not report: {why}"), count=held[name])
             for name, why in sorted(silent.items())]
    for n in notes:
        if n.provider not in silent:
            desired_state, live_state = m.states(n.entry)
            found.append(Finding(Category.UNKNOWN, n.entry, n.kind, n.provider,
                                 m.redact.text(n.reason), desired_state, live_state))
    return found


def findings(plan: Plan, desired: SupplyMap, live: SupplyMap, fixer: Fixer,
             redact: Redactor) -> tuple[Finding, ...]:
    """Every drift of ``plan`` (made from ``desired`` and ``live``), sorted by kind,
    provider, entry and category. Pending entries (waiting for a drain) are not drift."""
    m = _Maps(desired, live, redact)
    found = [_action(m, fixer, a) for a in plan.actions]
    for name, category in _NOTED:
        found += [_note(m, category, n) for n in getattr(plan, name)]
    found += _unknown(m, plan.unknown)
    stepped = (f if f.fix is not None or f.category is Category.CO_MANAGED else replace(
        f, step=fixer.step(f.category, f.entry, f.kind, f.provider, f.reason)) for f in found)
    return tuple(sorted(stepped, key=lambda f: (f.kind, f.provider or "", f.entry, f.category)))
