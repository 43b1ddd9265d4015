"""Findings in the state store's drift ledger: what a run records, and what it reads back.

A finding's fingerprint hashes what the drift is — its subject (kind of drift and entry)
and its redacted desired and live values — so the same drift seen twice is one row, and a
changed value is a new drift of the same subject, which the ledger reports as "changed".
An unknown finding's fingerprint is its subject alone: how many entries a silent provider
hides, or the wording of its error, is not a new drift. The ledger keeps each finding's
JSON with long values shortened; no value reaches it unredacted (detect.py redacts).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

from compiler.core.canonical import digest_of, dumps_compact
from compiler.core.text_limits import TEXT_LIMIT, shorten
from reconciler.drift.model import Category, Changed, FieldDiff, Finding, SinceLast
from reconciler.state.store import DriftEntry, DriftPending, DriftSeen

KEPT_VALUE_CHARS = 2000  # a longer value is kept in the ledger as its shortened JSON text


def fingerprint(finding: Finding) -> str:
    what: dict[str, Any] = {"subject": finding.subject}
    if finding.category is not Category.UNKNOWN:
        what.update(desired=finding.desired_state, live=finding.live_state,
                    fields=[f.to_json() for f in finding.fields])
    return digest_of(what)


def _kept(value: Any) -> Any:
    text = dumps_compact(value).decode()
    return value if len(text) <= KEPT_VALUE_CHARS else shorten(text, KEPT_VALUE_CHARS)


def _detail(finding: Finding) -> dict[str, Any]:
    fields = tuple(FieldDiff(f.path, _kept(f.desired), _kept(f.live)) for f in finding.fields)
    doc = replace(finding, reason=shorten(finding.reason, TEXT_LIMIT), fields=fields,
                  since=None).to_json()
    doc["fingerprint"] = fingerprint(finding)
    return doc


def seen(findings: Iterable[Finding]) -> list[DriftSeen]:
    """What ``StateStore.record_drift`` takes for these findings."""
    return [DriftSeen(fingerprint(f), f.subject, _detail(f)) for f in findings]


def with_since(findings: Iterable[Finding], entries: Iterable[DriftEntry]) -> tuple[Finding, ...]:
    """Each finding with the time the ledger first saw it (None for one it never saw)."""
    first = {e.fingerprint: e.first_seen for e in entries}
    return tuple(replace(f, since=first.get(fingerprint(f))) for f in findings)


def _finding(entry: DriftEntry) -> Finding:
    return replace(Finding.from_json(entry.detail), since=entry.first_seen)


def since_last(pending: DriftPending) -> SinceLast:
    """The ledger's news as findings, for the report's "since the last notification"."""
    return SinceLast(
        new=tuple(_finding(e) for e in pending.new),
        changed=tuple(Changed(_finding(b), _finding(a)) for b, a in pending.changed),
        resolved=tuple(_finding(e) for e in pending.resolved),
        last_notified=pending.last_notified,
    )

