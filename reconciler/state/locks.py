"""Locks (TTL leases) and fencing epochs: what keeps two runners from applying one site at once.

A lock is a lease its holder renews (the heartbeat); an epoch is a counter that only grows,
so a provider can fence off a runner that was superseded. The store remembers the leases and
epochs it took (``connection.py``), and checks here that they are still its own before it
goes on over a reopened connection.
"""

from __future__ import annotations

import time

from reconciler.state.connection import Connection, reconnecting
from reconciler.state.dialect import Row
from reconciler.state.errors import LockHeld, LockLost, epoch_moved
from reconciler.state.store import Holder, Lock
from reconciler.state.times import to_time

_LOCK_COLUMNS = "name, holder, host, job_id, acquired, expires"


class Locks(Connection):
    """Locks and epochs, over the store's connection."""

    def acquire(
        self, name: str, holder: Holder, ttl: float, *, wait: float = 0.0, poll: float = 0.5
    ) -> Lock:
        """Take the lock (or an expired one); poll up to ``wait`` s, then raise ``LockHeld``."""
        started = time.monotonic()
        while True:
            lock = self._try_acquire(name, holder, ttl)
            if lock.holder == holder.name:
                return lock
            waited = time.monotonic() - started
            if waited >= wait:
                raise LockHeld(lock, self.label, wait)
            time.sleep(min(poll, wait - waited))

    @reconnecting
    def _try_acquire(self, name: str, holder: Holder, ttl: float) -> Lock:
        with self._write() as now:
            lock = self._take(name, holder, ttl, now)
        self._held(lock, holder, ttl)
        return lock

    def _held(self, lock: Lock, holder: Holder, ttl: float) -> None:
        """Count a lock taken as held only once its transaction committed: a COMMIT cut off
        took nothing, and the reconnect must not look for it."""
        if lock.holder == holder.name:
            self._hold(lock, ttl)

    def _take(self, name: str, holder: Holder, ttl: float, now: float) -> Lock:
        """Insert the lock, or take it over if it expired or is already ours; return the row
        (in the caller's write transaction; the caller then calls ``_held``)."""
        self._execute(
            f"INSERT INTO locks ({_LOCK_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?) "
            "ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, "
            "host = excluded.host, job_id = excluded.job_id, "
            "acquired = excluded.acquired, expires = excluded.expires "
            "WHERE locks.expires <= excluded.acquired OR locks.holder = excluded.holder",
            name,
            holder.name,
            holder.host,
            holder.job_id,
            now,
            now + ttl,
        )
        lock = self._lock(name)
        assert lock is not None  # inserted or kept in this very transaction
        return lock

    @reconnecting
    def renew(self, name: str, holder: str, ttl: float) -> Lock:
        """Extend the lease to now + ttl; raise ``LockLost`` if another runner took it."""
        with self._write() as now:
            changed = self._execute(
                "UPDATE locks SET expires = ? WHERE name = ? AND holder = ?",
                now + ttl,
                name,
                holder,
            )
            lock = self._lock(name)
        if not changed or lock is None:
            self._forget(name)
            raise LockLost(name, holder, lock, self.label)
        self._hold(lock, ttl)
        return lock

    @reconnecting
    def release(self, name: str, holder: str) -> None:
        """Give the lock back; raise ``LockLost`` if ``holder`` does not hold it."""
        with self._write():
            released = self._execute(
                "DELETE FROM locks WHERE name = ? AND holder = ?", name, holder
            )
            current = None if released else self._lock(name)
        self._forget(name)
        if not released:
            raise LockLost(name, holder, current, self.label)

    @reconnecting
    def force_release(self, name: str) -> Lock | None:
        """Remove the lock whoever holds it (``xce-lock release``); return what was removed."""
        with self._write():
            lock = self._lock(name)
            self._execute("DELETE FROM locks WHERE name = ?", name)
        self._forget(name)
        return lock

    @reconnecting
    def get_lock(self, name: str) -> Lock | None:
        with self._transaction(write=False):
            return self._lock(name)

    @reconnecting
    def list_locks(self) -> list[Lock]:
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks ORDER BY name")
        return [_to_lock(row) for row in rows]

    def _lock(self, name: str) -> Lock | None:
        rows = self._query(f"SELECT {_LOCK_COLUMNS} FROM locks WHERE name = ?", name)
        return _to_lock(rows[0]) if rows else None

    # -- fencing epochs ----------------------------------------------------------------

    @reconnecting
    def next_epoch(self, name: str) -> int:
        """The next value of a counter that only grows, unique across concurrent runners."""
        with self._write():
            epoch = self._draw_epoch(name)
        if name in self._leases:  # the epoch of the lock held: checked after a reconnect
            self._epochs[name] = epoch
        return epoch

    def _draw_epoch(self, name: str) -> int:
        """Advance the counter ``name`` in the caller's write transaction; its new value."""
        self._execute(
            "INSERT INTO epochs (name, value) VALUES (?, 1) "
            "ON CONFLICT (name) DO UPDATE SET value = epochs.value + 1",
            name,
        )
        return int(self._query("SELECT value FROM epochs WHERE name = ?", name)[0][0])

    def _verify_held(self) -> None:
        with self._transaction(write=False):
            now = to_time(self._clock())
            for name, lease in list(self._leases.items()):
                lock = self._lock(name)
                if lock is None or lock.holder != lease.holder or lock.expires <= now:
                    self._forget(name)
                    raise LockLost(name, lease.holder, lock, self.label)
                held = self._epochs.get(name)
                rows = self._query("SELECT value FROM epochs WHERE name = ?", name)
                value = int(rows[0][0]) if rows else 0
                if held is not None and value != held:
                    self._forget(name)
                    raise epoch_moved(self.label, name, held, value)


def _to_lock(row: Row) -> Lock:
    name, holder, host, job_id, acquired, expires = row
    return Lock(name, holder, host, job_id, to_time(acquired), to_time(expires))
