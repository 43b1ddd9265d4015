"""A plan as it may be shown or saved: what a provider echoed of a secret is masked.

Entries hold secrets only by reference; if a provider reports a literal anyway (under a
secret key, or a resolved secret inside any value), ``xce-plan`` masks it once, here, before
rendering and before saving, so every rendering and the plan file hold the same masked plan.
What a secret is, and how it is masked, lives in ``compiler.core.secrets``.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.core.secrets import Redactor
from reconciler.plan.model import Action, FieldChange, Plan


def _action(a: Action, r: Redactor) -> Action:
    changes = tuple(FieldChange(c.path, r.value(c.path, c.before), r.value(c.path, c.after))
                    for c in a.changes)
    return replace(a, before=r.value("", a.before), after=r.value("", a.after),
                   changes=changes, reason=r.text(a.reason))


def redacted(plan: Plan, redactor: Redactor | None = None) -> Plan:
    """``plan`` with every action's before, after, changed values and reason redacted."""
    r = redactor or Redactor()
    return replace(plan, actions=tuple(_action(a, r) for a in plan.actions))
