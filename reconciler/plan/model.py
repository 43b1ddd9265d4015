"""Plan data: what the planner decided, as plain frozen data apart from any rendering.

The planner builds a ``Plan``; renderers (text, json, markdown) and the plan file only read
it. ``to_json``/``from_json`` round-trip exactly so a saved plan applies what was shown, and
``from_json`` checks the type of every field it reads (``ShapeError`` names the first one that
is wrong, e.g. ``actions[3].entry``), so a hand-made or edited plan fails when it is read,
not half-way through an apply.
"""

from __future__ import annotations

import secrets
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from operator import attrgetter
from typing import Any

from compiler.core.problems import Problem, Severity

INSTANCE_BYTES = 16  # random bytes of a plan instance's identity (hex: 32 characters)


def new_instance() -> str:
    """A fresh identity for a plan just made: two plans of the same content stay two plans."""
    return secrets.token_hex(INSTANCE_BYTES)


class ShapeError(ValueError):
    """A field of a plan document that is missing or of the wrong type, named by its path."""


_REQUIRED: Any = object()
_KINDS = {bool: "a boolean", int: "a number", float: "a number", str: "a string",
          type(None): "null"}


def _kind_of(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "a list"
    return _KINDS.get(type(value), type(value).__name__)


def typed(doc: Mapping[str, Any], key: str, want: tuple[type, ...], where: str,
         default: Any = _REQUIRED) -> Any:
    """``doc[key]`` when it is one of ``want`` (a boolean is never a number), else
    ``default`` when it is absent; anything else is a ShapeError naming ``where.key``."""
    path = f"{where}.{key}" if where else key
    if key not in doc:
        if default is _REQUIRED:
            raise ShapeError(f"{path} is missing")
        return default
    value = doc[key]
    if (isinstance(value, bool) and bool not in want) or not isinstance(value, want):
        wanted = " or ".join(dict.fromkeys(_KINDS.get(t, "an object" if t is Mapping else
                                                     "a list") for t in want))
        raise ShapeError(f"{path} must be {wanted}, not {_kind_of(value)}")
    return value


def _objects(doc: Mapping[str, Any], key: str, where: str,
             required: bool = False) -> list[tuple[str, Mapping[str, Any]]]:
    """The list ``doc[key]`` of objects, each with its path (``actions[3]``)."""
    items = typed(doc, key, (list,), where, _REQUIRED if required else [])
    path = f"{where}.{key}" if where else key
    for i, item in enumerate(items):
        if not isinstance(item, Mapping):
            raise ShapeError(f"{path}[{i}] must be an object, not {_kind_of(item)}")
    return [(f"{path}[{i}]", item) for i, item in enumerate(items)]


def _string_map(doc: Mapping[str, Any], key: str, want: tuple[type, ...],
                where: str = "") -> dict[str, Any]:
    """The object ``doc[key]`` whose values are all of ``want`` (absent: empty)."""
    found = typed(doc, key, (Mapping,), where, {})
    for name in found:
        typed(found, name, want, f"{where}.{key}" if where else key)
    return dict(found)


def _enum(kind: type[StrEnum], value: str, path: str) -> Any:
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise ShapeError(f"{path} is {value!r}, not one of {allowed}") from None


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

# Each verb's value and its group's, looked up once per action of a plan of half a million
# rather than through the enum's properties.
_VALUE = {verb: verb.value for verb in Verb}
_GROUP_VALUE = {verb: verb.group.value for verb in Verb}

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
    def from_json(cls, doc: Mapping[str, Any], where: str = "change") -> FieldChange:
        return cls(typed(doc, "path", (str,), where), doc.get("before"), doc.get("after"))


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
    def from_json(cls, doc: Mapping[str, Any], where: str = "failed_attempt") -> FailedAttempt:
        return cls(typed(doc, "attempt", (int,), where), typed(doc, "template", (str,), where),
                   typed(doc, "instance", (str,), where))


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
            "action": _VALUE[self.verb],
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
    def from_json(cls, doc: Mapping[str, Any], where: str = "action") -> Action:
        failed = typed(doc, "failed_attempt", (Mapping, type(None)), where, None)
        depends_on = typed(doc, "depends_on", (list,), where, [])
        for i, dependency in enumerate(depends_on):
            if not isinstance(dependency, str):
                raise ShapeError(f"{where}.depends_on[{i}] must be a string, not "
                                 f"{_kind_of(dependency)}")
        return cls(
            id=typed(doc, "id", (str,), where),
            verb=_enum(Verb, typed(doc, "action", (str,), where), f"{where}.action"),
            entry=typed(doc, "entry", (str,), where),
            kind=typed(doc, "kind", (str,), where),
            provider=typed(doc, "provider", (str, type(None)), where, None),
            reason=typed(doc, "reason", (str,), where, ""),
            destructive=typed(doc, "destructive", (bool,), where, False),
            depends_on=tuple(depends_on),
            before=typed(doc, "before", (Mapping, type(None)), where, None),
            after=typed(doc, "after", (Mapping, type(None)), where, None),
            changes=tuple(FieldChange.from_json(c, path)
                          for path, c in _objects(doc, "changes", where)),
            failed_attempt=None if failed is None else FailedAttempt.from_json(
                failed, f"{where}.failed_attempt"),
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
    def from_json(cls, doc: Mapping[str, Any], where: str = "note") -> Note:
        return cls(typed(doc, "entry", (str,), where), typed(doc, "kind", (str,), where),
                   typed(doc, "provider", (str, type(None)), where, None),
                   typed(doc, "reason", (str,), where, ""))


_VERB = attrgetter("verb")


def summarize(actions: Iterable[Action], notes: Mapping[str, Iterable[Note]]) -> dict[str, int]:
    """Counts per verb (BRIEF §3), Terraform's add/change/destroy, and per reported list."""
    counts = dict.fromkeys([v.value for v in (*Verb, *Group)], 0)
    for verb, n in Counter(map(_VERB, actions)).items():
        counts[_VALUE[verb]] += n
        counts[_GROUP_VALUE[verb]] += n
    for name in NOTE_LISTS:
        counts[name] = sum(1 for _ in notes.get(name, ()))
    return counts


def _problem_from_json(doc: Mapping[str, Any], where: str) -> Problem:
    severity = typed(doc, "severity", (str,), where, "error")
    return Problem(typed(doc, "code", (str,), where), typed(doc, "message", (str,), where),
                   typed(doc, "hint", (str,), where, ""), None,
                   _enum(Severity, severity, f"{where}.severity"),
                   typed(doc, "subject", (str, type(None)), where, None))


def _names(doc: Mapping[str, Any], key: str) -> tuple[str, ...]:
    """A list of provider names (``accepted_shrink``, ``accepted_growth``), each a string."""
    return tuple(typed({"name": n}, "name", (str,), f"{key}[{i}]")
                 for i, n in enumerate(typed(doc, key, (list,), "", [])))


@dataclass(frozen=True, slots=True)
class Plan:
    """The whole plan: ordered actions, reported lists, and what it is bound to.

    ``fingerprints`` maps every entry an action touches to the digest of its live JSON (or
    ``"absent"``): the applier refuses the plan when any of them changed since planning.
    ``problems`` holds guard violations; a plan with an error problem must not be applied.
    ``attempts_reset`` maps instance entries whose recorded provisioning failures no longer
    count (their host joined, config dropped them or changed their template) to the record
    seen (its ``instance``): the apply forgets them (docs/plan.md, "Provisioning backoff").
    ``instance`` is this plan's own identity, drawn when it is made: the apply derives its
    op_ids from it and the content, so the same drift fixed twice is two plans, never one
    already done (docs/apply.md, "op_ids"). It is not part of the JSON (renderings show the
    content; the plan file keeps it beside), nor of equality; a plan changed with
    ``dataclasses.replace`` is another plan, with an identity of its own.
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
    accepted_shrink: tuple[str, ...] = ()  # xce-plan --accept-shrink: honoured by the apply
    accepted_growth: tuple[str, ...] = ()  # xce-plan --accept-growth: checked by the apply
    instance: str = field(default_factory=new_instance, compare=False, init=False)

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
            "problems": [p.to_json(place=False) for p in self.problems],
        }
        for name, notes in self.notes().items():
            doc[name] = [n.to_json() for n in notes]
        if self.attempts_reset:  # only then: a plan without one reads as it always did
            doc["attempts_reset"] = dict(self.attempts_reset)
        if self.accepted_shrink:  # likewise (docs/plan.md, "An inventory that shrank")
            doc["accepted_shrink"] = list(self.accepted_shrink)
        if self.accepted_growth:  # likewise (docs/plan.md, "Growth the config intends")
            doc["accepted_growth"] = list(self.accepted_growth)
        return doc

    @classmethod
    def from_json(cls, doc: Mapping[str, Any], instance: str | None = None) -> Plan:
        """The plan of ``doc`` (``instance``: the identity the plan file kept beside it);
        a field of the wrong type is a ShapeError naming it."""
        if not isinstance(doc, Mapping):
            raise ShapeError(f"the plan must be an object, not {_kind_of(doc)}")
        lists = {name: tuple(Note.from_json(n, path) for path, n in _objects(doc, name, ""))
                 for name in NOTE_LISTS}
        plan = cls(
            actions=tuple(Action.from_json(a, path)
                          for path, a in _objects(doc, "actions", "", required=True)),
            summary=_string_map(doc, "summary", (int,)),
            desired_digest=typed(doc, "desired_digest", (str,), "", ""),
            revision=typed(doc, "revision", (str, type(None)), "", None),
            fingerprints=_string_map(doc, "fingerprints", (str,)),
            problems=tuple(_problem_from_json(p, path)
                           for path, p in _objects(doc, "problems", "")),
            attempts_reset=_string_map(doc, "attempts_reset", (str,)),
            accepted_shrink=_names(doc, "accepted_shrink"),
            accepted_growth=_names(doc, "accepted_growth"),
            **lists,
        )
        if instance is not None:  # the plan read again is the plan that was saved
            object.__setattr__(plan, "instance", instance)  # frozen: set once, here
        return plan
