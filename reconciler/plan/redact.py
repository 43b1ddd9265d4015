"""A plan as it may be shown or saved: what a provider echoed under a secret key is masked.

Entries hold secrets only by reference; if a provider reports a literal anyway, ``xce-plan``
masks it once, here, before rendering and before saving, so every rendering and the plan
file hold the same masked plan. The rule of what a secret is lives in ``compiler.secrets``.
"""

from __future__ import annotations

from dataclasses import replace

from compiler.secrets import redact_path, redact_value
from reconciler.plan.model import Action, FieldChange, Plan


def _action(a: Action) -> Action:
    changes = tuple(FieldChange(c.path, redact_path(c.path, c.before),
                                redact_path(c.path, c.after)) for c in a.changes)
    return replace(a, before=redact_value(a.before), after=redact_value(a.after),
                   changes=changes)


def redacted(plan: Plan) -> Plan:
    """``plan`` with every action's before, after and changed values redacted."""
    return replace(plan, actions=tuple(_action(a) for a in plan.actions))
