"""The records of proxies in the state store (issue 24; docs/proxies.md): what an apply made
current, who serves each provider under which epoch, what each provider's inventory was last
seen to hold, the calls queued for proxies, what their allowlists refused and who runs where.

Times are the store's clock in epoch seconds (``store_now``), so ages and lease ends are
measured on one clock by every process that shares the store.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class AppliedConfig:
    """A configuration an apply made current: the bindings.json doc and the proxies' scoped
    allowlists, numbered per site (``seq`` only grows)."""

    site: str
    seq: int
    digest: str
    bindings: dict[str, Any]
    allowlists: dict[str, Any]
    applied: float
    applied_by: str


@dataclass(frozen=True, slots=True)
class ProviderLease:
    """Who serves one provider of a site: a proxy instance, under a fencing epoch, until
    ``expires`` unless renewed (0 once released)."""

    site: str
    provider: str
    holder: str  # the proxy's name
    instance: str  # host:pid:token of the process holding it
    epoch: int
    acquired: float
    expires: float

    def held(self, now: float) -> bool:
        return self.expires > now


@dataclass(frozen=True, slots=True)
class PublishedHeader:
    """What a provider's inventory was last seen to be, by whom and when; ``error`` says why
    the last read failed (then the entries are the last good ones, and unknown)."""

    site: str
    provider: str
    proxy: str
    epoch: int
    generation: int | None
    complete: bool
    session: dict[str, Any] | None
    info: dict[str, Any] | None
    published: float
    entry_count: int
    config_seq: int
    error: str | None
    # the store time of the first change made since this publication (None: none): the
    # inventory is behind what the proxy did, and is read only once published again
    changed: float | None = None


@dataclass(frozen=True, slots=True)
class QueuedCall:
    """A call an apply queued for a proxied provider: a ``Request.to_json()`` doc."""

    call_id: int
    site: str
    provider: str
    op_id: str
    request: dict[str, Any]
    queued: float


@dataclass(frozen=True, slots=True)
class Refusal:
    """A call a proxy refused: its opcode was not in the proxy's allowlist (``rule`` says
    which rule decided)."""

    site: str
    proxy: str
    provider: str
    opcode: str
    rule: str
    op_id: str
    at: float


@dataclass(frozen=True, slots=True)
class ProxyInstance:
    """One running (or stopped) proxy process, as its heartbeat last told."""

    site: str
    proxy: str
    instance: str
    host: str
    pid: int
    started: float
    seen: float
    state: str
