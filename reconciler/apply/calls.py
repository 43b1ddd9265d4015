"""One action's provider call, journaled before it is made and retried while retrying may help.

The journal row goes to ``running`` before each attempt and to ``done``/``failed`` after
it, so a run killed at any point leaves the op either done or in doubt, never lost; an
op in doubt is sent again with the same op_id and the provider deduplicates it. The
journal is written in rounds (``JournalRounds``), one transaction each: the outcomes
held since the last round, then the first attempts about to be sent — so an op is marked
``running`` only after the ops it waited for are recorded done, and a retry marks its own
attempt. An outcome not yet written when the run is killed leaves its op in doubt: sent
again, and deduplicated. A call
that ran out of time, or whose reply was lost or garbled, may have been done: it fails in
the report but stays in doubt in the journal. A reply ``ABORTED`` means a newer epoch
fenced this runner off: it stops, and writes nothing more for that op (the newer runner
owns it now). The release of an instance whose host never joined records its failed
provisioning attempt (P6) before the first call, keyed by the instance released, so a
resumed run counts it once (docs/apply.md, "Provisioning failures").
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from compiler.core.problems import Problem
from reconciler.apply import codes
from reconciler.apply.ops import planned_op, request_for
from reconciler.apply.provider_pool import Transports
from reconciler.apply.report import Outcome, Status
from reconciler.plan.model import Action
from reconciler.protocol import ErrorCode, ProviderError, Reply, Request
from reconciler.state import LockLost, OpStatus, PlannedOp, StateError, StateStore
from reconciler.state.store import OpOutcome
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


class JournalRounds:
    """The journal writes of one run, a transaction per round of the executor: outcomes are
    held (from any thread) until the next round writes them, before its first attempts."""

    def __init__(self, store: StateStore, run_id: str) -> None:
        self._store = store
        self._run_id = run_id
        self._held: list[OpOutcome] = []
        self._lock = threading.Lock()

    def hold(self, outcome: OpOutcome) -> None:
        with self._lock:
            self._held.append(outcome)

    def write(self, starts: Sequence[PlannedOp]) -> frozenset[str]:
        """Write the held outcomes, then mark ``starts`` running; the op_ids found done."""
        with self._lock:
            held, self._held = self._held, []
        if not held and not starts:
            return frozenset()
        return self._store.journal_round(self._run_id, held, list(starts))


@dataclass(frozen=True, slots=True)
class CallContext:
    store: StateStore
    journal: JournalRounds
    run_id: str
    epoch: int
    owner: str
    transports: Transports
    retry: RetryPolicy
    check_lease: Callable[[], None]  # raises LockLost / StateError once the lease is gone
    destroy: bool = False  # the run may destroy: deletes may remove data
    site: str = ""  # the site's key in the store (provisioning failures are per site)


def begin(ctx: CallContext, actions: Mapping[str, Action], op_ids: Mapping[str, str],
          action_ids: Sequence[str]) -> dict[str, Outcome]:
    """One round: the outcomes held, then ``action_ids``' first attempts marked running.

    Returns the outcomes of those not to call after all: done meanwhile (by a superseded
    runner's late call), or all of them when this runner's lease is gone (a stop; nothing
    is marked)."""
    stop = _lease_lost(ctx) if action_ids else None
    if stop is not None:
        ctx.journal.write(())
        return {a: _not_run(actions[a], op_ids[a], 0, stop) for a in action_ids}
    done = ctx.journal.write([planned_op(op_ids[a], actions[a]) for a in action_ids])
    return {a: Outcome(actions[a], op_ids[a], Status.ALREADY_DONE)
            for a in action_ids if op_ids[a] in done}


def perform(ctx: CallContext, action: Action, op: str) -> Outcome:
    """Carry out ``action`` as op ``op``, whose first attempt ``begin`` marked running; journal
    errors (StateError) propagate."""
    started = time.monotonic()

    def finish(status: Status, attempts: int, code: str | None = None, message: str = "",
               error: str | None = None, stop: Problem | None = None) -> Outcome:
        return Outcome(action, op, status, attempts=attempts, code=code, message=message,
                       hint=codes.HINTS.get(code or "", ""), error=error,
                       seconds=time.monotonic() - started, stop=stop)

    try:
        transport = ctx.transports.get(action.provider)
    except ProviderError as err:
        ctx.journal.hold(OpOutcome(op, OpStatus.FAILED, error=f"{err.code.value}: {err.message}"))
        return finish(Status.FAILED, 0, codes.NO_PROVIDER, err.message, err.code.value)
    request = request_for(action, op, ctx.epoch, ctx.owner, destroy=ctx.destroy)
    _record_failed_provisioning(ctx, action)
    attempt = 1
    doubtful = False  # once any attempt may have done the op, it stays in doubt
    while True:
        reply = _call_safely(transport, request)
        if reply.ok:
            ctx.journal.hold(OpOutcome(op, OpStatus.DONE, result=reply.result))
            return replace(finish(Status.DONE, attempt), warnings=_warnings(reply))
        failure = reply.error or ProviderError(ErrorCode.INTERNAL, "failed without an error")
        code, text = failure.code.value, f"{failure.code.value}: {failure.message}"
        if failure.code is ErrorCode.ABORTED:
            stop = codes.problem(codes.FENCED, f"provider '{action.provider}' refused epoch "
                                 f"{ctx.epoch}: {failure.message}", action.provider)
            return finish(Status.FAILED, attempt, codes.FENCED, text, code, stop)
        doubtful = doubtful or failure.code in UNKNOWN_OUTCOME
        if not (failure.retryable and attempt <= ctx.retry.retries):
            status = OpStatus.RUNNING if doubtful else OpStatus.FAILED
            ctx.journal.hold(OpOutcome(op, status, error=text))
            return finish(Status.FAILED, attempt, codes.ACTION_FAILED,
                          text + _failure_note(attempt, doubtful=doubtful), code)
        time.sleep(ctx.retry.pause(attempt))
        lost = _lease_lost(ctx)
        if lost is not None:
            return replace(_not_run(action, op, attempt, lost), seconds=time.monotonic() - started)
        attempt += 1
        if ctx.store.journal_start(ctx.run_id, planned_op(op, action)).status is OpStatus.DONE:
            return finish(Status.ALREADY_DONE, attempt - 1)


def _not_run(action: Action, op: str, attempts: int, stop: Problem) -> Outcome:
    """Skipped because the runner's lease is gone; ``attempts``: earlier ones failed, so the
    op is in doubt."""
    again = " again" if attempts else ""
    return Outcome(action, op, Status.SKIPPED, attempts=attempts, code=codes.SKIP_STOPPED,
                   message=f"not run{again}: {stop.message}",
                   hint=codes.HINTS.get(codes.SKIP_STOPPED, ""), stop=stop)


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
