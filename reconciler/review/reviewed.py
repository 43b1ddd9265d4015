"""Reviewed plans: the plan a pull request showed for review is the plan applied after merge.

``xce-plan --record`` keeps the plan file's bytes in the state store, keyed by the site, its
desired digest and the git commit planned. ``xce-apply --reviewed SITE`` compiles the merged
commit and applies the newest pending plan of that digest; when none matches it refuses
(exit 4, naming the plans that are pending and the way out: a pull request, or the by-hand
record of the pipeline's bootstrap job) unless the site allows unreviewed applies
(docs/apply.md, "Reviewed plans"). A plan is recorded for a branch (the pull request's): a
newer plan of the same branch supersedes the older, so only the last push waits for review.
A saved plan holds no secrets, so keeping it is safe.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from compiler.cli.runner import EXIT_UNREVIEWED, Refusal
from compiler.core.git import branch_of
from compiler.core.problems import Problem, Severity, UserError
from compiler.core.times import format_utc
from reconciler.pipeline import Desired, gather, plan_for, recorded_attempts
from reconciler.plan import codes
from reconciler.plan.file import SavedPlan, parse_plan
from reconciler.plan.model import Plan
from reconciler.plan.origin import Origin
from reconciler.planner.settings import read_settings
from reconciler.state import StateStore, open_store
from reconciler.state.store import RecordedPlan

SHORT = 12  # characters of a digest or commit shown
PENDING_SHOWN = 5  # pending plans a refusal names


@dataclass(frozen=True, slots=True)
class Reviewed:
    """A pending plan found for the config being applied, parsed."""

    record: RecordedPlan
    saved: SavedPlan
    origin: Origin  # the saved plan's: where it was made


def short(value: str) -> str:
    return value.removeprefix("sha256:")[:SHORT]


def commit_of(desired: Desired) -> str:
    """The git commit the site was compiled at; ``""`` when it is not in git."""
    return desired.supply.revision or ""


def _at(commit: str) -> str:
    return f"commit {commit[:SHORT]}" if commit else "no commit (the site is not in git)"


def _described(record: RecordedPlan) -> str:
    branch = f", branch {record.branch}" if record.branch else ""
    return (f"{_at(record.commit)} (desired {short(record.desired_digest)}{branch}, recorded "
            f"{format_utc(record.recorded_at, 'seconds')})")


# -- xce-plan --record ---------------------------------------------------------------------

def checkout_branch(site: Path | None) -> str:
    """The git branch checked out where the site is: a recorded plan's branch when
    ``--branch`` is not given; ``""`` on a detached HEAD (a CI checkout) or outside git."""
    return "" if site is None else branch_of(site)


def record(state: str | None, default: Path, desired: Desired, data: bytes,
           branch: str) -> RecordedPlan:
    """Keep the plan file's bytes for review in the store (``--state``, else
    $XCE_STATE_URL, else ``default``): the one the plan's origin names. The older pending
    plans of ``branch`` are superseded."""
    with open_store(state, default) as store:
        return store.record_plan(desired.supply.site_key, desired.digest, commit_of(desired), data,
                                 branch)


def recorded_line(recorded: RecordedPlan) -> str:
    commit = recorded.commit[:SHORT] or "(none: the site is not in git)"
    older = (f"It supersedes {recorded.superseded} older pending plan(s) of branch "
             f"{recorded.branch}: they are no longer applied nor listed\n"
             if recorded.superseded else "")
    return (f"Recorded the plan for review: desired {short(recorded.desired_digest)} at "
            f"commit {commit}\n{older}")


def not_recorded() -> Problem:
    """A blocked plan would be refused when applied: it is not kept for review."""
    return codes.problem(codes.NOT_RECORDED, "the plan is blocked by guard errors, so it is "
                         "not recorded for review", "plan", severity=Severity.WARNING)


# -- xce-apply --reviewed ------------------------------------------------------------------

def find_reviewed(store: StateStore, desired: Desired) -> Reviewed | None:
    """The newest pending plan for the digest ``desired`` compiles to, made against this
    very store (XCE768 otherwise: a copied database is not where it was reviewed)."""
    found = store.pending_plan(desired.supply.site_key, desired.digest)
    if found is None:
        return None
    recorded, raw = found
    what = f"the plan recorded for review at {_at(recorded.commit)} in {store.label}"
    saved = parse_plan(raw, what)
    assert saved.origin is not None  # a plan file always records it
    planned = saved.origin.store
    if planned.id != store.store_id:
        raise UserError([codes.problem(
            codes.OTHER_STORE, f"{what} (store {store.store_id[:SHORT]}) was made against "
            f"{planned.named()}", "state store", "record the plan again against this store: "
            "xce-plan SITE --record")])
    return Reviewed(recorded, saved, saved.origin)


def applying_line(found: Reviewed) -> str:
    return f"Applying the plan reviewed at {_described(found.record)}\n"


def mark_applied(store: StateStore, found: Reviewed, desired: Desired) -> RecordedPlan:
    """The plan was applied (at the commit being applied): never applied twice."""
    done = found.record
    return store.mark_plan_applied(done.site, done.desired_digest, done.commit,
                                   commit_of(desired))


def fresh_plan(desired: Desired, workdir: Path, store: StateStore, destroy: bool) -> Plan:
    """What the site needs now, to tell "nothing to apply" from an unreviewed change."""
    live = gather(desired, workdir, store=store)
    errors = [p for p in live.problems if p.severity is Severity.ERROR]
    if errors:
        raise UserError(errors)
    applied = store.get_applied(desired.supply.site_key) is not None
    return plan_for(desired, live, now=time.time(), destroy=destroy, applied_before=applied,
                    attempts=recorded_attempts(store, desired))


def nothing_line(desired: Desired) -> str:
    return f"nothing to apply: the config at {_at(commit_of(desired))} is live\n"


def refusal(store: StateStore, desired: Desired, site_dir: Path, plan: Plan) -> Refusal:
    """XCE770, exit 4: the config has changes and no reviewed plan; says which plans are
    pending review instead, and how to get one reviewed."""
    site = desired.supply.site_key
    pending = store.pending_plans(site, PENDING_SHOWN + 1)
    if pending:
        more = "; and older ones" if len(pending) > PENDING_SHOWN else ""
        listed = "; ".join(_described(r) for r in pending[:PENDING_SHOWN])
        reviewed = f"the plans of site {site} pending review are: {listed}{more}"
    else:
        reviewed = f"no plan of site {site} is pending review"
    message = (f"no reviewed plan matches the config being applied, {_at(commit_of(desired))} "
               f"(desired {short(desired.digest)}, {len(plan.actions)} action(s) to apply): "
               "another change was merged after that review, or nobody planned this config "
               f"for review; {reviewed}")
    folder = shlex.quote(str(site_dir))
    hint = ("open a pull request so its plan job records the plan; for the first apply of a "
            "new repository, or after a merge that skipped review, run the pipeline's "
            "bootstrap job by hand (docs/ci.md, \"Bootstrap and recovery\"), which records "
            f"it as you would here: xce-plan {folder} --record, then apply again "
            f"(xce-apply --reviewed {folder})")
    return Refusal([codes.problem(codes.UNREVIEWED, message, str(site_dir), hint)],
                   EXIT_UNREVIEWED)


def stale_hints(stale: Sequence[Problem], site_dir: Path) -> tuple[Problem, ...]:
    """The stale plan's problems as ``--reviewed`` says them: the way out is a new plan
    recorded and reviewed, never a saved plan file (``xce-plan --out``)."""
    folder = shlex.quote(str(site_dir))
    hint = ("live supply changed since the review: record the plan again (xce-plan "
            f"{folder} --record; the pipeline's apply job does it and comments it on the pull "
            f"request), review it, then xce-apply --reviewed {folder} again")
    return tuple(replace(problem, hint=hint) for problem in stale)


def allows_unreviewed(desired: Desired) -> bool:
    """``site: {unreviewed_apply: allow}`` (compiler/emit/settings.py carries it)."""
    return read_settings(desired.supply.settings).unreviewed_apply == "allow"


def allowed_notice(desired: Desired) -> Problem:
    """The report's word that what it applied was never reviewed, and which line allows it."""
    where = None if desired.origins is None else desired.origins.setting("unreviewed_apply")
    place = "site-config" if where is None else f"{where.file}:{where.line}"
    return codes.problem(codes.UNREVIEWED_APPLIED, "applied an unreviewed plan: the site "
                         f"allows it (site.unreviewed_apply: allow at {place})",
                         "site.unreviewed_apply", severity=Severity.WARNING)
