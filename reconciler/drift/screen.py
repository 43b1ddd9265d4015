"""The one place where the site's ignore rules and waivers filter the findings.

``xce-drift`` hands ``screen`` every finding and the site's rules. What a rule ignores is
counted in the report but neither recorded in the drift ledger nor notified; a rule may
also keep a finding with a remark (a waiver that expired says so). With no rules,
everything passes unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Protocol

from reconciler.drift.model import Finding


@dataclass(frozen=True, slots=True)
class Verdict:
    """What a rule says about a finding: drop it from what is notified (``ignore``), and
    what the report says about it. With ``fields``, only the finding's fields of those
    paths are ignored: the rest stays a finding of its own, unless nothing is left."""

    ignore: bool
    remark: str = ""
    fields: frozenset[str] | None = None


class Rule(Protocol):
    """An ignore rule or a waiver: a verdict on the findings it matches, None on others."""

    def judge(self, finding: Finding, at: datetime) -> Verdict | None: ...


@dataclass(frozen=True, slots=True)
class Screened:
    kept: tuple[Finding, ...]
    ignored: tuple[Finding, ...] = ()


def screen(findings: Iterable[Finding], rules: Sequence[Rule], at: datetime) -> Screened:
    """Each finding judged by the first rule that matches it (rules in site-config order)."""
    kept: list[Finding] = []
    ignored: list[Finding] = []
    for finding in findings:
        verdict = next((v for rule in rules if (v := rule.judge(finding, at)) is not None), None)
        if verdict is None:
            kept.append(finding)
            continue
        judged = replace(finding, remark=verdict.remark) if verdict.remark else finding
        if not verdict.ignore:
            kept.append(judged)
        elif verdict.fields is None:
            ignored.append(judged)
        else:
            _split(finding, judged, verdict.fields, kept, ignored)
    return Screened(tuple(kept), tuple(ignored))


def _split(finding: Finding, judged: Finding, paths: frozenset[str], kept: list[Finding],
           ignored: list[Finding]) -> None:
    """The fields a rule ignores go to ``ignored``; a finding with other fields left stays."""
    rest = tuple(f for f in finding.fields if f.path not in paths)
    accepted = tuple(f for f in finding.fields if f.path in paths)
    if accepted:
        ignored.append(replace(judged, fields=accepted))
    if rest or not accepted:
        kept.append(replace(finding, fields=rest))
