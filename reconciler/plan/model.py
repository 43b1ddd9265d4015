"""Plan data: what the planner decided, as plain frozen data apart from any rendering.

The planner builds a ``Plan``; renderers (text, json, markdown) and the plan file only read
it. ``to_json``/``from_json`` round-trip exactly so a saved plan applies what was shown.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from compiler.problems import Problem, Severity


class Group(StrEnum):
    """How Terraform's summary line counts a verb: to add, to change or to destroy."""

    ADD = "add"
    CHANGE = "change"
    DESTROY = "destroy"


class Verb(StrEnum):
    """The plan's verbs; ``_FACTS`` below holds every fact the planner, renderers and
    applier use about each, so no module groups verbs on its own."""

    CREATE = "create"
    STAGE = "stage"
    ADMIT = "admit"
    UPDATE = "update"
    DRAIN = "drain"
    DELETE = "delete"
    EVICT = "evict"
    RELEASE = "release"
    REJECT = "reject"

    @property
    def group(self) -> Group:
        return _FACTS[self][0]

    @property
    def removes(self) -> bool:
        """It starts or completes a removal: it needs ``correct-destructive``, counts toward
        max_delete_fraction and never touches a protected entry."""
        return _FACTS[self][1]

    @property
    def protocol(self) -> str:
        """The provider verb it travels as; any other plan verb rides in ``params.action``."""
        return _FACTS[self][2]

    @property
    def needs_destroy(self) -> bool:
        """It deletes what it touches: the action is destructive, runs only with the destroy
        permission, and on users' data is planned only with ``--destroy``."""
        return self.group is Group.DESTROY

    @property
    def creates(self) -> bool:
        """It makes an entry the live map lacks (``admit`` claims one that is there)."""
        return self.protocol == "create"


# verb: (group, removes, protocol verb), as docs/architecture.md lists them. ``drain``
# removes (it is the first step of releasing a host) but is counted as a change: the host
# stays until it is released.
_FACTS: Mapping[Verb, tuple[Group, bool, str]] = {
    Verb.CREATE: (Group.ADD, False, "create"),
    Verb.STAGE: (Group.ADD, False, "create"),
    Verb.ADMIT: (Group.ADD, False, "update"),
    Verb.UPDATE: (Group.CHANGE, False, "update"),
    Verb.DRAIN: (Group.CHANGE, True, "update"),
    Verb.DELETE: (Group.DESTROY, True, "delete"),
    Verb.EVICT: (Group.DESTROY, True, "delete"),
    Verb.RELEASE: (Group.DESTROY, True, "delete"),
    Verb.REJECT: (Group.DESTROY, True, "delete"),
}

# The lists of entries a plan reports without acting on them.
NOTE_LISTS = ("orphans", "co_managed", "unknown", "pending", "drift_reported")


@dataclass(frozen=True, slots=True)
class FieldChange:
    """One field that differs: a dotted path (``attributes.features``) and both values."""

    path: str
    before: Any
    after: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "before": self.before, "after": self.after}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FieldChange:
        return cls(str(doc["path"]), doc.get("before"), doc.get("after"))


@dataclass(frozen=True, slots=True)
class FailedAttempt:
    """What the apply records when it releases an instance whose host never joined (P6):
    provisioning attempt ``attempt`` from ``template`` failed, ``instance`` names the one
    released (docs/plan.md, "Provisioning backoff")."""

    attempt: int
    template: str
    instance: str

    def to_json(self) -> dict[str, Any]:
        return {"attempt": self.attempt, "template": self.template, "instance": self.instance}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FailedAttempt:
        return cls(int(doc["attempt"]), str(doc["template"]), str(doc["instance"]))


@dataclass(frozen=True, slots=True)
class Action:
    """One step of the apply; ``depends_on`` lets the applier run independent steps at once.
    ``failed_attempt`` is set on the release of an instance whose host never joined."""

    id: str
    verb: Verb
    entry: str
    kind: str
    provider: str | None
    reason: str
    destructive: bool = False
    depends_on: tuple[str, ...] = ()
    before: Mapping[str, Any] | None = None
    after: Mapping[str, Any] | None = None
    changes: tuple[FieldChange, ...] = ()
    failed_attempt: FailedAttempt | None = None

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "id": self.id,
            "action": self.verb.value,
            "entry": self.entry,
            "kind": self.kind,
            "provider": self.provider,
            "reason": self.reason,
            "destructive": self.destructive,
            "depends_on": list(self.depends_on),
            "before": None if self.before is None else dict(self.before),
            "after": None if self.after is None else dict(self.after),
            "changes": [c.to_json() for c in self.changes],
        }
        if self.failed_attempt is not None:  # only then: other actions' JSON stays as it was
            doc["failed_attempt"] = self.failed_attempt.to_json()
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Action:
        failed = doc.get("failed_attempt")
        return cls(
            id=str(doc["id"]),
            verb=Verb(doc["action"]),
            entry=str(doc["entry"]),
            kind=str(doc["kind"]),
            provider=doc.get("provider"),
            reason=str(doc.get("reason", "")),
            destructive=bool(doc.get("destructive", False)),
            depends_on=tuple(str(d) for d in doc.get("depends_on", ())),
            before=doc.get("before"),
            after=doc.get("after"),
            changes=tuple(FieldChange.from_json(c) for c in doc.get("changes", ())),
            failed_attempt=None if failed is None else FailedAttempt.from_json(failed),
        )


@dataclass(frozen=True, slots=True)
class Note:
    """An entry the plan reports but does not act on, and why."""

    entry: str
    kind: str
    provider: str | None
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"entry": self.entry, "kind": self.kind, "provider": self.provider,
                "reason": self.reason}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Note:
        return cls(str(doc["entry"]), str(doc["kind"]), doc.get("provider"),
                   str(doc.get("reason", "")))


def summarize(actions: Iterable[Action], notes: Mapping[str, Iterable[Note]]) -> dict[str, int]:
    """Counts per verb (BRIEF §3), Terraform's add/change/destroy, and per reported list."""
    counts = dict.fromkeys([v.value for v in (*Verb, *Group)], 0)
    for a in actions:
        counts[a.verb.value] += 1
        counts[a.verb.group.value] += 1
    for name in NOTE_LISTS:
        counts[name] = sum(1 for _ in notes.get(name, ()))
    return counts


def _problem_to_json(p: Problem) -> dict[str, Any]:
    return {"code": p.code, "severity": p.severity.value, "subject": p.subject,
            "message": p.message, "hint": p.hint}


def _problem_from_json(doc: Mapping[str, Any]) -> Problem:
    return Problem(str(doc["code"]), str(doc["message"]), str(doc.get("hint", "")),
                   None, Severity(doc.get("severity", "error")), doc.get("subject"))


@dataclass(frozen=True, slots=True)
class Plan:
    """The whole plan: ordered actions, reported lists, and what it is bound to.

    ``fingerprints`` maps every entry an action touches to the digest of its live JSON (or
    ``"absent"``): the applier refuses the plan when any of them changed since planning.
    ``problems`` holds guard violations; a plan with an error problem must not be applied.
    ``attempts_reset`` maps instance entries whose recorded provisioning failures no longer
    count (their host joined, config dropped them or changed their template) to the record
    seen (its ``instance``): the apply forgets them (docs/plan.md, "Provisioning backoff").
    """

    actions: tuple[Action, ...]
    orphans: tuple[Note, ...] = ()
    co_managed: tuple[Note, ...] = ()
    unknown: tuple[Note, ...] = ()
    pending: tuple[Note, ...] = ()
    drift_reported: tuple[Note, ...] = ()
    summary: Mapping[str, int] = field(default_factory=dict)
    desired_digest: str = ""
    revision: str | None = None
    fingerprints: Mapping[str, str] = field(default_factory=dict)
    problems: tuple[Problem, ...] = ()
    attempts_reset: Mapping[str, str] = field(default_factory=dict)

    @property
    def blocked(self) -> bool:
        """True when a guard forbids applying this plan."""
        return any(p.severity is Severity.ERROR for p in self.problems)

    @property
    def has_changes(self) -> bool:
        """Actions to apply: exit code 2 (-detailed-exitcode). What is only reported —
        orphans, drift it does not correct, pending and co-managed entries — is listed but
        leaves nothing for xce-apply to do (the drift check has exit codes of its own)."""
        return bool(self.actions)

    @property
    def reported(self) -> int:
        """Entries of ours reported without an action (orphans, drift not corrected)."""
        return len(self.orphans) + len(self.drift_reported)

    def notes(self) -> dict[str, tuple[Note, ...]]:
        return {name: getattr(self, name) for name in NOTE_LISTS}

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {
            "revision": self.revision,
            "desired_digest": self.desired_digest,
            "summary": dict(self.summary),
            "actions": [a.to_json() for a in self.actions],
            "fingerprints": dict(self.fingerprints),
            "problems": [_problem_to_json(p) for p in self.problems],
        }
        for name, notes in self.notes().items():
            doc[name] = [n.to_json() for n in notes]
        if self.attempts_reset:  # only then: a plan without one reads as it always did
            doc["attempts_reset"] = dict(self.attempts_reset)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Plan:
        lists = {name: tuple(Note.from_json(n) for n in doc.get(name, ())) for name in NOTE_LISTS}
        return cls(
            actions=tuple(Action.from_json(a) for a in doc["actions"]),
            summary=dict(doc.get("summary", {})),
            desired_digest=str(doc.get("desired_digest", "")),
            revision=doc.get("revision"),
            fingerprints=dict(doc.get("fingerprints", {})),
            problems=tuple(_problem_from_json(p) for p in doc.get("problems", ())),
            attempts_reset={str(k): str(v) for k, v in doc.get("attempts_reset", {}).items()},
            **lists,
        )
