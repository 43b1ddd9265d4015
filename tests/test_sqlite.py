"""The one SQLite helper (reconciler/sqlite.py) on real files."""

from __future__ import annotations

import sqlite3
import stat
from pathlib import Path

import pytest

from reconciler import sqlite


class DiskFull(Exception):
    """Stands for the error after which SQLite rolled the transaction back itself."""


def test_an_error_after_sqlite_rolled_back_itself_is_the_one_raised(tmp_path: Path) -> None:
    """A full disk or an I/O error ends the transaction inside SQLite; a second ROLLBACK
    would fail with "no transaction is active" and hide why."""
    db = sqlite.Database(tmp_path / "f.sqlite", "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    with pytest.raises(DiskFull), db.write() as conn:
        conn.execute("INSERT INTO t VALUES (1)")
        conn.execute("ROLLBACK")  # what SQLite does on SQLITE_FULL
        raise DiskFull
    with db.write() as conn:  # the connection is still usable
        conn.execute("INSERT INTO t VALUES (2)")
    with db.read() as conn:
        assert conn.execute("SELECT x FROM t").fetchall() == [(2,)]
    db.close()


def test_a_failed_write_leaves_nothing(tmp_path: Path) -> None:
    db = sqlite.Database(tmp_path / "f.sqlite", "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    with pytest.raises(DiskFull), db.write() as conn:
        conn.execute("INSERT INTO t VALUES (1)")
        raise DiskFull
    with db.read() as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)
    db.close()


def test_opens_in_wal_with_its_folder_and_waits_for_a_writer(tmp_path: Path) -> None:
    path = tmp_path / "new" / "folder" / "f.sqlite"
    conn = sqlite.connect(path, timeout=5)
    assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    assert conn.execute("PRAGMA busy_timeout").fetchone() == (5000,)
    conn.close()


def test_a_file_that_is_not_a_database_leaves_no_connection(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not a database\n" * 100)
    with pytest.raises(sqlite3.DatabaseError):
        sqlite.connect(path)
    assert path.read_text().startswith("not a database")


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_every_file_of_a_database_is_private_whatever_the_umask(
        tmp_path: Path, umask: int) -> None:
    """Issue 19 §7: the state store and the ledgers hold plans, owners, journal rows; they
    were created 0644 (0666 under umask 000), and SQLite's side files follow the database."""
    path = tmp_path / "new" / "deeper" / "x.sqlite"
    db = sqlite.Database(path, "CREATE TABLE IF NOT EXISTS t (x INTEGER)")
    with db.write() as conn:
        conn.execute("INSERT INTO t VALUES (1)")
    files = sorted(p.name for p in path.parent.iterdir())
    assert files == ["x.sqlite", "x.sqlite-shm", "x.sqlite-wal"]  # open: WAL mode
    assert {name: mode(path.parent / name) for name in files} == dict.fromkeys(files, 0o600)
    assert (mode(tmp_path / "new"), mode(path.parent)) == (0o700, 0o700)
    db.close()


def test_files_an_older_version_left_readable_are_made_private(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    sqlite.Database(path, "CREATE TABLE IF NOT EXISTS t (x INTEGER)").close()
    side = tmp_path / "x.sqlite-wal"
    for made in (path, side):
        made.touch()
        made.chmod(0o644)
    tmp_path.chmod(0o755)
    db = sqlite.Database(path)
    assert (mode(path), mode(side)) == (0o600, 0o600)
    assert mode(tmp_path) == 0o755  # a folder that exists is the user's: kept as it is
    db.close()
