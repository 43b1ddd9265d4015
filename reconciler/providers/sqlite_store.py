"""A provider's small SQLite file: one connection, one lock, short explicit transactions.

Built-in providers keep their memory (applied op_ids, epochs, quota limits, digest
caches) next to them in ``<workdir>/providers/<name>/``; SQLite makes each update atomic
even if the proxy dies halfway, and WAL lets a reader look while a writer works.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from reconciler.sqlite_wal import enable_wal


class Store:
    def __init__(self, path: Path, schema: str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
        try:
            enable_wal(self._db, 30)
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.executescript(schema)  # idempotent (IF NOT EXISTS); commits itself
        except BaseException:
            self._db.close()  # a file that is not a database, or busy: no connection left open
            raise

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, taken up front so a read-modify-write cannot interleave."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            yield self._db

    def close(self) -> None:
        with self._lock:
            self._db.close()
