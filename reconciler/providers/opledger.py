"""What every built-in provider remembers so that retries and old proxies are harmless.

- op_id dedupe: the reply of each applied operation is kept; the same op_id again
  returns that reply and changes nothing (BRIEF §3).
- epoch fencing: the highest epoch seen is kept; a request with a lower one comes from
  a proxy or applier that has been superseded and is refused with ABORTED.
- inventory generation: grows by one each time the snapshot differs from the last one
  reported, so equal generations mean equal snapshots and a plan can tell it is stale.
- owner tags: the owner tag of the request that created each entry.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.sqlite_store import Store

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS ops (
    op_id TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, reply TEXT NOT NULL,
    recorded_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS owners (id TEXT PRIMARY KEY, owner TEXT NOT NULL);
"""


def stale_epoch(epoch: int, highest: int) -> ProviderError:
    """The refusal of a request from a superseded applier or proxy (shared with the map)."""
    return ProviderError(
        ErrorCode.ABORTED,
        f"stale epoch {epoch}: epoch {highest} has already been seen "
        "(another applier or proxy took over)",
    )


def reused_op_id(op_id: str) -> ProviderError:
    """An op_id sent again with a different request: answering the old reply would lie."""
    return ProviderError(
        ErrorCode.INVALID_ARGUMENT, f"op_id {op_id} was already used for a different request"
    )


class OpLedger:
    def __init__(self, path: Path) -> None:
        self._store = Store(path, _SCHEMA)

    def check_epoch(self, epoch: int) -> None:
        """Refuse a request fenced off by a newer epoch; remember a newer one."""
        with self._store.write() as db:
            row = db.execute("SELECT value FROM meta WHERE key = 'epoch'").fetchone()
            highest = int(row[0]) if row else 0
            if epoch < highest:
                raise stale_epoch(epoch, highest)
            if epoch > highest:
                db.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('epoch', ?)", (str(epoch),)
                )

    def replay(self, op_id: str, fingerprint: str = "") -> dict[str, Any] | None:
        """The recorded reply of ``op_id``, or None if it was never applied.

        With a ``fingerprint`` (a digest of verb and params), reusing an op_id for a
        different request is refused instead of silently answered with the old reply.
        """
        with self._store.read() as db:
            row = db.execute(
                "SELECT fingerprint, reply FROM ops WHERE op_id = ?", (op_id,)
            ).fetchone()
        if row is None:
            return None
        if fingerprint and row[0] and row[0] != fingerprint:
            raise reused_op_id(op_id)
        reply: dict[str, Any] = orjson.loads(row[1])
        return reply

    def record(self, op_id: str, reply_json: Mapping[str, Any], fingerprint: str = "") -> None:
        with self._store.write() as db:
            db.execute(
                "INSERT OR IGNORE INTO ops (op_id, fingerprint, reply, recorded_at) "
                "VALUES (?, ?, ?, ?)",
                (op_id, fingerprint, orjson.dumps(dict(reply_json)).decode(), time.time()),
            )

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

    def close(self) -> None:
        self._store.close()
