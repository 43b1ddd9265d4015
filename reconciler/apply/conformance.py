"""A saved plan applies only what its config asks: the config is planned again and compared.

The signature shows who made a plan file (``reconciler/plan/signature.py``); this shows that
what it asks is what the config it names asks. Before anything of a saved plan is applied,
the site's desired map (whose digest the plan names) is planned again against the live map
just gathered — the entries the plan touched are as it saw them, or the stale check refused
it — at the plan's own clock and with its own destroy permission. Every action of the plan
must be an action of that plan, field by field: what it writes (``after``), what it expects
(``before``), its provider, kind, destructiveness and the provisioning failure it records.
A removal is thereby one the planner's rules make (an entry config no longer has, a drain or
release of a host, the eviction of an expired job directory), and not any other. A plan
made for some ``--target``s is a part of that plan, so it is checked the same way; entries
that changed since planning outside the plan only add actions, which are not asked for.
Any difference refuses the whole plan (XCE774, XCE775), naming the action and the field.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import orjson

from compiler.core.problems import Problem, UserError
from reconciler.apply import codes as apply_codes
from reconciler.pipeline import Desired, Live, plan_for
from reconciler.plan import codes
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.file import SavedPlan
from reconciler.plan.model import Action, Plan
from reconciler.plan.redact import redacted
from reconciler.planner.guards import growth_still_accepted
from reconciler.planner.kinds import DATA_KINDS

SHOWN = 50  # differing actions named one by one; the rest are counted
_VALUE_CHARS = 80  # of a value quoted in a message
_FIELDS = ("kind", "provider", "destructive", "before", "after", "failed_attempt", "changes")
_MISSING: Any = object()


def check_conformance(saved: SavedPlan, desired: Desired, live: Live, *, planned_at: float,
                      applied_before: bool | None,
                      attempts: Mapping[str, ProvisionAttempts]) -> None:
    """Raise UserError unless every action of ``saved`` is one the config asks for now."""
    again = redacted(plan_for(desired, live, now=planned_at, destroy=saved.destroy, force=True,
                              applied_before=applied_before, attempts=attempts),
                     desired.bindings.redactor())
    problems = [*_actions(saved.plan, again, desired), *_destroy(saved, again),
                *_resets(saved.plan, again), *growth_still_accepted(saved.plan, again)]
    if problems:
        more = len(problems) - SHOWN
        shown = problems[:SHOWN]
        if more > 0:
            shown.append(codes.problem(codes.NOT_IN_CONFIG, f"… and {more} more actions "
                                       "differ from what the config asks", "plan"))
        raise UserError(shown)


def _actions(plan: Plan, again: Plan, desired: Desired) -> Iterator[Problem]:
    wanted = {a.id: a for a in again.actions}
    unknown = {n.entry: n.reason for n in again.unknown}
    for action in plan.actions:
        expected = wanted.get(action.id)
        if expected is not None:
            yield from _fields(action, expected)
        elif action.entry in unknown:
            yield apply_codes.problem(
                apply_codes.CANNOT_VERIFY, f"'{action.verb} {action.entry}' cannot be checked "
                f"against the config: {unknown[action.entry]}", action.entry)
        else:
            yield _not_asked(action, again, desired)


def _not_asked(action: Action, again: Plan, desired: Desired) -> Problem:
    """An action the plan of the config does not have: say what that plan does instead."""
    instead = [f"'{a.verb}'" for a in again.actions if a.entry == action.entry]
    if action.entry not in desired.supply.entries:
        where = f"{action.entry} is not in the desired map"
        does = (f"; planned again, the config's plan has {' and '.join(instead)} for it"
                if instead else ", and planned again, the config's plan has no action on it")
    else:
        where = "planned again from its config and the live map"
        does = (f", the plan has {' and '.join(instead)} for {action.entry} instead"
                if instead else f", the plan has no action on {action.entry}")
    return codes.problem(codes.NOT_IN_CONFIG, f"the plan asks to {action.verb} "
                         f"{action.entry}, which its config does not ask: {where}{does}",
                         action.entry)


def _fields(action: Action, expected: Action) -> Iterator[Problem]:
    for name in _FIELDS:
        path = _difference(_json(getattr(action, name)), _json(getattr(expected, name)), name)
        if path is not None:
            ours, theirs = (_at(_json(getattr(a, name)), path) for a in (action, expected))
            yield codes.problem(
                codes.NOT_IN_CONFIG, f"'{action.verb} {action.entry}': the plan has {path} "
                f"= {_quoted(ours)}, but its config asks {_quoted(theirs)}", action.entry)
            return  # the first field that differs names the tampering; one per action


def _json(value: Any) -> Any:
    """Plain JSON values, so a tuple and a list (or a dataclass and its JSON) compare."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _json(v) for k, v in value.items()}
    return value


def _difference(ours: Any, theirs: Any, path: str) -> str | None:
    """The dotted path of the first field where the two differ, or None."""
    if isinstance(ours, Mapping) and isinstance(theirs, Mapping):
        for key in sorted({*ours, *theirs}):
            found = _difference(ours.get(key, _MISSING), theirs.get(key, _MISSING),
                                f"{path}.{key}")
            if found is not None:
                return found
        return None
    return None if ours == theirs else path


def _at(doc: Any, path: str) -> Any:
    for key in path.split(".")[1:]:
        doc = doc.get(key, _MISSING) if isinstance(doc, Mapping) else _MISSING
    return doc


def _quoted(value: Any) -> str:
    if value is _MISSING:
        return "nothing"
    text = orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    return text if len(text) <= _VALUE_CHARS else f"{text[:_VALUE_CHARS - 1]}…"


def _destroy(saved: SavedPlan, again: Plan) -> Sequence[Problem]:
    """A destroy permission the plan was not made with: it reports users' data that the
    config's plan with the permission deletes (a plan made with it acts on them)."""
    if not saved.destroy:
        return []
    noted = {n.entry: n.reason for notes in saved.plan.notes().values() for n in notes}
    acted = {a.entry for a in saved.plan.actions}
    withheld = sorted(a.entry for a in again.actions
                      if a.verb.needs_destroy and a.kind in DATA_KINDS
                      and a.entry in noted and a.entry not in acted)
    if not withheld:
        return []
    first = withheld[0]
    return [codes.problem(
        codes.DESTROY_NOT_GIVEN, f"the plan grants the destroy permission, but it was made "
        f"without it: it reports {len(withheld)} entr{'y' if len(withheld) == 1 else 'ies'} "
        f"of users' data that a plan with the permission deletes ({first}: {noted[first]})",
        "plan")]


def _resets(plan: Plan, again: Plan) -> Iterator[Problem]:
    """Recorded provisioning failures the plan would forget and the config's plan keeps."""
    for entry, instance in sorted(plan.attempts_reset.items()):
        if again.attempts_reset.get(entry) != instance:
            yield codes.problem(codes.NOT_IN_CONFIG, f"the plan forgets the provisioning "
                                f"failures recorded for {entry} (attempts_reset), which its "
                                "config's plan keeps", entry)
