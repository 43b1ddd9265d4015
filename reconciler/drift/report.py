"""One drift run: the plan's findings, screened by the site's rules, kept in the ledger.

``make_report`` is what ``xce-drift`` (and the email, which sends its result) runs after
the pipeline made the plan: it classifies the plan (detect.py), lets the site's rules
judge each finding (screen.py), records what is left in the state store's drift ledger,
and reads back how long each drift has stood and what the last notification did not say.
Nothing is written anywhere else.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from compiler.core.problems import Problem
from compiler.core.secrets import Redactor
from reconciler.drift import detect, ledger
from reconciler.drift.model import DriftReport
from reconciler.drift.screen import Rule, screen
from reconciler.pipeline import Desired, Live
from reconciler.plan.model import Plan
from reconciler.state import StateStore


def _redacted(p: Problem, redact: Redactor) -> Problem:
    return replace(p, message=redact.text(p.message), hint=redact.text(p.hint))


def make_report(desired: Desired, live: Live, plan: Plan, fixer: detect.Fixer, *,
                at: datetime, store: StateStore | None, record: bool,
                rules: Sequence[Rule] = ()) -> DriftReport:
    """The report of ``plan``; with a ``store``, the ledger's view of it (and, when
    ``record``, this run recorded first). ``at`` is the run's time, for the ledger too."""
    redact = desired.bindings.redactor()
    found = detect.findings(plan, desired.supply, live.supply, fixer, redact)
    screened = screen(found, rules, at)
    site = desired.supply.site_key
    report = DriftReport(
        site, at, screened.kept, desired.supply.revision, screened.ignored,
        problems=tuple(_redacted(p, redact) for p in (*live.problems, *plan.problems)))
    if store is None:
        return report
    if record:
        store.record_drift(site, report.counts(), ledger.seen(report.findings), at=at)
    return replace(
        report, findings=ledger.with_since(report.findings, store.open_drift(site)),
        since_last=ledger.since_last(store.pending_notifications(site)) if record else None,
        recorded=record)
