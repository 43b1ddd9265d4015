"""The drift report as plain data: what xce-drift found, for every rendering and the email.

A ``Finding`` is one thing the planner decided differs (or a provider it could not see),
with the desired value beside the live one per field, already redacted. ``DriftReport``
holds the findings with what the drift ledger adds: how long each has stood and what is
new, changed or resolved since the last notification. Templates and the email read only
this; ``to_json``/``from_json`` round-trip, so the ledger keeps a finding as this JSON.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol

from compiler.core.problems import Problem
from compiler.core.times import format_utc, parse_instant
from compiler.core.units import duration_text

FORMAT_VERSION = 1  # of the JSON rendering (docs/drift.md, "JSON")


class Category(StrEnum):
    """What kind of drift a finding is, in the plan's terms (docs/drift.md, "Findings")."""

    MISSING = "missing"  # in config, not live: the plan creates it
    DIFFERS = "differs"  # fields differ: the plan updates (admits, re-stages) it
    EXTRA = "extra"  # the plan removes it (drain, delete, evict, release, reject)
    ORPHAN = "orphan"  # the plan reports it and never removes it
    NOT_CORRECTED = "not-corrected"  # management `report`, a drained or lost host, rebound
    CO_MANAGED = "co-managed"  # another owner's entry at our providers: never touched
    UNKNOWN = "unknown"  # a provider (or entry) that could not be seen: cannot tell

    @property
    def heading(self) -> str:
        return _HEADINGS[self]

    @property
    def counts(self) -> bool:
        """It makes the exit code 2. Co-managed entries are not ours (as for xce-plan); an
        unknown provider does count: "cannot tell" must never read as "no drift"."""
        return self is not Category.CO_MANAGED


_HEADINGS = {
    Category.MISSING: "Missing (xce-apply creates it)",
    Category.DIFFERS: "Differs (xce-apply updates it)",
    Category.EXTRA: "Not wanted (xce-apply removes it)",
    Category.ORPHAN: "Orphans (reported, never removed)",
    Category.NOT_CORRECTED: "Not corrected (the plan only reports it)",
    Category.CO_MANAGED: "Co-managed (not ours, never touched)",
    Category.UNKNOWN: "Unknown (cannot tell)",
}
# The categories shown in the per-kind tables; co-managed and unknown have sections of their own.
TABLED = tuple(c for c in Category if c not in (Category.CO_MANAGED, Category.UNKNOWN))


@dataclass(frozen=True, slots=True)
class FieldDiff:
    """One field that differs: its dotted path, the desired and the live value (None when
    that side lacks the field)."""

    path: str
    desired: Any
    live: Any

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "desired": self.desired, "live": self.live}

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> FieldDiff:
        return cls(str(doc["path"]), doc.get("desired"), doc.get("live"))


@dataclass(frozen=True, slots=True)
class Finding:
    """One drift. ``desired_state``/``live_state`` are None where that map lacks the entry;
    ``fix`` is the command that corrects it (None: the plan does not). An unknown provider
    is one finding (``entry`` ``provider/<name>``) standing for ``count`` entries; ``step``
    is what to do next about one the plan does not correct."""

    category: Category
    entry: str
    kind: str
    provider: str | None
    reason: str
    desired_state: str | None = None
    live_state: str | None = None
    fields: tuple[FieldDiff, ...] = ()
    fix: str | None = None
    count: int = 1
    since: datetime | None = None  # first seen, from the drift ledger
    remark: str = ""  # what an ignore rule or waiver says about it
    step: str = ""  # what to do next when the plan does not correct it (steps.py)

    @property
    def subject(self) -> str:
        """What the drift is about, whatever its values: a changed value is the same subject."""
        return f"{self.category}|{self.entry}"

    def to_json(self) -> dict[str, Any]:
        return {
            "category": self.category.value, "entry": self.entry, "kind": self.kind,
            "provider": self.provider, "reason": self.reason,
            "desired_state": self.desired_state, "live_state": self.live_state,
            "fields": [f.to_json() for f in self.fields], "fix": self.fix,
            "count": self.count, "since": _iso(self.since), "remark": self.remark,
            "step": self.step,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any]) -> Finding:
        return cls(
            Category(doc["category"]), str(doc["entry"]), str(doc["kind"]), doc.get("provider"),
            str(doc.get("reason", "")), doc.get("desired_state"), doc.get("live_state"),
            tuple(FieldDiff.from_json(f) for f in doc.get("fields", ())), doc.get("fix"),
            int(doc.get("count", 1)), _from_iso(doc.get("since")), str(doc.get("remark", "")),
            str(doc.get("step", "")),
        )


class Dated(Protocol):
    """A finding, or findings folded into one line: since when it has stood."""

    @property
    def since(self) -> datetime | None: ...


@dataclass(frozen=True, slots=True)
class Changed:
    """A drift whose values changed since it was notified: as notified, and as it is now."""

    before: Finding
    after: Finding

    def to_json(self) -> dict[str, Any]:
        return {"before": self.before.to_json(), "after": self.after.to_json()}


@dataclass(frozen=True, slots=True)
class SinceLast:
    """What the drift ledger has not notified yet: new, changed and resolved drift.
    ``last_notified`` is None when nothing of this site was ever notified."""

    new: tuple[Finding, ...] = ()
    changed: tuple[Changed, ...] = ()
    resolved: tuple[Finding, ...] = ()
    last_notified: datetime | None = None

    @property
    def anything(self) -> bool:
        return bool(self.new or self.changed or self.resolved)

    def summary(self) -> str:
        """``2 new, 1 changed, 0 resolved``."""
        return f"{len(self.new)} new, {len(self.changed)} changed, {len(self.resolved)} resolved"

    def to_json(self) -> dict[str, Any]:
        return {"new": [f.to_json() for f in self.new],
                "changed": [c.to_json() for c in self.changed],
                "resolved": [f.to_json() for f in self.resolved],
                "last_notified": _iso(self.last_notified)}


@dataclass(frozen=True, slots=True)
class ProviderGroup:
    provider: str
    findings: tuple[Finding, ...]


@dataclass(frozen=True, slots=True)
class KindGroup:
    """One table of the report: the drift of one entry kind, per provider."""

    kind: str
    providers: tuple[ProviderGroup, ...]

    @property
    def findings(self) -> tuple[Finding, ...]:
        return tuple(f for p in self.providers for f in p.findings)


@dataclass(frozen=True, slots=True)
class DriftReport:
    """Everything a rendering of one xce-drift run shows."""

    site: str
    at: datetime
    findings: tuple[Finding, ...]
    revision: str | None = None
    ignored: tuple[Finding, ...] = ()  # screened out by ignore rules: counted, not mailed
    since_last: SinceLast | None = None  # None: no drift ledger was read
    problems: tuple[Problem, ...] = ()
    recorded: bool = False  # the drift ledger was written by this run

    @property
    def has_drift(self) -> bool:
        """Exit code 2: a finding that counts (docs/drift.md, "Exit codes")."""
        return any(f.category.counts for f in self.findings)

    def counts(self) -> dict[str, int]:
        return tally(self.findings, len(self.ignored))

    def summary(self) -> str:
        """``5 findings: 1 missing, 2 differs, 2 unknown`` (or ``no drift``), for headings
        and the email's subject."""
        counts = self.counts()
        if not counts["total"]:
            return "no drift"
        parts = ", ".join(f"{counts[c.value]} {c.value}" for c in Category if counts[c.value])
        return f"{counts['total']} finding{'s' if counts['total'] > 1 else ''}: {parts}"

    def of(self, *categories: Category) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.category in categories)

    def by_kind(self) -> tuple[KindGroup, ...]:
        """The per-kind tables: drift of ours (not co-managed, not unknown) per provider."""
        return group_by_kind(self.of(*TABLED))

    def age(self, finding: Dated) -> str:
        """How long ``finding`` (or a fold of findings) has stood, in words ("3 days"); ""
        when not known."""
        if finding.since is None:
            return ""
        return duration_text((self.at - finding.since).total_seconds(), "words")

    def to_json(self) -> dict[str, Any]:
        return {
            "format": "xce-drift", "version": FORMAT_VERSION, "site": self.site,
            "at": _iso(self.at), "revision": self.revision, "drift": self.has_drift,
            "counts": self.counts(), "recorded": self.recorded,
            "findings": [f.to_json() for f in self.findings],
            "ignored": [f.to_json() for f in self.ignored],
            "since_last": None if self.since_last is None else self.since_last.to_json(),
            "problems": [p.to_json(place=False) for p in self.problems],
        }


def tally(findings: Iterable[Finding], ignored: int) -> dict[str, int]:
    """Findings per category (every category, zeros too), ``total``, and how many findings
    the site's rules ``ignored``."""
    counts = dict.fromkeys([c.value for c in Category], 0)
    for f in findings:
        counts[f.category.value] += 1
    counts["total"] = sum(counts.values())
    counts["ignored"] = ignored
    return counts


def group_by_kind(findings: Iterable[Finding]) -> tuple[KindGroup, ...]:
    """Findings by entry kind, then provider (both sorted); each group keeps its order."""
    kinds: dict[str, dict[str, list[Finding]]] = {}
    for f in findings:
        kinds.setdefault(f.kind, {}).setdefault(f.provider or "(none)", []).append(f)
    return tuple(
        KindGroup(kind, tuple(ProviderGroup(p, tuple(fs)) for p, fs in sorted(providers.items())))
        for kind, providers in sorted(kinds.items())
    )


def _iso(at: datetime | None) -> str | None:
    return None if at is None else format_utc(at, "offset")


def _from_iso(text: object) -> datetime | None:
    return parse_instant(text) if isinstance(text, str) else None

