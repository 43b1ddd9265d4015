"""The provider leases this proxy instance holds: one active proxy per provider.

Every ``lease_ttl / 3`` the proxy renews what it holds (one transaction); every second (more
often for a short ttl) it tries to take what it serves and does not hold. A lease released
(a proxy stopping releases its leases) is taken at once, so the standby takes over within a
second. One never held is taken by the configured active at once, by a standby once the
active has had a ttl to come up. One that lapsed (its holder crashed or hung) is taken only
by an instance that has run for two ttls: the peer that was running takes over, and the
crashed holder, restarted at once, does not race it back. A new holder gets a new epoch,
drawn from the site's apply epochs, which every call it makes carries. A lease that is gone
stops the provider at once: the caller closes its transport. ``lease.acquire`` is checked
against the allowlist before a lease is taken. While a provider call holds the loop up, a
``Keeper`` thread renews the leases instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from reconciler.proxy.context import Context
from reconciler.proxy.opcodes import LEASE_ACQUIRE
from reconciler.proxy.refusals import Gate
from reconciler.state import StateError
from reconciler.state.proxy_records import ProviderLease


class Leases:
    """What this instance holds, by provider, as the store last confirmed it."""

    def __init__(self, ctx: Context, gate: Gate,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.ctx = ctx
        self.gate = gate
        self.clock = clock
        self.started = clock()
        self.held: dict[str, ProviderLease] = {}

    def renew(self) -> list[str]:
        """Renew what this instance holds (one transaction); the providers lost."""
        ctx = self.ctx
        if ctx.served is None or not self.held:
            return []
        renewed = ctx.store.renew_leases(ctx.site, ctx.me.instance, ctx.settings.lease_ttl)
        lost = sorted(set(self.held) - set(renewed))
        for provider in lost:
            self._lost(provider, "it lapsed before it was renewed (a pause, or the store "
                       "out of reach) and may be held by another proxy now")
        self.held = {p: lease for p, lease in renewed.items() if p in ctx.served.preferred}
        return lost

    def take(self) -> list[ProviderLease]:
        """Take the leases this proxy serves and does not hold, where it may; those taken
        now (each under a new epoch)."""
        ctx = self.ctx
        if ctx.served is None:
            return []
        wanted = [p for p in ctx.served.providers if p not in self.held]
        if not wanted:
            return []
        current, now = ctx.store.provider_leases(ctx.site), ctx.store.store_now()
        taken: list[ProviderLease] = []
        for provider in wanted:
            preferred = ctx.served.preferred[provider]
            ttl = ctx.settings.lease_ttl
            if not self._may_take(current.get(provider), preferred, now, ttl):
                continue
            if self.gate.refused(LEASE_ACQUIRE, provider, once=True):
                continue
            lease = ctx.store.take_lease(ctx.site, provider, ctx.me.proxy, ctx.me.instance,
                                         ttl, preferred=preferred)
            if lease is None:
                continue
            self.held[provider] = lease
            taken.append(lease)
            ctx.log.event("lease-taken", provider=provider, epoch=lease.epoch,
                          role="active" if preferred else "standby")
        return taken

    def _may_take(self, lease: ProviderLease | None, preferred: bool, now: float,
                  ttl: float) -> bool:
        """Whether this instance may take the lease now. A released one: at once (a
        handover). One never held: the active at once, a standby once the active has had a
        ttl to come up. A lapsed one (its holder crashed or hung): only an instance running
        for two ttls, so a peer that was running takes over from a crashed holder, and the
        holder restarted at once does not race it back."""
        uptime = self.clock() - self.started
        if lease is None:
            return preferred or uptime >= ttl
        if lease.held(now):
            return False
        return lease.expires == 0 or uptime >= 2 * ttl

    def lose(self, provider: str, why: str) -> None:
        """A write found the lease gone (``LeaseLost``): stop serving it."""
        if self.held.pop(provider, None) is not None:
            self._lost(provider, why)

    def _lost(self, provider: str, why: str) -> None:
        self.ctx.log.event("lease-lost", provider=provider, why=why)

    def release(self, providers: list[str] | None = None) -> None:
        """Give leases back at once (all when ``providers`` is None), for a standby to take."""
        chosen = sorted(self.held) if providers is None else sorted(providers)
        ctx = self.ctx
        if ctx.site:
            ctx.store.release_leases(ctx.site, ctx.me.instance, None if providers is None
                                     else chosen)
        for provider in chosen:
            if self.held.pop(provider, None) is not None:
                ctx.log.event("lease-released", provider=provider)


class Keeper:
    """Renews this instance's leases from a thread of its own, but only while the loop is
    held up in a provider call (a cloud API may take minutes, far past a lease's ttl): the
    loop renews them itself otherwise. A lease found gone meanwhile is handed to the loop
    (``take_lost``), which stops serving it once the call returns."""

    def __init__(self, ctx: Context, leases: Leases) -> None:
        self.ctx = ctx
        self.leases = leases
        self._busy = threading.Event()
        self._stop = threading.Event()
        self._lost: set[str] = set()
        self._mutex = threading.Lock()
        self._calls = 0  # provider calls in hand (a batch's are made at once)
        self._thread: threading.Thread | None = None

    @contextmanager
    def busy(self) -> Iterator[None]:
        """Around a provider call: the keeper renews while any lasts."""
        with self._mutex:
            self._calls += 1
            self._busy.set()
        try:
            yield
        finally:
            with self._mutex:
                self._calls -= 1
                if not self._calls:
                    self._busy.clear()

    def start(self) -> None:
        self._thread = threading.Thread(target=self._beat, name="xce-proxy-leases",
                                        daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()

    def take_lost(self) -> list[str]:
        with self._mutex:
            lost, self._lost = sorted(self._lost), set()
        return lost

    def _beat(self) -> None:
        while not self._stop.wait(self.ctx.settings.lease_ttl / 3):
            if not self._busy.is_set():
                continue
            held = list(self.leases.held)  # the loop changes it only between calls
            if not held:
                continue
            ctx = self.ctx
            try:
                renewed = ctx.store.renew_leases(ctx.site, ctx.me.instance,
                                                 ctx.settings.lease_ttl)
            except StateError:
                continue  # the store out of reach: the leases lapse, as the loop's would
            with self._mutex:
                self._lost.update(p for p in held if p not in renewed)
