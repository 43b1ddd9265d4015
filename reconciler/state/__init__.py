"""The state store: locks, epochs, runs, the apply journal and site history.

``open_store`` picks the backend from ``--state`` (or ``XCE_STATE_URL``): a plain path
or ``sqlite:`` URL opens SQLite, ``postgresql://`` / ``postgres://`` opens PostgreSQL.
Either way the store's schema is migrated to this code's version on open.

The store is one class, ``SqlStore`` (``sql_store.py``; the rest of the code calls it
``StateStore``), mixed from one class per concern over a shared connection:

- ``connection.py``: the backend behind a mutex, transactions, the store's clock, reconnecting
- ``locks.py``: locks (TTL leases) and fencing epochs
- ``journal.py``: runs and the apply journal
- ``history.py``: applied configurations, plans recorded for review, drift history
- ``ledger.py``: the drift ledger
- ``notifications.py``: telling the ledger's drift, under a lease
- ``generations.py``: provider generations
- ``attempts.py``: provisioning attempts
- ``inventory_counts.py``: the shrink guard's counts and the journal's removals
- ``applied_config.py``: the configurations applies made current, which proxies follow
- ``provider_leases.py``: which proxy instance serves each provider, under which epoch;
  fencing a proxy's writes by its lease
- ``published.py``: the inventories proxies publish, and the store's clock
- ``call_queue.py``: the calls applies queue for proxies, and their replies
- ``proxy_instances.py``: proxy heartbeats and the calls their allowlists refused
- ``sql_store.py``: the whole store (migrated on open), its identity and plan-signing key

Its records are in ``store.py`` and ``proxy_records.py``, its failures in ``errors.py``;
``dialect.py``, ``sqlite_backend.py`` and ``postgres_backend.py`` talk to the databases.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from reconciler.state.errors import LeaseLost, LockHeld, LockLost, StateError
from reconciler.state.heartbeat import Heartbeat
from reconciler.state.holder import current_holder
from reconciler.state.sql_store import SqlStore
from reconciler.state.store import (
    Applied,
    DriftRecord,
    Holder,
    JournalEntry,
    Lock,
    OpStatus,
    PlannedOp,
    Run,
    RunStatus,
)
from reconciler.state.urls import PostgresTarget, parse_target, redact

ENV_URL = "XCE_STATE_URL"

StateStore = SqlStore  # the store, as the rest of the code names it

__all__ = [
    "ENV_URL",
    "Applied",
    "DriftRecord",
    "Heartbeat",
    "Holder",
    "JournalEntry",
    "LeaseLost",
    "Lock",
    "LockHeld",
    "LockLost",
    "OpStatus",
    "PlannedOp",
    "Run",
    "RunStatus",
    "StateError",
    "StateStore",
    "chosen_store",
    "current_holder",
    "open_store",
    "redact",
]


def chosen_store(
    url_or_path: str | None, default_path: Path, env: Mapping[str, str] | None = None
) -> str:
    """The store to open: the argument, else $XCE_STATE_URL, else the default file."""
    env = os.environ if env is None else env
    return url_or_path or env.get(ENV_URL) or str(default_path)


def open_store(
    url_or_path: str | None, default_path: Path, env: Mapping[str, str] | None = None
) -> StateStore:
    """Open (and migrate) the store named by the argument, else $XCE_STATE_URL, else the file."""
    target = parse_target(chosen_store(url_or_path, default_path, env))
    if isinstance(target, PostgresTarget):
        from reconciler.state.postgres_backend import PostgresBackend  # psycopg only if used

        return SqlStore(PostgresBackend(target))
    from reconciler.state.sqlite_backend import SqliteBackend

    return SqlStore(SqliteBackend(target.path))
