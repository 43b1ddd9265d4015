"""The plan use case: all that ``xce-plan`` does between its command line and its output.

Its steps, each named below: gather the inputs (the desired map, the ``--base`` config
diff, the workdir), read the live map against what the state store remembers (generations,
counts, whether the site was applied, provisioning failures), make the plan (the guards run
inside ``plan_for``), mask the secrets a provider echoed, then save it (``--out``) and
record it for review (``--record``). It prints nothing: the command renders what
``make`` returns and chooses the exit code. The stages it composes, shared with xce-apply
and xce-drift, are in ``reconciler.pipeline``; this module is a use case of its own so
that module stays the stages alone.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.contract.build_files import STATE_FILE
from compiler.core.problems import Problem
from reconciler.pipeline import (
    Desired,
    Live,
    default_workdir,
    gather,
    load_desired,
    plan_for,
    recorded_attempts,
    unreported,
)
from reconciler.plan.attempts import ProvisionAttempts
from reconciler.plan.file import Seal, load_plan, plan_file_bytes, save_plan
from reconciler.plan.model import Plan
from reconciler.plan.origin import Origin
from reconciler.plan.redact import redacted
from reconciler.planner.guards import Growth
from reconciler.relay import Relay
from reconciler.render.github import Place
from reconciler.review import reviewed
from reconciler.review.origin import origin_here
from reconciler.state import ENV_URL, StateStore, open_store
from reconciler.state.store import RecordedPlan

if TYPE_CHECKING:
    from compiler.site_repo.config_diff import ConfigDiff


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What to plan, as the command line says it (docs/plan.md)."""

    site: Path | None  # the site folder; None with a compiled map (desired_file)
    desired_file: Path | None = None
    policies: Path | None = None
    live_file: Path | None = None  # a live-map snapshot instead of asking the providers
    out: Path | None = None  # where to save the plan for xce-apply
    workdir: Path | None = None  # None: beside the site or compiled map
    state: str | None = None  # the state store named (else $XCE_STATE_URL or the default)
    targets: Sequence[str] = ()
    destroy: bool = False
    force: bool = False
    accept_generation: Sequence[str] = ()
    accept_shrink: Sequence[str] = ()
    accept_growth: Sequence[str] = ()
    record: bool = False  # keep the plan in the state store for review
    branch: str | None = None  # the branch it is recorded for; None: the one checked out
    base: str | None = None  # the git revision to diff the config against

    @property
    def keep(self) -> bool:
        """Saved or recorded: signed with the store's key, so the store must exist."""
        return self.record or self.out is not None


@dataclass(frozen=True, slots=True)
class PlanMade:
    """A plan made, and what the command shows beside it."""

    plan: Plan  # as the planner made it
    shown: Plan  # the same, secrets masked: what is printed, saved and recorded
    desired: Desired
    live: Live
    problems: tuple[Problem, ...]  # the desired map's warnings, the live map's problems
    kept: tuple[Problem, ...]  # why the plan was not recorded, when it was not
    against: ConfigDiff | None  # --base: what the config changes
    saved: bool
    recorded: RecordedPlan | None

    @property
    def place(self) -> Place | None:
        """Where an entry is written in the site-config (github annotations); none from
        a compiled map."""
        return None if self.desired.origins is None else self.desired.origins.place


@dataclass(frozen=True, slots=True)
class _Inputs:
    desired: Desired
    against: ConfigDiff | None
    workdir: Path
    existed: bool  # the workdir was there before the providers made their folders


@dataclass(frozen=True, slots=True)
class _Read:
    """What the live read and the state store gave: the plan's other inputs."""

    live: Live
    applied: bool | None
    attempts: dict[str, ProvisionAttempts]
    origin: Origin
    seal: Seal | None


def make(request: PlanRequest, now: float) -> PlanMade:
    """The plan ``request`` asks for, made for the time ``now``, saved and recorded as asked."""
    inputs = _inputs(request)
    read = _read(request, inputs, now)
    plan = plan_for(inputs.desired, read.live, now=now, targets=request.targets,
                    destroy=request.destroy, force=request.force, applied_before=read.applied,
                    attempts=read.attempts, accepted_shrink=request.accept_shrink,
                    growth=_growth(inputs.against), accept_growth=request.accept_growth)
    problems = [*inputs.desired.warnings, *read.live.problems]
    if request.live_file is not None:  # a snapshot's unknown providers explain the exit code
        problems += unreported(read.live)
    # Shown and saved alike: a secret a provider echoed in its inventory is masked in an
    # action's before/after/changes, never printed nor written to CI artifacts.
    shown = redacted(plan, inputs.desired.bindings.redactor())
    saved = request.out is not None and not plan.blocked
    data = None
    if saved:  # before anything is printed: a failure to save leaves one document
        assert request.out is not None
        data = save_plan(request.out, shown, destroy=request.destroy, origin=read.origin,
                         seal=read.seal)
    recorded, kept = _recorded(request, inputs, shown, read, data)
    return PlanMade(plan, shown, inputs.desired, read.live, tuple(problems), kept,
                    inputs.against, saved, recorded)


def _inputs(request: PlanRequest) -> _Inputs:
    """The desired map, and the --base config diff, made before any provider is asked (a
    base that is not there fails fast)."""
    desired = load_desired(request.site, request.desired_file, request.policies)
    against = None
    if request.base is not None and request.site is not None:
        # imported here: gitpython and the policy compiler, which a plan without --base skips
        from reconciler.review.config_base import against_base

        against = against_base(request.site, request.base, request.policies, desired.supply)
    workdir = request.workdir or default_workdir(request.site, request.desired_file)
    return _Inputs(desired, against, workdir, workdir.is_dir())


def _read(request: PlanRequest, inputs: _Inputs, now: float) -> _Read:
    """The live map, checked against the state store (and recorded in it), with what the
    store remembers of the site, and the origin the plan file records."""
    desired, workdir = inputs.desired, inputs.workdir
    # a store made now only to sign the plan knows no history: plan as without one
    made = (request.out is not None and not request.record
            and _no_store(request.state, workdir))
    with _history(request.state, workdir, create=request.keep) as store:
        seal = Seal(store.plan_key(), now) if request.keep and store is not None else None
        history = None if made else store
        # a proxied provider is read from what its proxy published to the store, even when
        # the store's history is not asked
        relay = Relay.of(desired.bindings, desired.supply.site_key, store)
        live = gather(desired, workdir, request.live_file, store=history,
                      accept=request.accept_generation, accept_shrink=request.accept_shrink,
                      record_accepted=False, relay=relay)
        applied = (None if history is None
                   else history.get_applied(desired.supply.site_key) is not None)
        origin = origin_here(None if request.desired_file else request.site,
                             request.desired_file, workdir, existed=inputs.existed,
                             beside=request.workdir is None, store=store,
                             default_store=workdir / STATE_FILE, option=request.state)
        return _Read(live, applied, recorded_attempts(history, desired), origin, seal)


def _history(state: str | None, workdir: Path,
             create: bool = False) -> AbstractContextManager[StateStore | None]:
    """The state store, or None when there is none to ask (a plan never creates one, but
    with --record, which keeps the plan in it, or --out, whose file its key signs: ``create``).

    It says whether this site was applied: a provider that reports nothing after an apply
    has lost what it held, even when its generation restarted; before any complete apply
    there is nothing of ours to lose (a first apply killed halfway is finished without
    --force). And it holds the providers' generations, so a rollback is noticed."""
    if not create and _no_store(state, workdir):
        return nullcontext(None)
    return open_store(state, workdir / STATE_FILE)


def _no_store(state: str | None, workdir: Path) -> bool:
    """Neither --state, $XCE_STATE_URL nor the default file: there is no store to ask."""
    return state is None and not os.environ.get(ENV_URL) and not (workdir / STATE_FILE).exists()


def _growth(against: ConfigDiff | None) -> Growth | None:
    """What --base found the config added, which tells the guards intended growth from an
    inventory that shrank (None: no --base, or a base whose entries were not compared)."""
    if against is None or against.entries is None:
        return None
    return Growth(against.label, frozenset(e.id for e in against.entries.added))


def _recorded(request: PlanRequest, inputs: _Inputs, plan: Plan, read: _Read,
              data: bytes | None) -> tuple[RecordedPlan | None, tuple[Problem, ...]]:
    """--record: keep the plan for review, the bytes --out writes (``data`` when saved),
    before anything is printed, as the save; a blocked plan is not kept (a warning says so)."""
    if not request.record:
        return None, ()
    if plan.blocked:
        return None, (reviewed.not_recorded(),)
    data = data or plan_file_bytes(plan, destroy=request.destroy, origin=read.origin,
                                   seal=read.seal)
    branch = (reviewed.checkout_branch(request.site) if request.branch is None
              else request.branch)
    return reviewed.record(request.state, inputs.workdir / STATE_FILE, inputs.desired, data,
                           branch), ()


def saved_plan(path: Path, site: Path | None, policies: Path | None,
               placed: bool) -> tuple[Plan, Place | None]:
    """``xce-plan --show``: a plan saved with --out, and (``placed``) where its entries are
    written in the site it was made from, compiled for that alone."""
    saved = load_plan(path)
    assert saved.origin is not None  # a plan file always records it
    site, _ = saved.origin.inputs(site, None)
    place = None
    if placed and site is not None:
        origins = load_desired(site, None, policies).origins
        place = None if origins is None else origins.place
    return saved.plan, place
