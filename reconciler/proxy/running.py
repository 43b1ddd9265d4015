"""The providers this proxy runs: one transport each, opened from the applied configuration's
bindings on first use (on this host, with its mounts, its secrets resolved in its own
environment), closed as soon as the lease goes or the binding changes."""

from __future__ import annotations

import threading

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.providers.registry import open_bound
from reconciler.proxy.context import Context
from reconciler.proxy.leases import Keeper
from reconciler.transports import Transport


class Running:
    """The open transports, by provider."""

    def __init__(self, ctx: Context, keeper: Keeper) -> None:
        self.ctx = ctx
        self.keeper = keeper  # renews the leases while a call holds the loop up
        self._open: dict[str, Transport] = {}
        self._opening = threading.Lock()  # a batch's calls run at once: open each provider once

    def get(self, provider: str) -> Transport:
        """The provider's transport, opened now if it is not; a ProviderError naming the
        provider when it cannot be opened (bad binding, no such command)."""
        with self._opening:
            return self._open.get(provider) or self._opened(provider)

    def _opened(self, provider: str) -> Transport:
        served = self.ctx.served
        if served is None or provider not in served.preferred:
            raise ProviderError(ErrorCode.FAILED_PRECONDITION,
                                f"proxy {self.ctx.me.proxy!r} does not serve {provider!r}")
        transport = open_bound(served.bindings, provider, self.ctx.workdir)
        self._open[provider] = transport
        self.ctx.log.event("provider-opened", provider=provider)
        return transport

    def call(self, provider: str, request: Request) -> Reply:
        """``request`` made of ``provider``; never raises: a provider that cannot be opened,
        or a transport that raises (a bug), is a failed reply naming the provider."""
        try:
            with self.keeper.busy():
                return self.get(provider).call(request)
        except ProviderError as err:
            return Reply.failure(err)
        except Exception as err:  # one broken provider must not end the proxy
            return Reply.failure(ProviderError(
                ErrorCode.INTERNAL, f"provider {provider!r} failed: {type(err).__name__}: {err}"))

    def close(self, provider: str) -> None:
        transport = self._open.pop(provider, None)
        if transport is None:
            return
        try:
            transport.close()
        except Exception as err:  # closing a broken provider must not end the proxy
            self.ctx.log.event("provider-close-failed", provider=provider,
                               error=f"{type(err).__name__}: {err}")
        self.ctx.log.event("provider-closed", provider=provider)

    def close_all(self) -> None:
        for provider in sorted(self._open):
            self.close(provider)

    def __contains__(self, provider: object) -> bool:
        return provider in self._open
