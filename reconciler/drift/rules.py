"""The site's ignore rules and waivers as ``screen.Rule``s (docs/drift.md, "Ignore rules").

The compiler writes them to ``build/drift.json`` (``compiler.contract.drift.CompiledDrift``);
``Desired.drift`` holds that document as read through the same models. A rule matches
a finding when every key it names does: the entry id by glob (fnmatch, case-sensitive,
``*`` spans ``/``), the kind and the provider exactly, and ``field`` when a field the
finding differs in matches its glob. A rule with ``field`` takes only those fields: the
finding's other fields stay drift (``screen`` splits it). Unknown findings (a provider
that could not be seen) match no rule: "cannot tell" is never accepted drift.

An ignore rule drops a finding for good. A waiver drops it until its ``expires`` date,
by the policy waivers' rule (``days_left``) on the run's UTC date; after that the finding
is kept and marked "waiver expired on …". A waived finding was never recorded, so once
its waiver expires it is new to the ledger and mailed as news.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from fnmatch import fnmatchcase

from compiler.contract.drift import CompiledDrift, CompiledIgnore, CompiledWaiver, Match
from compiler.core.times import days_left, format_date
from reconciler.drift.model import Category, Finding
from reconciler.drift.screen import Rule, Verdict


def matches(rule: Match, finding: Finding) -> bool:
    """Whether every key ``rule`` names matches ``finding`` (see the module docstring)."""
    if finding.category is Category.UNKNOWN:
        return False
    if rule.entries is not None and not fnmatchcase(finding.entry, rule.entries):
        return False
    if rule.kind is not None and rule.kind != finding.kind:
        return False
    if rule.provider is not None and rule.provider != finding.provider:
        return False
    return rule.field is None or bool(taken(rule, finding))


def taken(rule: Match, finding: Finding) -> frozenset[str] | None:
    """The field paths a rule with ``field`` takes from ``finding``; None: all of it."""
    glob = rule.field
    if glob is None:
        return None
    return frozenset(f.path for f in finding.fields if fnmatchcase(f.path, glob))


@dataclass(frozen=True, slots=True)
class Ignore:
    """An ignore rule: what it matches is counted in the report, never recorded or mailed."""

    rule: CompiledIgnore

    def judge(self, finding: Finding, at: datetime) -> Verdict | None:
        if not matches(self.rule, finding):
            return None
        return Verdict(True, f"ignored by the rule at {self.rule.where}: {self.rule.reason}",
                       taken(self.rule, finding))


@dataclass(frozen=True, slots=True)
class Waivers:
    """All waivers as one rule: one in force waives a finding (the latest-expiring one is
    named); failing that, the expired waiver that matches marks it "waiver expired on"."""

    waivers: tuple[CompiledWaiver, ...]

    def judge(self, finding: Finding, at: datetime) -> Verdict | None:
        found = sorted((w for w in self.waivers if matches(w, finding)),
                       key=lambda w: w.expires, reverse=True)
        if not found:
            return None
        w = found[0]
        if days_left(w.expires, at.astimezone(UTC).date()) is None:
            return Verdict(False, f"waiver expired on {format_date(w.expires)} (owner {w.owner}, "
                           f"{w.where}): {w.reason}")
        return Verdict(True, f"waived until {format_date(w.expires)} by {w.owner} ({w.where}): "
                       f"{w.reason}", taken(w, finding))


def rules_of(drift: CompiledDrift) -> tuple[Rule, ...]:
    """The rules ``screen`` applies in order: the ignore rules as written, then the waivers."""
    waivers: tuple[Rule, ...] = (Waivers(tuple(drift.waivers)),) if drift.waivers else ()
    return (*(Ignore(rule) for rule in drift.ignore), *waivers)
