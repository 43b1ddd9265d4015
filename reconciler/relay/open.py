"""Where a command reaches a bound provider: in this process, or through the store.

A provider bound ``via: proxy`` is never started here: it is a ``StoreTransport`` over the
``Relay``'s store — the one the command opened anyway (``--state``, ``$XCE_STATE_URL`` or
the workdir's file). Every other provider opens as it always did (``open_bound``).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from compiler.contract.bindings import BindingError, Bindings
from reconciler.protocol import ErrorCode
from reconciler.providers.registry import open_bound
from reconciler.relay.transport import StoreTransport
from reconciler.state import StateStore
from reconciler.transports import Transport
from reconciler.transports.base import named_error


@dataclass(frozen=True, slots=True)
class Relay:
    """The site's key in the store and the opened store that its proxies publish to.

    One store serves every transport and worker thread: each of its methods is one
    transaction behind the store's own mutex (``reconciler/state/connection.py``)."""

    site: str
    store: StateStore

    @classmethod
    def of(cls, bindings: Bindings, site: str, store: StateStore | None) -> Relay | None:
        """The relay a command needs: None when no provider is proxied (nothing changes for
        the site) or there is no store (a proxied provider is then unavailable, said so)."""
        if store is None or not bindings.proxied():
            return None
        return cls(site, store)


def open_provider_for(bindings: Bindings, name: str, workdir: Path,
                      relay: Relay | None) -> Transport:
    """The transport for bound provider ``name``; raises a ProviderError naming it when its
    binding is unusable, or it is proxied and there is no store to reach it through."""
    if name not in bindings.proxied():
        return open_bound(bindings, name, workdir)
    try:
        binding = bindings.binding(name)
    except BindingError as err:
        raise named_error(name, ErrorCode.INVALID_ARGUMENT, str(err)) from None
    if relay is None:
        raise named_error(name, ErrorCode.UNAVAILABLE, (
            f"runs only inside its proxy '{binding.proxy}', and this command has no state "
            "store to reach it through: pass --state (or set XCE_STATE_URL) naming the store "
            "the proxy uses (docs/proxies.md)"))
    return StoreTransport(name, binding, bindings.proxy_settings, relay.store, relay.site)
