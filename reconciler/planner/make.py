"""make_plan: desired + live supply maps → Plan. Pure: no I/O, ``now`` is passed in.

One pass over the desired ids and one over the live-only ids; an entry that already
matches costs a few attribute comparisons, and field-level detail is computed only for
the entries that differ, so planning scales with the map size plus the drift.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from operator import attrgetter

from compiler.contract.settings import PlanSettings
from compiler.contract.supply_map import Entry, SupplyMap
from compiler.contract.vocabulary import EntryKind, Level
from compiler.core.problems import Problem
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.census import Census
from reconciler.plan.file import fingerprint
from reconciler.plan.model import Action, Plan, summarize
from reconciler.planner.backoff import attempts_reset
from reconciler.planner.builder import Builder, Rule
from reconciler.planner.deps import link_and_order
from reconciler.planner.discovery_policy import check_group
from reconciler.planner.found import found_not_made
from reconciler.planner.guards import Growth, check_guards
from reconciler.planner.locality import Locality
from reconciler.planner.rules_datasets import plan_copy
from reconciler.planner.rules_discovery import plan_counter
from reconciler.planner.rules_generic import plan_generic
from reconciler.planner.rules_groups import plan_group
from reconciler.planner.rules_hosts import plan_host, plan_instance
from reconciler.planner.rules_jobs import plan_job_dir
from reconciler.planner.settings import read_settings
from reconciler.planner.target import select

RULES: dict[str, Rule] = {
    EntryKind.HOST: plan_host,
    EntryKind.INSTANCE: plan_instance,
    EntryKind.DATASET_COPY: plan_copy,
    EntryKind.HOST_GROUP: plan_group,
    EntryKind.COUNTER: plan_counter,
    EntryKind.JOB_DIR: plan_job_dir,
}


_PROVIDER = attrgetter("provider")


def rule_for(kind: str) -> Rule:
    return RULES.get(kind, plan_generic)


def _walk(b: Builder, desired: SupplyMap, live: SupplyMap, rules: Callable[[str], Rule]) -> None:
    """Hand every entry that may need work to its kind's rule; skip the settled ones fast."""
    _walk_desired(b, desired, live, rules)
    _walk_live_only(b, desired, live, rules)


def _walk_desired(b: Builder, desired: SupplyMap, live: SupplyMap,
                  rules: Callable[[str], Rule]) -> None:
    """The desired entries: those not settled go to their kind's rule, with their live entry."""
    unknown = live.unknown
    contested = live.unknown_entries
    levels = b.settings.management
    live_get = live.entries.get
    for entry_id, d in desired.entries.items():
        if d.provider in unknown or entry_id in contested:
            b.note_unknown(d)
            continue
        if levels.get(d.kind) == Level.OBSERVE:
            continue
        lv = live_get(entry_id)
        if lv is not None and lv.provider != d.provider and lv.provider is not None:
            # Rebound in config, or a provider reporting what is not its own: an entry held
            # elsewhere is neither in sync nor missing, and one id cannot live at both.
            b.note("drift_reported", d, f"reported by provider {lv.provider}, but config binds "
                   f"it to {d.provider}; nothing planned: move it by hand")
            continue
        if lv is d:  # the live map's reader took the desired entry itself: the same bytes
            continue
        if (  # state and compare.same_fields, inlined: this test runs once per entry
            lv is not None
            and lv.state == d.state
            and (d.amount is None or d.amount == lv.amount)
            and d.attributes == lv.attributes
            and d.spec.items() <= lv.spec.items()
        ):
            continue
        b.decide(rules(d.kind), d, lv)


def _walk_live_only(b: Builder, desired: SupplyMap, live: SupplyMap,
                    rules: Callable[[str], Rule]) -> None:
    """The entries only live has: noted when contested, co-managed or behind an unknown
    provider, else to their kind's rule for removal."""
    unknown = live.unknown
    contested = live.unknown_entries
    levels = b.settings.management
    owner = b.settings.owner
    for entry_id in sorted(contested.keys() - desired.entries.keys()):
        b.note_contested(entry_id)
    for entry_id in sorted(live.entries.keys() - desired.entries.keys() - contested.keys()):
        lv = live.entries[entry_id]  # (a contested id is listed above, even if a map has it)
        if lv.provider in unknown:
            b.note_unknown(lv, "; not removed")
            continue
        if levels.get(lv.kind) == Level.OBSERVE:
            continue
        claimable = lv.kind == EntryKind.HOST and lv.source == "discovered"
        if lv.kind == EntryKind.JOB_DIR and lv.owner is None:  # made by a job: no owner tag
            if lv.location not in desired.entries:
                continue  # not on a volume of ours: it goes with that volume, reported there
            claimable = True  # our volume's retention applies to it
        if lv.owner != owner and not claimable:
            held = f"owned by {lv.owner}" if lv.owner else "carries no owner tag"
            b.note("co_managed", lv, f"not in config; {held}, so left alone")
            continue
        b.decide(rules(lv.kind), None, lv)


def _touched(actions: Sequence[Action], observed: Mapping[str, Sequence[str]]) -> list[str]:
    """Entries the plan acts on or whose live state an action relied on."""
    ids = {a.entry for a in actions}
    for a in actions:
        ids.update(observed.get(a.id, ()))
    return sorted(ids)


def _fingerprints(actions: Sequence[Action], b: Builder,
                  live: Mapping[str, Entry]) -> dict[str, str]:
    """Each touched entry's live fingerprint, from the JSON its action made where it did."""
    docs = b.live_docs
    return {e: fingerprint(live.get(e), docs.get(e)) for e in _touched(actions, b.observed)}


def _guarded(actions: list[Action], settings: PlanSettings, desired: SupplyMap,
             live: SupplyMap, *, force: bool, applied_before: bool | None,
             growth: Growth | None, accept_growth: Collection[str],
             census: Census | None) -> list[Problem]:
    """The safety guards' problems (``guards.check_guards``) over the counts they compare;
    the live map's per provider and per kind from one census (``census``, when the caller
    counted ``live`` already)."""
    if census is None:
        census = Census.of(live.entries.values())
    live_per_provider: Counter[str | None] = Counter()
    live_per_kind: Counter[str] = Counter()
    for (provider, kind), n in census.counts.items():
        live_per_provider[provider] += n
        live_per_kind[kind] += n
    return check_guards(
        actions,
        settings,
        desired_per_provider=Counter(map(_PROVIDER, desired.entries.values())),
        live_per_provider=live_per_provider,
        live_per_kind=live_per_kind,
        unknown=live.unknown,
        force=force,
        generations=None if applied_before else live.generations,
        new_site=applied_before is False,
        growth=growth,
        accept_growth=accept_growth,
    )


def make_plan(
    desired: SupplyMap,
    live: SupplyMap,
    *,
    now: float,
    targets: Collection[str] = (),
    destroy: bool = False,
    force: bool = False,
    desired_digest: str | None = None,
    applied_before: bool | None = None,
    attempts: Mapping[str, ProvisionAttempts] | None = None,
    growth: Growth | None = None,
    accept_growth: Collection[str] = (),
    census: Census | None = None,
) -> Plan:
    """Plan what makes ``live`` match ``desired`` under the site's settings.

    ``destroy`` permits deleting users' data (volumes, user directories); ``force`` turns
    guard errors into warnings (protected entries stay errors). ``desired_digest`` is the
    desired map's content digest when the caller already has it (computing it for 500,000
    entries takes about a second). Raises UserError for invalid settings.
    ``applied_before`` is what the state store knows: True (this site was applied) means a
    provider that reports nothing lost what it held, even when its generation restarted (a
    map file deleted); False (never applied, perhaps a first apply killed halfway) means
    there is nothing of ours to have lost, so the empty/shrunk-inventory guards stay off;
    None (no store) leaves it to the providers' generations. ``census``: ``live``'s, if counted.
    ``attempts``: the provisioning failures the store recorded (P6; ``backoff``).
    ``growth``: the entries the config added (``xce-plan --base``), which tell intended
    growth from an inventory that shrank; ``accept_growth``: providers whose growth this
    plan accepts (``--accept-growth``; docs/plan.md, "Growth the config intends").
    """
    settings = read_settings(desired.settings, desired.owner)
    check_group(settings.discovery, desired.entries)
    b = Builder(settings, destroy, now, desired.entries, live.entries, live.unknown,
                live.unknown_entries, sessions=live.sessions, attempts=attempts or {})
    locality = Locality(rule_for, desired.entries, live.entries)  # the datasets attribute
    _walk(b, desired, live, locality.rule_of)
    locality.settle(b)
    actions = list(link_and_order(b.actions))
    notes = {name: sorted(items, key=lambda n: n.entry) for name, items in b.notes.items()}
    problems: list[Problem] = []
    if targets:
        actions, notes, problems = select(actions, notes, targets,
                                          (desired.entries, live.entries))
    problems += found_not_made(notes["co_managed"], desired.entries, live.entries)
    problems += _guarded(actions, settings, desired, live, force=force,
                         applied_before=applied_before, growth=growth,
                         accept_growth=accept_growth, census=census)
    return Plan(
        actions=tuple(actions),
        summary=summarize(actions, notes),
        desired_digest=desired_digest or desired.content_digest(),
        revision=desired.revision,
        fingerprints=_fingerprints(actions, b, live.entries),
        problems=tuple(problems),
        attempts_reset=attempts_reset(b.attempts, desired.entries, live.entries),
        accepted_shrink=(),  # the pipeline's: what xce-plan --accept-shrink named
        accepted_growth=tuple(sorted(set(accept_growth))),
        **{name: tuple(items) for name, items in notes.items()},
    )
