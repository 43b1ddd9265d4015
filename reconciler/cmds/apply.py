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
from pathlib import Path

from compiler.cli.options import (
    STATE_DEFAULT,
    add_desired,
    add_format,
    add_policies,
    add_state,
    add_workdir,
)
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.core.problems import Problem, UserError
from compiler.core.textstyle import Style
from reconciler.apply import ApplyOptions, FreshPlan, RetryPolicy
from reconciler.apply.codes import USAGE
from reconciler.apply.progress import sink_for
from reconciler.apply_use_case import ApplyInputs, apply_inputs, apply_reviewed, saved
from reconciler.pipeline import default_workdir
from reconciler.render.apply import FORMATS, render

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
    add_desired(p)
    add_policies(p)
    add_workdir(p, "a saved plan's own, else ")
    add_state(p, default=f"a saved plan's own, else {STATE_DEFAULT}")
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
    add_format(p, FORMATS.names, "the report")
    p.add_argument("--target", dest="targets", action="append", default=[],
                   metavar="ID", help="with --auto-approve: plan only these entries (globs)")
    p.add_argument("--force", action="store_true", help="with --auto-approve: turn "
                   "safety-threshold errors of the plan into warnings")
    return p


def _options(args: argparse.Namespace) -> ApplyOptions:
    return ApplyOptions(
        allow_destroy=args.allow_destroy, lock_timeout=args.lock_timeout,
        lock_ttl=args.lock_ttl, parallelism=args.parallelism,
        retry=RetryPolicy(retries=max(0, args.retries), delay=args.retry_delay),
    )


def _fresh(args: argparse.Namespace) -> ApplyInputs:
    """A site applied with --auto-approve."""
    target: Path | None = args.what
    if not args.auto_approve:
        raise _usage(f"{target or args.desired} is a site, not a saved plan",
                     "apply a site with --auto-approve, or save a plan first: "
                     "xce-plan SITE --out plan.json && xce-apply plan.json")
    site = None if args.desired else target
    return ApplyInputs(FreshPlan(tuple(args.targets), args.force), site, args.desired,
                       args.workdir or default_workdir(site, args.desired), args.state)


def _inputs(args: argparse.Namespace) -> ApplyInputs:
    """A site (--auto-approve) or a saved plan, as the command line names it."""
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
    return saved(target, args.site, args.desired, args.workdir, args.state)


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
    progress = sink_for(sys.stderr)
    if args.reviewed:
        report = apply_reviewed(_reviewed_site(args), args.policies, args.workdir, args.state,
                                _options(args), progress, sys.stderr.write)
    else:
        report = apply_inputs(_inputs(args), args.policies, _options(args), progress)
    if report.notices:
        sys.stderr.write(render_problems(report.notices, Style.for_stream(sys.stderr)))
    sys.stdout.write(render(report, args.format, Style.for_stream(sys.stdout)))
    return report.exit_code


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
