"""One action's provider call, journaled before it is made and retried while retrying may help.

The journal row goes to ``running`` before each attempt and to ``done``/``failed`` after
it, so a run killed at any point leaves the op either done or in doubt, never lost; an
op in doubt is sent again with the same op_id and the provider deduplicates it. A call
that ran out of time, or whose reply was lost or garbled, may have been done: it fails in
the report but stays in doubt in the journal. A reply ``ABORTED`` means a newer epoch
fenced this runner off: it stops, and writes nothing more for that op (the newer runner
owns it now). The release of an instance whose host never joined records its failed
provisioning attempt (P6) before the first call, keyed by the instance released, so a
resumed run counts it once (docs/apply.md, "Provisioning failures").
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from compiler.core.problems import Problem
from reconciler.apply import codes
from reconciler.apply.ops import planned_op, request_for
from reconciler.apply.provider_pool import Transports
from reconciler.apply.report import Outcome, Status
from reconciler.plan.model import Action
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.state import LockLost, OpStatus, StateError, StateStore
from reconciler.transports import Transport

# failures after which the provider may still have done the op: it stays in doubt
UNKNOWN_OUTCOME = frozenset({ErrorCode.DEADLINE_EXCEEDED, ErrorCode.INTERNAL})


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Exponential backoff with jitter: ``delay``, 2×, 4× … capped at ``max_delay`` seconds."""

    retries: int = 3
    delay: float = 0.5
    max_delay: float = 8.0

    def pause(self, attempt: int) -> float:
        base = min(self.max_delay, self.delay * 2.0 ** (attempt - 1))
        return base * (0.5 + random.random() / 2)


@dataclass(frozen=True, slots=True)
class CallContext:
    store: StateStore
    run_id: str
    epoch: int
    owner: str
    transports: Transports
    retry: RetryPolicy
    check_lease: Callable[[], None]  # raises LockLost / StateError once the lease is gone
    destroy: bool = False  # the run may destroy: deletes may remove data
    site: str = ""  # the site's key in the store (provisioning failures are per site)


def perform(ctx: CallContext, action: Action, op: str) -> Outcome:
    """Carry out ``action`` as op ``op``; journal errors (StateError) propagate."""
    started = time.monotonic()

    def finish(status: Status, attempts: int, code: str | None = None, message: str = "",
               error: str | None = None, stop: Problem | None = None) -> Outcome:
        return Outcome(action, op, status, attempts=attempts, code=code, message=message,
                       hint=codes.HINTS.get(code or "", ""), error=error,
                       seconds=time.monotonic() - started, stop=stop)

    try:
        transport = ctx.transports.get(action.provider)
    except ProviderError as err:
        ctx.store.journal_finish(ctx.run_id, op, OpStatus.FAILED,
                                 error=f"{err.code.value}: {err.message}")
        return finish(Status.FAILED, 0, codes.NO_PROVIDER, err.message, err.code.value)
    planned = planned_op(op, action)
    request = request_for(action, op, ctx.epoch, ctx.owner, destroy=ctx.destroy)
    _record_failed_provisioning(ctx, action)
    attempt = 0
    doubtful = False  # once any attempt may have done the op, it stays in doubt
    while True:
        stop = _lease_lost(ctx)
        if stop is not None:
            again = " again" if attempt else ""  # an earlier attempt failed: in doubt
            return finish(Status.SKIPPED, attempt, codes.SKIP_STOPPED,
                          f"not run{again}: {stop.message}", stop=stop)
        attempt += 1
        if ctx.store.journal_start(ctx.run_id, planned).status is OpStatus.DONE:
            return finish(Status.ALREADY_DONE, attempt - 1)
        reply = _call_safely(transport, request)
        if reply.ok:
            ctx.store.journal_finish(ctx.run_id, op, OpStatus.DONE, result=reply.result)
            return replace(finish(Status.DONE, attempt), warnings=_warnings(reply))
        failure = reply.error or ProviderError(ErrorCode.INTERNAL, "failed without an error")
        code, text = failure.code.value, f"{failure.code.value}: {failure.message}"
        if failure.code is ErrorCode.ABORTED:
            stop = codes.problem(codes.FENCED, f"provider '{action.provider}' refused epoch "
                                 f"{ctx.epoch}: {failure.message}", action.provider)
            return finish(Status.FAILED, attempt, codes.FENCED, text, code, stop)
        doubtful = doubtful or failure.code in UNKNOWN_OUTCOME
        if failure.retryable and attempt <= ctx.retry.retries:
            time.sleep(ctx.retry.pause(attempt))
            continue
        ctx.store.journal_finish(ctx.run_id, op,
                                 OpStatus.RUNNING if doubtful else OpStatus.FAILED, error=text)
        return finish(Status.FAILED, attempt, codes.ACTION_FAILED,
                      text + _failure_note(attempt, doubtful=doubtful), code)


def _record_failed_provisioning(ctx: CallContext, action: Action) -> None:
    """The release of an instance whose host never joined: its failed provisioning attempt,
    recorded before the call, so whoever sees the instance gone sees it counted."""
    failed = action.failed_attempt
    if failed is not None:
        ctx.store.record_provision_failure(ctx.site, action.entry, failures=failed.attempt,
                                           template=failed.template, instance=failed.instance)


def _lease_lost(ctx: CallContext) -> Problem | None:
    """Why this runner must stop before the next attempt (its lease is gone), or None."""
    try:
        ctx.check_lease()
    except StateError as err:
        stop = err.problems[0]
        if isinstance(err, LockLost):
            stop = codes.problem(codes.LOCK_LOST, stop.message, stop.subject)
        return stop
    return None


def _failure_note(attempt: int, *, doubtful: bool) -> str:
    """What a failed action's message adds: how many attempts, and whether it is in doubt."""
    tries = f" (after {attempt} attempts)" if attempt > 1 else ""
    doubt = "; it may have been done, so it stays in doubt: the next run sends it " \
        "again under the same op_id" if doubtful else ""
    return tries + doubt


def _warnings(reply: Reply) -> tuple[str, ...]:
    """Warnings a provider attached to a success (the protocol's optional ``warnings``)."""
    raw = reply.result.get("warnings")
    return tuple(str(w) for w in raw) if isinstance(raw, list) else ()


def _call_safely(transport: Transport, request: Request) -> Reply:
    """A transport must not raise; if one does (a bug), its error is this op's failure."""
    try:
        return transport.call(request)
    except Exception as err:  # one broken provider must not end the apply
        detail = f"provider '{transport.name}' failed: {type(err).__name__}: {err}"
        return Reply.failure(ProviderError(ErrorCode.INTERNAL, detail))
