"""The state store's records: what an apply needs to be safe when several CI runners share it.

Plain frozen data goes in and out of the store (``SqlStore``, named ``StateStore`` by the
rest of the code); the backends (SQLite, PostgreSQL) differ only in how they talk to their
database, never in what these records mean.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any


class OpStatus(StrEnum):
    """Where an op stands. ``running`` means *sent, outcome unknown*: in flight while its run
    lives, in doubt once it ended. Only an outcome of the call ends it (``done``, or
    ``failed`` from the run that sent it), or recovery closing an op no plan needs any more:
    a new run adopts it still in doubt, and a skip leaves it in doubt.
    """

    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


class RunStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


@dataclass(frozen=True, slots=True)
class Holder:
    """Who takes a lock: a token unique to one runner plus what a person needs to find it."""

    name: str
    host: str
    job_id: str | None = None


@dataclass(frozen=True, slots=True)
class Lock:
    """A lease: valid until ``expires`` unless its holder renews it (heartbeat)."""

    name: str
    holder: str
    host: str
    job_id: str | None
    acquired: datetime
    expires: datetime


@dataclass(frozen=True, slots=True)
class Run:
    run_id: str
    plan_digest: str
    holder: str
    started: datetime
    finished: datetime | None
    status: RunStatus


@dataclass(frozen=True, slots=True)
class PlannedOp:
    """One provider call the apply is about to make, keyed by its idempotency key."""

    op_id: str
    action: str
    entry_id: str
    provider: str


@dataclass(frozen=True, slots=True)
class OpOutcome:
    """What became of an op, to record in the journal (as ``journal_finish`` records it)."""

    op_id: str
    status: OpStatus
    error: str | None = None
    result: Mapping[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class JournalEntry:
    op_id: str
    run_id: str
    action: str
    entry_id: str
    provider: str
    status: OpStatus
    attempts: int
    error: str | None
    started: datetime | None
    finished: datetime | None
    result: Mapping[str, Any] | None


@dataclass(frozen=True, slots=True)
class Applied:
    """What was last applied to a site, so the next plan can tell what is new."""

    site: str
    digest: str
    revision: str | None
    applied: datetime


class ReviewStatus(StrEnum):
    """Where a plan recorded for review stands: ``superseded`` once another plan of the same
    site and desired digest was applied, or a newer one of the same site and branch was
    recorded."""

    PENDING = "pending"
    APPLIED = "applied"
    SUPERSEDED = "superseded"


@dataclass(frozen=True, slots=True)
class RecordedPlan:
    """A plan recorded for review (``xce-plan --record``), without its bytes: keyed by site,
    desired digest and git commit (``""`` when the site is not in git), with the branch (pull
    request) it was made for (``""``: none known) and, when just recorded, how many older
    pending plans of that branch it superseded."""

    site: str
    desired_digest: str
    commit: str
    recorded_at: datetime
    status: ReviewStatus
    applied_at: datetime | None = None
    applied_commit: str | None = None
    branch: str = ""
    superseded: int = 0


@dataclass(frozen=True, slots=True)
class DriftRecord:
    """One recorded drift run of a site: when, and how many findings of each kind."""

    site: str
    at: datetime
    counts: Mapping[str, int]


def notification_lock(site: str) -> str:
    """The lease under which one run notifies a site's drift (docs/drift.md)."""
    return f"drift-notify/{site}"


@dataclass(frozen=True, slots=True)
class DriftSeen:
    """One drift a run saw. ``fingerprint`` hashes what it is (entry, kind of drift, the
    redacted desired and live values); ``subject`` is what it is about, the same when only
    its values change; ``detail`` the redacted finding, kept to report it later."""

    fingerprint: str
    subject: str
    detail: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class DriftEntry:
    """A drift in the ledger: open (``resolved_at`` None), or resolved and not yet
    notified. ``notified_at``: when its appearance was notified."""

    fingerprint: str
    subject: str
    detail: Mapping[str, Any]
    first_seen: datetime
    last_seen: datetime
    notified_at: datetime | None
    resolved_at: datetime | None

    @property
    def notified(self) -> bool:
        """Whether the ledger's news about it (it is there; it is gone) has been told."""
        return self.resolved_at is None and self.notified_at is not None


@dataclass(frozen=True, slots=True)
class DriftPending:
    """What has not been notified: drift that appeared, drift whose values changed since
    notified (as notified, as now) and notified drift that is gone."""

    new: tuple[DriftEntry, ...] = ()
    changed: tuple[tuple[DriftEntry, DriftEntry], ...] = ()
    resolved: tuple[DriftEntry, ...] = ()
    last_notified: datetime | None = None

    @property
    def fingerprints(self) -> tuple[str, ...]:
        """What ``mark_notified`` takes once all of it was sent."""
        return (*(e.fingerprint for e in self.new),
                *(e.fingerprint for pair in self.changed for e in pair),
                *(e.fingerprint for e in self.resolved))
