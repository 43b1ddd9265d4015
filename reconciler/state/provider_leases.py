"""Provider leases (issue 24): which proxy instance serves each provider of a site, under
which fencing epoch, until when.

A new holder's epoch is drawn from the site's apply epoch counter (``lock_name(site)``), in
the same transaction that takes the lease, so it beats every apply epoch and every holder
before it; a renewal keeps it. Every write a proxy makes for a provider (publishing, taking
and finishing calls) is fenced here, in the writing transaction: it acts only while the
lease row still names the writer's instance and epoch and has not expired on the store's
clock, and it locks that row until the write commits, so no one takes the lease meanwhile.
"""

from __future__ import annotations

from collections.abc import Collection

from reconciler.state.connection import reconnecting
from reconciler.state.dialect import Row
from reconciler.state.errors import LeaseLost
from reconciler.state.locks import Locks
from reconciler.state.proxy_records import ProviderLease
from reconciler.state.runs import lock_name

_LEASE_COLUMNS = "site, provider, holder, instance, epoch, acquired, expires"


class ProviderLeases(Locks):
    """Provider leases, over the store's connection (their epochs are the site's apply
    epochs, hence over the locks)."""

    @reconnecting
    def take_lease(self, site: str, provider: str, proxy: str, instance: str, ttl: float, *,
                   preferred: bool) -> ProviderLease | None:
        """Take ``provider``'s lease for ``instance`` (of proxy ``proxy``) until now + ttl, or
        renew it if ``instance`` holds it; the lease if held now, else None (another holds it).

        A lease is free to take when nobody ever held it, or once it lapsed or was released.
        ``preferred`` (the configured active) and a standby take a free lease alike: the
        active simply asks first, and a standby that holds a lease keeps it until it lapses
        or is released (no take-back, so two proxies never flap)."""
        del preferred  # both take a free lease alike (above); the caller's role is its timing
        with self._write() as now:
            if not self._execute(
                "UPDATE provider_leases SET holder = ?, expires = ? "
                "WHERE site = ? AND provider = ? AND instance = ? AND expires > ?",
                proxy, now + ttl, site, provider, instance, now,
            ) and self._execute(  # not ours: take it if free, fencing epoch 0 until drawn
                f"INSERT INTO provider_leases ({_LEASE_COLUMNS}) VALUES (?, ?, ?, ?, 0, ?, ?) "
                "ON CONFLICT (site, provider) DO UPDATE SET holder = excluded.holder, "
                "instance = excluded.instance, epoch = 0, acquired = excluded.acquired, "
                "expires = excluded.expires WHERE provider_leases.expires <= excluded.acquired",
                site, provider, proxy, instance, now, now + ttl,
            ):
                self._execute("UPDATE provider_leases SET epoch = ? WHERE site = ? AND "
                              "provider = ?", self._draw_epoch(lock_name(site)), site, provider)
            lease = self._lease(site, provider)
        return lease if lease is not None and lease.instance == instance else None

    @reconnecting
    def renew_leases(self, site: str, instance: str, ttl: float) -> dict[str, ProviderLease]:
        """Extend every unexpired lease ``instance`` holds on ``site`` to now + ttl (one
        transaction); provider -> lease for those it still holds (a lapsed one is not renewed:
        take it again, under a new epoch)."""
        with self._write() as now:
            self._execute("UPDATE provider_leases SET expires = ? WHERE site = ? AND "
                          "instance = ? AND expires > ?", now + ttl, site, instance, now)
            rows = self._query(f"SELECT {_LEASE_COLUMNS} FROM provider_leases WHERE site = ? "
                               "AND instance = ? AND expires > ?", site, instance, now)
        return {lease.provider: lease for lease in map(_to_lease, rows)}

    @reconnecting
    def release_leases(self, site: str, instance: str,
                       providers: Collection[str] | None = None) -> None:
        """Give back the leases ``instance`` holds (all, or those of ``providers``): they
        expire at once (0), so a standby takes them over on its next try."""
        chosen = sorted(providers) if providers is not None else None
        if chosen == []:
            return
        only = "" if chosen is None else f" AND provider IN ({', '.join('?' * len(chosen))})"
        with self._write():
            self._execute(f"UPDATE provider_leases SET expires = 0 WHERE site = ? AND "
                          f"instance = ?{only}", site, instance, *(chosen or ()))

    @reconnecting
    def provider_leases(self, site: str) -> dict[str, ProviderLease]:
        """Every provider lease of ``site`` (held, lapsed or released), by provider."""
        with self._transaction(write=False):
            rows = self._query(f"SELECT {_LEASE_COLUMNS} FROM provider_leases WHERE site = ? "
                               "ORDER BY provider", site)
        return {lease.provider: lease for lease in map(_to_lease, rows)}

    def _lease(self, site: str, provider: str) -> ProviderLease | None:
        rows = self._query(f"SELECT {_LEASE_COLUMNS} FROM provider_leases WHERE site = ? AND "
                           "provider = ?", site, provider)
        return _to_lease(rows[0]) if rows else None

    def _fence(self, site: str, provider: str, instance: str, epoch: int, now: float) -> None:
        """Go on (in the caller's write transaction) only while ``instance`` holds the lease
        under ``epoch``; lock its row until the caller commits. Else raise ``LeaseLost``,
        which rolls the caller's transaction back."""
        if not self._held_by(site, provider, instance, epoch, now):
            raise LeaseLost((site, provider, instance, epoch), self._lease(site, provider), now,
                            self.label)

    def _held_by(self, site: str, provider: str, instance: str, epoch: int, now: float) -> bool:
        """Whether ``instance`` holds the lease under ``epoch``; a no-op update, so on
        PostgreSQL the row stays locked (a taker waits) until the caller commits."""
        return bool(self._execute(
            "UPDATE provider_leases SET expires = expires WHERE site = ? AND provider = ? AND "
            "instance = ? AND epoch = ? AND expires > ?", site, provider, instance, epoch, now,
        ))


def _to_lease(row: Row) -> ProviderLease:
    site, provider, holder, instance, epoch, acquired, expires = row
    return ProviderLease(site, provider, holder, instance, int(epoch), float(acquired),
                         float(expires))
