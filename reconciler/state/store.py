"""The state-store contract: what an apply needs to be safe when several CI runners share it.

Plain frozen data goes in and out; the backends (SQLite, PostgreSQL) differ only in how
they talk to their database, never in what these records mean.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Any, Protocol


class OpStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    SKIPPED = "skipped"


FINAL_OP_STATUSES = frozenset({OpStatus.DONE, OpStatus.FAILED, OpStatus.SKIPPED})


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


@dataclass(frozen=True, slots=True)
class DriftRecord:
    site: str
    at: datetime
    counts: Mapping[str, int]


class StateStore(Protocol):
    """Locks, epochs, runs, the operation journal and site history, shared by all runners.

    Every method is one transaction; store failures (unreachable, locked, disk) raise a
    ``StateError`` (a ``UserError``) that names the store without its password.
    """

    @property
    def label(self) -> str:
        """The store's location for messages: a path or a password-free URL."""
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

    def finish_run(self, run_id: str, status: RunStatus) -> Run: ...

    def get_run(self, run_id: str) -> Run | None: ...

    def runs(
        self, plan_digest: str | None = None, limit: int = 20, *, prefix: str | None = None
    ) -> list[Run]:
        """Most recent runs first, optionally only those of one plan, or whose run_id
        starts with ``prefix`` (one site's, in a store that several sites share)."""
        ...

    def journal_add(self, run_id: str, ops: Iterable[PlannedOp]) -> None:
        """Record ops as pending; ops already done keep their row, others join this run."""
        ...

    def journal_start(self, run_id: str, op: PlannedOp) -> JournalEntry:
        """Mark an op running before its call (attempts + 1); a done op is returned unchanged."""
        ...

    def journal_finish(
        self,
        op_id: str,
        status: OpStatus,
        *,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        """Record the outcome of a call: done, failed or skipped; return the row as stored.

        A done op stays done (its result kept): a late outcome of the same op from a
        runner that was superseded cannot undo it.
        """
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

    def record_drift(self, site: str, counts: Mapping[str, int]) -> DriftRecord: ...

    def drift_history(self, site: str, limit: int = 50) -> list[DriftRecord]:
        """Most recent first."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> StateStore: ...

    def __exit__(self, *exc: object) -> None: ...
