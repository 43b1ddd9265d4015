"""Publishing each held provider's inventory to the store, as a delta where it can.

The active proxy reads ``info`` and ``inventory`` through the provider's transport every
``publish_interval`` and soon after the change calls it made (at once when its queue is
quiet, else at most ``BEHIND_AT_MOST`` after the first: one read covers a burst of calls;
the store marks the inventory behind meanwhile, and readers wait for it), and writes a header (the
generation, completeness, session, info reply, entry count, config seq) and the entries as
rows. A 100,000-host site must not rewrite every row each minute: the proxy keeps the digest
of each entry it last published and writes only the entries that changed and the ids that
went. A new holder knows nothing of what the rows hold, so its first publication replaces
them all. A failed read publishes its error in the header: the rows stay, and readers
treat the provider as unknown. Everything published passes through the Redactor first.
Publishing needs ``supply.inventory-publish`` in the proxy's allowlist.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from compiler.core.canonical import dumps_compact
from reconciler.protocol import ProviderError, Reply, Request
from reconciler.proxy.context import Context
from reconciler.proxy.opcodes import INVENTORY_PUBLISH
from reconciler.proxy.refusals import Gate
from reconciler.proxy.running import Running
from reconciler.state.proxy_records import ProviderLease

# While calls keep coming, the changes they made are published together at most this long
# after the first: readers wait for it (the store marks the inventory behind meanwhile).
BEHIND_AT_MOST = 1.0


@dataclass(frozen=True, slots=True)
class Delta:
    """What to write so the rows hold ``digests``' entries."""

    upserts: list[tuple[str, str]]  # entry id, its JSON text
    deletes: list[str]
    digests: dict[str, str]  # entry id -> digest of its text, as published after this
    replace: bool  # the rows are replaced whole (nothing known of them)


def entry_texts(entries: Sequence[Any]) -> dict[str, str]:
    """Each entry's JSON text by id; ValueError for an entry without a string id or an id
    given twice (the provider's report is then garbage, published as an error)."""
    texts: dict[str, str] = {}
    for entry in entries:
        ident = entry.get("id") if isinstance(entry, Mapping) else None
        if not isinstance(ident, str) or not ident:
            raise ValueError("its inventory has an entry without a string 'id'")
        if ident in texts:
            raise ValueError(f"its inventory lists {ident!r} twice")
        texts[ident] = dumps_compact(entry).decode()
    return texts


def delta(previous: Mapping[str, str] | None, texts: Mapping[str, str]) -> Delta:
    """The writes from what was published (``previous`` digests; None: nothing known, a
    full replace) to ``texts``."""
    digests = {ident: hashlib.sha256(text.encode()).hexdigest() for ident, text in texts.items()}
    if previous is None:
        return Delta(sorted(texts.items()), [], digests, True)
    upserts = sorted((ident, texts[ident]) for ident, digest in digests.items()
                     if previous.get(ident) != digest)
    return Delta(upserts, sorted(set(previous) - set(digests)), digests, False)


@dataclass(slots=True)
class Shown:
    """What this holder published of one provider, under one lease."""

    epoch: int
    digests: dict[str, str] | None = None  # None: nothing yet, the next one replaces
    at: float | None = None  # monotonic time of the last publication
    dirty: bool = True  # a change was made (or nothing published yet): publish now
    since: float | None = None  # monotonic time of the first change not yet published


@dataclass(slots=True)
class Publisher:
    """Publishes the held providers' inventories when they are due."""

    ctx: Context
    gate: Gate
    running: Running
    clock: Callable[[], float] = time.monotonic
    shown: dict[str, Shown] = field(default_factory=dict)

    def due(self, provider: str, lease: ProviderLease, *, busy: bool = False) -> bool:
        """A new lease, ``publish_interval`` since the last publication, or changes: at once
        when the queue is quiet, else once the first is ``BEHIND_AT_MOST`` old (``busy``:
        calls keep coming, and one read of the inventory covers them all)."""
        state = self.shown.get(provider)
        if state is None or state.epoch != lease.epoch:
            self.shown[provider] = state = Shown(lease.epoch)  # a new lease: replace
        now = self.clock()
        if state.at is not None:
            self.ctx.metrics.inventory_age.labels(provider).set(now - state.at)
        if state.at is None or now - state.at >= self.ctx.settings.publish_interval:
            return True
        if not state.dirty:
            return False
        return not busy or state.since is None or now - state.since >= BEHIND_AT_MOST

    def changed(self, provider: str) -> None:
        """A change call was made: its reply is written with the inventory marked behind,
        and the inventory is published soon (``due``)."""
        state = self.shown.get(provider)
        if state is not None:
            state.dirty = True
            state.since = state.since if state.since is not None else self.clock()

    def forget(self, provider: str) -> None:
        self.shown.pop(provider, None)

    def publish(self, provider: str, lease: ProviderLease) -> None:
        """Read and publish ``provider``'s inventory under ``lease``; raises LeaseLost."""
        state = self.shown.setdefault(provider, Shown(lease.epoch))
        if self.gate.refused(INVENTORY_PUBLISH, provider, once=True):
            state.dirty, state.since, state.at = False, None, self.clock()
            return
        ctx = self.ctx
        seq = ctx.served.seq if ctx.served is not None else 0
        try:
            info, inventory = self._read(provider, lease.epoch)
            made = delta(state.digests, entry_texts(inventory.get("entries") or []))
        except (ProviderError, ValueError) as err:
            text = f"{err.code.value}: {err.message}" if isinstance(err, ProviderError) \
                else f"provider {provider!r} answered garbage: {err}"
            ctx.store.publish_error(ctx.site, provider, ctx.me.instance, lease.epoch,
                                    error=ctx.log.redactor.text(text), config_seq=seq)
            state.dirty, state.since, state.at = False, None, self.clock()
            ctx.log.event("publish-failed", provider=provider, epoch=lease.epoch, error=text)
            return
        ctx.store.publish_inventory(
            ctx.site, provider, ctx.me.instance, lease.epoch,
            generation=int(inventory["generation"]), complete=bool(inventory["complete"]),
            session=inventory.get("session"), info=info, config_seq=seq,
            upserts=made.upserts, deletes=made.deletes, replace=made.replace)
        state.digests, state.dirty = made.digests, False
        state.since, state.at = None, self.clock()
        ctx.metrics.inventory_age.labels(provider).set(0)
        ctx.log.event("published", provider=provider, epoch=lease.epoch,
                      generation=inventory["generation"], entries=len(made.digests),
                      upserts=len(made.upserts), deletes=len(made.deletes),
                      replace=made.replace)

    def _read(self, provider: str, epoch: int) -> tuple[dict[str, Any], dict[str, Any]]:
        """The provider's info and inventory results, redacted; a ProviderError when it
        fails or answers an inventory without its generation, completeness and entries."""
        redactor = self.ctx.log.redactor
        results = []
        for verb in ("info", "inventory"):
            reply = self.running.call(provider, Request(verb=verb, op_id=str(uuid.uuid4()),
                                                        epoch=epoch))
            results.append(redactor.value("", _result(reply)))
        info, inventory = results
        generation = inventory.get("generation")
        if not isinstance(generation, int) or isinstance(generation, bool) or \
                not isinstance(inventory.get("complete"), bool) or \
                not isinstance(inventory.get("entries"), list):
            raise ValueError("its inventory lacks an integer 'generation', a boolean "
                             "'complete' or an 'entries' list")
        return info, inventory


def _result(reply: Reply) -> dict[str, Any]:
    if not reply.ok:
        assert reply.error is not None
        raise reply.error
    return dict(reply.result)
