"""PostgreSQL, the shared store for CI runners on many machines.

Writers serialise on the rows they upsert (``INSERT … ON CONFLICT … DO UPDATE`` locks the
conflicting row), so lock takeover and epochs are atomic under READ COMMITTED; times come
from the server's clock so runners with skewed clocks agree on when a lease expires.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable

import psycopg
from psycopg import errors as pg_errors
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from reconciler.state.dialect import Backend, Dialect, Params, Row
from reconciler.state.errors import StateError, cannot_open, store_failed
from reconciler.state.urls import PostgresTarget

# used unless the URL sets them
_DEFAULTS: dict[str, str | int] = {"connect_timeout": 10, "application_name": "xce-gitops"}
# one advisory-lock key for "migrating the xce state schema", the same for every runner
_MIGRATION_KEY = zlib.crc32(b"xce-gitops state migration")

POSTGRESQL = Dialect(
    name="postgresql",
    placeholder="%s",
    begin_write="BEGIN",
    clock="extract(epoch FROM clock_timestamp())::double precision",
    migration_lock=f"SELECT pg_advisory_xact_lock({_MIGRATION_KEY})",
    writable_with=True,
)

# failures of the server or the network, or of the user's rights: the user must act
_USER_ERRORS: tuple[type[Exception], ...] = (
    psycopg.OperationalError,
    pg_errors.InsufficientPrivilege,
    pg_errors.ReadOnlySqlTransaction,
)


class PostgresBackend(Backend):
    dialect = POSTGRESQL

    def __init__(self, target: PostgresTarget) -> None:
        self.label = target.label
        self._password = target.password
        try:
            given = conninfo_to_dict(target.url)
            extra = {k: v for k, v in _DEFAULTS.items() if k not in given}
            self._conninfo = make_conninfo(target.url, **extra)
        except psycopg.Error as err:
            raise cannot_open(self.label, self._scrub(err)) from None
        self._conn = self._connect()

    def _connect(self) -> psycopg.Connection[Row]:
        try:
            # autocommit: the store sends BEGIN/COMMIT itself, as for SQLite
            return psycopg.connect(self._conninfo, autocommit=True)
        except psycopg.Error as err:
            raise cannot_open(self.label, self._scrub(err)) from None

    def lost(self) -> bool:
        return self._conn.broken or self._conn.closed

    def reconnect(self) -> None:
        self._conn.close()
        self._conn = self._connect()

    def query(self, sql: str, params: Params = ()) -> list[Row]:
        return self._conn.execute(sql, params).fetchall()

    def execute(self, sql: str, params: Params = ()) -> int:
        return self._conn.execute(sql, params).rowcount

    def execute_many(self, sql: str, rows: Iterable[Params]) -> None:
        with self._conn.cursor() as cur:
            cur.executemany(sql, rows)

    def translate(self, err: Exception) -> StateError | None:
        if isinstance(err, _USER_ERRORS):
            return store_failed(self.label, self._scrub(err))
        return None

    def close(self) -> None:
        self._conn.close()

    def _scrub(self, err: Exception) -> str:
        """The driver's message on one line, without the password should it echo the URL."""
        text = " ".join(str(err).split()) or type(err).__name__
        return text.replace(self._password, "***") if self._password else text
