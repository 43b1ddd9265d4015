"""The apply use cases: all that ``xce-apply`` does between its command line and its report.

A saved plan is applied with the site, workdir and store it was made with (``saved``); a
site with ``--auto-approve`` is planned and applied in one go; ``--reviewed`` applies the
plan recorded for review for exactly the config the site compiles to — else nothing, the
refusal (exit 4), or, where the site allows it, a fresh plan (``apply_reviewed``). The
command parses, calls these and renders the ``ApplyReport``; the lines they say on the way
(before the apply's progress) go through the ``say`` the command passes.
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from compiler.cli.runner import EXIT_OK
from compiler.contract.build_files import STATE_FILE
from reconciler.apply import ApplyOptions, ApplyReport, FreshPlan, apply
from reconciler.apply.progress import Sink
from reconciler.pipeline import Desired, default_workdir, load_desired
from reconciler.plan.file import SavedPlan, load_plan
from reconciler.review import reviewed
from reconciler.review.origin import open_planned_store
from reconciler.state import StateStore, open_store

Say = Callable[[str], object]  # a line for the person running it (stderr.write)


@dataclass(frozen=True, slots=True)
class ApplyInputs:
    """What one apply works with: the plan (or how to make one), the site folder or compiled
    map, the workdir, and how to open the state store."""

    source: SavedPlan | FreshPlan
    site: Path | None
    desired: Path | None
    workdir: Path
    state: str | None

    def store(self) -> AbstractContextManager[StateStore]:
        """A saved plan's own store, or XCE768 naming both; else the one named or default."""
        default = self.workdir / STATE_FILE
        if isinstance(self.source, SavedPlan) and self.source.origin is not None:
            return open_planned_store(self.source.origin, self.state, default)
        return open_store(self.state, default)


def saved(plan_file: Path, site: Path | None, desired: Path | None, workdir: Path | None,
          state: str | None) -> ApplyInputs:
    """A saved plan, applied with the site, workdir and store it was made with, unless the
    command line names others (another workdir or store is refused: XCE767, XCE768)."""
    plan = load_plan(plan_file)
    assert plan.origin is not None  # a plan file always records it
    site, desired = plan.origin.inputs(site, desired)
    planned = plan.origin.workdir_for(workdir, default_workdir(site, desired))
    return ApplyInputs(plan, site, desired, planned, state)


def apply_inputs(inputs: ApplyInputs, policies: Path | None, options: ApplyOptions,
                 progress: Sink) -> ApplyReport:
    """Apply ``inputs``: the desired map first (a site that does not compile leaves no
    state store behind), then the plan, inside the site's lock."""
    desired = load_desired(inputs.site, inputs.desired, policies)
    with inputs.store() as store:
        return apply(desired, inputs.source, store, inputs.workdir, options, progress)


@dataclass(frozen=True, slots=True)
class _Reviewed:
    """One ``--reviewed`` run: the site, its desired map, and how to apply."""

    site: Path
    desired: Desired
    options: ApplyOptions
    progress: Sink
    say: Say

    def apply(self, source: SavedPlan | FreshPlan, workdir: Path,
              store: StateStore) -> ApplyReport:
        return apply(self.desired, source, store, workdir, self.options, self.progress)


def apply_reviewed(site: Path, policies: Path | None, workdir: Path | None, state: str | None,
                   options: ApplyOptions, progress: Sink, say: Say) -> ApplyReport:
    """The reviewed plan of the config ``site`` compiles to, exactly; else nothing to apply,
    the refusal (exit 4), or — where the site allows it — a fresh plan, said so."""
    run = _Reviewed(site, load_desired(site, None, policies), options, progress, say)
    beside = default_workdir(site, None)
    here = workdir or beside
    with open_store(state, here / STATE_FILE) as store:
        found = reviewed.find_reviewed(store, run.desired)
        if found is None:
            return _unreviewed(run, here, store)
        say(reviewed.applying_line(found))
        report = run.apply(found.saved, found.origin.workdir_for(workdir, beside), store)
        if report.exit_code == EXIT_OK:
            reviewed.mark_applied(store, found, run.desired)
        return replace(report, stale=reviewed.stale_hints(report.stale, site))


def _unreviewed(run: _Reviewed, workdir: Path, store: StateStore) -> ApplyReport:
    """No reviewed plan: a fresh one with no changes is nothing to apply; one with changes
    is refused, unless the site allows it (then planned and applied inside the lock)."""
    desired = run.desired
    if reviewed.allows_unreviewed(desired):
        report = run.apply(FreshPlan(), workdir, store)
        if not report.outcomes:
            run.say(reviewed.nothing_line(desired))
            return report
        return replace(report, notices=(reviewed.allowed_notice(desired), *report.notices))
    plan = reviewed.fresh_plan(desired, workdir, store, run.options.allow_destroy)
    if plan.has_changes:
        raise reviewed.refusal(store, desired, run.site, plan)
    run.say(reviewed.nothing_line(desired))
    return run.apply(SavedPlan(plan, destroy=False), workdir, store)
