"""The state store, whole: one class mixed from the classes of its concerns.

Each concern (locks and epochs, runs and the journal, history, the drift ledger and its
notifications, provider generations, provisioning attempts, inventory counts, and for
proxies the applied configurations, provider leases, published inventories, the call queue
and proxy instances: the package's docstring names their modules) is a class over the
shared ``Connection`` (transactions, the store's clock, reconnecting). What the store holds
beyond them is opened here: the schema, migrated to this code's version first, the store's
own identity and the key it signs saved plans with.
"""

from __future__ import annotations

import secrets

from reconciler.state.applied_config import AppliedConfigs
from reconciler.state.attempts import Attempts
from reconciler.state.call_queue import CallQueue
from reconciler.state.connection import reconnecting
from reconciler.state.dialect import Backend
from reconciler.state.generations import Generations
from reconciler.state.history import History
from reconciler.state.inventory_counts import Inventories
from reconciler.state.journal import Journal
from reconciler.state.migrations import current_version, migrate
from reconciler.state.notifications import Notifications
from reconciler.state.proxy_instances import ProxyInstances
from reconciler.state.published import PublishedInventories

PLAN_KEY_BYTES = 32  # HMAC-SHA256's block-size-safe key length
RECONNECT_S = 10.0  # how long to try to reopen a lost connection when no lease bounds it


class SqlStore(Notifications, Journal, History, Generations, Attempts, Inventories,
               AppliedConfigs, PublishedInventories, CallQueue, ProxyInstances):
    """Locks, epochs, runs, the operation journal and site history in one SQL database,
    shared by all runners (the locks and the drift ledger come in with the notifications,
    which are told under a lease).

    Every method is one transaction; store failures (unreachable, locked, disk) raise a
    ``StateError`` (a ``UserError``) that names the store without its password.
    """

    def __init__(self, backend: Backend) -> None:
        super().__init__(backend, RECONNECT_S)
        self._store_id: str | None = None
        try:
            with self._guarded():
                migrate(backend)
        except BaseException:
            backend.close()
            raise

    @reconnecting
    def schema_version(self) -> int:
        with self._transaction(write=False):
            return current_version(self._db)

    @property
    def store_id(self) -> str:
        """The store's own identity, drawn when it was made (schema version 5) and never
        changed after: a saved plan records it, so a plan applied against another store is
        refused (docs/apply.md)."""
        if self._store_id is None:
            self._store_id = self._read_store_id()
        return self._store_id

    @reconnecting
    def _read_store_id(self) -> str:
        with self._transaction(write=False):
            return str(self._query("SELECT value FROM store_meta WHERE key = 'store_id'")[0][0])

    @reconnecting
    def plan_key(self) -> bytes:
        """The key this store signs its saved plans with (HMAC-SHA256; docs/plan.md, "Plan
        file"), drawn once, on first use, and never changed: only the first caller writes,
        and two at once keep the same (the insert's winner). Never printed: whoever reads it
        may sign plans for this store."""
        select = "SELECT key_hex FROM plan_signing_key WHERE name = 'plan'"
        with self._transaction(write=False):
            rows = self._query(select)
        if not rows:
            with self._write() as now:
                self._execute("INSERT INTO plan_signing_key (name, key_hex, created) "
                              "VALUES ('plan', ?, ?) ON CONFLICT (name) DO NOTHING",
                              secrets.token_hex(PLAN_KEY_BYTES), now)
                rows = self._query(select)
        return bytes.fromhex(str(rows[0][0]))
