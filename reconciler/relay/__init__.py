"""A proxied provider as xce-plan, xce-apply and xce-drift see it: through the state store.

A provider bound ``via: proxy`` runs only inside its proxy (``xce-proxy``), which publishes
its inventory to the store and answers the calls queued there (docs/proxies.md). Here
``open_provider_for`` opens such a provider as a ``StoreTransport`` (``transport``): its
``info`` and ``inventory`` are read from the published rows, every other call is queued in
batches and its reply waited for (``batching``). ``config`` records the config an apply
applies, which the proxies follow, and tells a plan when they follow another one. The
problem codes are in ``codes``.
"""

from reconciler.relay.config import config_problems, record_config
from reconciler.relay.open import Relay, open_provider_for
from reconciler.relay.transport import StoreTransport

__all__ = ["Relay", "StoreTransport", "config_problems", "open_provider_for", "record_config"]
