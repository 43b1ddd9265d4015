"""Safety guards (octoDNS thresholds, Argo CD's allowEmpty): refuse a plan that looks wrong.

A plan that removes a large part of a kind, changes more than the site allows, recreates
most of a provider's entries (its inventory came back empty or shrank) or touches a
protected entry is an error; ``force`` turns the first three into warnings, while a
protected entry is never destroyed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence

from compiler.problems import Problem, Severity
from reconciler.plan import codes
from reconciler.plan.model import Action
from reconciler.planner.settings import PlanSettings


def _problem(code: str, subject: str, message: str, force: bool,
             hint: str | None = None) -> Problem:
    severity = Severity.WARNING if force else Severity.ERROR
    return codes.problem(code, message, subject, hint, severity)


def _removal_share(actions: Sequence[Action], settings: PlanSettings,
                   live_per_kind: Mapping[str, int], force: bool) -> list[Problem]:
    """XCE751: a plan that removes more of a kind than max_delete_fraction allows."""
    safety = settings.safety
    out: list[Problem] = []
    removals = Counter(a.kind for a in actions if a.verb.removes)
    for kind, count in sorted(removals.items()):
        live_count = live_per_kind.get(kind, 0)
        limit = safety.delete_fraction(kind)
        if live_count >= safety.min_entries and count / live_count > limit:
            out.append(_problem(
                codes.REMOVES_TOO_MUCH, kind, f"the plan removes {count} of {live_count} live "
                f"{kind} entries ({count / live_count:.0%}), more than max_delete_fraction "
                f"{limit:.0%}", force,
                f"raise site.safety.max_delete_fraction.{kind}, or {codes.FORCE}"))
    return out


def _protected(actions: Sequence[Action], settings: PlanSettings) -> list[Problem]:
    """XCE752: a removal of a protected entry, which ``force`` does not allow either."""
    return [codes.problem(codes.PROTECTED, f"the plan would {a.verb} protected entry {a.entry}",
                          a.entry)
            for a in actions if a.verb.removes and settings.is_protected(a.entry)]


def _inventory(actions: Sequence[Action], settings: PlanSettings,
               desired_per_provider: Mapping[str | None, int],
               live_per_provider: Mapping[str | None, int], skip: Callable[[str | None], bool],
               force: bool) -> list[Problem]:
    """XCE753/XCE754: a provider that reports nothing, or so little that the plan would
    create most of what is desired there; ``skip`` names providers not to judge."""
    safety = settings.safety
    out: list[Problem] = []
    created = Counter(a.provider for a in actions if a.verb.creates)
    for provider, wanted in sorted(desired_per_provider.items(), key=lambda kv: str(kv[0])):
        if wanted < safety.min_entries or skip(provider):
            continue
        name = provider or "(no provider)"
        if live_per_provider.get(provider, 0) == 0:
            out.append(_problem(
                codes.INVENTORY_EMPTY, name, f"provider {name} reports no entries while the "
                f"desired map has {wanted} there; refusing the plan rather than recreating "
                "them all", force))
            continue
        count = created.get(provider, 0)
        if count / wanted > safety.max_create_fraction:
            out.append(_problem(
                codes.INVENTORY_SHRANK, name, f"the plan would create {count} of the {wanted} "
                f"entries desired at provider {name} ({count / wanted:.0%}), more than "
                f"max_create_fraction {safety.max_create_fraction:.0%}: its inventory "
                "shrank sharply", force))
    return out


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
            codes.TOO_MANY_CHANGES, "plan", f"the plan has {len(actions)} actions, more than "
            f"safety.max_changes ({safety.max_changes})", force))

    def skip(provider: str | None) -> bool:
        """Not judged: a provider whose inventory is unknown (nothing is planned there), and
        a new site's or a new provider's, whose first apply creates everything."""
        generation = (generations or {}).get(provider or "")
        return (new_site or provider in unknown
                or (generation is not None and generation <= 1))

    return [*out, *_removal_share(actions, settings, live_per_kind, force),
            *_protected(actions, settings),
            *_inventory(actions, settings, desired_per_provider, live_per_provider, skip, force)]
