"""Answering the calls applies queued for the providers this proxy holds.

Each call is checked against the allowlist (its opcode, ``opcodes.py``); a refusal is
answered ``PERMISSION_DENIED`` naming the opcode and the rule, and nothing is attempted.
A call allowed is made with the lease's epoch in place of the one it was queued with, so a
provider fences a proxy that lost its lease while paused (``ABORTED``); a call taken again
after its holder died is made again under its op_id, and the provider's op ledger answers
it without doing it twice. The reply is redacted before it is written back (fenced by the
lease: a holder that lost it writes nothing); a change's reply marks the provider's
published inventory behind in the same transaction, so nobody reads the inventory from
before the change once the reply is out (the next publication clears the mark).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor, wait
from dataclasses import dataclass, field, replace
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.providers.base import MUTATING, request_targets
from reconciler.proxy.context import Context
from reconciler.proxy.leases import Leases
from reconciler.proxy.opcodes import opcode_of
from reconciler.proxy.publish import Publisher
from reconciler.proxy.refusals import Gate
from reconciler.proxy.running import Running
from reconciler.state.errors import LeaseLost, StateError
from reconciler.state.proxy_records import ProviderLease, QueuedCall

BATCH = 64  # calls taken in one transaction
CALLS_AT_ONCE = 8  # a batch's calls are made at once, as an applier's worker threads make them


@dataclass(slots=True)
class Server:
    """Takes queued calls for the held providers and answers them; the replies are written
    (``write``) with the inventories they changed marked behind, so a reader waits for the
    next publication rather than read what the change made stale. What a store outage
    interrupts is kept: calls taken and not yet answered (``backlog``), replies not yet written
    (``unwritten``); they are finished once the store answers again, as nobody else takes a
    call this instance holds under its lease's epoch."""

    ctx: Context
    gate: Gate
    leases: Leases
    running: Running
    publisher: Publisher
    backlog: list[tuple[QueuedCall, int]] = field(default_factory=list)  # with its epoch
    unwritten: list[tuple[QueuedCall, ProviderLease, Reply]] = field(default_factory=list)
    pool: ThreadPoolExecutor = field(default_factory=lambda: ThreadPoolExecutor(
        CALLS_AT_ONCE, thread_name_prefix="xce-proxy-call"))

    def serve(self) -> int:
        """Take and answer one batch (its replies held for ``write``); how many calls were
        taken. StateError propagates, leaving what is not done for the next try."""
        if not self.backlog:
            held = {p: lease.epoch for p, lease in self.leases.held.items()}
            if not held:
                return 0
            ctx = self.ctx
            taken = ctx.store.take_calls(ctx.site, ctx.me.instance, held, BATCH)
            answered = {call.call_id for call, _, _ in self.unwritten}  # a reply not yet written
            self.backlog = [(call, held[call.provider]) for call in taken
                            if call.call_id not in answered]
        count = len(self.backlog)
        runnable = [(call, lease) for call, epoch in self.backlog  # else: taken again by its
                    if (lease := self.leases.held.get(call.provider)) is not None  # holder
                    and lease.epoch == epoch]
        futures = [self.pool.submit(self.answer, call, lease) for call, lease in runnable]
        wait(futures)
        self.backlog, error = [], None
        for (call, lease), future in zip(runnable, futures, strict=True):
            try:
                self.unwritten.append((call, lease, future.result()))
            except StateError as err:  # a refusal not recorded: answered on the next try
                self.backlog.append((call, lease.epoch))
                error = error or err
        if error is not None:
            raise error
        return count

    def answer(self, call: QueuedCall, lease: ProviderLease) -> Reply:
        """The reply to ``call``: refused, failed before the provider, or the provider's."""
        try:
            request = Request.from_json(call.request)
        except ProviderError as err:
            return Reply.failure(err)
        opcode = opcode_of(request.verb, request.params)
        rule = self.gate.refused(opcode, call.provider, op_id=call.op_id, verb=request.verb)
        if rule is not None:
            return Reply.failure(ProviderError(
                ErrorCode.PERMISSION_DENIED, f"proxy {self.ctx.me.proxy!r} refused "
                f"{request.verb} of {call.provider!r}: opcode "
                f"{opcode or '(none)'} is not allowed ({rule})"))
        started = time.monotonic()
        reply = self.running.call(call.provider, replace(request, epoch=lease.epoch))
        seconds = time.monotonic() - started
        self.ctx.metrics.latency.labels(call.provider, request.verb).observe(seconds)
        about = request_targets(request.params) if isinstance(request.params, Mapping) else ()
        self.ctx.log.event("call", provider=call.provider, op_id=call.op_id, verb=request.verb,
                           entry=about[0] if about else None, opcode=opcode,
                           epoch=lease.epoch, ok=reply.ok,
                           code=None if reply.error is None else reply.error.code.value,
                           ms=round(seconds * 1000, 1))
        if request.verb in MUTATING:
            self.publisher.changed(call.provider)
        return reply

    def close(self) -> None:
        self.pool.shutdown()

    def write(self) -> None:
        """Write the redacted replies, one transaction per provider and lease, each fenced
        by its lease; a lost lease stops the provider (its new holder makes the calls again,
        under the same op_ids). A store failure keeps the batches not yet written."""
        ctx = self.ctx
        batches: dict[tuple[str, int], list[tuple[int, dict[str, Any], bool]]] = {}
        for call, lease, reply in self.unwritten:
            batches.setdefault((call.provider, lease.epoch), []).append(
                (call.call_id, ctx.log.redactor.value("", reply.to_json()),
                 call.request.get("verb") in MUTATING))
        for (provider, epoch), replies in batches.items():
            try:
                ctx.store.finish_calls(ctx.site, provider, ctx.me.instance, epoch, replies)
            except LeaseLost as err:
                self.leases.lose(provider, err.problems[0].message)
            written = {call_id for call_id, _, _ in replies}
            self.unwritten = [u for u in self.unwritten if u[0].call_id not in written]
