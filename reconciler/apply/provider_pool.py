"""The providers an apply talks to: opened on first use, shared by the worker threads, closed once.

Opening a built-in provider opens its files, and an external one may start a process, so
only providers that the plan's remaining actions touch are opened.
"""

from __future__ import annotations

import threading
from pathlib import Path

from compiler.contract.bindings import Bindings
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.relay import Relay, open_provider_for
from reconciler.transports import Transport


class Transports:
    def __init__(self, bindings: Bindings, workdir: Path, relay: Relay | None = None) -> None:
        self._bindings = bindings
        self._workdir = workdir
        self._relay = relay  # how a proxied provider is reached: its calls queued in the store
        self._open: dict[str, Transport] = {}
        self._failed: dict[str, ProviderError] = {}
        self._lock = threading.Lock()

    def get(self, name: str | None) -> Transport:
        """The provider's transport; raises ProviderError when it is unbound or cannot start."""
        key = name or ""
        with self._lock:
            if key in self._open:
                return self._open[key]
            if key in self._failed:
                raise self._failed[key]
            try:
                if key not in self._bindings:
                    raise ProviderError(ErrorCode.FAILED_PRECONDITION,
                                        f"provider '{name}' is not bound in this site")
                transport = open_provider_for(self._bindings, key, self._workdir, self._relay)
            except ProviderError as err:
                self._failed[key] = err  # one clear failure per provider, not one per action
                raise
            self._open[key] = transport
            return transport

    def close(self) -> None:
        with self._lock:
            for transport in self._open.values():
                transport.close()
            self._open.clear()
