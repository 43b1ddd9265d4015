"""``xce-drift``: what differs between the site-config and live supply; changes nothing.

Every difference the plan would correct, and what it only reports (orphans, management
``report``, drained hosts), co-managed entries and providers that could not be seen, as
text, json, markdown or html. The one write is the drift ledger in the state store
(``--no-record`` skips it). Exit 0: no drift; 2: drift (report-only and unknown too); 1: an
error (invalid site, unreadable snapshot, state store, templates).
"""

from __future__ import annotations

import argparse
import sys
import time
from contextlib import AbstractContextManager, nullcontext
from datetime import UTC, datetime
from pathlib import Path

from compiler.cli.options import add_workdir
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import EXIT_CHANGES, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.contract.build_files import BUILD_DIR
from compiler.core.file_io import write_atomic
from compiler.core.gc_pause import gc_paused
from compiler.core.problems import UserError
from compiler.core.textstyle import Style
from compiler.emit.output import compiler_output
from reconciler.drift import codes, notify
from reconciler.drift.detect import Fixer
from reconciler.drift.report import make_report
from reconciler.drift.rules import rules_of, site_drift
from reconciler.live import LiveResult
from reconciler.pipeline import (
    STATE_FILE,
    Desired,
    Live,
    checked_live,
    default_workdir,
    gather,
    load_desired,
    plan_for,
    recorded_attempts,
)
from reconciler.render.drift import FORMATS, SUFFIXES, Shown, Templates, format_of, site_templates
from reconciler.state import StateStore, chosen_store, open_store
from reconciler.state.urls import SqliteTarget, parse_target

PROG = "xce-drift"


class _Parser(UsageParser):
    usage_code = codes.USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help=f"site-config folder (default: {SITE_HELP}, unless --desired "
                   "is given)")
    p.add_argument("--desired", type=Path, help="a compiled supply map (build/supply-map.json) "
                   "instead of compiling the site")
    p.add_argument("--live", type=Path, help="compare with a live-map snapshot file instead of "
                   "asking the providers")
    p.add_argument("--format", choices=FORMATS.names, default="text",
                   help="what to print on stdout (default: text)")
    p.add_argument("--out", action="append", default=[], type=Path, metavar="FILE",
                   help="also write the report to FILE, in the format its suffix names "
                   f"({', '.join(SUFFIXES)}); may be given several times")
    p.add_argument("--templates", type=Path, metavar="DIR", help="templates that replace the "
                   "bundled ones (default: the site's templates/drift/ when it exists)")
    add_workdir(p, "<site>/.xce")
    p.add_argument("--state", metavar="PATH|URL", help="state store holding the drift ledger "
                   f"(default: $XCE_STATE_URL, else <workdir>/{STATE_FILE})")
    p.add_argument("--no-record", action="store_true", help="do not write the drift ledger "
                   "(the store is still read, when there is one)")
    notify.add_arguments(p)
    return p


def _outputs(paths: list[Path], desired: Path | None) -> list[tuple[Path, str]]:
    """Each ``--out`` file with its format, refused before any work when a suffix is unknown
    or when it is a compiler output (``build/drift.json`` holds the compiled drift rules)."""
    unknown = [str(p) for p in paths if format_of(p) is None]
    if unknown:
        raise UserError([codes.problem(
            codes.USAGE, f"--out {', '.join(unknown)}: the suffix names no format",
            subject=PROG, hint=f"end the file name with one of {', '.join(SUFFIXES)}")])
    build = (BUILD_DIR, *(() if desired is None else (desired.parent,)))
    compiled = [(p, why) for p in paths if (why := compiler_output(p, build)) is not None]
    if compiled:
        raise UserError([codes.problem(
            codes.USAGE, f"--out names a compiler output ({why}): the drift report is "
            "never written over one", subject=str(p), hint=f"name another file, e.g. --out "
            f"{p.with_name(f'drift-report{p.suffix}')}") for p, why in compiled])
    return [(p, str(format_of(p))) for p in paths]


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
    drift ledger is this command's only write (docs/plan.md, "Providers that did not answer")."""
    live = gather(desired, workdir, snapshot)
    if store is None:
        return live
    return checked_live(desired, LiveResult(live.supply, live.problems), store, gathered=False)


def _fixer(site: Path | None, desired_file: Path | None) -> Fixer:
    if desired_file is not None:
        return Fixer(("--desired", str(desired_file)))
    return Fixer((str(site),))


def _write(outputs: list[tuple[Path, str]], shown: Shown) -> None:
    """Every file is rendered before the first is written: a template that fails leaves none."""
    rendered = [(path, FORMATS.render(shown, fmt)) for path, fmt in outputs]
    for path, text in rendered:
        try:
            write_atomic(path, text.encode())
        except OSError as err:
            raise UserError([codes.problem(codes.CANNOT_WRITE, f"cannot write the drift "
                                           f"report: {err.strerror or err}",
                                           subject=str(path))]) from None
        sys.stderr.write(f"Wrote the drift report to {path}\n")


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    site = args.site if args.site is not None or args.desired else locate_site(None)
    outputs = _outputs(args.out, args.desired)
    templates: Templates = site_templates(site, args.templates)
    templates.check({args.format, *(fmt for _, fmt in outputs)})
    desired = load_desired(site, args.desired)
    drift = site_drift(desired.drift)
    notifier = notify.Notifier.of(args, drift)
    workdir = args.workdir or default_workdir(site, args.desired)
    at = datetime.fromtimestamp(time.time(), UTC)
    with _ledger(args.state, workdir, record=not args.no_record) as store:
        live = _live(desired, workdir, args.live, store)
        applied = None if store is None else store.get_applied(desired.supply.site) is not None
        plan = plan_for(desired, live, now=at.timestamp(), applied_before=applied,
                        attempts=recorded_attempts(store, desired))
        report = make_report(desired, live, plan, _fixer(site, args.desired), at=at,
                             store=store, record=not args.no_record, rules=rules_of(drift))
        notice = notifier.run(report, templates, store, at)
    shown = Shown(report, templates)
    _write(outputs, shown)
    sys.stdout.write(FORMATS.render(shown, args.format))
    problems = [*desired.warnings, *report.problems, *notice.problems]
    if problems:
        sys.stderr.write(render_problems(problems, Style.for_stream(sys.stderr)))
    return notice.exit_code(EXIT_CHANGES if report.has_drift else EXIT_OK)


def main(argv: list[str] | None = None) -> int:
    with gc_paused():  # two maps of half a million entries, no cycles: see gc_pause.py
        return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
