"""A plan as it may be shown or saved: what a provider echoed of a secret is masked.

Entries hold secrets only by reference; if a provider reports a literal anyway (under a
secret key, or a resolved secret inside any value), ``xce-plan`` masks it once, here, before
rendering and before saving, so every rendering and the plan file hold the same masked plan.
What a secret is, and how it is masked, lives in ``compiler.core.secrets``. Most actions hold
nothing to mask: ``Redactor.shows`` says so of each value without copying anything, and
such an action is kept as it is, not copied.
"""

from __future__ import annotations

from dataclasses import replace
from operator import is_

from compiler.core.secrets import Redactor
from reconciler.plan.model import Action, FieldChange, Plan


def _change(c: FieldChange, r: Redactor) -> FieldChange:
    before, after = r.value(c.path, c.before), r.value(c.path, c.after)
    return c if before is c.before and after is c.after else FieldChange(c.path, before, after)


def _shown(a: Action, r: Redactor) -> bool:
    """Whether ``a`` holds nothing to hide: the test alone, without the copies."""
    return (r.shows(a.before) and r.shows(a.after) and r.text(a.reason) is a.reason
            and (not a.changes or all(r.shows(c.before, c.path) and r.shows(c.after, c.path)
                                      for c in a.changes)))


def _action(a: Action, r: Redactor) -> Action:
    if _shown(a, r):
        return a  # the usual action: nothing to hide, not copied
    changes = tuple(_change(c, r) for c in a.changes) if a.changes else ()
    before, after, reason = r.value("", a.before), r.value("", a.after), r.text(a.reason)
    if (before is a.before and after is a.after and reason is a.reason
            and all(map(is_, changes, a.changes))):
        return a  # nothing to hide: the action itself, not a copy
    return replace(a, before=before, after=after, changes=changes, reason=reason)


def redacted(plan: Plan, redactor: Redactor | None = None) -> Plan:
    """``plan`` with every action's before, after, changed values and reason redacted."""
    r = redactor or Redactor()
    return replace(plan, actions=tuple(_action(a, r) for a in plan.actions))
