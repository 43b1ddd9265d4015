"""One ``xce-drift`` run, the use case between its command line and its output: the live
map read (checked against the state store's memory, never recorded there), the plan that
would correct it, the drift report made and kept in the drift ledger, and the news mailed.

It prints nothing: ``reconciler/cmds/drift.py`` parses, loads the desired map (so a site
that cannot notify is refused before anything is gathered), calls ``detect`` and renders.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from compiler.contract.build_files import STATE_FILE
from reconciler.drift.detect import Fixer
from reconciler.drift.model import DriftReport
from reconciler.drift.report import make_report
from reconciler.drift.rules import rules_of
from reconciler.live import LiveResult
from reconciler.notify.notifier import Notice, Notifier
from reconciler.pipeline import (
    Desired,
    Live,
    checked_live,
    default_workdir,
    gather,
    plan_for,
    recorded_attempts,
)
from reconciler.relay import Relay
from reconciler.render.drift import Templates
from reconciler.state import StateStore, chosen_store, open_store
from reconciler.state.urls import SqliteTarget, parse_target


@dataclass(frozen=True, slots=True)
class DriftRequest:
    """What to compare, as the command line says it (docs/drift.md)."""

    site: Path | None  # the site folder; None with a compiled map (desired_file)
    desired_file: Path | None = None
    live_file: Path | None = None  # a live-map snapshot instead of asking the providers
    workdir: Path | None = None  # None: beside the site or compiled map
    state: str | None = None  # the state store named (else $XCE_STATE_URL or the default)
    record: bool = True  # write the drift ledger


@dataclass(frozen=True, slots=True)
class Detected:
    """The drift report, and what notifying it did."""

    report: DriftReport
    notice: Notice


def detect(request: DriftRequest, desired: Desired, notifier: Notifier, templates: Templates,
           at: datetime) -> Detected:
    """The drift between ``desired`` and live supply at ``at``, recorded in the drift ledger
    (unless ``request.record`` is off) and notified as ``notifier`` says."""
    workdir = request.workdir or default_workdir(request.site, request.desired_file)
    with _ledger(request.state, workdir, record=request.record) as store:
        live = _live(desired, workdir, request.live_file, store)
        applied = None if store is None else store.get_applied(desired.supply.site_key) is not None
        plan = plan_for(desired, live, now=at.timestamp(), applied_before=applied,
                        attempts=recorded_attempts(store, desired))
        report = make_report(desired, live, plan, _fixer(request), at=at, store=store,
                             record=request.record, rules=rules_of(desired.drift))
        return Detected(report, notifier.run(report, templates, store, at))


def _ledger(state: str | None, workdir: Path,
            record: bool) -> AbstractContextManager[StateStore | None]:
    """The state store (created when recording); None when not recording and there is no
    such SQLite file: a run that records nothing creates nothing either."""
    default = workdir / STATE_FILE
    chosen = chosen_store(state, default)
    target = parse_target(chosen)
    if not record and isinstance(target, SqliteTarget) and not target.path.exists():
        return nullcontext(None)
    return open_store(chosen, default)


def _live(desired: Desired, workdir: Path, snapshot: Path | None,
          store: StateStore | None) -> Live:
    """The live map, its generations checked against the store but never recorded: the
    drift ledger is this command's only write (docs/plan.md, "Providers that did not answer").
    A proxied provider is read from what its proxy published to the store."""
    live = gather(desired, workdir, snapshot,
                  relay=Relay.of(desired.bindings, desired.supply.site_key, store))
    if store is None:
        return live
    return checked_live(desired, LiveResult(live.supply, live.problems), store, gathered=False)


def _fixer(request: DriftRequest) -> Fixer:
    """The command line that corrects the drift: xce-plan of the same site or map."""
    if request.desired_file is not None:
        return Fixer(("--desired", str(request.desired_file)))
    return Fixer((str(request.site),))
