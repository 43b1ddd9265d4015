"""Safety guards (octoDNS thresholds, Argo CD's allowEmpty): refuse a plan that looks wrong.

A plan that removes a large part of a kind, changes more than the site allows, recreates
most of a provider's entries (its inventory came back empty or shrank) or touches a
protected entry is an error; ``force`` turns the first three into warnings, while a
protected entry is never destroyed.

A plan that creates most of a provider's entries because the config added them (``Growth``:
what ``xce-plan --base REV`` found added) is not an inventory that shrank: it is refused as
growth the config intends (XCE758), and ``accept_growth`` (``xce-plan --accept-growth``)
accepts it for this one plan, which records it; the site's settings stay as they are.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from compiler.contract.settings import PlanSettings
from compiler.core.problems import Problem, Severity
from reconciler.plan import codes
from reconciler.plan.model import Action, Plan, Verb

# the verbs that create, and those that remove, looked up once per action rather than
# through the properties
_CREATING = frozenset(verb for verb in Verb if verb.creates)
_REMOVING = frozenset(verb for verb in Verb if verb.removes)


@dataclass(frozen=True, slots=True)
class Growth:
    """What the config diff says the desired map gained: the ids of the entries the config
    added against ``label`` (``xce-plan --base REV``'s base), which the plan may create."""

    label: str
    added: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Creates:
    """One provider's share of the plan's creates, as the XCE754/XCE758 guard judges it."""

    name: str
    wanted: int  # entries desired there
    count: int  # entries the plan creates there
    grown: int  # of those, entries the config added (0 without a config diff)

    def share(self, fraction: float) -> str:
        return (f"the plan would create {self.count} of the {self.wanted} entries desired at "
                f"provider {self.name} ({self.count / self.wanted:.0%}), more than "
                f"max_create_fraction {fraction:.0%}")

    def lost(self, fraction: float) -> bool:
        """More is created than the config's growth explains: of what was desired before
        it, more than ``fraction`` is missing from the live inventory."""
        before = max(self.wanted - self.grown, 1)
        return (self.count - self.grown) / before > fraction


def _problem(code: str, subject: str, message: str, force: bool,
             hint: str | None = None) -> Problem:
    severity = Severity.WARNING if force else Severity.ERROR
    return codes.problem(code, message, subject, hint, severity)


def _removal_share(actions: Sequence[Action], settings: PlanSettings,
                   live_per_kind: Mapping[str, int], force: bool) -> list[Problem]:
    """XCE751: a plan that removes more of a kind than max_delete_fraction allows."""
    safety = settings.safety
    out: list[Problem] = []
    removals = Counter(a.kind for a in actions if a.verb in _REMOVING)
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
            for a in actions if a.verb in _REMOVING and settings.is_protected(a.entry)]


def _inventory(actions: Sequence[Action], settings: PlanSettings,
               desired_per_provider: Mapping[str | None, int],
               live_per_provider: Mapping[str | None, int], skip: Callable[[str | None], bool],
               force: bool, growth: Growth | None, accept: Collection[str]) -> list[Problem]:
    """XCE753/XCE754/XCE758: a provider that reports nothing, or so little that the plan
    would create most of what is desired there (unless the config's growth explains it);
    ``skip`` names providers not to judge; ``accept``: providers whose growth is accepted."""
    safety = settings.safety
    out: list[Problem] = []
    created = Counter(a.provider for a in actions if a.verb in _CREATING)
    added = growth.added if growth is not None else frozenset()
    grown = Counter(a.provider for a in actions if a.verb in _CREATING and a.entry in added)
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
        creates = _Creates(name, wanted, created.get(provider, 0), grown.get(provider, 0))
        if creates.count / wanted > safety.max_create_fraction:
            out.append(_created(creates, safety.max_create_fraction, growth,
                                name in accept, force))
    return out


def _created(creates: _Creates, fraction: float, growth: Growth | None, accepted: bool,
             force: bool) -> Problem:
    """XCE754 (the inventory shrank) or XCE758 (the config grew), for one provider."""
    name = creates.name
    if growth is None or creates.lost(fraction):
        known = ("" if growth is None else f" (the config adds {creates.grown} of them "
                 f"against {growth.label}; the other {creates.count - creates.grown} were "
                 "desired before)")
        return _problem(codes.INVENTORY_SHRANK, name, f"{creates.share(fraction)}{known}: its "
                        "inventory shrank sharply", force)
    said = (f"{creates.share(fraction)}, but the config adds {creates.grown} entries there "
            f"against {growth.label}: growth the config intends, not an inventory that shrank")
    if accepted:
        return codes.problem(
            codes.GROWTH_INTENDED, f"{said}; accepted for this plan only (--accept-growth "
            f"{name}), which records it; site.safety.max_create_fraction stays "
            f"{fraction:.0%}", name, "", Severity.WARNING)
    return _problem(codes.GROWTH_INTENDED, name, said, force,
                    f"if the growth is intended, accept it for this plan only: xce-plan "
                    f"--accept-growth {name} (the saved plan records it); or split the change, "
                    f"or raise site.safety.max_create_fraction")


def wrong_acceptances(problems: Sequence[Problem], accept: Collection[str],
                      growth: Growth | None) -> list[Problem]:
    """XCE759: an ``--accept-growth`` that accepts nothing: no config diff to tell growth
    from loss, an inventory that shrank beyond the config's growth, or no growth refused."""
    refused = {p.subject: p.code for p in problems
               if p.code in (codes.INVENTORY_SHRANK, codes.GROWTH_INTENDED)}
    out: list[Problem] = []
    for name in sorted(accept):
        if growth is None:
            why = ("the plan has no config diff to tell the config's growth from an inventory "
                   "that shrank: plan with --base REV (the revision the change is against)")
        elif refused.get(name) == codes.INVENTORY_SHRANK:
            why = ("it creates more there than the entries the config adds: its inventory "
                   f"shrank ({codes.INVENTORY_SHRANK}), which no acceptance of growth covers")
        elif name not in refused:
            why = ("the plan is not refused for growth there (it creates no more than "
                   "safety.max_create_fraction of its entries): there is nothing to accept")
        else:
            continue
        out.append(codes.problem(codes.GROWTH_NOT_ACCEPTED, f"--accept-growth {name} cannot "
                                 f"accept: {why}", name))
    return out


def growth_still_accepted(saved: Plan, again: Plan) -> list[Problem]:
    """At apply: a plan that accepted growth at a provider creates only what it accepted
    there; planned again, a create it does not have (an entry the provider lost since) is
    an inventory loss that its acceptance does not cover (XCE759)."""
    out: list[Problem] = []
    for name in saved.accepted_growth:
        ours = {a.entry for a in saved.actions if a.verb.creates and a.provider == name}
        more = sorted(a.entry for a in again.actions
                      if a.verb.creates and a.provider == name and a.entry not in ours)
        if more:
            out.append(codes.problem(
                codes.GROWTH_NOT_ACCEPTED, f"the plan accepted the config's growth at provider "
                f"{name} for the {len(ours)} entries it creates there, but planned again now "
                f"{len(more)} more are missing there ({more[0]}, …): its inventory shrank "
                "since, which the acceptance does not cover", name,
                "find where the entries went, then make the plan again: xce-plan --base REV "
                f"--accept-growth {name} --out FILE"))
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
    growth: Growth | None = None,
    accept_growth: Collection[str] = (),
) -> list[Problem]:
    """Guard violations of a plan; ``generations`` tells a new provider (generation 0 or 1:
    it never held anything) from one that lost what it held; ``new_site`` (the state store
    never applied this site) turns the empty/shrunk-inventory guards off; ``growth`` (the
    config diff) tells intended growth from an inventory that shrank, and ``accept_growth``
    names the providers whose growth this plan accepts."""
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

    inventory = _inventory(actions, settings, desired_per_provider, live_per_provider, skip,
                           force, growth, accept_growth)
    return [*out, *_removal_share(actions, settings, live_per_kind, force),
            *_protected(actions, settings), *inventory,
            *wrong_acceptances(inventory, accept_growth, growth)]
