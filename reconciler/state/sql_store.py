"""The one implementation of ``StateStore``, over any ``Backend``.

Each public method is one transaction; writes first read the store's clock (the server's,
for PostgreSQL), so lease times come from one clock however many runners share the store.
A mutex makes one store safe to share between threads (the apply and its lock heartbeat).

A lost connection (a server restart, a pooler, a failover) is opened again and the method's
transaction run once more, but only while every lease this store took is still its own and
no newer epoch was taken under its name: otherwise the runner may have been superseded, and
the store raises ``LockLost`` (XCE807) or XCE808 instead, so the apply stops.
"""

from __future__ import annotations

import functools
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Concatenate, ParamSpec, TypeVar

import orjson

from compiler.core.canonical import dumps_compact
from reconciler.state import inventory_counts, ledger
from reconciler.state.dialect import Backend, Row
from reconciler.state.errors import LockHeld, LockLost, StateError, epoch_moved, store_failed
from reconciler.state.inventory_counts import InventoryCounts
from reconciler.state.migrations import current_version, migrate
from reconciler.state.store import (
    Applied,
    DriftEntry,
    DriftPending,
    DriftRecord,
    DriftSeen,
    Holder,
    JournalEntry,
    Lock,
    OpStatus,
    PlannedOp,
    ProvisionAttempts,
    RecordedPlan,
    ReviewStatus,
    Run,
    RunStatus,
    notification_lock,
)
from reconciler.state.times import to_maybe_time as _maybe_time
from reconciler.state.times import to_time as _time

_LOCK_COLUMNS = "name, holder, host, job_id, acquired, expires"
_RUN_COLUMNS = "run_id, plan_digest, holder, started, finished, status"
_JOURNAL_COLUMNS = (
    "op_id, run_id, action, entry_id, provider, status, attempts, error, started, finished, result"
)
_JOURNAL_J = ", ".join(f"j.{c.strip()}" for c in _JOURNAL_COLUMNS.split(","))
_REVIEW_COLUMNS = (
    "site, desired_digest, git_commit, recorded_at, status, applied_at, applied_commit, branch"
)
_ATTEMPT_COLUMNS = "entry_id, failures, failed_at, template, instance"
# a string prefix test both databases run alike (LIKE would treat '_' and '%' in it as patterns)
_STARTS_WITH = "substr({column}, 1, ?) = ?"
# which rows an outcome may change besides 'done' ones (never changed): see journal_finish
_FINISH_WHEN = {
    OpStatus.DONE: "",
    OpStatus.FAILED: " AND run_id = ?",
    OpStatus.SKIPPED: " AND run_id = ? AND status <> 'running'",
    OpStatus.RUNNING: " AND run_id = ? AND status = 'running'",
}
PLAN_KEY_BYTES = 32  # HMAC-SHA256's block-size-safe key length
RECONNECT_S = 10.0  # how long to try to reopen a lost connection when no lease bounds it
_PAUSE_S = (0.05, 1.0)  # first and longest pause between two attempts to reconnect

P = ParamSpec("P")
T = TypeVar("T")
_Method = Callable[Concatenate["SqlStore", P], T]


@dataclass(frozen=True, slots=True)
class _Lease:
    holder: str
    until: float  # time.monotonic() when the lease runs out unless renewed


def _reconnecting(method: _Method[P, T]) -> _Method[P, T]:
    """Run the method (one transaction) again on a new connection when the old one was lost.

    A transaction cut off before its COMMIT was rolled back by the server; one cut off
    during its COMMIT may have been committed, so every method is safe to run twice: at
    worst an op's attempts count one more, a drift record is kept twice, or a release that
    went through reports the lock lost.
    """

    def run(self: SqlStore, /, *args: P.args, **kwargs: P.kwargs) -> T:
        with self._mutex:
            deadline: float | None = None
            while True:
                try:
                    return method(self, *args, **kwargs)
                except StateError:
                    if not self._db.lost():
                        raise
                    deadline = deadline or self._reconnect_deadline()
                    self._reconnect(deadline)

    functools.update_wrapper(run, method)
    return run


class SqlStore:
    """Locks, epochs, runs, journal and history in one SQL database (SQLite or PostgreSQL)."""

    def __init__(self, backend: Backend) -> None:
        self._db = backend
        self._sql = backend.dialect.sql
        self._mutex = threading.RLock()
        self._leases: dict[str, _Lease] = {}  # the locks this store holds, by name
        self._epochs: dict[str, int] = {}  # the epoch taken under each of those names
        self.reconnects = 0  # lost connections opened again (for the apply's notices)
        self._store_id: str | None = None
        try:
            with self._guarded():
                migrate(backend)
        except BaseException:
            backend.close()
            raise

    @property
    def label(self) -> str:
        return self._db.label

    def close(self) -> None:
        with self._mutex:
            self._db.close()

    def __enter__(self) -> SqlStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _guarded(self) -> Iterator[None]:
        """One thread at a time; driver failures the user must fix become StateErrors."""
        with self._mutex:
            try:
                yield
            except StateError:
                raise
            except Exception as err:
                user_error = self._db.translate(err)
                if user_error is None:
                    raise
                raise user_error from None

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[None]:
        with self._guarded(), self._db.transaction(write):
            yield

    @contextmanager
    def _write(self) -> Iterator[float]:
        """A write transaction; yields the store's clock (epoch seconds)."""
        with self._transaction(write=True):
            yield self._clock()

    def _clock(self) -> float:
        now_sql = self._db.dialect.now_sql
        return float(self._db.query(now_sql)[0][0]) if now_sql else time.time()

    # -- reconnecting ------------------------------------------------------------------

    def _reconnect_deadline(self) -> float:
        """Until the first lease held would run out: past it, the runner must stop anyway."""
        leases = [lease.until for lease in self._leases.values()]
        return min(leases) if leases else time.monotonic() + RECONNECT_S

    def _reconnect(self, deadline: float) -> None:
        """Open a new connection, then check the leases and epochs; try until ``deadline``."""
        pause, started = _PAUSE_S[0], time.monotonic()
        while True:
            try:
                self._db.reconnect()
                self._verify_held()
                self.reconnects += 1
                return
            except StateError as err:
                if not self._db.lost():  # reconnected, but the lease or epoch is gone
                    raise
                left = deadline - time.monotonic()
                if left <= 0:
                    why = err.problems[0].message
                    raise store_failed(self.label, f"the connection was lost and could not "
                                       f"be opened again within {time.monotonic() - started:.1f}"
                                       f" s ({why})") from None
                time.sleep(min(pause, left))
                pause = min(pause * 2, _PAUSE_S[1])

    def _verify_held(self) -> None:
        """Go on only while each lease is still ours and unexpired and no newer epoch was
        taken under its name: else another runner may have taken over meanwhile."""
        with self._transaction(write=False):
            now = _time(self._clock())
            for name, lease in list(self._leases.items()):
                lock = self._lock(name)
                if lock is None or lock.holder != lease.holder or lock.expires <= now:
                    self._forget(name)
                    raise LockLost(name, lease.holder, lock, self.label)
                held = self._epochs.get(name)
                rows = self._query("SELECT value FROM epochs WHERE name = ?", name)
                value = int(rows[0][0]) if rows else 0
                if held is not None and value != held:
                    self._forget(name)
                    raise epoch_moved(self.label, name, held, value)

    def _hold(self, lock: Lock, ttl: float) -> None:
        self._leases[lock.name] = _Lease(lock.holder, time.monotonic() + ttl)

    def _forget(self, name: str) -> None:
        self._leases.pop(name, None)
        self._epochs.pop(name, None)

    def _query(self, sql: str, *params: Any) -> list[Row]:
        return self._db.query(self._sql(sql), params)

    def _execute(self, sql: str, *params: Any) -> int:
        return self._db.execute(self._sql(sql), params)

    def _execute_many(self, sql: str, rows: Iterable[Sequence[Any]]) -> None:
        self._db.execute_many(self._sql(sql), rows)

    @_reconnecting
    def schema_version(self) -> int:
        with self._transaction(write=False):
            return current_version(self._db)

    @property
    def store_id(self) -> str:
        """Drawn once when the store was made (schema version 5); never changes after."""
        if self._store_id is None:
            self._store_id = self._read_store_id()
        return self._store_id

    @_reconnecting
    def _read_store_id(self) -> str:
        with self._transaction(write=False):
            return str(self._query("SELECT value FROM store_meta WHERE key = 'store_id'")[0][0])

    # -- locks -------------------------------------------------------------------------

    def acquire(
        self, name: str, holder: Holder, ttl: float, *, wait: float = 0.0, poll: float = 0.5
    ) -> Lock:
        started = time.monotonic()
        while True:
            lock = self._try_acquire(name, holder, ttl)
            if lock.holder == holder.name:
                return lock
            waited = time.monotonic() - started
            if waited >= wait:
                raise LockHeld(lock, self.label, wait)
            time.sleep(min(poll, wait - waited))

    @_reconnecting
    def _try_acquire(self, name: str, holder: Holder, ttl: float) -> Lock:
        with self._write() as now:
            lock = self._take(name, holder, ttl, now)
        self._held(lock, holder, ttl)
        return lock

    def _held(self, lock: Lock, holder: Holder, ttl: float) -> None:
        """Count a lock taken as held only once its transaction committed: a COMMIT cut off
        took nothing, and the reconnect must not look for it."""
        if lock.holder == holder.name:
            self._hold(lock, ttl)

    def _take(self, name: str, holder: Holder, ttl: float, now: float) -> Lock:
        """Insert the lock, or take it over if it expired or is already ours; return the row
        (in the caller's write transaction; the caller then calls ``_held``)."""
        self._execute(
            f"INSERT INTO locks ({_LOCK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "host = excluded.host, job_id = excluded.job_id, "
            "acquired = excluded.acquired, expires = excluded.expires "
            "WHERE locks.expires <= excluded.acquired OR locks.holder = excluded.holder",
            name,
            holder.name,
            holder.host,
            holder.job_id,
            now,
            now + ttl,
        )
        lock = self._lock(name)
        assert lock is not None  # inserted or kept in this very transaction
        return lock

    @_reconnecting
    def renew(self, name: str, holder: str, ttl: float) -> Lock:
        with self._write() as now:
            changed = self._execute(
                "UPDATE locks SET expires = ? WHERE name = ? AND holder = ?",
                now + ttl,
                name,
                holder,
            )
            lock = self._lock(name)
        if not changed or lock is None:
            self._forget(name)
            raise LockLost(name, holder, lock, self.label)
        self._hold(lock, ttl)
        return lock

    @_reconnecting
    def release(self, name: str, holder: str) -> None:
        with self._write():
            released = self._execute(
                "DELETE FROM locks WHERE name = ? AND holder = ?", name, holder
            )
            current = None if released else self._lock(name)
        self._forget(name)
        if not released:
            raise LockLost(name, holder, current, self.label)

    @_reconnecting
    def force_release(self, name: str) -> Lock | None:
        with self._write():
            lock = self._lock(name)
            self._execute("DELETE FROM locks WHERE name = ?", name)
        self._forget(name)
        return lock

    @_reconnecting
    def get_lock(self, name: str) -> Lock | None:
        with self._transaction(write=False):
            return self._lock(name)

    @_reconnecting
    def list_locks(self) -> list[Lock]:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks ORDER BY name")
        return [_to_lock(row) for row in rows]

    def _lock(self, name: str) -> Lock | None:
        rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks WHERE name = ?", name)
        return _to_lock(rows[0]) if rows else None

    # -- epochs ------------------------------------------------------------------------

    @_reconnecting
    def next_epoch(self, name: str) -> int:
        with self._write():
            self._execute(
                "INSERT INTO epochs (name, value) VALUES (?, 1) "
                "ON CONFLICT (name) DO UPDATE SET value = epochs.value + 1",
                name,
            )
            epoch = int(self._query("SELECT value FROM epochs WHERE name = ?", name)[0][0])
        if name in self._leases:  # the epoch of the lock held: checked after a reconnect
            self._epochs[name] = epoch
        return epoch

    # -- runs --------------------------------------------------------------------------

    @_reconnecting
    def start_run(self, run_id: str, plan_digest: str, holder: str) -> Run:
        with self._write() as now:
            self._execute(  # run ids are unique: a conflict is this very insert run again
                f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?) "
                "ON CONFLICT (run_id) DO NOTHING",
                run_id,
                plan_digest,
                holder,
                now,
                RunStatus.RUNNING.value,
            )
            return self._run(run_id)

    @_reconnecting
    def finish_run(self, run_id: str, status: RunStatus) -> Run:
        with self._write() as now:
            if not self._execute(
                "UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                status.value,
                now,
                run_id,
            ):
                raise LookupError(f"no run {run_id!r} in the state store")
            self._execute(
                "DELETE FROM journal WHERE run_id = ? AND status = 'pending' AND attempts = 0",
                run_id,
            )
            return self._run(run_id)

    @_reconnecting
    def get_run(self, run_id: str) -> Run | None:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", run_id)
        return _to_run(rows[0]) if rows else None

    @_reconnecting
    def runs(
        self, plan_digest: str | None = None, limit: int = 20, *, prefix: str | None = None
    ) -> list[Run]:
        where: list[str] = []
        params: list[Any] = []
        if plan_digest:
            where.append("plan_digest = ?")
            params.append(plan_digest)
        if prefix:
            where.append(_STARTS_WITH.format(column="run_id"))
            params += [len(prefix), prefix]
        condition = f"WHERE {' AND '.join(where)} " if where else ""
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_RUN_COLUMNS} FROM runs {condition}ORDER BY started DESC, run_id LIMIT ?",
                *params,
                limit,
            )
        return [_to_run(row) for row in rows]

    def _run(self, run_id: str) -> Run:
        return _to_run(self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", run_id)[0])

    # -- journal -----------------------------------------------------------------------

    @_reconnecting
    def journal_add(self, run_id: str, ops: Iterable[PlannedOp]) -> None:
        rows = [
            (op.op_id, run_id, op.action, op.entry_id, op.provider, OpStatus.PENDING.value)
            for op in ops
        ]  # a list: run again after a reconnect, it must yield the rows again
        with self._write():
            self._execute_many(
                "INSERT INTO journal (op_id, run_id, action, entry_id, provider, status) "
                "VALUES (?, ?, ?, ?, ?, ?) "
                "ON CONFLICT (op_id) DO UPDATE SET run_id = excluded.run_id, "
                "status = CASE journal.status WHEN 'running' THEN 'running' "
                "ELSE excluded.status END WHERE journal.status <> 'done'",
                rows,
            )

    @_reconnecting
    def journal_start(self, run_id: str, op: PlannedOp) -> JournalEntry:
        with self._write() as now:
            self._execute(
                "INSERT INTO journal (op_id, run_id, action, entry_id, provider, status, "
                "attempts, started) VALUES (?, ?, ?, ?, ?, 'running', 1, ?) "
                "ON CONFLICT (op_id) DO UPDATE SET run_id = excluded.run_id, "
                "status = 'running', attempts = journal.attempts + 1, "
                "started = excluded.started, finished = NULL, error = NULL, result = NULL "
                "WHERE journal.status <> 'done'",
                op.op_id,
                run_id,
                op.action,
                op.entry_id,
                op.provider,
                now,
            )
            entry = self._entry(op.op_id)
        assert entry is not None  # inserted or kept in this very transaction
        return entry

    @_reconnecting
    def journal_finish(
        self,
        run_id: str,
        op_id: str,
        status: OpStatus,
        *,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        if status not in _FINISH_WHEN:
            raise ValueError(f"journal_finish cannot record {status.value!r}")
        encoded = None if result is None else dumps_compact(result).decode()
        when = _FINISH_WHEN[status]
        with self._write() as now:
            # a done op stays done: a late finish (a superseded runner's failed call) must not
            # turn it back into work, nor erase the result of the call that did it
            self._execute(
                "UPDATE journal SET status = ?, error = ?, result = ?, finished = ? "
                f"WHERE op_id = ? AND status <> 'done'{when}",
                status.value,
                error,
                encoded,
                now,
                op_id,
                *((run_id,) if when else ()),
            )
            entry = self._entry(op_id)
        if entry is None:
            raise LookupError(f"no operation {op_id!r} in the journal")
        return entry

    @_reconnecting
    def journal_abandon(self, run_id: str, op_id: str, why: str) -> bool:
        with self._write() as now:
            return bool(self._execute(
                "UPDATE journal SET status = 'skipped', error = ?, finished = ? "
                "WHERE op_id = ? AND run_id = ? AND status = 'running'",
                why,
                now,
                op_id,
                run_id,
            ))

    @_reconnecting
    def journal(
        self, *, run_id: str | None = None, plan_digest: str | None = None
    ) -> list[JournalEntry]:
        if (run_id is None) == (plan_digest is None):
            raise ValueError("journal() needs exactly one of run_id and plan_digest")
        if run_id is not None:
            sql = f"SELECT {_JOURNAL_J} FROM journal j WHERE j.run_id = ?"
        else:
            sql = (
                f"SELECT {_JOURNAL_J} FROM journal j JOIN runs r ON r.run_id = j.run_id "
                "WHERE r.plan_digest = ?"
            )
        with self._transaction(write=False):
            rows = self._query(sql + " ORDER BY j.op_id", run_id or plan_digest)
        return [_to_entry(row) for row in rows]

    @_reconnecting
    def in_doubt(self, run_prefix: str) -> list[JournalEntry]:
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_JOURNAL_J} FROM journal j JOIN runs r ON r.run_id = j.run_id "
                f"WHERE j.status = 'running' AND {_STARTS_WITH.format(column='r.run_id')} "
                "ORDER BY r.started, j.op_id",
                len(run_prefix),
                run_prefix,
            )
        return [_to_entry(row) for row in rows]

    @_reconnecting
    def done_op_ids(self, plan_digest: str) -> frozenset[str]:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT j.op_id FROM journal j JOIN runs r ON r.run_id = j.run_id "
                "WHERE r.plan_digest = ? AND j.status = 'done'",
                plan_digest,
            )
        return frozenset(row[0] for row in rows)

    def _entry(self, op_id: str) -> JournalEntry | None:
        rows = self._query(f"SELECT {_JOURNAL_COLUMNS} FROM journal WHERE op_id = ?", op_id)
        return _to_entry(rows[0]) if rows else None

    # -- site history ------------------------------------------------------------------

    @_reconnecting
    def set_applied(self, site: str, digest: str, revision: str | None) -> Applied:
        with self._write() as now:
            self._execute(
                "INSERT INTO applied (site, digest, revision, applied) VALUES (?, ?, ?, ?) "
                "ON CONFLICT (site) DO UPDATE SET digest = excluded.digest, "
                "revision = excluded.revision, applied = excluded.applied",
                site,
                digest,
                revision,
                now,
            )
        return Applied(site, digest, revision, _time(now))

    @_reconnecting
    def get_applied(self, site: str) -> Applied | None:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, digest, revision, applied FROM applied WHERE site = ?", site
            )
        if not rows:
            return None
        site, digest, revision, applied = rows[0]
        return Applied(site, digest, revision, _time(applied))

    @_reconnecting
    def drift_history(self, site: str, limit: int = 50) -> list[DriftRecord]:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, at, counts FROM drift_history WHERE site = ? "
                "ORDER BY at DESC, id DESC LIMIT ?",
                site,
                limit,
            )
        return [DriftRecord(s, _time(at), orjson.loads(counts)) for s, at, counts in rows]

    # -- plans recorded for review -----------------------------------------------------

    @_reconnecting
    def record_plan(self, site: str, desired_digest: str, commit: str,
                    plan: bytes, branch: str = "") -> RecordedPlan:
        with self._write() as now:
            self._execute(
                f"INSERT INTO reviewed_plans ({_REVIEW_COLUMNS}, plan) "
                "VALUES (?, ?, ?, ?, 'pending', NULL, NULL, ?, ?) "
                "ON CONFLICT (site, desired_digest, git_commit) DO UPDATE SET "
                "recorded_at = excluded.recorded_at, plan = excluded.plan, status = 'pending', "
                "applied_at = NULL, applied_commit = NULL, branch = excluded.branch",
                site, desired_digest, commit, now, branch, plan,
            )
            superseded = 0 if not branch else self._execute(
                "UPDATE reviewed_plans SET status = 'superseded' WHERE site = ? AND branch = ? "
                "AND status = 'pending' AND NOT (desired_digest = ? AND git_commit = ?)",
                site, branch, desired_digest, commit,
            )
        return RecordedPlan(site, desired_digest, commit, _time(now), ReviewStatus.PENDING,
                            branch=branch, superseded=superseded)

    @_reconnecting
    def pending_plan(self, site: str,
                     desired_digest: str) -> tuple[RecordedPlan, bytes] | None:
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_REVIEW_COLUMNS}, plan FROM reviewed_plans WHERE site = ? AND "
                "desired_digest = ? AND status = 'pending' "
                "ORDER BY recorded_at DESC, git_commit LIMIT 1",
                site, desired_digest,
            )
        return (_to_review(rows[0]), bytes(rows[0][-1])) if rows else None

    @_reconnecting
    def pending_plans(self, site: str, limit: int = 20) -> list[RecordedPlan]:
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_REVIEW_COLUMNS} FROM reviewed_plans WHERE site = ? AND "
                "status = 'pending' ORDER BY recorded_at DESC, git_commit LIMIT ?",
                site, limit,
            )
        return [_to_review(row) for row in rows]

    @_reconnecting
    def mark_plan_applied(self, site: str, desired_digest: str, commit: str,
                          applied_commit: str) -> RecordedPlan:
        key = (site, desired_digest, commit)
        with self._write() as now:
            if not self._execute(
                "UPDATE reviewed_plans SET status = 'applied', applied_at = ?, "
                "applied_commit = ? WHERE site = ? AND desired_digest = ? AND git_commit = ?",
                now, applied_commit, *key,
            ):
                raise LookupError(f"no plan recorded for review for {key!r}")
            self._execute(
                "UPDATE reviewed_plans SET status = 'superseded' WHERE site = ? AND "
                "desired_digest = ? AND git_commit <> ? AND status = 'pending'",
                *key,
            )
            rows = self._query(f"SELECT {_REVIEW_COLUMNS} FROM reviewed_plans WHERE site = ? "
                               "AND desired_digest = ? AND git_commit = ?", *key)
        return _to_review(rows[0])

    # -- the drift ledger (statements in reconciler/state/ledger.py) -------------------

    def record_drift(self, site: str, counts: Mapping[str, int], seen: Iterable[DriftSeen] = (),
                     *, at: datetime | None = None) -> DriftRecord:
        # a tuple: run again after a reconnect, the transaction must see them all again
        return self._record_drift(site, dict(counts), tuple(seen), at)

    @_reconnecting
    def _record_drift(self, site: str, counts: dict[str, int], seen: tuple[DriftSeen, ...],
                      at: datetime | None) -> DriftRecord:
        with self._write() as clock:
            now = clock if at is None else at.timestamp()
            ledger.record(self, site, counts, seen, now)
        return DriftRecord(site, _time(now), counts)

    @_reconnecting
    def open_drift(self, site: str) -> list[DriftEntry]:
        with self._transaction(write=False):
            return ledger.open_entries(self, site)

    @_reconnecting
    def pending_notifications(self, site: str) -> DriftPending:
        with self._transaction(write=False):
            return ledger.pending(self, site)

    @_reconnecting
    def claim_notifications(self, site: str, holder: Holder, ttl: float) -> DriftPending:
        with self._write() as now:
            lock = self._take(notification_lock(site), holder, ttl, now)
            if lock.holder != holder.name:
                raise LockHeld(lock, self.label, 0.0)
            pending = ledger.pending(self, site)
        self._held(lock, holder, ttl)
        return pending

    def mark_notified(self, site: str, fingerprints: Iterable[str], at: datetime | None = None,
                      *, holder: str, digest: bool = False) -> int:
        return self._mark_notified(site, tuple(fingerprints), at, holder, digest)

    @_reconnecting
    def _mark_notified(self, site: str, keys: tuple[str, ...], at: datetime | None,
                       holder: str, digest: bool) -> int:
        name = notification_lock(site)
        with self._write() as clock:
            lock = self._lock(name)
            if lock is None or lock.holder != holder or lock.expires <= _time(clock):
                self._forget(name)
                raise LockLost(name, holder, lock, self.label)
            marked = ledger.mark(self, site, keys, clock if at is None else at.timestamp(),
                                 digest)
            self._execute("DELETE FROM locks WHERE name = ? AND holder = ?", name, holder)
        self._forget(name)
        return marked

    def release_notifications(self, site: str, holder: str) -> None:
        self.release(notification_lock(site), holder)

    @_reconnecting
    def last_digest(self, site: str) -> datetime | None:
        with self._transaction(write=False):
            return ledger.last_digest(self, site)

    # -- provider generations ----------------------------------------------------------

    @_reconnecting
    def provider_generations(self, site: str) -> dict[str, int]:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT provider, generation FROM provider_generations WHERE site = ?", site
            )
        return {provider: int(generation) for provider, generation in rows}

    def record_generations(self, site: str, generations: Mapping[str, int]) -> None:
        self._put_generations(site, generations, lower=False)

    def accept_generation(self, site: str, provider: str, generation: int) -> None:
        self._put_generations(site, {provider: generation}, lower=True)

    @_reconnecting
    def _put_generations(self, site: str, generations: Mapping[str, int], lower: bool) -> None:
        # one upsert decides, so two runners recording at once never lower the record
        keep = "" if lower else " WHERE excluded.generation > provider_generations.generation"
        rows = [(site, p, _padded(g)) for p, g in sorted(generations.items())]
        if not rows:
            return
        with self._write() as now:
            self._execute_many(
                "INSERT INTO provider_generations (site, provider, generation, recorded) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (site, provider) DO UPDATE SET "
                f"generation = excluded.generation, recorded = excluded.recorded{keep}",
                [(*row, now) for row in rows],
            )


    # -- provisioning attempts ---------------------------------------------------------

    @_reconnecting
    def provision_attempts(self, site: str) -> dict[str, ProvisionAttempts]:
        with self._transaction(write=False):
            rows = self._query(
                f"SELECT {_ATTEMPT_COLUMNS} FROM provision_attempts WHERE site = ?", site
            )
        return {row[0]: _to_attempts(row) for row in rows}

    @_reconnecting
    def record_provision_failure(self, site: str, entry: str, *, failures: int, template: str,
                                 instance: str, at: datetime | None = None) -> ProvisionAttempts:
        if failures < 1:
            raise ValueError(f"a recorded failure is attempt 1 or later, not {failures}")
        with self._write() as clock:
            # one upsert decides: the same release recorded again (a resumed apply, a
            # reconnect that runs this again) keeps the row as it is
            self._execute(
                f"INSERT INTO provision_attempts (site, {_ATTEMPT_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (site, entry_id) DO UPDATE SET "
                "failures = excluded.failures, failed_at = excluded.failed_at, "
                "template = excluded.template, instance = excluded.instance "
                "WHERE provision_attempts.instance <> excluded.instance",
                site, entry, failures, clock if at is None else at.timestamp(), template,
                instance,
            )
            rows = self._query(f"SELECT {_ATTEMPT_COLUMNS} FROM provision_attempts "
                               "WHERE site = ? AND entry_id = ?", site, entry)
        return _to_attempts(rows[0])

    def clear_provision_attempts(self, site: str, seen: Mapping[str, str]) -> int:
        rows = [(site, entry, instance) for entry, instance in sorted(seen.items())]
        return self._clear_attempts(rows) if rows else 0

    @_reconnecting
    def _clear_attempts(self, rows: list[tuple[str, str, str]]) -> int:
        with self._write():
            return sum(self._execute("DELETE FROM provision_attempts WHERE site = ? AND "
                                     "entry_id = ? AND instance = ?", *row) for row in rows)

    # -- the key that signs saved plans (docs/plan.md, "Plan file") --------------------

    @_reconnecting
    def plan_key(self) -> bytes:
        """This store's plan-signing key, drawn on first use (one per store, never changed);
        only the first caller writes, and two at once keep the same (the insert's winner)."""
        select = "SELECT key_hex FROM plan_signing_key WHERE name = 'plan'"
        with self._transaction(write=False):
            rows = self._query(select)
        if not rows:
            with self._write() as now:
                self._execute("INSERT INTO plan_signing_key (name, key_hex, created) "
                              "VALUES ('plan', ?, ?) ON CONFLICT (name) DO NOTHING",
                              secrets.token_hex(PLAN_KEY_BYTES), now)
                rows = self._query(select)
        return bytes.fromhex(str(rows[0][0]))

    # -- inventory counts --------------------------------------------------------------

    @_reconnecting
    def inventory_counts(self, site: str) -> dict[str, InventoryCounts]:
        with self._transaction(write=False):
            return inventory_counts.read(self, site)

    @_reconnecting
    def record_inventory_counts(self, site: str,
                                counts: Mapping[str, Mapping[str, int]]) -> None:
        if counts:
            with self._write() as now:
                inventory_counts.write(self, site, counts, now)

    @_reconnecting
    def done_since(self, run_prefix: str, actions: Sequence[str],
                   since: datetime) -> list[tuple[str, str]]:
        with self._transaction(write=False):
            return inventory_counts.done_since(self, run_prefix, actions, since)


def _padded(generation: int) -> str:
    """20 digits hold any generation (0 .. 2**64-1); padded, text order is number order."""
    if not 0 <= generation < 2**64:
        raise ValueError(f"a generation is a whole number from 0 to 2**64-1, not {generation}")
    return f"{generation:020d}"


def _to_attempts(row: Row) -> ProvisionAttempts:
    entry, failures, failed_at, template, instance = row
    return ProvisionAttempts(entry, int(failures), _time(failed_at), template, instance)

def _to_review(row: Row) -> RecordedPlan:
    site, digest, commit, recorded, status, applied_at, applied_commit, branch = row[:8]
    return RecordedPlan(site, digest, commit, _time(recorded), ReviewStatus(status),
                        _maybe_time(applied_at), applied_commit, branch)


def _to_lock(row: Row) -> Lock:
    name, holder, host, job_id, acquired, expires = row
    return Lock(name, holder, host, job_id, _time(acquired), _time(expires))


def _to_run(row: Row) -> Run:
    run_id, digest, holder, started, finished, status = row
    return Run(run_id, digest, holder, _time(started), _maybe_time(finished), RunStatus(status))


def _to_entry(row: Row) -> JournalEntry:
    op_id, run_id, action, entry_id, provider, status, attempts, error, started, finished = row[:10]
    result = None if row[10] is None else orjson.loads(row[10])
    return JournalEntry(
        op_id,
        run_id,
        action,
        entry_id,
        provider,
        OpStatus(status),
        int(attempts),
        error,
        _maybe_time(started),
        _maybe_time(finished),
        result,
    )
