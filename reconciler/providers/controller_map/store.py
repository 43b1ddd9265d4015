"""The controller map's SQLite file: entries keyed by id, plus the provider's memory.

One file holds the entries, the generation, the highest epoch seen, the serving session
and the applied op_ids, so a change, its generation bump and its op_id record commit in one
transaction: a crash can never leave a change without its op_id (applied twice) or an
op_id without its change (lost). WAL lets ``inventory`` and ``xce-map show`` read a
consistent snapshot while a writer works.
"""

from __future__ import annotations

import secrets
import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any

import orjson

from compiler.contract.supply_map import Entry, Session
from compiler.core.gc_pause import gc_paused
from reconciler import sqlite
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.opledger import fence, recorded

SCHEMA_VERSION = 1
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS entries"
    " (id TEXT PRIMARY KEY, kind TEXT NOT NULL, doc TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS entries_by_kind ON entries (kind)",
    "CREATE TABLE IF NOT EXISTS ops (op_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL,"
    " reply TEXT NOT NULL, recorded_at REAL NOT NULL)",
)
_CHUNK = 500  # ids per IN (...) query, well under SQLite's variable limit
_BUSY = frozenset({"SQLITE_BUSY", "SQLITE_LOCKED"})


@contextmanager
def _translated(path: Path) -> Iterator[None]:
    """SQLite failures as protocol errors: a busy file may clear up, anything else will not."""
    try:
        yield
    except OSError as err:  # its folder cannot be made
        message = f"controller map {path}: {err.strerror or err}"
        raise ProviderError(ErrorCode.FAILED_PRECONDITION, message) from None
    except sqlite3.IntegrityError:
        raise  # a bug of ours, not a state of the file
    except sqlite3.DatabaseError as err:
        name = getattr(err, "sqlite_errorname", "")
        if name in _BUSY or "locked" in str(err):
            raise ProviderError(
                ErrorCode.UNAVAILABLE,
                f"controller map {path} is busy (another process is writing): {err}",
            ) from None
        message = f"controller map {path}: {err}"
        raise ProviderError(ErrorCode.FAILED_PRECONDITION, message) from None


def decode_docs(raw: Iterable[str]) -> list[dict[str, Any]]:
    """Decode many entry documents with the cyclic GC paused.

    Half a million small dicts trigger dozens of collections that find nothing; pausing
    the collector makes a 500,000-entry inventory about three times faster.
    """
    with gc_paused():
        return [orjson.loads(doc) for doc in raw]


def _entry(doc: str) -> Entry:
    return Entry.from_json(orjson.loads(doc))


class Txn:
    """What one transaction may read and change (the map provider's ``Book``); only
    ``MapStore`` makes these."""

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def get(self, entry_id: str) -> Entry | None:
        row = self._db.execute("SELECT doc FROM entries WHERE id = ?", (entry_id,)).fetchone()
        return None if row is None else _entry(row[0])

    def get_many(self, ids: list[str]) -> dict[str, Entry]:
        found: dict[str, Entry] = {}
        for start in range(0, len(ids), _CHUNK):
            chunk = ids[start : start + _CHUNK]
            marks = ",".join("?" * len(chunk))
            query = f"SELECT doc FROM entries WHERE id IN ({marks})"
            for (doc,) in self._db.execute(query, chunk):
                entry = _entry(doc)
                found[entry.id] = entry
        return found

    def put(self, entries: Iterable[Entry]) -> None:
        self._db.executemany(
            "INSERT OR REPLACE INTO entries (id, kind, doc) VALUES (?, ?, ?)",
            ((e.id, e.kind, orjson.dumps(e.to_json()).decode()) for e in entries),
        )

    def delete(self, entry_id: str) -> None:
        self._db.execute("DELETE FROM entries WHERE id = ?", (entry_id,))

    def docs(self, kind: str | None = None) -> list[str]:
        """Entry documents sorted by id (the primary key's order), undecoded."""
        if kind is None:
            rows = self._db.execute("SELECT doc FROM entries ORDER BY id")
        else:
            rows = self._db.execute("SELECT doc FROM entries WHERE kind = ? ORDER BY id", (kind,))
        return [doc for (doc,) in rows]

    def rows(self) -> list[tuple[str, str, str]]:
        """(id, kind, document) of every entry, sorted by id, undecoded."""
        return [(i, k, d) for i, k, d in
                self._db.execute("SELECT id, kind, doc FROM entries ORDER BY id")]

    def amounts(self, kinds: Iterable[str]) -> list[tuple[str, str, str | None, int | None]]:
        """(kind, id, location, amount) of each entry of ``kinds``, without decoding entries."""
        kinds = list(kinds)
        marks = ",".join("?" * len(kinds))
        query = (
            "SELECT kind, id, json_extract(doc, '$.location'), json_extract(doc, '$.amount') "
            f"FROM entries WHERE kind IN ({marks})"
        )
        return list(self._db.execute(query, kinds))

    def create_schema(self) -> int:
        """Create the tables of a new file; the schema version the file has."""
        for statement in _SCHEMA:
            self._db.execute(statement)
        self._db.execute(
            "INSERT OR IGNORE INTO meta (key, value) VALUES ('schema', ?)", (SCHEMA_VERSION,)
        )
        return self._meta("schema")

    def _meta(self, key: str) -> int:
        row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return int(row[0]) if row else 0

    def _set_meta(self, key: str, value: int) -> None:
        self._db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))

    def generation(self) -> int:
        return self._meta("generation")

    def session(self) -> Session:
        """The serving session (P8); its ``since`` is whole seconds."""
        return Session(f"{self._meta('session'):016x}", self._meta("session_since"))

    def new_session(self, at: float) -> Session:
        """A new serving session from ``at``: what a controller restart begins."""
        self._set_meta("session", secrets.randbits(63) | 1)  # never 0, which means none
        self._set_meta("session_since", int(at))
        return self.session()

    def ensure_session(self, now: Callable[[], float]) -> None:
        """A new map (or one older than sessions) begins its first session now."""
        if self._meta("session") == 0:
            self.new_session(now())

    def count_states(self, kind: str, states: Iterable[str]) -> int:
        """How many entries of ``kind`` are in one of ``states``, without decoding entries."""
        states = list(states)
        marks = ",".join("?" * len(states))
        query = (f"SELECT count(*) FROM entries WHERE kind = ? "
                 f"AND json_extract(doc, '$.state') IN ({marks})")
        return int(self._db.execute(query, [kind, *states]).fetchone()[0])

    def bump_generation(self) -> int:
        """One more than before: every committed change makes a new snapshot."""
        generation = self._meta("generation") + 1
        self._set_meta("generation", generation)
        return generation

    def check_epoch(self, epoch: int) -> None:
        """Refuse an epoch below the highest seen (ABORTED); remember a higher one."""
        if fence(epoch, self._meta("epoch")):
            self._set_meta("epoch", epoch)

    def replay(self, op_id: str, fingerprint: str) -> dict[str, Any] | None:
        """The recorded result of ``op_id``, or None; an op_id reused for another request fails."""
        row = self._db.execute(
            "SELECT fingerprint, reply FROM ops WHERE op_id = ?", (op_id,)
        ).fetchone()
        reply = recorded(op_id, row, fingerprint)
        return None if reply is None else dict(orjson.loads(reply))

    def record(self, op_id: str, fingerprint: str, result: Mapping[str, Any]) -> None:
        self._db.execute(
            "INSERT INTO ops (op_id, fingerprint, reply, recorded_at) VALUES (?, ?, ?, ?)",
            (op_id, fingerprint, orjson.dumps(dict(result)).decode(), time.time()),
        )

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """Undo only the inner part on failure (the epoch just seen stays remembered)."""
        self._db.execute("SAVEPOINT change")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK TO change")
            self._db.execute("RELEASE change")
            raise
        self._db.execute("RELEASE change")


class MapStore:
    """The map file, opened through ``reconciler.sqlite``; failures as protocol errors."""

    def __init__(
        self,
        path: Path,
        *,
        create: bool = True,
        timeout: float = sqlite.BUSY_TIMEOUT_S,
        now: Callable[[], float] = time.time,
    ) -> None:
        self.path = path
        self._now = now
        if not create and not path.is_file():
            raise ProviderError(ErrorCode.FAILED_PRECONDITION, f"no controller map at {path}")
        with _translated(path):
            self._db = sqlite.Database(path, timeout=timeout)
        try:
            self._check_schema()
        except BaseException:
            self._db.close()
            raise

    def _check_schema(self) -> None:
        with self.change() as tx:
            version = tx.create_schema()
            if version == SCHEMA_VERSION:
                tx.ensure_session(self._now)
        if version != SCHEMA_VERSION:
            raise ProviderError(
                ErrorCode.FAILED_PRECONDITION,
                f"controller map {self.path} has schema {version}; "
                f"this xce-gitops reads schema {SCHEMA_VERSION}",
            )

    @contextmanager
    def _transaction(self, write: bool) -> Iterator[Txn]:
        with _translated(self.path), (self._db.write() if write else self._db.read()) as db:
            yield Txn(db)

    def change(self) -> AbstractContextManager[Txn]:
        """A write transaction, taken up front so a read-modify-write cannot interleave."""
        return self._transaction(write=True)

    def read(self) -> AbstractContextManager[Txn]:
        """A read transaction: every query inside sees the same snapshot."""
        return self._transaction(write=False)

    def close(self) -> None:
        self._db.close()
