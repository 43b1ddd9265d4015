"""The one place where a rule's wish becomes an action or a note.

Rules say what they would do; ``Builder.act`` applies the site's policy uniformly:
ownership (only our owner tag is touched), the management level of the kind, and the
destroy permission for users' data. Whatever is not acted on is reported with why.

A rule reads other entries only through ``Builder.read`` (an instance reads its host, a
counter the host it sits on), so the builder knows every entry a decision rests on. When
any of them — or the entry itself — comes from a provider whose inventory is unknown, or is
an entry two providers both report, the decision is unknown too: whatever the rule wanted
(an action or a report) is listed under ``unknown`` with the reason, and nothing is done.
An entry absent from both maps is not thereby absent: it may sit at any provider that
holds its kind, so such a read is unknown when one of those is. The same reads decide
whether an orphan removal waits for a provider that is settling after a restart or a
failover (``reconciler.planner.settle``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from compiler.contract.settings import PlanSettings
from compiler.contract.supply_map import Entry, Session
from compiler.contract.vocabulary import Level
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.model import NOTE_LISTS, Action, FieldChange, Note, Verb
from reconciler.planner.kinds import DATA_KINDS
from reconciler.planner.settle import settling


def with_state(entry: Entry, state: str, **extra: Any) -> dict[str, Any]:
    """Entry JSON as it will look after the action (e.g. a new host is ``expected``)."""
    doc = entry.to_json()
    doc["state"] = state
    doc.update(extra)
    return doc


Rule = Callable[["Builder", Entry | None, Entry | None], None]
# Verb facts, looked up once per planned action rather than through their properties.
_REMOVES = {verb: verb.removes for verb in Verb}
_DESTROYS = {verb: verb.needs_destroy for verb in Verb}
T = TypeVar("T")


@dataclass(slots=True)
class Builder:
    settings: PlanSettings
    destroy: bool
    now: float
    desired: Mapping[str, Entry]
    live: Mapping[str, Entry]
    unknown: Mapping[str, str]  # provider -> why its inventory is unknown
    unknown_entries: Mapping[str, str] = field(default_factory=dict)  # entry id -> why
    sessions: Mapping[str, Session] = field(default_factory=dict)  # provider -> its session
    # instance id -> its provisioning failures in a row, from the state store (P6)
    attempts: Mapping[str, ProvisionAttempts] = field(default_factory=dict)
    actions: list[Action] = field(default_factory=list)
    notes: dict[str, list[Note]] = field(
        default_factory=lambda: {name: [] for name in NOTE_LISTS}
    )
    # action id -> other entries whose live state the decision relied on (fingerprinted too)
    observed: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # entry id -> its live entry's JSON, made once for an action's ``before`` (not changed
    # since): the plan fingerprints it without making it again
    live_docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    _indexes: dict[str, Any] = field(default_factory=dict)  # name -> what ``index`` built
    _reads: list[str] = field(default_factory=list)  # what the current decision read
    _kinds: dict[str, tuple[str, ...]] | None = None  # kind -> providers holding it
    _settling: dict[str, str] | None = None  # provider -> why orphan removals wait (P8)
    # (verb, kind) -> whether the management level and the destroy permission allow it
    _allowed: dict[tuple[Verb, str], bool] = field(default_factory=dict)

    def decide(self, rule: Rule, desired: Entry | None, live: Entry | None) -> None:
        """Run one rule on one entry; what it reads gates everything it plans or reports."""
        self._reads.clear()
        rule(self, desired, live)
        self._reads.clear()

    def read(self, entry_id: str) -> Entry | None:
        """The live entry a decision rests on (None: absent, or unknown — ``act`` tells)."""
        self._reads.append(entry_id)
        return self.live.get(entry_id)

    def index(self, name: str, build: Callable[[Mapping[str, Entry]], T]) -> T:
        """An index of the live map that ``build`` makes once per plan, on first use (the
        hosts of each group). It leads to ids, not to decisions: a rule still ``read``s each
        entry it relies on, and asks ``blind_to_kind`` before it trusts an absence."""
        if name not in self._indexes:
            self._indexes[name] = build(self.live)
        return cast(T, self._indexes[name])

    def kind_holders(self, kind: str) -> tuple[str, ...]:
        """Providers that hold entries of ``kind`` in either map (computed once, on demand)."""
        if self._kinds is None:
            index: dict[str, set[str]] = {}
            for entries in (self.desired, self.live):
                for e in entries.values():
                    if e.provider:
                        index.setdefault(e.kind, set()).add(e.provider)
            self._kinds = {k: tuple(sorted(v)) for k, v in index.items()}
        return self._kinds.get(kind, ())

    def _holders(self, entry_id: str) -> Iterator[tuple[str, bool]]:
        """(provider, holds it for sure) for every provider that may hold ``entry_id``."""
        found = [e.provider for e in (self.desired.get(entry_id), self.live.get(entry_id))
                 if e is not None and e.provider]
        if found:
            yield from ((p, True) for p in sorted(set(found)))
            return
        kind = entry_id.partition("/")[0]
        yield from ((p, False) for p in self.kind_holders(kind) or sorted(self.unknown))

    def _blind(self, entry_id: str, subject: bool) -> str | None:
        """Why ``entry_id`` cannot be known, worded for the entry itself or for a read."""
        contested = self.unknown_entries.get(entry_id)
        if contested is not None:
            return contested if subject else f"depends on {entry_id}, {contested}"
        for provider, held in self._holders(entry_id):
            why = self.unknown.get(provider)
            if why is None:
                continue
            if subject:
                return f"provider {provider} did not report fully: {why}"
            where = f"at provider {provider}" if held else f"which provider {provider} may hold"
            return f"depends on {entry_id} ({where}), whose inventory is unknown: {why}"
        return None

    def blind_spot(self, entry: Entry, observed: tuple[str, ...] = ()) -> str | None:
        """Why a decision about ``entry`` cannot be made, or None when all it read is known."""
        if not self.unknown and not self.unknown_entries:
            return None
        why = self._blind(entry.id, subject=True)
        for read in (*self._reads, *observed):
            if why is not None:
                break
            if read != entry.id:
                why = self._blind(read, subject=False)
        return why

    def blind_to_kind(self, kind: str) -> str | None:
        """Why the live map may lack entries of ``kind`` that exist (a provider that may hold
        them did not report fully, or such an id is contested), or None. A decision that rests
        on their absence (a host group deleted once none of its hosts is left) asks this."""
        if not self.unknown and not self.unknown_entries:
            return None
        prefix = f"{kind}/"
        contested = sorted(i for i in self.unknown_entries if i.startswith(prefix))
        return self._blind(contested[0] if contested else f"{prefix}*", subject=False)

    def note(self, where: str, entry: Entry, reason: str) -> None:
        """Report ``entry`` in list ``where``, unless the report rests on an unknown."""
        why = None if where == "unknown" else self.blind_spot(entry)
        if why is not None:
            where, reason = "unknown", f"{why}; would report it ({where}): {reason}"
        self.notes[where].append(Note(entry.id, entry.kind, entry.provider, reason))

    def note_contested(self, entry_id: str) -> None:
        """A live-only id that two providers report: listed, since its id is known."""
        why = self.unknown_entries[entry_id]
        self.notes["unknown"].append(Note(entry_id, entry_id.partition("/")[0], None,
                                          f"{why}; nothing planned"))

    def note_unknown(self, entry: Entry, then: str = "") -> None:
        """Entries of a provider that did not answer fully are unknown, never absent."""
        why = self._blind(entry.id, subject=True) or "its inventory is unknown"
        self.note("unknown", entry, f"{why}{then}")

    def _withheld(self, verb: Verb, entry: Entry, reason: str, before: Entry | None, *,
                  claim: bool, observed: tuple[str, ...], unacted: str) -> tuple[str, str] | None:
        """``(list, note)`` when policy keeps ``verb`` from being planned, None when it may be;
        an empty list name means not even reported (management ``observe``)."""
        would = f"would {verb}: {reason}"
        blind = self.blind_spot(entry, observed)
        if blind is not None:
            return "unknown", f"{blind}; {would}"
        if before is not None and not claim and before.owner != self.settings.owner:
            held = f"owned by {before.owner}" if before.owner else "carries no owner tag"
            return "co_managed", f"{held}; {would}"
        return self._by_policy(verb, entry.kind, would, unacted)

    def _by_policy(self, verb: Verb, kind: str, would: str,
                   unacted: str) -> tuple[str, str] | None:
        """``_withheld``'s answer from the kind's management level and the destroy
        permission alone (``would``: the words of what the rule wanted)."""
        level = self.settings.level(kind)
        if level == Level.OBSERVE:
            return "", ""
        if level == Level.REPORT:
            return unacted, f"{would} (management of {kind}: report)"
        if _REMOVES[verb] and level != Level.CORRECT_DESTRUCTIVE:
            return unacted, (f"{would}; management of {kind} is '{level}', which never "
                             "removes (set 'correct-destructive' to allow)")
        if _DESTROYS[verb] and kind in DATA_KINDS and not self.destroy:
            return unacted, (f"{would}; deleting users' data needs the destroy permission "
                             "(--destroy)")
        return None

    def _may(self, verb: Verb, entry: Entry, before: Entry | None, claim: bool) -> bool:
        """Whether nothing withholds ``verb`` on ``entry`` (``_withheld`` would say None),
        known without its words: every provider reported, the entry is ours, and the
        policy for ``verb`` on its kind, worked out once per plan, allows it."""
        if self.unknown or self.unknown_entries or (
                before is not None and not claim and before.owner != self.settings.owner):
            return False
        key = (verb, entry.kind)
        allowed = self._allowed.get(key)
        if allowed is None:
            allowed = self._allowed[key] = self._by_policy(verb, entry.kind, "", "") is None
        return allowed

    def _unsettled(self, entry: Entry, observed: tuple[str, ...]) -> str | None:
        """Why an orphan removal waits (a provider it rests on is settling), or None.
        The providers' settle state is computed on the first orphan removal of the plan."""
        if not self.sessions:
            return None
        if self._settling is None:
            self._settling = settling(self.settings.settle, self.sessions, self.live, self.now)
        if not self._settling:
            return None
        rests_on = {p for read in (*self._reads, *observed) for p, _ in self._holders(read)}
        if entry.provider:
            rests_on.add(entry.provider)
        waits = [self._settling[p] for p in sorted(rests_on) if p in self._settling]
        return "; ".join(waits) or None

    def act(
        self,
        verb: Verb,
        entry: Entry,
        reason: str,
        *,
        before: Entry | None,
        after: Mapping[str, Any] | None,
        changes: tuple[FieldChange, ...] = (),
        unacted: str = "drift_reported",
        claim: bool = False,
        observed: tuple[str, ...] = (),
        orphan: bool = False,
    ) -> bool:
        """Plan ``verb`` on ``entry`` if policy allows; otherwise note it in ``unacted``.

        ``claim`` is for the discovery policy, which by design acts on hosts no one owns.
        ``observed`` names entries the decision read that the rule was handed rather than
        ``read`` (a host's own state, when its instance is released). Everything read gates
        the action and is fingerprinted, so the apply also refuses the plan when it changed.
        ``orphan`` marks the removal of something no config claims (never joined, unknown
        to the controller): it waits while a provider it rests on settles after a restart or
        failover (P8). Returns whether the action was planned.
        """
        withheld = None if self._may(verb, entry, before, claim) else self._withheld(
            verb, entry, reason, before, claim=claim, observed=observed, unacted=unacted)
        if withheld is None and orphan:
            waits = self._unsettled(entry, observed)
            withheld = None if waits is None else ("pending", f"would {verb}: {reason}; {waits}")
        if withheld is not None:
            where, why = withheld
            if where:
                self.note(where, entry, why)
            return False
        action_id = f"{verb}:{entry.id}"
        if self._reads or observed:  # most actions read nothing beyond their entry
            relied = sorted({*self._reads, *observed} - {entry.id})
            if relied:
                self.observed[action_id] = tuple(relied)
        before_doc = None if before is None else before.to_json()
        if before_doc is not None and self.live.get(entry.id) is before:
            self.live_docs[entry.id] = before_doc
        self.actions.append(Action(
            id=action_id,
            verb=verb,
            entry=entry.id,
            kind=entry.kind,
            provider=entry.provider,
            reason=reason,
            destructive=_DESTROYS[verb],
            before=before_doc,
            after=after,
            changes=changes,
        ))
        return True
