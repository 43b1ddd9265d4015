"""Safety guards (octoDNS thresholds, Argo CD's allowEmpty): refuse a plan that looks wrong.

A plan that removes a large part of a kind, changes more than the site allows, recreates
most of a provider's entries (its inventory came back empty or shrank) or touches a
protected entry is an error; ``force`` turns the first three into warnings, while a
protected entry is never destroyed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence

from compiler.problems import Problem, Severity
from reconciler.plan.model import Action
from reconciler.planner.kinds import REMOVAL_VERBS
from reconciler.planner.settings import PlanSettings

_FORCE = "re-run with --force if this is intended"
_ADDS = frozenset({"create", "stage"})


def _problem(code: str, subject: str, message: str, hint: str, force: bool) -> Problem:
    severity = Severity.WARNING if force else Severity.ERROR
    return Problem(code, message, hint, None, severity, subject)


def check_guards(
    actions: Sequence[Action],
    settings: PlanSettings,
    *,
    desired_per_provider: Mapping[str | None, int],
    live_per_provider: Mapping[str | None, int],
    live_per_kind: Mapping[str, int],
    unknown: Mapping[str, str],
    force: bool,
    generations: Mapping[str, int] | None = None,
    new_site: bool = False,
) -> list[Problem]:
    """Guard violations of a plan; ``generations`` tells a new provider (generation 0 or 1:
    it never held anything) from one that lost what it held; ``new_site`` (the state store
    never applied this site) turns the empty/shrunk-inventory guards off."""
    safety = settings.safety
    out: list[Problem] = []
    if safety.max_changes is not None and len(actions) > safety.max_changes:
        out.append(_problem(
            "XCE750", "plan", f"the plan has {len(actions)} actions, more than "
            f"safety.max_changes ({safety.max_changes})",
            f"split the change, raise site.safety.max_changes, or {_FORCE}", force))

    removals = Counter(a.kind for a in actions if a.action in REMOVAL_VERBS)
    for kind, count in sorted(removals.items()):
        live_count = live_per_kind.get(kind, 0)
        limit = safety.delete_fraction(kind)
        if live_count >= safety.min_entries and count / live_count > limit:
            out.append(_problem(
                "XCE751", kind, f"the plan removes {count} of {live_count} live {kind} "
                f"entries ({count / live_count:.0%}), more than max_delete_fraction "
                f"{limit:.0%}", f"raise site.safety.max_delete_fraction.{kind}, or {_FORCE}",
                force))

    for action in actions:
        if action.action in REMOVAL_VERBS and settings.is_protected(action.entry):
            out.append(Problem(
                "XCE752", f"the plan would {action.action} protected entry {action.entry}",
                "protected entries are never removed: take it off site.protected first",
                subject=action.entry))

    adds = Counter(a.provider for a in actions if a.action in _ADDS)
    for provider, wanted in sorted(desired_per_provider.items(), key=lambda kv: str(kv[0])):
        if new_site or wanted < safety.min_entries or provider in unknown:
            continue
        generation = (generations or {}).get(provider or "")
        if generation is not None and generation <= 1:
            continue  # a new provider: creating everything there is its first apply
        name = provider or "(no provider)"
        if live_per_provider.get(provider, 0) == 0:
            out.append(_problem(
                "XCE753", name, f"provider {name} reports no entries while the desired map "
                f"has {wanted} there; refusing the plan rather than recreating them all",
                f"check that the provider answers with its real inventory; if it is new, "
                f"{_FORCE}", force))
            continue
        created = adds.get(provider, 0)
        if created / wanted > safety.max_create_fraction:
            out.append(_problem(
                "XCE754", name, f"the plan would create {created} of the {wanted} entries "
                f"desired at provider {name} ({created / wanted:.0%}), more than "
                f"max_create_fraction {safety.max_create_fraction:.0%}: its inventory "
                "shrank sharply", f"check the provider's inventory; raise "
                f"site.safety.max_create_fraction, or {_FORCE}", force))
    return out
