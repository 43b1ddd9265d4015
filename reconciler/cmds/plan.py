"""``xce-plan``: what would change, as text, json, markdown or GitHub annotations; Terraform's
detailed exit codes.

Exit 0: nothing to do. Exit 2: changes or drift found. Exit 1: an error (invalid site,
a provider that did not answer, a guard that blocks the plan).
"""

from __future__ import annotations

import argparse
import math
import os
import shlex
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from compiler.cli.options import add_workdir
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.core.bundled import POLICIES_HELP
from compiler.core.gc_pause import gc_paused
from compiler.core.problems import Problem, Severity
from compiler.core.textstyle import Style
from compiler.core.units import UnitError, format_utc, parse_duration, utc_instant
from reconciler.pipeline import (
    STATE_FILE,
    Desired,
    Live,
    default_workdir,
    gather,
    load_desired,
    plan_for,
    recorded_attempts,
    unreported,
)
from reconciler.plan.file import Seal, load_plan, plan_file_bytes, save_plan
from reconciler.plan.model import Plan
from reconciler.plan.redact import redacted
from reconciler.planner.guards import Growth
from reconciler.render import FORMATS, render_github, render_markdown
from reconciler.render import render as render_plan
from reconciler.render.github import Place
from reconciler.render.markdown import LIMIT
from reconciler.review import reviewed
from reconciler.review.origin import Origin, origin_here
from reconciler.state import ENV_URL, StateStore, open_store
from reconciler.state.store import RecordedPlan

if TYPE_CHECKING:
    from compiler.site_repo.config_diff import ConfigDiff


def _review_options(p: argparse.ArgumentParser) -> None:
    """--record and the branch it records for (docs/apply.md, "Reviewed plans")."""
    p.add_argument("--record", action="store_true",
                   help="record the plan in the state store as the plan under review for "
                   "this config (its desired digest and git commit), for xce-apply "
                   f"--reviewed; creates <workdir>/{STATE_FILE} when there is no store")
    p.add_argument("--branch", metavar="NAME",
                   help="with --record: the branch (pull request) the plan is for; it "
                   "supersedes the older pending plans of that branch (default: the git "
                   "branch checked out; none on a detached HEAD)")


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="xce-plan",
                                description="Plan the changes that make live supply match the "
                                "site-config.")
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help=f"site-config folder (default: {SITE_HELP}, unless --desired "
                   "is given)")
    p.add_argument("--desired", type=Path, help="a compiled supply map (build/supply-map.json) "
                   "instead of compiling the site")
    p.add_argument("--policies", type=Path, metavar="DIR", help=POLICIES_HELP)
    p.add_argument("--live", type=Path, help="plan against a live-map snapshot file instead of "
                   "asking the providers")
    p.add_argument("--out", type=Path, help="save the plan to this file for xce-apply")
    p.add_argument("--format", choices=FORMATS.names, default="text",
                   help="text for a terminal, json for tools, markdown for a pull-request "
                   "comment, github for annotations on the site-config lines of what is "
                   "destroyed or changed (default: text)")
    p.add_argument("--target", action="append", default=[], metavar="ID",
                   help="plan only these entry ids (globs allowed) and what they depend on")
    add_workdir(p, "<site>/.xce")
    p.add_argument("--destroy", action="store_true",
                   help="permit deleting users' data and owned entries in this plan")
    p.add_argument("--state", metavar="PATH|URL",
                   help="state store to ask whether this site was applied before (default: "
                   "$XCE_STATE_URL, else <workdir>/state.sqlite when it exists)")
    p.add_argument("--force", action="store_true",
                   help="turn safety-threshold errors into warnings (protected entries stay)")
    p.add_argument("--accept-generation", action="append", default=[], metavar="PROVIDER",
                   help="trust PROVIDER although its inventory generation went down (it was "
                   "replaced or restored on purpose); the state store records the new one")
    p.add_argument("--accept-shrink", action="append", default=[], metavar="PROVIDER",
                   help="trust PROVIDER although its inventory lost more than "
                   "safety.max_inventory_loss since the last trusted read (the loss is "
                   "real); kept in the saved plan, whose xce-apply records the new counts")
    p.add_argument("--accept-growth", action="append", default=[], metavar="PROVIDER",
                   help="with --base: accept, for this plan only, that it creates more than "
                   "safety.max_create_fraction of PROVIDER's entries because the config adds "
                   "them; kept in the saved plan, whose xce-apply checks it again; "
                   "the site's settings stay as they are")
    _review_options(p)
    p.add_argument("--base", metavar="REV",
                   help="also show what the config changes against the git revision REV of "
                   "the site's repository (e.g. origin/main): entries added, removed and "
                   "changed, and each role's and proxy's opcodes; a CI clone needs REV's "
                   "commit (fetch-depth: 0)")
    p.add_argument("--show", type=Path, metavar="PLANFILE",
                   help="render a plan saved with --out in --format, asking no provider "
                   "(github: its annotations, on the lines of the site the plan was made "
                   "from); exit 0 or 2 as the plan")
    p.add_argument("--as-of", metavar="WHEN", type=_instant,
                   help="a preview: plan as if it were WHEN (ISO 8601, UTC without a zone, "
                   "or +DURATION from now, e.g. +15d), to see what retention, join deadlines, "
                   "settle windows and backoffs will do by then; never saved nor recorded")
    p.add_argument("--full-plan-artifact", metavar="NAME",
                   help="name of the CI artifact that keeps the --out plan file: a truncated "
                   "markdown plan names it as where the full plan is (only when it was saved)")
    return p


def _instant(text: str) -> float:
    """``--as-of``: an ISO 8601 time (UTC unless it names a zone) or ``+DURATION``, one that
    a plan can print (``utc_instant``)."""
    try:
        if text.startswith("+"):
            instant = time.time() + parse_duration(text[1:])
        else:
            moment = datetime.fromisoformat(text)
            instant = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).timestamp()
    except (UnitError, ValueError) as err:
        raise argparse.ArgumentTypeError(f"{text!r} is neither an ISO 8601 time nor "
                                         f"+DURATION ({err})") from None
    except OverflowError:  # a zone that moves it past the year 1 or 9999
        instant = math.inf
    try:
        return utc_instant(instant)
    except UnitError as err:
        raise argparse.ArgumentTypeError(f"{text!r} is no time to plan for: {err}") from None


def _now(args: argparse.Namespace) -> float:
    """The time the plan is made for: now, or a preview's ``--as-of``, never saved."""
    if args.as_of is None:
        return time.time()
    if args.out is not None or args.record:
        parser().error("--as-of plans for another time: a preview that is never applied, so "
                       "it takes neither --out nor --record")
    sys.stderr.write(f"A preview as of {format_utc(args.as_of)}: what a plan would do then, "
                     "if nothing else changed\n")
    return float(args.as_of)


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


def _rendered(plan: Plan, args: argparse.Namespace, saved: bool, limit: int = LIMIT,
              place: Place | None = None) -> str:
    """The plan in --format; markdown's truncation note names only what exists: the
    artifact and the plan file when the plan was saved, else neither; github's
    annotations are on the lines ``place`` finds (none from a compiled map)."""
    if args.format == "github":
        return render_github(plan, place)
    if args.format != "markdown":
        return render_plan(plan, args.format, Style.for_stream(sys.stdout))
    return render_markdown(plan, limit, artifact=args.full_plan_artifact if saved else None,
                           plan_file=str(args.out) if saved else None)


def _against(args: argparse.Namespace, site: Path, desired: Desired) -> ConfigDiff | None:
    """--base REV: the config diff, made before any provider is asked (a base that is not
    there fails fast)."""
    if args.base is None:
        return None
    if args.desired is not None:
        parser().error("--base compiles the site folder at REV: give the site folder, not "
                       "--desired")
    # imported here: gitpython and the policy compiler, which a plan without --base skips
    from reconciler.review.config_base import against_base

    return against_base(site, args.base, args.policies, desired.supply)


def _growth(against: ConfigDiff | None) -> Growth | None:
    """What --base found the config added, which tells the guards intended growth from an
    inventory that shrank (None: no --base, or a base whose entries were not compared)."""
    if against is None or against.entries is None:
        return None
    return Growth(against.label, frozenset(e.id for e in against.entries.added))


def _shown(plan: Plan, args: argparse.Namespace, saved: bool,
           against: ConfigDiff | None, place: Place | None = None) -> str:
    """The plan in --format, with the config diff beside it when --base asked for one."""
    if against is None:
        return _rendered(plan, args, saved, place=place)
    from reconciler.render.config_diff import beside

    return beside(against, args.format, plan,
                  lambda limit: _rendered(plan, args, saved, limit, place),
                  Style.for_stream(sys.stdout))


def _check_record(args: argparse.Namespace) -> None:
    if args.record and args.target:
        parser().error("--record keeps the plan of the whole config for review: drop --target")
    if args.branch is not None and not args.record:
        parser().error("--branch names the branch a recorded plan is for: give --record too")


def _recorded(args: argparse.Namespace, workdir: Path, desired: Desired, plan: Plan,
              origin: Origin, seal: Seal | None, data: bytes | None,
              problems: list[Problem], site: Path | None) -> RecordedPlan | None:
    """--record: keep the plan for review, the bytes --out writes (``data`` when saved),
    before anything is printed, as the save; a blocked plan is not kept (a warning says so)."""
    if not args.record:
        return None
    if plan.blocked:
        problems.append(reviewed.not_recorded())
        return None
    data = data or plan_file_bytes(plan, destroy=args.destroy, origin=origin, seal=seal)
    branch = reviewed.checkout_branch(site) if args.branch is None else args.branch
    return reviewed.record(args.state, workdir / STATE_FILE, desired, data, branch)


def _show(args: argparse.Namespace) -> int:
    """--show PLANFILE: a saved plan rendered again, e.g. as annotations beside the markdown
    comment of the same run; the site is compiled only for the lines github points at."""
    if args.base or args.record or args.live or args.out or args.target or args.desired:
        parser().error("--show renders a saved plan as it is: give only --format (and the "
                       "site folder, when it is not where the plan was made from)")
    saved = load_plan(args.show)
    assert saved.origin is not None  # a plan file always records it
    site, _ = saved.origin.inputs(args.site, None)
    place = None
    if args.format == "github" and site is not None:
        origins = load_desired(site, None, args.policies).origins
        place = None if origins is None else origins.place
    sys.stdout.write(_rendered(saved.plan, args, saved=False, place=place))
    return EXIT_CHANGES if saved.plan.has_changes else EXIT_OK


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.show is not None:
        return _show(args)
    if args.full_plan_artifact is not None and args.out is None:
        parser().error("--full-plan-artifact names the CI artifact that keeps the plan "
                       "file: give --out FILE too")
    site = args.site if args.site is not None or args.desired else locate_site(None)
    desired = load_desired(site, args.desired, args.policies)
    against = _against(args, site, desired)
    workdir = args.workdir or default_workdir(site, args.desired)
    existed = workdir.is_dir()  # before the providers are asked: they make their folders
    _check_record(args)
    now = _now(args)
    keep = args.record or args.out is not None  # signed with the store's key: it must exist
    # a store made now only to sign the plan knows no history: plan as without one
    made = args.out is not None and not args.record and _no_store(args.state, workdir)
    with _history(args.state, workdir, create=keep) as store:
        seal = Seal(store.plan_key(), now) if keep and store is not None else None
        history = None if made else store
        live = gather(desired, workdir, args.live, store=history,
                      accept=args.accept_generation, accept_shrink=args.accept_shrink,
                      record_accepted=False)
        applied = (None if history is None
                   else history.get_applied(desired.supply.site) is not None)
        attempts = recorded_attempts(history, desired)
        origin = origin_here(None if args.desired else site, args.desired, workdir,
                             existed=existed, beside=args.workdir is None, store=store,
                             default_store=workdir / STATE_FILE, option=args.state)
    plan = plan_for(desired, live, now=now, targets=args.target, destroy=args.destroy,
                    force=args.force, applied_before=applied, attempts=attempts,
                    accepted_shrink=args.accept_shrink, growth=_growth(against),
                    accept_growth=args.accept_growth)
    problems = [*desired.warnings, *live.problems]
    if args.live is not None:  # a snapshot's unknown providers explain the exit code
        problems += unreported(live)
    if args.format != "text":  # the text rendering shows the plan's own problems
        problems += plan.problems
    # Shown and saved alike: a secret a provider echoed in its inventory is masked in an
    # action's before/after/changes, never printed nor written to CI artifacts.
    shown = redacted(plan, desired.bindings.redactor())
    saved = args.out is not None and not plan.blocked
    data = None
    if saved:  # before anything is printed: a failure to save leaves one document
        data = save_plan(args.out, shown, destroy=args.destroy, origin=origin, seal=seal)
    recorded = _recorded(args, workdir, desired, shown, origin, seal, data, problems, site)
    place = None if desired.origins is None else desired.origins.place
    sys.stdout.write(_shown(shown, args, saved, against, place))
    return _finish(args, plan, live, problems, saved=saved, recorded=recorded)


def _finish(args: argparse.Namespace, plan: Plan, live: Live, problems: list[Problem], *,
            saved: bool, recorded: RecordedPlan | None) -> int:
    """After the plan on stdout: its problems, where it was saved or recorded, on stderr;
    and the exit code."""
    err_style = Style.for_stream(sys.stderr)
    if problems:
        sys.stderr.write(render_problems(problems, err_style))
    # A provider that did not report (or an id two providers report) leaves the plan
    # incomplete: an error (exit 1), though what was planned for the rest is shown and
    # may be saved.
    failed = (plan.blocked or bool(live.supply.unknown) or bool(live.supply.unknown_entries)
              or any(p.severity is Severity.ERROR for p in problems))
    if saved:  # runs as printed in this folder: the plan holds its site, workdir and store
        policies = "" if args.policies is None else f" --policies {shlex.quote(str(args.policies))}"
        sys.stderr.write(f"Saved the plan to {args.out}; apply it with: "
                         f"xce-apply {shlex.quote(str(args.out))}{policies}\n")
    if recorded is not None:
        sys.stderr.write(reviewed.recorded_line(recorded))
    if failed:
        return EXIT_ERROR
    return EXIT_CHANGES if plan.has_changes else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    with gc_paused():  # two maps of half a million entries, no cycles: see gc_pause.py
        return run_cli("xce-plan", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
