"""The state-store contract: what an apply needs to be safe when several CI runners share it.

Plain frozen data goes in and out; the backends (SQLite, PostgreSQL) differ only in how
they talk to their database, never in what these records mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from reconciler.state.inventory_counts import InventoryCounts


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


@dataclass(frozen=True, slots=True)
class ProvisionAttempts:
    """The provisioning attempts of one instance entry whose host never joined (P6), in a
    row: ``failures`` of them, the last recorded at ``failed_at``, made from ``template``.
    ``instance`` names the instance released last (its ``spec.since``, or the digest of its
    entry), so recording the same release again — a resumed apply, a release retried after
    it failed — counts nothing twice."""

    entry: str
    failures: int
    failed_at: datetime
    template: str
    instance: str


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


class StateStore(Protocol):
    """Locks, epochs, runs, the operation journal and site history, shared by all runners.

    Every method is one transaction; store failures (unreachable, locked, disk) raise a
    ``StateError`` (a ``UserError``) that names the store without its password.
    """

    @property
    def label(self) -> str:
        """The store's location for messages: a path or a password-free URL."""
        ...

    @property
    def reconnects(self) -> int:
        """How often a lost connection was opened again (each time with the leases and
        epochs this store holds found still its own)."""
        ...

    @property
    def store_id(self) -> str:
        """The store's own identity, drawn when it was made: a saved plan records it, so
        a plan applied against another store is refused (docs/apply.md)."""
        ...

    def schema_version(self) -> int: ...

    # -- locks (TTL leases) ------------------------------------------------------------
    def acquire(
        self, name: str, holder: Holder, ttl: float, *, wait: float = 0.0, poll: float = 0.5
    ) -> Lock:
        """Take the lock (or an expired one); poll up to ``wait`` s, then raise ``LockHeld``."""
        ...

    def renew(self, name: str, holder: str, ttl: float) -> Lock:
        """Extend the lease to now + ttl; raise ``LockLost`` if another runner took it."""
        ...

    def release(self, name: str, holder: str) -> None:
        """Give the lock back; raise ``LockLost`` if ``holder`` does not hold it."""
        ...

    def force_release(self, name: str) -> Lock | None:
        """Remove the lock whoever holds it (``xce-lock release``); return what was removed."""
        ...

    def get_lock(self, name: str) -> Lock | None: ...

    def list_locks(self) -> list[Lock]: ...

    # -- fencing epochs ----------------------------------------------------------------
    def next_epoch(self, name: str) -> int:
        """The next value of a counter that only grows, unique across concurrent runners."""
        ...

    # -- runs and the operation journal ------------------------------------------------
    def start_run(self, run_id: str, plan_digest: str, holder: str) -> Run: ...

    def finish_run(self, run_id: str, status: RunStatus) -> Run:
        """Close the run; the ops it journaled but never sent (``pending``, no attempt) are
        dropped: nobody will send them under this run, and a rerun of the same plan journals
        them again from the plan."""
        ...

    def get_run(self, run_id: str) -> Run | None: ...

    def runs(
        self, plan_digest: str | None = None, limit: int = 20, *, prefix: str | None = None
    ) -> list[Run]:
        """Most recent runs first, optionally only those of one plan, or whose run_id
        starts with ``prefix`` (one site's, in a store that several sites share)."""
        ...

    def journal_add(self, run_id: str, ops: Iterable[PlannedOp]) -> None:
        """Record ops as pending; ops already done keep their row, others join this run (an
        op in doubt joins it still ``running``: only an outcome of its call ends the doubt)."""
        ...

    def journal_start(self, run_id: str, op: PlannedOp) -> JournalEntry:
        """Mark an op running before its call (attempts + 1); a done op is returned unchanged."""
        ...

    def journal_finish(
        self,
        run_id: str,
        op_id: str,
        status: OpStatus,
        *,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        """Record what became of an op in run ``run_id``; return the row as stored.

        ``done``: the provider did it, whichever run asked (a done op stays done, its result
        kept). ``failed``: only while the op is this run's (a superseded runner's late
        failure cannot end the doubt of a newer run's call). ``skipped``: only for this
        run's ops that are not in doubt. ``running``: this run's call ended without a known
        outcome (a deadline): the error is kept and the op stays in doubt.
        """
        ...

    def journal_abandon(self, run_id: str, op_id: str, why: str) -> bool:
        """Close as skipped an op that the dead run ``run_id`` left in doubt and that no plan
        will send again; False when it has an outcome by now or another run adopted it."""
        ...

    def journal(
        self, *, run_id: str | None = None, plan_digest: str | None = None
    ) -> list[JournalEntry]:
        """The journal of one run or of every run of one plan, ordered by op_id."""
        ...

    def in_doubt(self, run_prefix: str) -> list[JournalEntry]:
        """Ops still ``running`` in runs whose run_id starts with ``run_prefix``, oldest run
        first: their runner died (or was fenced off) during the call."""
        ...

    def done_op_ids(self, plan_digest: str) -> frozenset[str]:
        """The ops of a plan that are done, so a resumed apply skips them."""
        ...

    # -- site history ------------------------------------------------------------------
    def set_applied(self, site: str, digest: str, revision: str | None) -> Applied: ...

    def get_applied(self, site: str) -> Applied | None: ...

    def drift_history(self, site: str, limit: int = 50) -> list[DriftRecord]:
        """Most recent first."""
        ...

    # -- plans recorded for review (docs/apply.md, "Reviewed plans") ------------------
    def record_plan(self, site: str, desired_digest: str, commit: str,
                    plan: bytes, branch: str = "") -> RecordedPlan:
        """Keep ``plan`` (the plan file's bytes) as pending for review; the same key
        recorded again replaces the plan, pending again. In the same transaction the other
        pending plans of ``site`` recorded for ``branch`` (when not ``""``) are superseded:
        a second push to a pull request leaves one plan to review."""
        ...

    def pending_plan(self, site: str,
                     desired_digest: str) -> tuple[RecordedPlan, bytes] | None:
        """The newest pending plan of ``site`` for ``desired_digest``, with its bytes."""
        ...

    def pending_plans(self, site: str, limit: int = 20) -> list[RecordedPlan]:
        """The pending plans of ``site``, newest first (what a refusal lists)."""
        ...

    def mark_plan_applied(self, site: str, desired_digest: str, commit: str,
                          applied_commit: str) -> RecordedPlan:
        """Mark that plan applied (at ``applied_commit``); the other pending plans of the
        same site and digest become superseded. LookupError when it is not recorded."""
        ...

    # -- the drift ledger (docs/drift.md, "The drift ledger") -------------------------
    def record_drift(self, site: str, counts: Mapping[str, int], seen: Iterable[DriftSeen] = (),
                     *, at: datetime | None = None) -> DriftRecord:
        """Record a drift run: ``seen`` is every drift it found (new ones open, known ones
        seen again), and open drift it did not see is resolved. Runs of one site are
        serialised. ``at`` defaults to the store's clock."""
        ...

    def open_drift(self, site: str) -> list[DriftEntry]:
        """Every open drift of ``site`` (for a digest), by subject."""
        ...

    def pending_notifications(self, site: str) -> DriftPending:
        """What is new, changed or resolved since the last notification (read only)."""
        ...

    def claim_notifications(self, site: str, holder: Holder, ttl: float) -> DriftPending:
        """Take the site's notification lease (``notification_lock``) and read what is
        pending, in one transaction; ``LockHeld`` while another run holds it. Then either
        ``mark_notified`` (it was sent) or ``release_notifications`` (it was not)."""
        ...

    def mark_notified(self, site: str, fingerprints: Iterable[str], at: datetime | None = None,
                      *, holder: str, digest: bool = False) -> int:
        """In one transaction, while ``holder`` still holds the lease: mark ``fingerprints``
        notified (resolved ones are then forgotten), note the time (and, with ``digest``,
        that a digest of all open drift was sent), and give the lease back. Returns how
        many drifts were marked; ``LockLost`` if the lease is no longer ``holder``'s."""
        ...

    def release_notifications(self, site: str, holder: str) -> None:
        """Give the lease back without marking anything: the next run notifies it all."""
        ...

    def last_digest(self, site: str) -> datetime | None:
        """When a digest of ``site``'s open drift was last sent, if ever."""
        ...

    # -- provider generations (docs/plan.md, "Providers that did not answer") ----------
    def provider_generations(self, site: str) -> dict[str, int]:
        """The highest inventory generation recorded per provider of ``site``."""
        ...

    def record_generations(self, site: str, generations: Mapping[str, int]) -> None:
        """Remember generations a gather trusted; a recorded generation never goes down."""
        ...

    def accept_generation(self, site: str, provider: str, generation: int) -> None:
        """Record ``generation`` even if lower: the provider was replaced on purpose."""
        ...

    # -- provisioning attempts (docs/plan.md, "Provisioning backoff") -------------------
    def provision_attempts(self, site: str) -> dict[str, ProvisionAttempts]:
        """The recorded attempts of ``site``'s instance entries, by entry id."""
        ...

    def record_provision_failure(self, site: str, entry: str, *, failures: int, template: str,
                                 instance: str, at: datetime | None = None) -> ProvisionAttempts:
        """Record that attempt ``failures`` (a count the plan worked out) of ``entry`` failed
        when ``instance`` is released: its host never joined. The same ``instance`` recorded
        again changes nothing (the first time is kept). ``at`` defaults to the store's clock."""
        ...

    def clear_provision_attempts(self, site: str, seen: Mapping[str, str]) -> int:
        """Forget the attempts of each entry (id -> the ``instance`` the plan saw recorded)
        whose host joined: only while the record is still the one seen, so a failure
        recorded since is kept. Returns how many records were forgotten."""
        ...

    # -- the key that signs saved plans (docs/plan.md, "Plan file") --------------------
    def plan_key(self) -> bytes:
        """The key this store signs its saved plans with (HMAC-SHA256), drawn once, on
        first use; never printed: whoever reads it may sign plans for this store."""
        ...

    # -- inventory counts (docs/plan.md, "An inventory that shrank") -------------------
    def inventory_counts(self, site: str) -> dict[str, InventoryCounts]:
        """Per provider of ``site``: its entries per kind at the last trusted read."""
        ...

    def record_inventory_counts(self, site: str,
                                counts: Mapping[str, Mapping[str, int]]) -> None:
        """Each named provider's entries per kind now (the store's clock), replacing its last."""
        ...

    def done_since(self, run_prefix: str, actions: Sequence[str],
                   since: datetime) -> list[tuple[str, str]]:
        """(provider, entry id) of the journal's ops done with one of ``actions`` from
        ``since`` on, by runs whose id starts with ``run_prefix``."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> StateStore: ...

    def __exit__(self, *exc: object) -> None: ...
