"""Dataset locality (PR-3): a host group's or host's ``datasets`` attribute claims a copy
only while the copy is there.

The desired attribute is what config wants once its copies are staged. What a plan writes
is what is there when the write lands: the copies live ``available`` with their dataset's
digest that the plan does not evict, plus the copies it stages (the write waits for the
stage). A claimed copy that is gone is withdrawn at once; a plan has one action per entry,
so the next plan claims it again once it is staged. A withdrawn copy is evicted only after
the write. The scheduler prefers hosts by this attribute, so a false claim sends jobs to a
copy that is not there.

Only entries that carry ``datasets`` in either map are looked at, and only when their own
drift or a decision on a copy at their location brings them here: a map in sync costs
nothing more.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import CopyState, EntryKind, Level
from reconciler.plan.model import Action, Verb
from reconciler.planner.builder import Builder, Rule
from reconciler.planner.kinds import PHASE_CONSTRUCT, phase_of
from reconciler.planner.rules_datasets import digest_differs

COPY = "dataset-copy/"
ATTRIBUTE = "datasets"
# kind -> the location prefix it holds
_HOLDERS: dict[str, str] = {EntryKind.HOST_GROUP: "group/", EntryKind.HOST: "host/"}

Left = tuple[str, str]  # (note list, why a wanted copy is not claimed)


def holder_of(location: str) -> str | None:
    """The entry whose attribute lists the copies at ``location`` (``group/g`` → its host
    group, ``host/h`` → the host), or None for a location no entry lists (a pool, the site)."""
    prefix, _, name = location.partition("/")
    if prefix == "group":
        return f"host-group/{name}"
    return f"host/{name}" if prefix == EntryKind.HOST else None


def listed(attributes: Any) -> list[str]:
    """The ``datasets`` of an entry's attributes (an Entry's, or an action's JSON)."""
    value = attributes.get(ATTRIBUTE) if isinstance(attributes, Mapping) else None
    return [str(x) for x in value] if isinstance(value, list) else []


def _of(doc: Mapping[str, Any] | None) -> list[str]:
    return listed(doc.get("attributes")) if doc is not None else []


def _copy_parts(copy_id: str) -> tuple[str, str]:
    """``dataset-copy/<name>@<version>@<location>`` → (``name@version``, location)."""
    parts = copy_id[len(COPY):].split("@")
    return "@".join(parts[:2]), "@".join(parts[2:])


def claim_edges(by_entry: Mapping[str, Action]) -> list[tuple[str, str]]:
    """(waiting, awaited) action ids: a holder's write that adds a copy waits for the copy's
    stage; a copy's evict waits for the write that withdraws it."""
    edges = []
    for action in by_entry.values():
        if action.kind != EntryKind.DATASET_COPY:
            continue
        ident, location = _copy_parts(action.entry)
        holder = by_entry.get(holder_of(location) or "")
        if holder is None or phase_of(holder.verb) != PHASE_CONSTRUCT:
            continue
        before, after = _of(holder.before), _of(holder.after)
        if action.verb is Verb.STAGE and ident in after and ident not in before:
            edges.append((holder.id, action.id))
        elif action.verb is Verb.EVICT and ident in before and ident not in after:
            edges.append((action.id, holder.id))
    return edges


def _saying(action: Action, claims: list[str], claimed: list[str]) -> Action:
    """The write's reason, with the copies it adds and withdraws."""
    added = [i for i in claims if i not in claimed]
    gone = [i for i in claimed if i not in claims]
    said = [f"{verb} {', '.join(items)}" for verb, items in (("lists", added),
                                                             ("withdraws", gone)) if items]
    return replace(action, reason=f"{action.reason}: {'; '.join(said)}") if said else action


def _not_listed(copy_id: str, copy: Entry | None, *, staged: bool, claimed: bool) -> Left:
    """Why a holder's write does not list a copy: the copy this plan stages (``staged``),
    or one not there; (note list, why)."""
    if staged:
        return ("pending", "withdrawn while this plan stages it again; the next plan lists it "
                "once available" if claimed else "staged by this plan once the host exists; "
                "the next plan lists it")
    if copy is None:
        return ("drift_reported", f"missing, and this plan does not stage it: see {copy_id}")
    if copy.state in ("staging", "evicting"):
        return ("pending", f"{copy_id} is {copy.state}")
    state = "available with another digest" if copy.state == CopyState.AVAILABLE else copy.state
    return ("drift_reported", f"{copy_id} is {state}")


@dataclass(slots=True)
class Locality:
    """One plan's locality. ``rule_of`` hands the walk its rules, holding back the decisions
    on entries that carry ``datasets`` until every copy is decided; ``settle`` makes them."""

    rules: Callable[[str], Rule]
    desired: Mapping[str, Entry]
    live: Mapping[str, Entry]
    _held: dict[str, tuple[Entry, Entry | None]] = field(default_factory=dict)
    _touched: set[str] = field(default_factory=set)  # locations of the copies decided
    _wrapped: dict[str, Rule] = field(default_factory=dict)

    def rule_of(self, kind: str) -> Rule:
        rule = self._wrapped.get(kind)
        if rule is None:
            rule = self._wrapped[kind] = self._wrap(kind, self.rules(kind))
        return rule

    def _wrap(self, kind: str, rule: Rule) -> Rule:
        """``rule`` wrapped for the walk. The wrappers close over the set and dict they
        fill, never over ``self``: a cached closure over ``self`` is a cycle that keeps both
        maps alive until the cyclic collector frees them (1.5 million objects, seconds)."""
        if kind == EntryKind.DATASET_COPY:
            touched = self._touched

            def decide_copy(b: Builder, desired: Entry | None, live: Entry | None) -> None:
                either = desired or live
                if either is not None and either.location:
                    touched.add(either.location)
                rule(b, desired, live)
            return decide_copy
        if kind not in _HOLDERS:
            return rule
        held = self._held

        def hold(b: Builder, desired: Entry | None, live: Entry | None) -> None:
            if desired is not None and (ATTRIBUTE in desired.attributes
                                        or (live is not None and ATTRIBUTE in live.attributes)):
                held[desired.id] = (desired, live)
            else:
                rule(b, desired, live)
        return hold

    def _settled(self, b: Builder, entry_id: str) -> bool:
        """An entry with ``datasets`` the walk skipped as in sync (not as unknown, observed
        or held by another provider): a copy's decision may still change what it claims."""
        d, lv = self.desired.get(entry_id), self.live.get(entry_id)
        return (d is not None and lv is not None and ATTRIBUTE in d.attributes
                and entry_id not in self._held and d.provider not in b.unknown
                and entry_id not in b.unknown_entries
                and b.settings.management.get(d.kind) != Level.OBSERVE
                and lv.provider in (None, d.provider))

    def settle(self, b: Builder) -> None:
        """Decide the held-back entries and the in-sync ones a copy decision concerns; then
        keep back an evict whose withdrawal from the map is not planned."""
        if not self._held and not self._touched:
            return
        holders = (holder_of(location) for location in self._touched)
        ids = self._held.keys() | {h for h in holders if h is not None and self._settled(b, h)}
        copies = {a.entry: a for a in b.actions if a.kind == EntryKind.DATASET_COPY}
        written: dict[str, list[str]] = {}
        for entry_id in sorted(ids):
            desired, live = self._held.get(entry_id) or (self.desired[entry_id],
                                                         self.live.get(entry_id))
            first = len(b.actions)
            b.decide(self._claiming(self.rules(desired.kind), copies), desired, live)
            written.update((a.entry, _of(a.after)) for a in b.actions[first:]
                           if a.entry == entry_id)
        self._keep_evicts(b, copies, written)

    def _claiming(self, rule: Rule, copies: Mapping[str, Action]) -> Rule:
        """``rule`` handed the desired entry with only the copies it may claim."""
        def claiming(b: Builder, desired: Entry | None, live: Entry | None) -> None:
            assert desired is not None
            claims, left = self._claims(b, desired, live, copies)
            attrs = {k: v for k, v in desired.attributes.items() if k != ATTRIBUTE}
            if claims:
                attrs[ATTRIBUTE] = claims
            first = len(b.actions)
            rule(b, replace(desired, attributes=attrs), live)
            if len(b.actions) > first and b.actions[-1].entry == desired.id:
                b.actions[-1] = _saying(b.actions[-1], claims, listed(
                    live.attributes if live is not None else None))
            for where, why in left:
                b.note(where, desired, why)
        return claiming

    def _claims(self, b: Builder, desired: Entry, live: Entry | None,
                copies: Mapping[str, Action]) -> tuple[list[str], list[Left]]:
        """The copies the write may list, and a note per list for the wanted ones it may not.
        A new host's copies are staged once the host exists, so its entry cannot wait for
        them; a new group's entry can (the group's cache does not need it)."""
        location = _HOLDERS[desired.kind] + desired.id.partition("/")[2]
        wanted, claimed = set(listed(desired.attributes)), set(listed(
            live.attributes if live is not None else None))
        may_wait = live is not None or desired.kind == EntryKind.HOST_GROUP
        claims: list[str] = []
        left: dict[str, list[str]] = {}
        for ident in sorted(wanted | claimed):
            copy_id = f"{COPY}{ident}@{location}"
            keep, why = self._claim(b, copy_id, ident in claimed, copies.get(copy_id), may_wait)
            if keep:
                claims.append(ident)
            elif ident in wanted and why is not None:
                left.setdefault(why[0], []).append(f"{ident} ({why[1]})")
        return claims, [(where, f"attributes.datasets leaves out {', '.join(items)}")
                        for where, items in sorted(left.items())]

    def _claim(self, b: Builder, copy_id: str, claimed: bool, action: Action | None,
               may_wait: bool) -> tuple[bool, Left | None]:
        """Whether the write lists this copy, and why not when it does not. A copy of an
        unknown provider keeps what live says: it is neither there nor gone."""
        d_copy = self.desired.get(copy_id)
        blind = b.blind_spot(d_copy or self.live.get(copy_id)
                             or Entry(copy_id, EntryKind.DATASET_COPY.value, "absent", "config"))
        if blind is not None:
            return claimed, ("unknown", f"{copy_id} is unknown: {blind}")
        copy = b.read(copy_id)
        verb = action.verb if action is not None else None
        if (copy is not None and copy.state == CopyState.AVAILABLE and verb is not Verb.EVICT
                and not (d_copy is not None and digest_differs(d_copy, copy))):
            return True, None
        if verb is Verb.STAGE and may_wait and not claimed:
            return True, None
        return False, _not_listed(copy_id, copy, staged=verb is Verb.STAGE, claimed=claimed)

    def _keep_evicts(self, b: Builder, copies: Mapping[str, Action],
                     written: Mapping[str, list[str]]) -> None:
        """An evict of a copy the live map claims goes only after the write withdrawing it:
        without that write in the plan (withheld by policy), or while the holder's entry is
        unknown, the copy is kept, so the map never lists a copy that is gone."""
        for copy_id, action in copies.items():
            if action.verb is not Verb.EVICT or action.before is None:
                continue
            ident, location = _copy_parts(copy_id)
            holder_id = holder_of(location) or ""
            holder = self.desired.get(holder_id) or self.live.get(holder_id)
            if holder is None:
                continue
            blind = b.blind_spot(holder)
            live = self.live.get(holder_id)
            withdrawn = holder_id in written and ident not in written[holder_id]
            if blind is None and (live is None or ident not in listed(live.attributes)
                                  or withdrawn):
                continue
            b.actions[:] = [a for a in b.actions if a is not action]
            b.observed.pop(action.id, None)
            copy = Entry.from_json(action.before)
            if blind is not None:
                b.note("unknown", copy, f"depends on {holder_id}, which may claim it: {blind}; "
                       f"would evict: {action.reason}")
            else:
                b.note("pending", copy, f"would evict: {action.reason}; kept while {holder_id} "
                       "claims it, as its withdrawal is not planned: see " + holder_id)
