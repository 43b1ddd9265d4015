"""A proxied provider as a ``Transport``: reads from its published rows, calls through the queue.

``info`` and ``inventory`` answer what the provider's active proxy last published, exactly
as the provider itself would reply — unless nothing was published yet, the proxy published
that its read failed, or the publication is older than ``proxy_settings.inventory_max_age``
(measured on the store's clock): then the reply is UNAVAILABLE, naming the provider, the
proxy, the age and the bound, so its entries are unknown, never absent. Every other verb
is queued (``batching``) and waited for, at most the binding's timeout plus the lease's
ttl (a standby takes over a dead proxy's lease within the ttl); past that it is
DEADLINE_EXCEEDED, which the applier keeps in doubt. Nothing here starts the provider or
reads its secrets: the request travels as it is, and the proxy adds its binding.
"""

from __future__ import annotations

import time
import uuid
from dataclasses import replace
from typing import Any

from compiler.contract.bindings import ProviderBinding, ProxySettings
from compiler.core.units import duration_text
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.relay.batching import POLL_FIRST, POLL_MAX, CallBatcher
from reconciler.state import StateError, StateStore
from reconciler.state.proxy_records import PublishedHeader
from reconciler.transports.base import channel_error, decode_document, decode_reply, named_error

_CONSISTENT_TRIES = 5  # reads of header and entries until a publish does not cut between


class StoreTransport:
    """One proxied provider of one site, through the state store the proxies use."""

    def __init__(self, name: str, binding: ProviderBinding, settings: ProxySettings,
                 store: StateStore, site: str) -> None:
        self.name = name
        self._proxy = binding.proxy or "?"
        self._max_age = settings.inventory_max_age
        self._timeout = binding.timeout + settings.lease_ttl
        self._timeouts = (binding.timeout, settings.lease_ttl)
        self._store = store
        self._site = site
        self._queue = CallBatcher(store, site, name)

    def call(self, request: Request) -> Reply:
        try:
            if request.verb == "info":
                return self._info()
            if request.verb == "inventory":
                return Reply.success(self._inventory())
        except ProviderError as err:
            return Reply.failure(err)
        except StateError as err:  # a transport never raises: the store failing is a reply
            why = err.problems[0].message
            return channel_error(self.name, ErrorCode.UNAVAILABLE,
                                 f"has its published inventory in a state store that failed: {why}")
        return self._queued(request)

    def close(self) -> None:
        """Nothing to close: the store is the command's, and a queued call stays queued."""

    # -- reads, from the published rows --------------------------------------------------

    def _info(self) -> Reply:
        """The ``info`` reply the proxy published (as a reply, or its result)."""
        info = self._header().info
        if info is None:  # as a provider that offers no info: it declares no kinds
            return channel_error(self.name, ErrorCode.UNIMPLEMENTED,
                                 f"has no info reply published by its proxy '{self._proxy}'")
        return decode_reply(self.name, info) if "ok" in info else Reply.success(info)

    def _inventory(self) -> dict[str, Any]:
        """The inventory reply, from a header and its entries read between no two publishes."""
        for _ in range(_CONSISTENT_TRIES):
            header = self._header()
            texts = self._store.published_entries(self._site, self.name)
            again = self._store.published_header(self._site, self.name)
            if again == header and len(texts) == header.entry_count:
                entries = decode_document(self.name, ("[" + ",".join(texts) + "]").encode())
                result = {"generation": header.generation, "complete": header.complete,
                          "entries": entries}
                if header.session is not None:
                    result["session"] = header.session
                return result
        raise named_error(self.name, ErrorCode.UNAVAILABLE, (
            f"was republished by its proxy '{self._proxy}' during each of "
            f"{_CONSISTENT_TRIES} reads of its inventory; try again"))

    def _header(self) -> PublishedHeader:
        """The published header, if it is usable; else UNAVAILABLE saying why and what to check."""
        now, header = self._caught_up()
        if header is None:
            raise self._unavailable(
                f"runs in proxy '{self._proxy}', which has not published its inventory to the "
                f"state store {self._store.label} yet, so its entries are unknown: is "
                f"xce-proxy {self._proxy} running against this store, and has an xce-apply "
                "recorded the config since proxies were turned on? (docs/proxies.md)")
        age = _seconds(max(0.0, now - header.published))
        if header.error is not None:
            raise self._unavailable(
                f"could not be read by proxy '{header.proxy}' (published {age} ago): "
                f"{header.error}; see that proxy's log (docs/proxies.md)")
        if now - header.published > self._max_age:
            raise self._unavailable(
                f"has an inventory published by proxy '{header.proxy}' {age} ago, older than "
                f"inventory_max_age ({_seconds(self._max_age)}): is xce-proxy {header.proxy} "
                "running and reaching this store? (docs/proxies.md)")
        return header

    def _caught_up(self) -> tuple[float, PublishedHeader | None]:
        """The store's time and the header, once it is not behind a change the proxy made
        (it publishes soon after: within about a second while calls keep coming). Still
        behind after the binding's timeout and the lease ttl (the proxy stopped before it
        published): UNAVAILABLE, as what was published no longer holds."""
        deadline, pause = time.monotonic() + self._timeout, POLL_FIRST
        while True:
            now = self._store.store_now()
            header = self._store.published_header(self._site, self.name)
            if header is None or header.changed is None or header.error is not None:
                return now, header
            if time.monotonic() >= deadline:
                raise self._unavailable(
                    f"was changed by proxy '{header.proxy}' {_seconds(now - header.changed)} "
                    f"ago, and the proxy has not published its inventory since, so what it "
                    f"published before no longer holds: is xce-proxy {header.proxy} running? "
                    "(docs/proxies.md)")
            time.sleep(pause)  # waiting on another process's write: the store's polling pace
            pause = min(pause * 2, POLL_MAX)

    def _unavailable(self, detail: str) -> ProviderError:
        return named_error(self.name, ErrorCode.UNAVAILABLE, detail)

    # -- every other verb, through the queue ----------------------------------------------

    def _queued(self, request: Request) -> Reply:
        """Queue the call (a read without op_id gets a fresh one) and wait for its reply."""
        if not request.op_id:
            request = replace(request, op_id=uuid.uuid4().hex)
        doc, deadline = request.to_json(), time.monotonic() + self._timeout
        while True:  # every twice the lease ttl: is any proxy there to take it?
            left = deadline - time.monotonic()
            reply = self._queue.call(request.op_id, doc, min(left, 2 * self._timeouts[1]))
            if reply is not None:
                return reply
            if time.monotonic() >= deadline or not self._lease_held():
                break
        if self._withdrawn(request.op_id):
            return Reply.failure(named_error(self.name, ErrorCode.UNAVAILABLE, (
                f"was not served: no proxy took its {request.verb} call (op {request.op_id}) "
                f"in time, so it was taken back from the queue, not made; is xce-proxy "
                f"{self._proxy} running and holding the provider's lease? (docs/proxies.md)")))
        binding_s, ttl_s = self._timeouts
        return Reply.failure(ProviderError(ErrorCode.DEADLINE_EXCEEDED, (
            f"provider '{self.name}': no proxy answered its {request.verb} call (op "
            f"{request.op_id}) within {self._timeout:g} s (the binding's timeout {binding_s:g} s "
            f"+ the lease ttl {ttl_s:g} s); the op stays in doubt and a resumed apply settles "
            f"it: is xce-proxy {self._proxy} running? (docs/proxies.md)")))


    def _lease_held(self) -> bool:
        """Whether some proxy holds this provider's lease now (a store failure: assume so,
        and keep waiting)."""
        try:
            lease = self._store.provider_leases(self._site).get(self.name)
            return lease is not None and lease.held(self._store.store_now())
        except StateError:
            return True

    def _withdrawn(self, op_id: str) -> bool:
        """Whether the call was still queued and is now taken back (never made)."""
        try:
            return op_id in self._store.withdraw_calls(self._site, self.name, [op_id])
        except StateError:
            return False  # it may have been taken: in doubt


def _seconds(seconds: float) -> str:
    """An age or bound for people: ``12 min 5 s``, or ``0.05 s`` below ten seconds."""
    return duration_text(seconds) if seconds >= 10 else f"{seconds:.3g} s"
