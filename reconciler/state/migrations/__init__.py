"""The versioned schema: ordered SQL files per backend, applied in place when a store opens.

Files are named ``NNNN_<what>.<dialect>.sql``; ``NNNN`` is the schema version they lead
to. Statements are separated by ``;`` (none may contain one). The ``schema_version``
table records each applied version. All pending steps run in one write transaction under
the dialect's migration lock, so two runners opening a new store at once migrate it once,
and a failed step leaves the store as it was.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from functools import cache
from importlib import resources

from reconciler.state.dialect import Backend
from reconciler.state.errors import migration_failed, not_a_store, schema_too_new

_FILE = re.compile(r"^(\d{4})_[a-z0-9_]+\.(sqlite|postgresql)\.sql$")

VERSION_TABLE = (
    "CREATE TABLE IF NOT EXISTS schema_version "
    "(version INTEGER PRIMARY KEY, applied DOUBLE PRECISION NOT NULL)"
)


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    statements: tuple[str, ...]


@cache
def migrations(dialect: str) -> tuple[Migration, ...]:
    """The migrations of one backend in version order; versions must be 1, 2, 3, …"""
    found: list[Migration] = []
    for item in resources.files(__package__).iterdir():
        match = _FILE.match(item.name)
        if match and match.group(2) == dialect:
            found.append(Migration(int(match.group(1)), item.name, split(item.read_text())))
    found.sort(key=lambda m: m.version)
    if [m.version for m in found] != list(range(1, len(found) + 1)):
        raise RuntimeError(f"{dialect} migrations are not numbered 1..n: {found}")
    return tuple(found)


def latest_version(dialect: str) -> int:
    return migrations(dialect)[-1].version


def split(script: str) -> tuple[str, ...]:
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("--")]
    return tuple(s.strip() for s in "\n".join(lines).split(";") if s.strip())


def migrate(backend: Backend) -> int:
    """Bring the store to the latest schema; refuse one newer than this code knows."""
    steps = migrations(backend.dialect.name)
    latest = steps[-1].version
    with backend.transaction(write=True):
        if backend.dialect.migration_lock:
            backend.query(backend.dialect.migration_lock)
        backend.execute(VERSION_TABLE)
        version = current_version(backend)
        if version > latest:
            raise schema_too_new(backend.label, version, latest)
        for step in steps[version:]:
            _apply(backend, step)
    return latest


def current_version(backend: Backend) -> int:
    found = backend.query("SELECT max(version) FROM schema_version")[0][0]
    if found is not None and not isinstance(found, int):  # another tool's table of that name
        raise not_a_store(backend.label, f"its schema_version table holds {found!r}")
    return found or 0


def _apply(backend: Backend, step: Migration) -> None:
    sql = backend.dialect.sql
    try:
        for statement in step.statements:
            backend.execute(statement)
        backend.execute(
            sql("INSERT INTO schema_version (version, applied) VALUES (?, ?)"),
            (step.version, time.time()),
        )
    except Exception as err:
        raise migration_failed(backend.label, step.version, " ".join(str(err).split())) from None
