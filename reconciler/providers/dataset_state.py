"""What the dataset-copy provider remembers: each copy's expected digest, and a digest cache.

The cache keeps, per file of a copy, the SHA-256 it had when its (size, mtime, ctime,
inode) were what they are now. Any write through the filesystem changes mtime and
ctime — and ctime cannot be set back by ``touch`` or ``utime`` — so an inventory only
re-hashes files that were touched since. Corruption below the filesystem (bit rot, a
raw write to the device) keeps the signature and is found only by a full scrub:
``inventory`` with ``params.verify = true`` re-hashes everything.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from reconciler.sqlite import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS copies (
    dataset TEXT PRIMARY KEY, form TEXT NOT NULL, digest TEXT NOT NULL, source TEXT
);
CREATE TABLE IF NOT EXISTS files (
    dataset TEXT NOT NULL, rel TEXT NOT NULL, size INTEGER NOT NULL, mtime_ns INTEGER NOT NULL,
    ctime_ns INTEGER NOT NULL, ino INTEGER NOT NULL, hex TEXT NOT NULL,
    PRIMARY KEY (dataset, rel)
);
"""

Signature = tuple[int, int, int, int]  # size, mtime_ns, ctime_ns, inode


@dataclass(frozen=True, slots=True)
class CopyRecord:
    dataset: str  # name@version
    form: str  # "file" or "dir"
    digest: str  # the digest the copy was staged with
    source: str | None


class DatasetState:
    def __init__(self, path: Path) -> None:
        self._store = Database(path, _SCHEMA)

    def copies(self) -> dict[str, CopyRecord]:
        with self._store.read() as db:
            rows = db.execute("SELECT dataset, form, digest, source FROM copies").fetchall()
        return {row[0]: CopyRecord(*row) for row in rows}

    def put_copy(self, record: CopyRecord) -> None:
        with self._store.write() as db:
            db.execute(
                "INSERT OR REPLACE INTO copies (dataset, form, digest, source) VALUES (?, ?, ?, ?)",
                (record.dataset, record.form, record.digest, record.source),
            )

    def drop_copy(self, dataset: str) -> None:
        with self._store.write() as db:
            db.execute("DELETE FROM copies WHERE dataset = ?", (dataset,))
            db.execute("DELETE FROM files WHERE dataset = ?", (dataset,))

    def file_hashes(self, dataset: str) -> dict[str, tuple[Signature, str]]:
        with self._store.read() as db:
            rows = db.execute(
                "SELECT rel, size, mtime_ns, ctime_ns, ino, hex FROM files WHERE dataset = ?",
                (dataset,),
            ).fetchall()
        return {rel: ((size, mt, ct, ino), hexd) for rel, size, mt, ct, ino, hexd in rows}

    def put_file_hashes(
        self, dataset: str, fresh: dict[str, tuple[Signature, str]], gone: set[str]
    ) -> None:
        if not fresh and not gone:
            return
        with self._store.write() as db:
            db.executemany(
                "INSERT OR REPLACE INTO files (dataset, rel, size, mtime_ns, ctime_ns, ino, hex) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(dataset, rel, *sig, hexd) for rel, (sig, hexd) in fresh.items()],
            )
            db.executemany(
                "DELETE FROM files WHERE dataset = ? AND rel = ?", [(dataset, r) for r in gone]
            )

    def close(self) -> None:
        self._store.close()
