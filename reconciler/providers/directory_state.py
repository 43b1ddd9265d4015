"""What the directory provider remembers beside the filesystem it manages.

The tree itself is the truth for volumes and user directories; this file only keeps
what the tree cannot say: which volumes (path, retention) the provider manages, which
volume roots and user directories still wait for an owner it could not give them
(``directory_owners``), the quota limits it has set (the ``ledger`` quota backend
*is* this table), the job directories a clean-up has renamed aside but not yet
settled (``directory_cleanup``), so that a clean-up killed halfway is finished next time,
and the publications of user directories with the write bits a read-only publish took
away (``directory_publish``), recorded before they are taken, so that none is lost.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from reconciler.sqlite import Database

_SCHEMA = """
CREATE TABLE IF NOT EXISTS volumes (name TEXT PRIMARY KEY, path TEXT NOT NULL, retention INTEGER);
CREATE TABLE IF NOT EXISTS declared (volume TEXT PRIMARY KEY, doc TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS pending_owners (
    volume TEXT NOT NULL, user TEXT NOT NULL, owner TEXT NOT NULL, PRIMARY KEY (volume, user)
);
CREATE TABLE IF NOT EXISTS pending_roots (
    volume TEXT PRIMARY KEY, owner TEXT NOT NULL, grp TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS quotas (
    volume TEXT NOT NULL, scope TEXT NOT NULL, subject TEXT NOT NULL, limit_bytes INTEGER NOT NULL,
    PRIMARY KEY (volume, scope, subject)
);
CREATE TABLE IF NOT EXISTS cleanup_asides (
    volume TEXT NOT NULL, user TEXT NOT NULL, aside TEXT NOT NULL, job TEXT NOT NULL,
    removing_since REAL, PRIMARY KEY (volume, user, aside)
);
CREATE TABLE IF NOT EXISTS publications (
    volume TEXT NOT NULL, user TEXT NOT NULL, location TEXT NOT NULL, access TEXT NOT NULL,
    PRIMARY KEY (volume, user, location)
);
CREATE TABLE IF NOT EXISTS frozen (
    volume TEXT NOT NULL, user TEXT NOT NULL, path TEXT NOT NULL, dev INTEGER NOT NULL,
    ino INTEGER NOT NULL, bits INTEGER NOT NULL, PRIMARY KEY (volume, user, path)
);
"""


@dataclass(frozen=True, slots=True)
class Volume:
    name: str
    path: str  # absolute, as in the volume's spec; lives at <base>/<path>
    retention: int | None  # seconds a job directory is kept (N14)
    # What config declares but the tree cannot show (capacity, attributes, access mode):
    # reported back as declared, so an applied volume is in sync rather than forever updated.
    declared: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Quota:
    volume: str
    scope: str  # "user" or "project"
    subject: str
    limit: int  # bytes


@dataclass(frozen=True, slots=True)
class Aside:
    """A job directory ``<user>/<job>`` that a clean-up renamed to ``<user>/<aside>``."""

    volume: str
    user: str
    aside: str
    job: str
    # Set once the clean-up decided to remove it: the newest change it found (seconds).
    removing_since: float | None = None


@dataclass(frozen=True, slots=True)
class Frozen:
    """A directory or file of a user directory (``path`` relative to it, ``""`` for the
    directory itself) whose write ``bits`` a read-only publish took away."""

    path: str
    dev: int
    ino: int
    bits: int


class DirectoryState:
    def __init__(self, path: Path) -> None:
        self._store = Database(path, _SCHEMA)

    def volumes(self) -> dict[str, Volume]:
        with self._store.read() as db:
            rows = db.execute(
                "SELECT name, path, retention, doc FROM volumes "
                "LEFT JOIN declared ON declared.volume = volumes.name"
            ).fetchall()
        return {
            name: Volume(name, path, retention, json.loads(doc) if doc else {})
            for name, path, retention, doc in rows
        }

    def put_volume(self, volume: Volume) -> None:
        with self._store.write() as db:
            db.execute(
                "INSERT OR REPLACE INTO volumes (name, path, retention) VALUES (?, ?, ?)",
                (volume.name, volume.path, volume.retention),
            )
            db.execute(
                "INSERT OR REPLACE INTO declared (volume, doc) VALUES (?, ?)",
                (volume.name, json.dumps(dict(volume.declared), sort_keys=True)),
            )

    def drop_volume(self, name: str) -> None:
        with self._store.write() as db:
            db.execute("DELETE FROM volumes WHERE name = ?", (name,))
            db.execute("DELETE FROM declared WHERE volume = ?", (name,))
            db.execute("DELETE FROM pending_owners WHERE volume = ?", (name,))
            db.execute("DELETE FROM pending_roots WHERE volume = ?", (name,))
            db.execute("DELETE FROM quotas WHERE volume = ?", (name,))
            db.execute("DELETE FROM cleanup_asides WHERE volume = ?", (name,))
            db.execute("DELETE FROM publications WHERE volume = ?", (name,))
            db.execute("DELETE FROM frozen WHERE volume = ?", (name,))

    def pending_owners(self, volume: str) -> dict[str, str]:
        """user directory -> the owner it should have but could not be given yet."""
        with self._store.read() as db:
            rows = db.execute(
                "SELECT user, owner FROM pending_owners WHERE volume = ?", (volume,)
            ).fetchall()
        return dict(rows)

    def set_pending_owner(self, volume: str, user: str, owner: str | None) -> None:
        with self._store.write() as db:
            if owner is None:
                db.execute(
                    "DELETE FROM pending_owners WHERE volume = ? AND user = ?", (volume, user)
                )
            else:
                db.execute(
                    "INSERT OR REPLACE INTO pending_owners (volume, user, owner) VALUES (?, ?, ?)",
                    (volume, user, owner),
                )

    def pending_root(self, volume: str) -> tuple[str, str] | None:
        """(owner, group) a volume's root should have but could not be given yet."""
        with self._store.read() as db:
            row = db.execute(
                "SELECT owner, grp FROM pending_roots WHERE volume = ?", (volume,)
            ).fetchone()
        return (row[0], row[1]) if row else None

    def set_pending_root(self, volume: str, owner: tuple[str, str] | None) -> None:
        with self._store.write() as db:
            if owner is None:
                db.execute("DELETE FROM pending_roots WHERE volume = ?", (volume,))
            else:
                db.execute(
                    "INSERT OR REPLACE INTO pending_roots (volume, owner, grp) VALUES (?, ?, ?)",
                    (volume, *owner),
                )

    def quotas(self) -> list[Quota]:
        with self._store.read() as db:
            rows = db.execute("SELECT volume, scope, subject, limit_bytes FROM quotas").fetchall()
        return [Quota(*row) for row in rows]

    def quota(self, volume: str, scope: str, subject: str) -> Quota | None:
        with self._store.read() as db:
            row = db.execute(
                "SELECT volume, scope, subject, limit_bytes FROM quotas "
                "WHERE volume = ? AND scope = ? AND subject = ?",
                (volume, scope, subject),
            ).fetchone()
        return Quota(*row) if row else None

    def put_quota(self, quota: Quota) -> None:
        with self._store.write() as db:
            db.execute(
                "INSERT OR REPLACE INTO quotas (volume, scope, subject, limit_bytes) "
                "VALUES (?, ?, ?, ?)",
                (quota.volume, quota.scope, quota.subject, quota.limit),
            )

    def drop_quota(self, volume: str, scope: str, subject: str) -> None:
        with self._store.write() as db:
            db.execute(
                "DELETE FROM quotas WHERE volume = ? AND scope = ? AND subject = ?",
                (volume, scope, subject),
            )

    def asides(self, volume: str) -> list[Aside]:
        with self._store.read() as db:
            rows = db.execute(
                "SELECT volume, user, aside, job, removing_since FROM cleanup_asides "
                "WHERE volume = ? ORDER BY user, job", (volume,)
            ).fetchall()
        return [Aside(*row) for row in rows]

    def put_aside(self, aside: Aside) -> None:
        """Record an aside before the rename, so no renamed directory is ever forgotten."""
        with self._store.write() as db:
            db.execute(
                "INSERT OR REPLACE INTO cleanup_asides (volume, user, aside, job, removing_since)"
                " VALUES (?, ?, ?, ?, ?)",
                (aside.volume, aside.user, aside.aside, aside.job, aside.removing_since),
            )

    def drop_aside(self, aside: Aside) -> None:
        with self._store.write() as db:
            db.execute(
                "DELETE FROM cleanup_asides WHERE volume = ? AND user = ? AND aside = ?",
                (aside.volume, aside.user, aside.aside),
            )

    def publications(self, volume: str) -> dict[str, dict[str, str]]:
        """user directory -> {location: access} of its publications."""
        with self._store.read() as db:
            rows = db.execute("SELECT user, location, access FROM publications WHERE volume = ?",
                              (volume,)).fetchall()
        out: dict[str, dict[str, str]] = {}
        for user, location, access in rows:
            out.setdefault(user, {})[location] = access
        return out

    def put_publication(self, volume: str, user: str, location: str, access: str) -> None:
        with self._store.write() as db:
            db.execute("INSERT OR REPLACE INTO publications (volume, user, location, access) "
                       "VALUES (?, ?, ?, ?)", (volume, user, location, access))

    def drop_publication(self, volume: str, user: str, location: str | None = None) -> None:
        """Forget one publication of a user directory (every one without ``location``)."""
        with self._store.write() as db:
            db.execute("DELETE FROM publications WHERE volume = ? AND user = ? "
                       "AND (? IS NULL OR location = ?)", (volume, user, location, location))

    def frozen(self, volume: str, user: str) -> list[Frozen]:
        """What a read-only publish took from ``user``'s directory, item by item."""
        with self._store.read() as db:
            rows = db.execute("SELECT path, dev, ino, bits FROM frozen WHERE volume = ? AND "
                              "user = ? ORDER BY path", (volume, user)).fetchall()
        return [Frozen(*row) for row in rows]

    def frozen_tops(self, volume: str) -> dict[str, int]:
        """user -> the write bits a read-only publish took from the top of its directory."""
        with self._store.read() as db:
            return dict(db.execute(
                "SELECT user, bits FROM frozen WHERE volume = ? AND path = ''", (volume,)))

    def put_frozen(self, volume: str, user: str, items: list[Frozen], merge: bool = True) -> None:
        """Record bits about to be taken. ``merge`` adds them to those already recorded for
        the same file (a publish repeated after its owner gave some back); otherwise they
        replace them (the directory's mode changed by an update)."""
        keep = "CASE WHEN ? AND dev = excluded.dev AND ino = excluded.ino THEN bits ELSE 0 END"
        with self._store.write() as db:
            db.executemany(
                "INSERT INTO frozen (volume, user, path, dev, ino, bits) VALUES (?, ?, ?, ?, ?, ?)"
                f" ON CONFLICT (volume, user, path) DO UPDATE SET bits = ({keep}) | excluded.bits,"
                " dev = excluded.dev, ino = excluded.ino",
                [(volume, user, f.path, f.dev, f.ino, f.bits, merge) for f in items],
            )

    def drop_frozen(self, volume: str, user: str) -> None:
        with self._store.write() as db:
            db.execute("DELETE FROM frozen WHERE volume = ? AND user = ?", (volume, user))

    def close(self) -> None:
        self._store.close()
