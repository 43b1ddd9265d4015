"""What every built-in provider remembers so that retries and old proxies are harmless.

- op_id dedupe: the reply of each applied operation is kept; the same op_id again
  returns that reply and changes nothing (BRIEF §3).
- epoch fencing: the highest epoch seen is kept; a request with a lower one comes from
  a proxy or applier that has been superseded and is refused with ABORTED.
- inventory generation: grows by one each time the snapshot differs from the last one
  reported, so equal generations mean equal snapshots and a plan can tell it is stale.
- owner tags: the owner tag of the request that created each entry.
- root marks: the mark (``root_marker``) of each root the provider created or adopted, so
  that a root whose marker is missing or another's (an unmounted volume) is never trusted.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any

import orjson

from reconciler.protocol import ErrorCode, ProviderError, Reply
from reconciler.sqlite import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ops (
    op_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, reply TEXT NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS owners (id TEXT PRIMARY KEY, owner TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS roots (root TEXT PRIMARY KEY, mark TEXT NOT NULL);
"""


def fence(epoch: int, highest: int) -> bool:
    """Whether ``epoch`` is new and must be remembered (shared with the controller map).

    An epoch below the highest seen comes from a superseded applier or proxy: ABORTED.
    """
    if epoch < highest:
        raise ProviderError(
            ErrorCode.ABORTED,
            f"stale epoch {epoch}: epoch {highest} has already been seen "
            "(another applier or proxy took over)",
        )
    return epoch > highest


def recorded(op_id: str, row: tuple[str, str] | None, fingerprint: str) -> str | None:
    """The reply of ``op_id`` from its ``(fingerprint, reply)`` row, or None if never applied.

    An op_id sent again with a different request is refused: answering the old reply
    would lie (shared with the controller map).
    """
    if row is None:
        return None
    if row[0] != fingerprint:
        raise ProviderError(
            ErrorCode.INVALID_ARGUMENT, f"op_id {op_id} was already used for a different request"
        )
    return row[1]


class OpLedger:
    """The built-ins' ``Book`` (reconciler.providers.base): each method is its own transaction."""

    def __init__(self, path: Path) -> None:
        self._store = Database(path, _SCHEMA)

    def check_epoch(self, epoch: int) -> None:
        """Refuse a request fenced off by a newer epoch; remember a newer one."""
        with self._store.write() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            if fence(epoch, int(row[0]) if row else 0):
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?)", (str(epoch),)
                )

    def replay(self, op_id: str, fingerprint: str) -> dict[str, Any] | None:
        """The recorded result of ``op_id``, or None if it was never applied.

        Reusing an op_id for a different request (another fingerprint) is refused
        instead of silently answered with the old reply.
        """
        with self._store.read() as db:
            row = db.execute(
                "SELECT fingerprint, reply FROM ops WHERE op_id = ?", (op_id,)
            ).fetchone()
        reply = recorded(op_id, row, fingerprint)
        return None if reply is None else dict(Reply.from_json(orjson.loads(reply)).result)

    def record(self, op_id: str, fingerprint: str, result: Mapping[str, Any]) -> None:
        """Keep the reply of an applied op (as the whole reply, the ledger's format)."""
        reply = orjson.dumps(Reply.success(result).to_json()).decode()
        with self._store.write() as db:
            db.execute(
                "INSERT OR IGNORE INTO ops (op_id, fingerprint, reply, recorded_at) "
                "VALUES (?, ?, ?, ?)",
                (op_id, fingerprint, reply, time.time()),
            )

    def savepoint(self) -> AbstractContextManager[None]:
        """Nothing to undo: each step above commits alone, and a failed change made none."""
        return nullcontext()

    def observe(self, snapshot_digest: str) -> int:
        """The generation of a snapshot: unchanged if it equals the last one, else one more."""
        with self._store.write() as db:
            rows = dict(
                db.execute("SELECT key, value FROM meta WHERE key IN ('generation', 'snapshot')")
            )
            generation = int(rows.get("generation", 0))
            if rows.get("snapshot") != snapshot_digest:
                generation += 1
                db.executemany(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)",
                    [("generation", str(generation)), ("snapshot", snapshot_digest)],
                )
            return generation

    def tag(self, entry_id: str, owner: str) -> None:
        with self._store.write() as db:
            db.execute("INSERT OR REPLACE INTO owners (id, owner) VALUES (?, ?)", (entry_id, owner))

    def untag(self, entry_id: str) -> None:
        with self._store.write() as db:
            db.execute("DELETE FROM owners WHERE id = ?", (entry_id,))

    def tags(self) -> dict[str, str]:
        with self._store.read() as db:
            return dict(db.execute("SELECT id, owner FROM owners"))

    def tag_of(self, entry_id: str) -> str | None:
        """The owner tag of one entry (None: untagged), without reading every tag."""
        with self._store.read() as db:
            row = db.execute("SELECT owner FROM owners WHERE id = ?", (entry_id,)).fetchone()
        return None if row is None else str(row[0])

    def root_mark(self, root: str) -> str | None:
        """The mark recorded for ``root`` (``volume/shared``, ``cache/gpu-cache``), as JSON."""
        with self._store.read() as db:
            row = db.execute("SELECT mark FROM roots WHERE root = ?", (root,)).fetchone()
        return None if row is None else str(row[0])

    def record_root_mark(self, root: str, mark: str | None) -> None:
        """Remember the mark written into ``root``; None forgets it (the root was removed)."""
        with self._store.write() as db:
            if mark is None:
                db.execute("DELETE FROM roots WHERE root = ?", (root,))
            else:
                db.execute("INSERT OR REPLACE INTO roots (root, mark) VALUES (?, ?)",
                           (root, mark))

    def close(self) -> None:
        self._store.close()
