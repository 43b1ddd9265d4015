"""What every part of a running proxy shares: who it is, its store, its log and figures, and
the applied configuration it follows (the site is known once the first one is found)."""

from __future__ import annotations

import os
import secrets
import socket
from dataclasses import dataclass
from pathlib import Path

from compiler.contract.bindings import ProxySettings
from reconciler.proxy.follow import Served
from reconciler.proxy.logs import EventLog
from reconciler.proxy.metrics import Metrics
from reconciler.state import StateStore


@dataclass(frozen=True, slots=True)
class Identity:
    """One proxy process: the proxy's name and this instance of it (``host:pid:token``),
    which leases and queued calls are held by."""

    proxy: str
    host: str
    pid: int
    instance: str

    @classmethod
    def here(cls, proxy: str) -> Identity:
        host, pid = socket.gethostname() or "localhost", os.getpid()
        return cls(proxy, host, pid, f"{host}:{pid}:{secrets.token_hex(4)}")


@dataclass(slots=True)
class Context:
    """The running proxy's shared parts; ``site`` and ``served`` follow the store."""

    store: StateStore
    me: Identity
    log: EventLog
    metrics: Metrics
    workdir: Path
    site: str = ""
    served: Served | None = None

    @property
    def settings(self) -> ProxySettings:
        return self.served.settings if self.served is not None else ProxySettings()
