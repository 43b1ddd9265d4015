"""Telling a site's drift once: what the ledger holds that was not notified yet, claimed
under a lease so two runs never send it twice (docs/drift.md).

A run claims the site's notification lease (``notification_lock``) and reads what is
pending in one transaction, sends it, and then marks it notified and gives the lease back
in another; a run that could not send it gives the lease back and the next run tells it all.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from reconciler.state.connection import reconnecting
from reconciler.state.errors import LockHeld, LockLost
from reconciler.state.ledger import Ledger
from reconciler.state.locks import Locks
from reconciler.state.store import DriftPending, Holder, notification_lock
from reconciler.state.times import to_time


class Notifications(Ledger, Locks):
    """The drift ledger's notifications and their lease, over the store's connection."""

    @reconnecting
    def pending_notifications(self, site: str) -> DriftPending:
        """What is new, changed or resolved since the last notification (read only)."""
        with self._transaction(write=False):
            return self._pending(site)

    @reconnecting
    def claim_notifications(self, site: str, holder: Holder, ttl: float) -> DriftPending:
        """Take the site's notification lease (``notification_lock``) and read what is
        pending, in one transaction; ``LockHeld`` while another run holds it. Then either
        ``mark_notified`` (it was sent) or ``release_notifications`` (it was not)."""
        with self._write() as now:
            lock = self._take(notification_lock(site), holder, ttl, now)
            if lock.holder != holder.name:
                raise LockHeld(lock, self.label, 0.0)
            pending = self._pending(site)
        self._held(lock, holder, ttl)
        return pending

    def mark_notified(self, site: str, fingerprints: Iterable[str], at: datetime | None = None,
                      *, holder: str, digest: bool = False) -> int:
        """In one transaction, while ``holder`` still holds the lease: mark ``fingerprints``
        notified (resolved ones are then forgotten), note the time (and, with ``digest``,
        that a digest of all open drift was sent), and give the lease back. Returns how
        many drifts were marked; ``LockLost`` if the lease is no longer ``holder``'s."""
        return self._mark_notified(site, tuple(fingerprints), at, holder, digest)

    @reconnecting
    def _mark_notified(self, site: str, keys: tuple[str, ...], at: datetime | None,
                       holder: str, digest: bool) -> int:
        name = notification_lock(site)
        with self._write() as clock:
            lock = self._lock(name)
            if lock is None or lock.holder != holder or lock.expires <= to_time(clock):
                self._forget(name)
                raise LockLost(name, holder, lock, self.label)
            marked = self._mark(site, keys, clock if at is None else at.timestamp(), digest)
            self._execute("DELETE FROM locks WHERE name = ? AND holder = ?", name, holder)
        self._forget(name)
        return marked

    def release_notifications(self, site: str, holder: str) -> None:
        """Give the lease back without marking anything: the next run notifies it all."""
        self.release(notification_lock(site), holder)

    @reconnecting
    def last_digest(self, site: str) -> datetime | None:
        """When a digest of ``site``'s open drift was last sent, if ever."""
        with self._transaction(write=False):
            return self._told(site)[1]
