"""The one place where a rule's wish becomes an action or a note.

Rules say what they would do; ``Builder.act`` applies the site's policy uniformly:
ownership (only our owner tag is touched), the management level of the kind, and the
destroy permission for users' data. Whatever is not acted on is reported with why.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from compiler.supply_map import Entry
from reconciler.plan_model import DESTROY_VERBS, NOTE_LISTS, Action, Change, Note
from reconciler.planner.kinds import DATA_KINDS, REMOVAL_VERBS
from reconciler.planner.settings import PlanSettings


def with_state(entry: Entry, state: str, **extra: Any) -> dict[str, Any]:
    """Entry JSON as it will look after the action (e.g. a new host is ``expected``)."""
    doc = entry.to_json()
    doc["state"] = state
    doc.update(extra)
    return doc


@dataclass(slots=True)
class Builder:
    settings: PlanSettings
    destroy: bool
    now: float
    desired: Mapping[str, Entry]
    live: Mapping[str, Entry]
    unknown: Mapping[str, str]
    actions: list[Action] = field(default_factory=list)
    notes: dict[str, list[Note]] = field(
        default_factory=lambda: {name: [] for name in NOTE_LISTS}
    )
    # action id -> other entries whose live state the decision relied on (fingerprinted too)
    observed: dict[str, tuple[str, ...]] = field(default_factory=dict)

    def note(self, where: str, entry: Entry, reason: str) -> None:
        self.notes[where].append(Note(entry.id, entry.kind, entry.provider, reason))

    def note_unknown(self, entry: Entry, then: str = "") -> None:
        """Entries of a provider that did not answer fully are unknown, never absent."""
        why = self.unknown.get(entry.provider or "", "")
        self.note("unknown", entry, f"provider {entry.provider} did not report fully: {why}{then}")

    def act(
        self,
        verb: str,
        entry: Entry,
        reason: str,
        *,
        before: Entry | None,
        after: Mapping[str, Any] | None,
        changes: tuple[Change, ...] = (),
        unacted: str = "drift_reported",
        claim: bool = False,
        observed: tuple[str, ...] = (),
    ) -> None:
        """Plan ``verb`` on ``entry`` if policy allows; otherwise note it in ``unacted``.

        ``claim`` is for the discovery policy, which by design acts on hosts no one owns.
        ``observed`` names other entries the decision read (an instance is released because
        of its host's state), so the apply also refuses the plan when those changed.
        """
        kind = entry.kind
        owner = self.settings.owner
        if entry.provider in self.unknown:
            self.note_unknown(entry, f"; would {verb}: {reason}")
            return
        if before is not None and not claim and before.owner != owner:
            held = f"owned by {before.owner}" if before.owner else "carries no owner tag"
            self.note("co_managed", entry, f"{held}; would {verb}: {reason}")
            return
        level = self.settings.level(kind)
        if level == "observe":
            return
        if level == "report":
            self.note(unacted, entry, f"would {verb}: {reason} (management of {kind}: report)")
            return
        if verb in REMOVAL_VERBS and level != "correct-destructive":
            self.note(unacted, entry, f"would {verb}: {reason}; management of {kind} is "
                      f"'{level}', which never removes (set 'correct-destructive' to allow)")
            return
        if verb in DESTROY_VERBS and kind in DATA_KINDS and not self.destroy:
            self.note(unacted, entry, f"would {verb}: {reason}; deleting users' data needs "
                      "the destroy permission (--destroy)")
            return
        action_id = f"{verb}:{entry.id}"
        if observed:
            self.observed[action_id] = observed
        self.actions.append(Action(
            id=action_id,
            action=verb,
            entry=entry.id,
            kind=kind,
            provider=entry.provider,
            reason=reason,
            destructive=verb in DESTROY_VERBS,
            before=None if before is None else before.to_json(),
            after=after,
            changes=changes,
        ))
