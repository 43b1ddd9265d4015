"""The proxy's main loop: one thread, a few timers, everything through the store.

Each step follows the applied configuration (every few seconds), renews leases (every
``lease_ttl / 3``) and takes those free (every second), answers a batch of queued calls,
and publishes the inventories that are due. The queue is polled every 50 ms while calls
came in recently, backing off to 500 ms when idle. When the store cannot be reached the
proxy logs it and keeps running, retrying with a growing pause; its leases lapse meanwhile,
and a standby that still reaches the store takes over. SIGTERM or SIGINT (``stopping``)
ends the loop after the batch of calls in hand: the leases are released at once, so a
standby takes over without waiting for them to lapse. The one other thread, the leases' ``Keeper``,
renews them while a provider call holds the loop up for longer than a third of their ttl.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from compiler.core.problems import UserError
from reconciler.proxy.context import Context
from reconciler.proxy.follow import Change, Follower, describe
from reconciler.proxy.leases import Keeper, Leases
from reconciler.proxy.publish import Publisher
from reconciler.proxy.refusals import Gate
from reconciler.proxy.running import Running
from reconciler.proxy.serve import Server
from reconciler.state import StateError
from reconciler.state.errors import LeaseLost

CONFIG_EVERY = 2.0  # seconds between two reads of the applied configuration
TAKE_EVERY = 1.0  # seconds between two tries to take the leases not held (at most)
FAST, SLOW = 0.01, 0.5  # the queue's polling pause while busy, and when idle
BUSY_FOR = 2.0  # seconds after the last call during which the queue is polled fast
QUIET = 0.1  # no call for this long: the changes made are published (else once a second)
OUTAGE_PAUSES = (0.5, 15.0)  # first and longest pause between tries while the store is out


@dataclass(slots=True)
class _Timer:
    every: float
    next: float = 0.0  # due at once

    def due(self, now: float) -> bool:
        if now < self.next:
            return False
        self.next = now + self.every
        return True


class Daemon:
    """One running proxy instance."""

    def __init__(self, ctx: Context, follower: Follower,
                 clock: Callable[[], float] = time.monotonic, quiet: float = QUIET) -> None:
        self.ctx = ctx
        self.follower = follower
        self.clock = clock
        self.quiet = quiet  # seconds without a call before the changes are published at once
        self._last_call = float("-inf")
        self.gate = Gate(ctx)
        self.leases = Leases(ctx, self.gate, clock)
        self.keeper = Keeper(ctx, self.leases)
        self.running = Running(ctx, self.keeper)
        self.publisher = Publisher(ctx, self.gate, self.running, clock)
        self.server = Server(ctx, self.gate, self.leases, self.running, self.publisher)
        self._config = _Timer(CONFIG_EVERY)
        self._renew = _Timer(1.0)
        self._take = _Timer(TAKE_EVERY)
        self._waiting_told = False

    def step(self) -> int:
        """One turn of the loop; how many calls it answered. Store failures propagate."""
        now = self.clock()
        if self._config.due(now):
            self.follow()
        if self.ctx.served is None:
            return 0
        renew, take = self._renew.due(now), self._take.due(now)
        if renew or take:
            self.tick_leases(renew=renew, take=take)
        try:
            taken = self.server.serve()
            self.server.write()  # marks the inventories behind, in the store, until published
            self._last_call = self.clock() if taken else self._last_call
            self.publish_due(busy=bool(taken) or self.clock() - self._last_call < self.quiet)
        except LeaseLost as err:
            self.leases.lose(err.provider, err.problems[0].message)
            taken = 0
        for provider in self.keeper.take_lost():
            self.leases.lose(provider, "it lapsed during a provider call (found by the "
                             "renewal made meanwhile)")
        self._stop_unheld()
        return taken

    def follow(self) -> Change | None:
        """Read the applied configuration; take up what was added, release what went."""
        change = self.follower.poll()
        served = self.follower.current
        if served is None:
            if not self._waiting_told:
                self._waiting_told = True
                self.ctx.log.event("waiting", site=self.follower.site,
                                   why="no applied configuration yet: the first xce-apply "
                                   "of the site records it")
            return None
        if change is None:
            return None
        ctx = self.ctx
        ctx.site, ctx.served = self.follower.site or "", served
        ctx.log.redactor = served.redactor
        ctx.metrics.health.config_seq = served.seq
        self.gate.follow(served.allowlist)
        self._renew = _Timer(served.settings.lease_ttl / 3)
        self._take = _Timer(min(TAKE_EVERY, served.settings.lease_ttl / 3))
        self.leases.release([p for p in change.removed if p in self.leases.held])
        for provider in (*change.removed, *change.rebound):
            self.running.close(provider)  # a new binding: opened anew, published whole
            self.publisher.forget(provider)
            ctx.metrics.forget(provider)
        ctx.log.event("config", site=ctx.site, added=list(change.added),
                      removed=list(change.removed), rebound=list(change.rebound),
                      **describe(served))
        return change

    def tick_leases(self, *, renew: bool = True, take: bool = True) -> None:
        """Renew and take leases; on renewal, tell the store this instance is alive, and
        update the figures."""
        if take:
            self.leases.take()
        if not renew:
            return
        ctx, me = self.ctx, self.ctx.me
        self.leases.renew()
        self._stop_unheld()
        state = "serving" if self.leases.held else "standby"
        ctx.store.proxy_seen(ctx.site, me.proxy, me.instance, me.host, me.pid, state)
        if ctx.served is not None:
            ctx.metrics.set_queue(ctx.store.queue_depth(ctx.site), ctx.served.providers)

    def publish_due(self, *, busy: bool = False) -> None:
        """Publish what is due; while calls keep coming (``busy``), changes are published
        together at most every ``BEHIND_AT_MOST`` (publisher.py)."""
        for provider, lease in sorted(self.leases.held.items()):
            if self.publisher.due(provider, lease, busy=busy):
                try:
                    self.publisher.publish(provider, lease)
                except LeaseLost as err:
                    self.leases.lose(provider, err.problems[0].message)

    def _stop_unheld(self) -> None:
        """A provider whose lease is gone is stopped at once: its transport closed."""
        for provider in [p for p in self.publisher.shown if p not in self.leases.held]:
            self.publisher.forget(provider)
        served = self.ctx.served.providers if self.ctx.served is not None else ()
        for provider in served:
            if provider in self.running and provider not in self.leases.held:
                self.running.close(provider)
        self.ctx.metrics.set_leases(len(self.leases.held))

    def run(self, stopping: threading.Event) -> int:
        """Step until ``stopping`` is set; then release everything. Exit code 0; a proxy
        the applied configuration no longer names stops with a UserError (exit 1)."""
        pause, busy_until, outage = FAST, 0.0, 0.0
        self.keeper.start()
        try:
            while not stopping.is_set():
                try:
                    taken = self.step()
                except StateError as err:
                    outage = self._store_out(err, outage)
                    stopping.wait(outage)
                    continue
                outage = self._store_back(outage)
                now = self.clock()
                busy_until = now + BUSY_FOR if taken else busy_until
                pause = FAST if now < busy_until else min(pause * 2, SLOW)
                stopping.wait(pause)
        except UserError as err:
            self.shutdown(err.problems[0].message)
            raise
        self.shutdown("asked to stop (SIGTERM or SIGINT)")
        return 0

    def _store_out(self, err: StateError, outage: float) -> float:
        """Log the store out of reach (at its first failure, then each longer pause)."""
        pause = min(max(outage * 2, OUTAGE_PAUSES[0]), OUTAGE_PAUSES[1])
        self.ctx.metrics.health.store_ok = False
        if pause != outage:
            self.ctx.log.event("store-unreachable", error=err.problems[0].message,
                               retry_in=pause)
        return pause

    def _store_back(self, outage: float) -> float:
        if outage:
            self.ctx.metrics.health.store_ok = True
            self.ctx.log.event("store-reachable")
        return 0.0

    def shutdown(self, why: str) -> None:
        """Release every lease (a standby takes over at once) and stop every provider; a
        store out of reach lets the leases lapse instead."""
        ctx, me = self.ctx, self.ctx.me
        self.keeper.stop()
        try:
            self.leases.release()
            if ctx.site:
                ctx.store.proxy_seen(ctx.site, me.proxy, me.instance, me.host, me.pid,
                                     "stopped")
        except StateError as err:
            ctx.log.event("release-failed", error=err.problems[0].message,
                          why="the leases lapse after lease_ttl instead")
        self.running.close_all()
        self.server.close()
        ctx.log.event("stopped", why=why)
