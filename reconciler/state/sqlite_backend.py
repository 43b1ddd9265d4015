"""SQLite, the default store: one file beside the site, safe for runners on one machine.

The file opens and its transactions run through ``reconciler.sqlite``, like every SQLite
file of the project: WAL lets readers run beside the one writer; ``BEGIN IMMEDIATE`` takes
the write lock at the start of a transaction, so a read-then-write (lock takeover, epoch)
is atomic; the busy timeout makes a second writer wait instead of failing.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler import sqlite
from reconciler.state.dialect import Backend, Dialect, Params, Row
from reconciler.state.errors import StateError, cannot_open, not_a_store, store_failed

SQLITE = Dialect(
    name="sqlite",
    placeholder="?",
    begin_write=sqlite.WRITE,
    clock=None,
    migration_lock=None,
)


class SqliteBackend(Backend):
    dialect = SQLITE

    def __init__(self, path: Path) -> None:
        self.label = str(path)
        try:
            # the store serialises threads, so one connection may serve a heartbeat thread
            self._conn = sqlite.connect(path, sqlite.BUSY_TIMEOUT_S)
        except OSError as err:
            raise cannot_open(self.label, str(err)) from None
        except sqlite3.Error as err:
            raise (self.translate(err) or cannot_open(self.label, str(err))) from None
        self._conn.execute("PRAGMA foreign_keys = ON")

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        self._conn.executemany(sql, rows)

    @contextmanager
    def transaction(self, write: bool) -> Iterator[None]:
        with sqlite.transaction(self._conn, sqlite.WRITE if write else sqlite.READ):
            yield

    def translate(self, err: Exception) -> StateError | None:
        if getattr(err, "sqlite_errorname", "") == "SQLITE_CANTOPEN":
            return cannot_open(self.label, str(err))
        if isinstance(err, sqlite3.OperationalError):
            return store_failed(self.label, str(err))
        if type(err) is sqlite3.DatabaseError:  # "file is not a database", "malformed"
            return not_a_store(self.label, str(err))
        return None

    def close(self) -> None:
        self._conn.close()
