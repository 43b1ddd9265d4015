"""Which actions an apply may run at all: destroy permission and protected entries.

A destructive action (release, evict, delete, reject) runs only with the destroy
permission; one on a protected entry never runs. Either way it is skipped, with its
dependents, and reported with why — the rest of the plan still applies.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

from compiler.core.problems import Problem, Severity
from reconciler.apply import codes
from reconciler.plan.model import Action, Plan


def gate(action: Action, *, allow_destroy: bool,
         protected: Callable[[str], bool]) -> tuple[str, str] | None:
    """``(code, why)`` when ``action`` must not run, else None."""
    if not (action.destructive or action.verb.needs_destroy):  # the verb decides too
        return None
    if protected(action.entry):
        return codes.SKIP_PROTECTED, f"{action.entry} is protected (site.protected): it is " \
            f"never destroyed, so '{action.verb}' does not run"
    if not allow_destroy:
        return codes.SKIP_DESTROY, f"'{action.verb}' is destructive and this apply has no " \
            "destroy permission"
    return None


def blocking(plan: Plan, gated_entries: Collection[str]) -> Sequence[Problem]:
    """The plan's guard errors, except those about entries that are skipped anyway."""
    return [p for p in plan.problems
            if p.severity is Severity.ERROR and p.subject not in gated_entries]
