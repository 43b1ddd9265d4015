"""How every SQLite file of the project is opened, changed and closed.

The state store, the controller map and the built-in providers' ledgers each keep one
file; they all open it here (autocommit mode, so transactions are explicit; WAL, so a
reader looks while a writer works; a busy timeout, so a second writer waits instead of
failing) and change it through ``transaction``: ``BEGIN IMMEDIATE`` takes the write lock
up front, so a read-modify-write cannot interleave with another process's.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from compiler.core.private import private_file

BUSY_TIMEOUT_S = 30.0
WRITE = "BEGIN IMMEDIATE"
READ = "BEGIN"  # a deferred transaction: every query inside sees one snapshot
SIDE_FILES = ("-wal", "-shm")  # what SQLite keeps beside a database in WAL mode


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Set ``journal_mode=WAL``, trying again for as long as the busy timeout would wait.

    The switch needs a moment of exclusive access and, unlike ordinary statements, does
    not wait for the busy timeout: a second opener is told "database is locked" at once.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def connect(path: Path, timeout: float = BUSY_TIMEOUT_S) -> sqlite3.Connection:
    """Open (or create, with its folder) ``path`` in WAL mode; nothing is left open on failure.

    Every file holds plans, owners, journal or ledger rows: it is private (0600, its new
    folders 0700: ``compiler.core.private``), and SQLite gives its ``-wal`` and ``-shm`` files the
    database's mode. One connection may serve several threads (``check_same_thread=False``):
    its owner serialises them with a lock.
    """
    private_file(path)
    for side in SIDE_FILES:  # left 0644 by an older version, they are reused as they are
        private_file(path.with_name(path.name + side), create=False)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        enable_wal(conn, timeout)
        conn.execute("PRAGMA synchronous = NORMAL")
    except BaseException:
        conn.close()  # a file that is not a database, or busy: no connection left open
        raise
    return conn


@contextmanager
def transaction(conn: sqlite3.Connection, begin: str = WRITE) -> Iterator[sqlite3.Connection]:
    """Commit on success, roll back on any error.

    SQLite rolls some failed transactions back itself (a full disk, an I/O error); then
    there is nothing left to roll back, and the first error is the one that tells why.
    """
    conn.execute(begin)
    try:
        yield conn
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    conn.execute("COMMIT")


class Database:
    """One file, one connection and one lock per process; short explicit transactions."""

    def __init__(self, path: Path, schema: str = "", timeout: float = BUSY_TIMEOUT_S) -> None:
        self.path = path
        self._lock = threading.Lock()
        self._conn = connect(path, timeout)
        if schema:
            try:
                self._conn.executescript(schema)  # idempotent (IF NOT EXISTS); commits itself
            except BaseException:
                self._conn.close()
                raise

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction, taken up front so a read-modify-write cannot interleave."""
        with self._lock, transaction(self._conn, WRITE) as conn:
            yield conn

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees the same snapshot."""
        with self._lock, transaction(self._conn, READ) as conn:
            yield conn

    def close(self) -> None:
        with self._lock:
            self._conn.close()
