"""Switching a SQLite file to WAL when several processes or threads open it at once.

The switch needs a moment of exclusive access and, unlike ordinary statements, does not
wait for the busy timeout: a second opener is told "database is locked" at once. Every
SQLite file of the project (the state store, the controller map, the provider ledgers)
opens through here, so none of them fails on a busy start.
"""

from __future__ import annotations

import sqlite3
import time


def enable_wal(conn: sqlite3.Connection, timeout: float) -> None:
    """Set ``journal_mode=WAL``, trying again for as long as the busy timeout would wait."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as err:
            if "locked" not in str(err) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)
