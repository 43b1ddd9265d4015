"""The one implementation of ``StateStore``, over any ``Backend``.

Each public method is one transaction; writes first read the store's clock (the server's,
for PostgreSQL), so lease times come from one clock however many runners share the store.
A mutex makes one store safe to share between threads (the apply and its lock heartbeat).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import orjson

from compiler.canonical import dumps_compact
from reconciler.state.dialect import Backend, Row
from reconciler.state.errors import LockHeld, LockLost, StateError
from reconciler.state.migrations import current_version, migrate
from reconciler.state.store import (
    FINAL_OP_STATUSES,
    Applied,
    DriftRecord,
    Holder,
    JournalEntry,
    Lock,
    OpStatus,
    PlannedOp,
    Run,
    RunStatus,
)

_LOCK_COLUMNS = "name, holder, host, job_id, acquired, expires"
_RUN_COLUMNS = "run_id, plan_digest, holder, started, finished, status"
_JOURNAL_COLUMNS = (
    "op_id, run_id, action, entry_id, provider, status, attempts, error, started, finished, result"
)
_JOURNAL_J = ", ".join(f"j.{c.strip()}" for c in _JOURNAL_COLUMNS.split(","))
# a string prefix test both databases run alike (LIKE would treat '_' and '%' in it as patterns)
_STARTS_WITH = "substr({column}, 1, ?) = ?"


class SqlStore:
    """Locks, epochs, runs, journal and history in one SQL database (SQLite or PostgreSQL)."""

    def __init__(self, backend: Backend) -> None:
        self._db = backend
        self._sql = backend.dialect.sql
        self._mutex = threading.RLock()
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
            now_sql = self._db.dialect.now_sql
            yield float(self._db.query(now_sql)[0][0]) if now_sql else time.time()

    def _query(self, sql: str, *params: Any) -> list[Row]:
        return self._db.query(self._sql(sql), params)

    def _execute(self, sql: str, *params: Any) -> int:
        return self._db.execute(self._sql(sql), params)

    def schema_version(self) -> int:
        with self._transaction(write=False):
            return current_version(self._db)

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

    def _try_acquire(self, name: str, holder: Holder, ttl: float) -> Lock:
        """Insert the lock, or take it over if it expired or is already ours; return the row."""
        with self._write() as now:
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
            raise LockLost(name, holder, lock, self.label)
        return lock

    def release(self, name: str, holder: str) -> None:
        with self._write():
            if self._execute("DELETE FROM locks WHERE name = ? AND holder = ?", name, holder):
                return
            current = self._lock(name)
        raise LockLost(name, holder, current, self.label)

    def force_release(self, name: str) -> Lock | None:
        with self._write():
            lock = self._lock(name)
            self._execute("DELETE FROM locks WHERE name = ?", name)
        return lock

    def get_lock(self, name: str) -> Lock | None:
        with self._transaction(write=False):
            return self._lock(name)

    def list_locks(self) -> list[Lock]:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks ORDER BY name")
        return [_to_lock(row) for row in rows]

    def _lock(self, name: str) -> Lock | None:
        rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks WHERE name = ?", name)
        return _to_lock(rows[0]) if rows else None

    # -- epochs ------------------------------------------------------------------------

    def next_epoch(self, name: str) -> int:
        with self._write():
            self._execute(
                "INSERT INTO epochs (name, value) VALUES (?, 1) "
                "ON CONFLICT (name) DO UPDATE SET value = epochs.value + 1",
                name,
            )
            return int(self._query("SELECT value FROM epochs WHERE name = ?", name)[0][0])

    # -- runs --------------------------------------------------------------------------

    def start_run(self, run_id: str, plan_digest: str, holder: str) -> Run:
        with self._write() as now:
            self._execute(
                f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, ?, NULL, ?)",
                run_id,
                plan_digest,
                holder,
                now,
                RunStatus.RUNNING.value,
            )
            return self._run(run_id)

    def finish_run(self, run_id: str, status: RunStatus) -> Run:
        with self._write() as now:
            if not self._execute(
                "UPDATE runs SET status = ?, finished = ? WHERE run_id = ?",
                status.value,
                now,
                run_id,
            ):
                raise LookupError(f"no run {run_id!r} in the state store")
            return self._run(run_id)

    def get_run(self, run_id: str) -> Run | None:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", run_id)
        return _to_run(rows[0]) if rows else None

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

    def journal_add(self, run_id: str, ops: Iterable[PlannedOp]) -> None:
        rows = (
            (op.op_id, run_id, op.action, op.entry_id, op.provider, OpStatus.PENDING.value)
            for op in ops
        )
        with self._write():
            self._db.execute_many(
                self._sql(
                    "INSERT INTO journal (op_id, run_id, action, entry_id, provider, status) "
                    "VALUES (?, ?, ?, ?, ?, ?) "
                    "ON CONFLICT (op_id) DO UPDATE SET run_id = excluded.run_id, "
                    "status = excluded.status WHERE journal.status <> 'done'"
                ),
                rows,
            )

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

    def journal_finish(
        self,
        op_id: str,
        status: OpStatus,
        *,
        error: str | None = None,
        result: Mapping[str, Any] | None = None,
    ) -> JournalEntry:
        if status not in FINAL_OP_STATUSES:
            raise ValueError(f"journal_finish needs a final status, not {status.value!r}")
        encoded = None if result is None else dumps_compact(result).decode()
        with self._write() as now:
            # a done op stays done: a late finish (a superseded runner's failed call) must not
            # turn it back into work, nor erase the result of the call that did it
            self._execute(
                "UPDATE journal SET status = ?, error = ?, result = ?, finished = ? "
                "WHERE op_id = ? AND status <> 'done'",
                status.value,
                error,
                encoded,
                now,
                op_id,
            )
            entry = self._entry(op_id)
        if entry is None:
            raise LookupError(f"no operation {op_id!r} in the journal")
        return entry

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

    def get_applied(self, site: str) -> Applied | None:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, digest, revision, applied FROM applied WHERE site = ?", site
            )
        if not rows:
            return None
        site, digest, revision, applied = rows[0]
        return Applied(site, digest, revision, _time(applied))

    def record_drift(self, site: str, counts: Mapping[str, int]) -> DriftRecord:
        with self._write() as now:
            self._execute(
                "INSERT INTO drift_history (site, at, counts) VALUES (?, ?, ?)",
                site,
                now,
                dumps_compact(dict(counts)).decode(),
            )
        return DriftRecord(site, _time(now), dict(counts))

    def drift_history(self, site: str, limit: int = 50) -> list[DriftRecord]:
        with self._transaction(write=False):
            rows = self._query(
                "SELECT site, at, counts FROM drift_history WHERE site = ? "
                "ORDER BY at DESC, id DESC LIMIT ?",
                site,
                limit,
            )
        return [DriftRecord(s, _time(at), orjson.loads(counts)) for s, at, counts in rows]


def _time(epoch_seconds: float) -> datetime:
    return datetime.fromtimestamp(epoch_seconds, UTC)


def _maybe_time(epoch_seconds: float | None) -> datetime | None:
    return None if epoch_seconds is None else _time(epoch_seconds)


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
