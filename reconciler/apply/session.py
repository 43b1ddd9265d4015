"""One apply, start to end: lock, epoch, recovery, (plan,) staleness, journaled execution.

A saved plan read from a file must carry the signature of this store's key. Under the
site's lock each run bumps the fencing epoch, records the config it applies (which the
site's proxies follow, ``reconciler.relay.config``), finishes what a killed run left in doubt,
checks that a saved plan still fits the live map (entries this plan already changed are its
own and do not count) and — before any of it is applied — that every action is one its
config asks for (``conformance``), journals every op before its call and runs the plan.
``xce-apply SITE --auto-approve`` plans inside the lock, so no one changes the world
between its plan and its apply.
"""

from __future__ import annotations

import contextlib
import secrets
import time
from collections.abc import Collection, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from compiler.core.problems import Problem, Severity, UserError
from compiler.core.times import format_utc
from reconciler.apply import codes
from reconciler.apply.calls import CallContext, JournalRounds, RetryPolicy, begin, perform
from reconciler.apply.conformance import check_conformance
from reconciler.apply.executor import Executor
from reconciler.apply.gates import blocking, gate
from reconciler.apply.graph import Graph
from reconciler.apply.locking import take_lock
from reconciler.apply.ops import op_id, plan_digest, planned_op
from reconciler.apply.progress import Silent, Sink
from reconciler.apply.provider_pool import Transports
from reconciler.apply.recovery import Recovery, op_key, recover
from reconciler.apply.report import ApplyReport, Outcome, Status
from reconciler.pipeline import Desired, Live, gather, plan_for, recorded_attempts
from reconciler.plan.file import SavedPlan, stale_entries
from reconciler.plan.model import Plan
from reconciler.plan.signature import check_signature
from reconciler.planner.settings import read_settings
from reconciler.relay import Relay, record_config
from reconciler.state import (
    Holder,
    LockLost,
    OpStatus,
    PlannedOp,
    RunStatus,
    StateStore,
    current_holder,
)
from reconciler.state.heartbeat import Heartbeat
from reconciler.state.runs import lock_name, run_prefix
from reconciler.state.store import OpOutcome

STALE_SHOWN = 50  # stale entries named one by one; the rest are counted
_JOURNALED_SKIPS = frozenset({codes.SKIP_DESTROY, codes.SKIP_PROTECTED, codes.SKIP_DEPENDENCY})


@dataclass(frozen=True, slots=True)
class ApplyOptions:
    allow_destroy: bool = False
    lock_timeout: float = 0.0
    lock_ttl: float = 60.0
    parallelism: int = 4  # concurrent calls per provider
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    holder: Holder | None = None  # default: this process (user@host:pid)


@dataclass(frozen=True, slots=True)
class FreshPlan:
    """Plan inside the lock (``--auto-approve``) with these planner options."""

    targets: tuple[str, ...] = ()
    force: bool = False


@dataclass(slots=True)
class _Run:
    desired: Desired
    store: StateStore
    workdir: Path
    options: ApplyOptions
    sink: Sink
    lock: str
    relay: Relay | None = None  # how proxied providers are reached: through this store
    epoch: int = 0
    notices: list[Problem] = field(default_factory=list)
    started: float = field(default_factory=time.monotonic)


def apply(desired: Desired, source: SavedPlan | FreshPlan, store: StateStore, workdir: Path,
          options: ApplyOptions, sink: Sink | None = None) -> ApplyReport:
    """Apply a saved plan, or plan and apply (``FreshPlan``). Refusals raise UserError."""
    if isinstance(source, SavedPlan) and source.origin is not None:  # read from a file
        check_signature(source.signature, source.digest, store.plan_key(),
                        source=source.source, store=store.label)
    supply = desired.supply
    run = _Run(desired, store, workdir, options, sink or Silent(),
               lock_name(supply.site_key), Relay.of(desired.bindings, supply.site_key, store),
               notices=list(desired.warnings))
    if isinstance(source, SavedPlan) and source.plan.desired_digest != desired.digest:
        return _report(run, source.plan, None, stale=[codes.problem(
            codes.PLAN_FOR_OTHER_CONFIG, f"the plan was made for desired map "
            f"{source.plan.desired_digest[:19]}…, but the site now compiles to "
            f"{desired.digest[:19]}…", "plan", "the site-config changed since the plan was "
            "made: make the plan again with xce-plan --out FILE")])
    holder = options.holder or current_holder()
    taken = take_lock(store, run.lock, holder, options.lock_ttl, options.lock_timeout)
    if taken.took_over is not None:
        gone = taken.took_over
        run.notices.append(codes.problem(
            codes.LOCK_TAKEN_OVER, f"took over lock {gone.name!r} from {gone.holder}, whose "
            "process on this host is gone", gone.name, "", Severity.WARNING))
    try:
        with Heartbeat(store, taken.lock, options.lock_ttl) as beat:
            run.epoch = store.next_epoch(run.lock)
            # before any call, also with nothing to change: the proxies follow this config
            record_config(store, supply.site_key, desired.bindings, desired.proxy_allowlists,
                          holder.name)
            recovery = recover(store, run.lock)
            run.notices.extend(_resumed(recovery, run.lock))
            if isinstance(source, SavedPlan):
                allow = options.allow_destroy or source.destroy
                return _execute(run, source.plan, recovery, holder, beat, allow, saved=source)
            plan = _fresh_plan(run, source)
            return _execute(run, plan, recovery, holder, beat, options.allow_destroy,
                            partial=bool(source.targets))
    finally:
        with contextlib.suppress(LockLost):  # lost during the run: the report says so
            store.release(run.lock, holder.name)


def _resumed(recovery: Recovery, lock: str) -> list[Problem]:
    """The notice that this run finishes what earlier ones left: dead runs, ops in doubt."""
    doubt = f"{len(recovery.doubtful)} op(s) are in doubt (sent, no answer recorded)"
    if recovery.interrupted:
        text = (f"finishing after {len(recovery.interrupted)} interrupted run(s) "
                f"({', '.join(recovery.interrupted)}); {doubt}")
    elif recovery.doubtful:
        text = f"{doubt} by earlier runs; they are sent again under their op_ids"
    else:
        return []
    return [codes.problem(codes.RESUMED, text, lock, "", Severity.WARNING)]


def _fresh_plan(run: _Run, source: FreshPlan) -> Plan:
    live = gather(run.desired, run.workdir, store=run.store, relay=run.relay)
    errors = [p for p in live.problems if p.severity is Severity.ERROR]
    if errors:
        raise UserError(errors)
    run.notices.extend(live.problems)
    applied = run.store.get_applied(run.desired.supply.site_key) is not None
    return plan_for(run.desired, live, now=time.time(), targets=source.targets,
                    destroy=run.options.allow_destroy, force=source.force,
                    applied_before=applied, attempts=recorded_attempts(run.store, run.desired))


def _execute(run: _Run, plan: Plan, recovery: Recovery, holder: Holder, beat: Heartbeat,
             allow_destroy: bool, *, saved: SavedPlan | None = None,
             partial: bool = False) -> ApplyReport:
    """Run ``plan``; a ``saved`` one is checked first (``_checked``)."""
    graph = Graph.of(plan.actions)
    supply = run.desired.supply
    gated = _gated(run, plan, graph, allow_destroy)
    digest = plan_digest(plan)
    done = run.store.done_op_ids(digest)
    op_ids = _op_ids(plan, recovery, digest)
    in_doubt = set(recovery.in_doubt.values())
    adopted = {op for op in op_ids.values() if op in in_doubt}
    todo = [a for a in plan.actions if op_ids[a.id] not in done]
    if saved is not None and todo:
        stale = _saved_stale(run, saved, op_ids, settled=done | adopted)
        if stale:
            return _report(run, plan, None, stale=stale, digest=digest)
    run_id = _start_run(run, holder, digest, [planned_op(op_ids[a.id], a) for a in todo])
    if not partial:
        recovery.close_unneeded(run.store, adopted)
    upfront = _upfront(plan, graph, op_ids, done, gated)
    transports = Transports(run.desired.bindings, run.workdir, run.relay)
    ctx = CallContext(run.store, JournalRounds(run.store, run_id), run_id, run.epoch,
                      supply.owner, transports, run.options.retry, beat.check,
                      destroy=allow_destroy, site=supply.site_key)
    executor = Executor(graph, op_ids, lambda a: perform(ctx, graph.actions[a], op_ids[a]),
                        begin=lambda ids: begin(ctx, graph.actions, op_ids, ids),
                        bound=run.options.parallelism,
                        settled=lambda o: _settled(run, ctx.journal, executor, o))
    run.sink.start(len(plan.actions))
    try:
        outcomes = executor.run(upfront)
    finally:
        transports.close()
        run.sink.close()
    report = _report(run, plan, run_id, outcomes=outcomes, stopped=executor.stopped,
                     digest=digest)
    _finish(run, run_id, plan, report, partial=partial)
    return report


def _gated(run: _Run, plan: Plan, graph: Graph, allow_destroy: bool) -> dict[str, tuple[str, str]]:
    """The actions a gate holds back (action id → code, why); a plan whose guard errors
    block it is refused whole (UserError)."""
    supply = run.desired.supply
    protected = read_settings(supply.settings, supply.owner).is_protected
    gated = {a.id: g for a in plan.actions
             if (g := gate(a, allow_destroy=allow_destroy, protected=protected)) is not None}
    refusals = blocking(plan, {graph.actions[a].entry for a in gated})
    if refusals:
        raise UserError([codes.problem(codes.PLAN_BLOCKED, f"the plan has {len(refusals)} "
                                       "guard error(s), so it is not applied", "plan",
                                       "fix what they say, or plan again with --force where "
                                       "that is intended"), *refusals])
    return gated


def _op_ids(plan: Plan, recovery: Recovery, digest: str) -> dict[str, str]:
    """Each action's op_id: the one an earlier run left in doubt, else its own."""
    return {a.id: recovery.in_doubt.get(op_key(a)) or op_id(digest, a) for a in plan.actions}


def _saved_stale(run: _Run, saved: SavedPlan, op_ids: dict[str, str], *,
                 settled: AbstractSet[str]) -> list[Problem]:
    """A saved plan's stale entries (``_checked``); this plan's own changes (its ``settled``
    ops: done, or adopted from doubt) are never stale."""
    ours = {a.entry for a in saved.plan.actions if op_ids[a.id] in settled}
    return _checked(run, saved, ours, first=not settled)


def _start_run(run: _Run, holder: Holder, digest: str, ops: list[PlannedOp]) -> str:
    """Open the run in the store, its ops journaled before any is sent; the run's id."""
    stamp = format_utc(datetime.now(UTC), "stamp")
    run_id = f"{run_prefix(run.lock)}{stamp}-{secrets.token_hex(4)}"
    run.store.start_run(run_id, digest, holder.name)
    run.store.journal_add(run_id, ops)
    return run_id


def _upfront(plan: Plan, graph: Graph, op_ids: dict[str, str], done: AbstractSet[str],
             gated: dict[str, tuple[str, str]]) -> dict[str, Outcome]:
    """The outcomes known before any call: actions done by an earlier run, gated ones."""
    upfront: dict[str, Outcome] = {
        a.id: Outcome(a, op_ids[a.id], Status.ALREADY_DONE)
        for a in plan.actions if op_ids[a.id] in done
    }
    for action_id, (code, why) in gated.items():
        upfront.setdefault(action_id, Outcome(graph.actions[action_id], op_ids[action_id],
                                              Status.SKIPPED, code=code, message=why,
                                              hint=codes.HINTS[code]))
    return upfront


def _finish(run: _Run, run_id: str, plan: Plan, report: ApplyReport, *, partial: bool) -> None:
    """Close the run and, unless it was stopped (the site may be another runner's now),
    forget the provisioning failures whose host joined since (``Plan.attempts_reset``);
    a complete apply of the whole config is the site's last applied one."""
    supply = run.desired.supply
    site = supply.site_key
    status = (RunStatus.INTERRUPTED if report.stopped is not None  # incomplete: succeeded
              else RunStatus.FAILED if report.result == "failed" else RunStatus.SUCCEEDED)
    run.store.finish_run(run_id, status)
    if report.stopped is None:
        run.store.clear_provision_attempts(site, plan.attempts_reset)
    if report.result == "applied" and all(o.ok for o in report.outcomes) and not partial:
        run.store.set_applied(site, run.desired.digest, supply.revision)


def _settled(run: _Run, journal: JournalRounds, executor: Executor, outcome: Outcome) -> None:
    """Journal (in the next round) why an action was skipped — not after a stop: the journal
    may be another's; an op in doubt stays in doubt, skipped or not."""
    run.sink.update(outcome)
    if outcome.code in _JOURNALED_SKIPS and executor.stopped is None:
        journal.hold(OpOutcome(outcome.op_id, OpStatus.SKIPPED,
                               error=f"{outcome.code}: {outcome.message}"))


def _checked(run: _Run, saved: SavedPlan, ours: Collection[str], *, first: bool) -> list[Problem]:
    """The stale entries of a saved plan (none: it still fits the live map). Before any of
    it is applied (``first``) — never on a resume, whose own changes the config's plan no
    longer has — every action is also checked against the config (UserError if one
    differs); the plan of a file records its clock, one handed over in-process is trusted."""
    planned_at = saved.planned_at if first else None
    stale, live = _stale(run, saved.plan, ours, whole=planned_at is not None)
    if stale or live is None or planned_at is None:
        return stale
    supply = run.desired.supply
    check_conformance(saved, run.desired, live, planned_at=planned_at,
                      applied_before=run.store.get_applied(supply.site_key) is not None,
                      attempts=recorded_attempts(run.store, run.desired))
    return []


def _stale(run: _Run, plan: Plan, ours: Collection[str], *,
           whole: bool) -> tuple[list[Problem], Live | None]:
    """Re-read the entries the plan acted on or relied on, except those it changed itself
    (``ours``); name those that changed since planning. ``whole``: gather every provider
    (and return the live map), not only those holding these entries."""
    entries = [e for e in plan.fingerprints if e not in ours]
    if not entries and not whole:
        return [], None
    bound = run.desired.bindings.names
    only = _holders(run, plan, entries)
    providers = sorted(bound) if only is None else only
    live = gather(run.desired, run.workdir, only=None if whole else only, store=run.store,
                  accept_shrink=plan.accepted_shrink, relay=run.relay)
    run.notices.extend(p for p in live.problems if p.subject in providers)
    unknown = {p: live.supply.unknown.get(p, "it is not bound in this site")
               for p in providers if p in live.supply.unknown or p not in bound}
    if unknown:
        raise UserError([codes.problem(
            codes.CANNOT_VERIFY, f"provider '{p}' did not report its inventory ({why}), so "
            "the plan cannot be checked against the live map", p) for p, why in unknown.items()])
    return _stale_problems(stale_entries(plan, live.supply, skip=ours)), live


def _holders(run: _Run, plan: Plan, entries: Collection[str]) -> list[str] | None:
    """The providers that hold ``entries``, or None (ask them all) when one is not known: an
    entry the plan only relied on (an instance's host) need not be in the desired map."""
    acted = {a.entry: a.provider for a in plan.actions}
    desired = run.desired.supply.entries
    found: set[str] = set()
    for entry_id in entries:
        provider = acted.get(entry_id) or (desired[entry_id].provider
                                           if entry_id in desired else None)
        if not provider:
            return None
        found.add(provider)
    return sorted(found)


def _stale_problems(changed: Sequence[str]) -> list[Problem]:
    hint = "the live map changed since the plan was made: make the plan again (xce-plan --out)"
    shown = [codes.problem(codes.STALE_ENTRIES, f"{entry} changed since the plan was made",
                           entry, hint) for entry in changed[:STALE_SHOWN]]
    if len(changed) > STALE_SHOWN:
        shown.append(codes.problem(codes.STALE_ENTRIES, f"… and {len(changed) - STALE_SHOWN} "
                                   "more entries changed", "plan", hint))
    return shown


def _reconnected(run: _Run) -> list[Problem]:
    """The notice that the store's connection was lost and opened again during the run."""
    if not run.store.reconnects:
        return []
    return [codes.problem(
        codes.RECONNECTED, f"the connection to the state store was lost and opened again "
        f"{run.store.reconnects} time(s); this run still held its lock and epoch each time, "
        "so it went on", run.store.label, "", Severity.WARNING)]


def _report(run: _Run, plan: Plan, run_id: str | None, *, outcomes: Collection[Outcome] = (),
            stopped: Problem | None = None, stale: Sequence[Problem] = (),
            digest: str | None = None) -> ApplyReport:
    """``digest`` is the plan's digest when the caller has it (a big plan takes a while)."""
    return ApplyReport(plan_digest=digest or plan_digest(plan), desired_digest=plan.desired_digest,
                       revision=plan.revision, run_id=run_id, epoch=run.epoch or None,
                       outcomes=tuple(outcomes), notices=(*run.notices, *_reconnected(run)),
                       stopped=stopped, stale=tuple(stale),
                       seconds=time.monotonic() - run.started, unknown=plan.unknown)

