"""``xce-apply``: apply a saved plan, or plan and apply a site in one go (``--auto-approve``).

Safe for several CI runners sharing one state store: the site's lock, a fencing epoch, a
journal written before every provider call, and resumption of a killed run. Exit 0 when
everything applied, 1 on an error or a failed action, 3 when the saved plan is stale, 4
when ``--reviewed`` finds no reviewed plan for the config.
"""

from __future__ import annotations

import argparse
import math
import sys
from contextlib import AbstractContextManager
from dataclasses import dataclass, replace
from pathlib import Path

from compiler.cli.options import add_workdir
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.core.bundled import POLICIES_HELP
from compiler.core.problems import Problem, UserError
from compiler.core.textstyle import Style
from reconciler.apply import (
    FORMATS,
    ApplyOptions,
    ApplyReport,
    FreshPlan,
    RetryPolicy,
    apply,
    render,
)
from reconciler.apply.codes import USAGE
from reconciler.apply.progress import sink_for
from reconciler.pipeline import STATE_FILE, Desired, default_workdir, load_desired
from reconciler.plan.file import SavedPlan, load_plan
from reconciler.review import reviewed
from reconciler.state import StateStore, open_store

PROG = "xce-apply"


class _Parser(UsageParser):
    usage_code = USAGE


def _usage(message: str, hint: str) -> UserError:
    return UserError([Problem(USAGE, message, hint, subject=PROG)])


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise ValueError(text)
    return value


def seconds(text: str) -> float:
    """A finite number of seconds, not negative (argparse names it in its message)."""
    value = float(text)
    if not math.isfinite(value) or value < 0:
        raise ValueError(text)
    return value


def lease(text: str) -> float:
    """A lease of 0 s would be expired when taken, and renewed in a busy loop."""
    value = seconds(text)
    if value == 0:
        raise ValueError(text)
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("what", nargs="?", type=Path, metavar="PLANFILE|SITE_DIR",
                   help="a plan saved by xce-plan --out, or a site-config folder "
                   f"(with --auto-approve or --reviewed; default: {SITE_HELP})")
    p.add_argument("--auto-approve", action="store_true",
                   help="plan and apply in one go, without a saved plan")
    p.add_argument("--reviewed", action="store_true",
                   help="apply SITE_DIR's plan recorded for review (xce-plan --record) for "
                   "the config it compiles to; none: exit 4, unless the site sets "
                   "unreviewed_apply: allow")
    p.add_argument("--site", type=Path, help="site-config folder of a saved plan, for its "
                   "provider bindings (default: the one the plan was made from)")
    p.add_argument("--desired", type=Path,
                   help="a compiled supply map (build/supply-map.json, bindings.json beside it)")
    p.add_argument("--policies", type=Path, metavar="DIR", help=POLICIES_HELP)
    add_workdir(p, "a saved plan's own, else <site>/.xce")
    p.add_argument("--state", metavar="PATH|URL", help="state store: a file, sqlite:///path or "
                   "postgresql://user@host/db (default: a saved plan's own, else "
                   f"$XCE_STATE_URL, else <workdir>/{STATE_FILE})")
    p.add_argument("--lock-timeout", type=seconds, default=0.0, metavar="SECONDS",
                   help="wait this long for another apply to finish (default: fail at once)")
    p.add_argument("--lock-ttl", type=lease, default=60.0, metavar="SECONDS",
                   help="lease of the lock, renewed while the apply runs; a runner that dies "
                   "frees it after this long (default: 60)")
    p.add_argument("--allow-destroy", action="store_true",
                   help="run destructive actions (release, evict, delete) too")
    p.add_argument("--parallelism", type=_positive, default=4, metavar="N",
                   help="concurrent calls per provider (default: 4)")
    p.add_argument("--retries", type=int, default=3, metavar="N",
                   help="retries of a call that failed with a retryable error (default: 3)")
    p.add_argument("--retry-delay", type=seconds, default=0.5, metavar="SECONDS",
                   help="first backoff delay, doubled per retry (default: 0.5)")
    p.add_argument("--format", choices=FORMATS.names, default="text", help="format of the report")
    p.add_argument("--target", dest="targets", action="append", default=[],
                   metavar="ID", help="with --auto-approve: plan only these entries (globs)")
    p.add_argument("--force", action="store_true", help="with --auto-approve: turn "
                   "safety-threshold errors of the plan into warnings")
    return p


@dataclass(frozen=True, slots=True)
class _Inputs:
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
            return self.source.origin.open_store(self.state, default)
        return open_store(self.state, default)


def _fresh(args: argparse.Namespace) -> _Inputs:
    """A site applied with --auto-approve."""
    target: Path | None = args.what
    if not args.auto_approve:
        raise _usage(f"{target or args.desired} is a site, not a saved plan",
                     "apply a site with --auto-approve, or save a plan first: "
                     "xce-plan SITE --out plan.json && xce-apply plan.json")
    site = None if args.desired else target
    return _Inputs(FreshPlan(tuple(args.targets), args.force), site, args.desired,
                   args.workdir or default_workdir(site, args.desired), args.state)


def _inputs(args: argparse.Namespace) -> _Inputs:
    """A saved plan is applied with the site, workdir and store it was made with, unless
    the command line names others (another workdir or store is refused: XCE767, XCE768)."""
    target: Path | None = args.what
    if target is None and args.auto_approve and args.desired is None:
        args.what = locate_site(None)  # the site found here, as every command finds it
        return _fresh(args)
    if target.is_dir() if target is not None else args.desired is not None:
        return _fresh(args)
    if target is None:
        raise _usage("nothing to apply", "pass a plan file (xce-plan --out) or a site folder "
                     "with --auto-approve")
    if args.auto_approve or args.targets or args.force:
        raise _usage("--auto-approve, --target and --force are for applying a site",
                     "a saved plan is applied as it was made; plan again to change it")
    saved = load_plan(target)
    assert saved.origin is not None  # a plan file always records it
    site, desired = saved.origin.inputs(args.site, args.desired)
    workdir = saved.origin.workdir_for(args.workdir, default_workdir(site, desired))
    return _Inputs(saved, site, desired, workdir, args.state)


def _reviewed_site(args: argparse.Namespace) -> Path:
    """The site folder of ``--reviewed``: the config applied is what it compiles to."""
    if args.auto_approve or args.targets or args.force or args.desired or args.site:
        raise _usage("--reviewed takes no --auto-approve, --target, --force, --desired or "
                     "--site", "the reviewed plan is applied as it was recorded")
    site: Path = args.what if args.what is not None else locate_site(None)
    if not site.is_dir():
        raise _usage(f"--reviewed applies a site folder, not {site}",
                     "pass the site-config folder: xce-apply --reviewed SITE_DIR")
    return site


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    if args.reviewed:
        return _shown(args, _reviewed(args))
    inputs = _inputs(args)
    desired = load_desired(inputs.site, inputs.desired, args.policies)  # a site that does
    with inputs.store() as store:  # not compile leaves no state store behind
        report = _apply(args, inputs, desired, store)
    return _shown(args, report)


def _shown(args: argparse.Namespace, report: ApplyReport) -> int:
    if report.notices:
        sys.stderr.write(render_problems(report.notices, Style.for_stream(sys.stderr)))
    sys.stdout.write(render(report, args.format, Style.for_stream(sys.stdout)))
    return report.exit_code


def _reviewed(args: argparse.Namespace) -> ApplyReport:
    """The reviewed plan of the config SITE compiles to, exactly; else nothing to apply,
    the refusal (exit 4), or — where the site allows it — a fresh plan, said so."""
    site = _reviewed_site(args)
    desired = load_desired(site, None, args.policies)
    beside = default_workdir(site, None)
    workdir = args.workdir or beside
    with open_store(args.state, workdir / STATE_FILE) as store:
        found = reviewed.find_reviewed(store, desired)
        if found is not None:
            planned = found.origin.workdir_for(args.workdir, beside)
            sys.stderr.write(reviewed.applying_line(found))
            report = _apply(args, _Inputs(found.saved, site, None, planned, args.state),
                            desired, store)
            if report.exit_code == EXIT_OK:
                reviewed.mark_applied(store, found, desired)
            return replace(report, stale=reviewed.stale_hints(report.stale, site))
        return _unreviewed(args, site, desired, workdir, store)


def _unreviewed(args: argparse.Namespace, site: Path, desired: Desired, workdir: Path,
                store: StateStore) -> ApplyReport:
    """No reviewed plan: a fresh one with no changes is nothing to apply; one with changes
    is refused, unless the site allows it (then planned and applied inside the lock)."""
    if reviewed.allows_unreviewed(desired):
        report = _apply(args, _Inputs(FreshPlan(), site, None, workdir, args.state),
                        desired, store)
        if not report.outcomes:
            sys.stderr.write(reviewed.nothing_line(desired))
            return report
        return replace(report, notices=(reviewed.allowed_notice(desired), *report.notices))
    plan = reviewed.fresh_plan(desired, workdir, store, args.allow_destroy)
    if plan.has_changes:
        raise reviewed.refusal(store, desired, site, plan)
    sys.stderr.write(reviewed.nothing_line(desired))
    return _apply(args, _Inputs(SavedPlan(plan, destroy=False), site, None, workdir,
                                args.state), desired, store)


def _apply(args: argparse.Namespace, inputs: _Inputs, desired: Desired,
           store: StateStore) -> ApplyReport:
    options = ApplyOptions(
        allow_destroy=args.allow_destroy, lock_timeout=args.lock_timeout,
        lock_ttl=args.lock_ttl, parallelism=args.parallelism,
        retry=RetryPolicy(retries=max(0, args.retries), delay=args.retry_delay),
    )
    return apply(desired, inputs.source, store, inputs.workdir, options, sink_for(sys.stderr))


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
