"""SQLite, the default store: one file beside the site, safe for runners on one machine.

WAL lets readers run beside the one writer; ``BEGIN IMMEDIATE`` takes the write lock at
the start of a transaction, so a read-then-write (lock takeover, epoch) is atomic; the busy
timeout makes a second writer wait instead of failing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable
from pathlib import Path

from reconciler.sqlite_wal import enable_wal
from reconciler.state.dialect import Backend, Dialect, Params, Row
from reconciler.state.errors import StateError, cannot_open, not_a_store, store_failed

BUSY_TIMEOUT_S = 30.0

SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    begin_write="BEGIN IMMEDIATE",
    now_sql=None,
    migration_lock=None,
)


class SqliteBackend(Backend):
    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.label = str(path)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            # autocommit mode (isolation_level=None): the store issues BEGIN/COMMIT itself;
            # the store serialises threads, so one connection may serve a heartbeat thread
            self._conn = sqlite3.connect(
                path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except (OSError, sqlite3.Error) as err:
            raise cannot_open(self.label, str(err)) from None
        try:
            self._conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            enable_wal(self._conn, BUSY_TIMEOUT_S)
            self._conn.execute("PRAGMA synchronous = NORMAL")
            self._conn.execute("PRAGMA foreign_keys = ON")
        except sqlite3.Error as err:
            self._conn.close()
            error = self.translate(err)
            raise (error or cannot_open(self.label, str(err))) from None

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        self._conn.executemany(sql, rows)

    def translate(self, err: Exception) -> StateError | None:
        if isinstance(err, sqlite3.OperationalError):
            return store_failed(self.label, str(err))
        if type(err) is sqlite3.DatabaseError:  # "file is not a database", "malformed"
            return not_a_store(self.label, str(err))
        return None

    def close(self) -> None:
        self._conn.close()
