"""``xce-plan``: what would change, as text, json or markdown; Terraform's detailed exit codes.

Exit 0: nothing to do. Exit 2: changes or drift found. Exit 1: an error (invalid site,
a provider that did not answer, a guard that blocks the plan).
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path

from compiler.bundled import POLICIES_HELP
from compiler.cli_runner import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.gc_pause import gc_paused
from compiler.problem_render import render_text as render_problems
from compiler.problems import Severity
from compiler.textstyle import Style
from reconciler.pipeline import (
    STATE_FILE,
    default_workdir,
    gather,
    load_desired,
    plan_for,
    unreported,
)
from reconciler.plan.file import save_plan
from reconciler.plan.model import Plan
from reconciler.plan.origin import origin_here
from reconciler.plan.redact import redacted
from reconciler.plan.render import FORMATS, render_markdown
from reconciler.plan.render import render as render_plan
from reconciler.state import ENV_URL, StateStore, open_store


def parser() -> argparse.ArgumentParser:
    p = UsageParser(prog="xce-plan",
                                description="Plan the changes that make live supply match the "
                                "site-config.")
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help="site-config folder (default: site-config, unless --desired is given)")
    p.add_argument("--desired", type=Path, help="a compiled supply map (build/supply-map.json) "
                   "instead of compiling the site")
    p.add_argument("--policies", type=Path, metavar="DIR", help=POLICIES_HELP)
    p.add_argument("--live", type=Path, help="plan against a live-map snapshot file instead of "
                   "asking the providers")
    p.add_argument("--out", type=Path, help="save the plan to this file for xce-apply")
    p.add_argument("--format", choices=FORMATS.names, default="text",
                   help="text for a terminal, json for tools, markdown for a pull-request "
                   "comment (default: text)")
    p.add_argument("--target", action="append", default=[], metavar="ID",
                   help="plan only these entry ids (globs allowed) and what they depend on")
    p.add_argument("--workdir", type=Path, help="folder of the embedded defaults "
                   "(default: <site>/.xce)")
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
    p.add_argument("--full-plan-artifact", metavar="NAME",
                   help="name of the CI artifact that keeps the --out plan file: a truncated "
                   "markdown plan names it as where the full plan is (only when it was saved)")
    return p


def _history(state: str | None, workdir: Path) -> AbstractContextManager[StateStore | None]:
    """The state store, or None when there is none to ask (a plan never creates one).

    It says whether this site was applied: a provider that reports nothing after an apply
    has lost what it held, even when its generation restarted; before any complete apply
    there is nothing of ours to lose (a first apply killed halfway is finished without
    --force). And it holds the providers' generations, so a rollback is noticed."""
    default = workdir / STATE_FILE
    if state is None and not os.environ.get(ENV_URL) and not default.exists():
        return nullcontext(None)
    return open_store(state, default)


def _rendered(plan: Plan, args: argparse.Namespace, saved: bool) -> str:
    """The plan in --format; markdown's truncation note names only what exists: the
    artifact and the plan file when the plan was saved, else neither."""
    if args.format != "markdown":
        return render_plan(plan, args.format, Style.for_stream(sys.stdout))
    return render_markdown(plan, artifact=args.full_plan_artifact if saved else None,
                           plan_file=str(args.out) if saved else None)


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.full_plan_artifact is not None and args.out is None:
        parser().error("--full-plan-artifact names the CI artifact that keeps the plan "
                       "file: give --out FILE too")
    site = args.site if args.site is not None or args.desired else Path("site-config")
    desired = load_desired(site, args.desired, args.policies)
    workdir = args.workdir or default_workdir(site, args.desired)
    existed = workdir.is_dir()  # before the providers are asked: they make their folders
    with _history(args.state, workdir) as store:
        live = gather(desired, workdir, args.live, store=store, accept=args.accept_generation)
        applied = None if store is None else store.get_applied(desired.supply.site) is not None
        origin = origin_here(None if args.desired else site, args.desired, workdir,
                             existed=existed, beside=args.workdir is None, store=store,
                             default_store=workdir / STATE_FILE, option=args.state)
    plan = plan_for(desired, live, now=time.time(), targets=args.target, destroy=args.destroy,
                    force=args.force, applied_before=applied)
    err_style = Style.for_stream(sys.stderr)
    problems = [*desired.warnings, *live.problems]
    if args.live is not None:  # a snapshot's unknown providers explain the exit code
        problems += unreported(live)
    if args.format != "text":  # the text rendering shows the plan's own problems
        problems += plan.problems
    # Shown and saved alike: a secret a provider echoed in its inventory is masked in an
    # action's before/after/changes, never printed nor written to CI artifacts.
    shown = redacted(plan, desired.bindings.redactor())
    saved = args.out is not None and not plan.blocked
    if saved:  # before anything is printed: a failure to save leaves one document
        save_plan(args.out, shown, destroy=args.destroy, origin=origin)
    sys.stdout.write(_rendered(shown, args, saved))
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
    if failed:
        return EXIT_ERROR
    return EXIT_CHANGES if plan.has_changes else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    with gc_paused():  # two maps of half a million entries, no cycles: see gc_pause.py
        return run_cli("xce-plan", lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
