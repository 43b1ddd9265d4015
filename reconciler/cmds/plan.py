"""``xce-plan``: what would change, as text, json, markdown or GitHub annotations; Terraform's
detailed exit codes.

Exit 0: nothing to do. Exit 2: changes or drift found. Exit 1: an error (invalid site,
a provider that did not answer, a guard that blocks the plan). The plan itself is made by
``reconciler.plan_use_case``; this module parses, calls it, renders and exits.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from compiler.cli.options import (
    STATE_DEFAULT,
    add_as_of,
    add_desired,
    add_format,
    add_live,
    add_policies,
    add_state,
    add_workdir,
)
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.contract.build_files import STATE_FILE
from compiler.core.gc_pause import gc_paused
from compiler.core.problems import Problem, Severity
from compiler.core.textstyle import Style
from compiler.core.times import format_utc
from reconciler.plan.model import Plan
from reconciler.plan_use_case import PlanMade, PlanRequest, make, saved_plan
from reconciler.render import FORMATS, render_github, render_markdown
from reconciler.render import render as render_plan
from reconciler.render.github import Place
from reconciler.render.markdown import LIMIT
from reconciler.review import reviewed


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="xce-plan", description="Plan the changes that make live supply "
                    "match the site-config.")
    _input_options(p)
    p.add_argument("--out", type=Path, help="save the plan to this file for xce-apply")
    add_format(p, FORMATS.names, "the plan", " of what is destroyed or changed")
    p.add_argument("--target", action="append", default=[], metavar="ID",
                   help="plan only these entry ids (globs allowed) and what they depend on")
    add_workdir(p)
    p.add_argument("--destroy", action="store_true",
                   help="permit deleting users' data and owned entries in this plan")
    add_state(p, " to ask whether this site was applied before", f"{STATE_DEFAULT} when it "
              "exists")
    p.add_argument("--force", action="store_true",
                   help="turn safety-threshold errors into warnings (protected entries stay)")
    _accept_options(p)
    _review_options(p)
    p.add_argument("--show", type=Path, metavar="PLANFILE",
                   help="render a plan saved with --out in --format, asking no provider "
                   "(github: its annotations, on the lines of the site the plan was made "
                   "from); exit 0 or 2 as the plan")
    add_as_of(p, "a preview: plan", ", to see what retention, join deadlines, settle windows "
              "and backoffs will do by then; never saved nor recorded")
    p.add_argument("--full-plan-artifact", metavar="NAME",
                   help="name of the CI artifact that keeps the --out plan file: a truncated "
                   "markdown plan names it as where the full plan is (only when it was saved)")
    return p


def _input_options(p: argparse.ArgumentParser) -> None:
    """The site (or compiled map), its policies, and a live-map snapshot."""
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help=f"site-config folder (default: {SITE_HELP}, unless --desired "
                   "is given)")
    add_desired(p)
    add_policies(p)
    add_live(p)


def _accept_options(p: argparse.ArgumentParser) -> None:
    """What the guards refuse unless told it is intended (docs/plan.md)."""
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


def _review_options(p: argparse.ArgumentParser) -> None:
    """--record and the branch it records for (docs/apply.md, "Reviewed plans"), and the
    revision --base diffs the config against."""
    p.add_argument("--record", action="store_true",
                   help="record the plan in the state store as the plan under review for "
                   "this config (its desired digest and git commit), for xce-apply "
                   f"--reviewed; creates <workdir>/{STATE_FILE} when there is no store")
    p.add_argument("--branch", metavar="NAME",
                   help="with --record: the branch (pull request) the plan is for; it "
                   "supersedes the older pending plans of that branch (default: the git "
                   "branch checked out; none on a detached HEAD)")
    p.add_argument("--base", metavar="REV",
                   help="also show what the config changes against the git revision REV of "
                   "the site's repository (e.g. origin/main): entries added, removed and "
                   "changed, and each role's and proxy's opcodes; a CI clone needs REV's "
                   "commit (fetch-depth: 0)")


def _check_usage(args: argparse.Namespace) -> None:
    """The options that go together, refused before anything is read."""
    if args.full_plan_artifact is not None and args.out is None:
        parser().error("--full-plan-artifact names the CI artifact that keeps the plan "
                       "file: give --out FILE too")
    if args.base is not None and args.desired is not None:
        parser().error("--base compiles the site folder at REV: give the site folder, not "
                       "--desired")
    if args.record and args.target:
        parser().error("--record keeps the plan of the whole config for review: drop --target")
    if args.branch is not None and not args.record:
        parser().error("--branch names the branch a recorded plan is for: give --record too")
    if args.as_of is not None and (args.out is not None or args.record):
        parser().error("--as-of plans for another time: a preview that is never applied, so "
                       "it takes neither --out nor --record")


def _now(args: argparse.Namespace) -> float:
    """The time the plan is made for: now, or a preview's ``--as-of``, never saved."""
    if args.as_of is None:
        return time.time()
    sys.stderr.write(f"A preview as of {format_utc(args.as_of)}: what a plan would do then, "
                     "if nothing else changed\n")
    return float(args.as_of)


def _request(args: argparse.Namespace) -> PlanRequest:
    site = args.site if args.site is not None or args.desired else locate_site(None)
    return PlanRequest(
        site, args.desired, args.policies, args.live, args.out, args.workdir, args.state,
        targets=args.target, destroy=args.destroy, force=args.force,
        accept_generation=args.accept_generation, accept_shrink=args.accept_shrink,
        accept_growth=args.accept_growth, record=args.record, branch=args.branch,
        base=args.base)


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


def _shown(made: PlanMade, args: argparse.Namespace) -> str:
    """The plan in --format, with the config diff beside it when --base asked for one."""
    plan, saved, place = made.shown, made.saved, made.place
    if made.against is None:
        return _rendered(plan, args, saved, place=place)
    from reconciler.render.config_diff import beside

    return beside(made.against, args.format, plan,
                  lambda limit: _rendered(plan, args, saved, limit, place),
                  Style.for_stream(sys.stdout))


def _show(args: argparse.Namespace) -> int:
    """--show PLANFILE: a saved plan rendered again, e.g. as annotations beside the markdown
    comment of the same run; the site is compiled only for the lines github points at."""
    if args.base or args.record or args.live or args.out or args.target or args.desired:
        parser().error("--show renders a saved plan as it is: give only --format (and the "
                       "site folder, when it is not where the plan was made from)")
    plan, place = saved_plan(args.show, args.site, args.policies, args.format == "github")
    sys.stdout.write(_rendered(plan, args, saved=False, place=place))
    return EXIT_CHANGES if plan.has_changes else EXIT_OK


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.show is not None:
        return _show(args)
    _check_usage(args)
    request = _request(args)
    made = make(request, _now(args))
    sys.stdout.write(_shown(made, args))
    return _finish(args, made)


def _finish(args: argparse.Namespace, made: PlanMade) -> int:
    """After the plan on stdout: its problems, where it was saved or recorded, on stderr;
    and the exit code."""
    plan, live = made.plan, made.live
    # the text rendering shows the plan's own problems
    problems: list[Problem] = [*made.problems, *(plan.problems if args.format != "text"
                                                 else ()), *made.kept]
    if problems:
        sys.stderr.write(render_problems(problems, Style.for_stream(sys.stderr)))
    # A provider that did not report (or an id two providers report) leaves the plan
    # incomplete: an error (exit 1), though what was planned for the rest is shown and
    # may be saved.
    failed = (plan.blocked or bool(live.supply.unknown) or bool(live.supply.unknown_entries)
              or any(p.severity is Severity.ERROR for p in problems))
    if made.saved:  # runs as printed in this folder: the plan holds its site, workdir and store
        policies = "" if args.policies is None else f" --policies {shlex.quote(str(args.policies))}"
        sys.stderr.write(f"Saved the plan to {args.out}; apply it with: "
                         f"xce-apply {shlex.quote(str(args.out))}{policies}\n")
    if made.recorded is not None:
        sys.stderr.write(reviewed.recorded_line(made.recorded))
    if failed:
        return EXIT_ERROR
    return EXIT_CHANGES if plan.has_changes else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    with gc_paused():  # two maps of half a million entries, no cycles: see gc_pause.py
        return run_cli("xce-plan", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
