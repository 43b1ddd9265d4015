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
from datetime import UTC, datetime
from pathlib import Path

from compiler.cli.options import add_desired, add_format, add_live, add_state, add_workdir
from compiler.cli.problem_render import render_text as render_problems
from compiler.cli.runner import EXIT_CHANGES, EXIT_ERROR, EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import locate_site
from compiler.contract.build_files import BUILD_DIR
from compiler.contract.drift import CompiledDrift
from compiler.core.file_io import write_atomic
from compiler.core.gc_pause import gc_paused
from compiler.core.problems import UserError
from compiler.core.textstyle import Style
from compiler.emit.output import compiler_output
from reconciler.drift import codes
from reconciler.drift_use_case import DriftRequest, detect
from reconciler.notify import notifier as notify
from reconciler.pipeline import load_desired
from reconciler.render.drift import FORMATS, SUFFIXES, Shown, Templates, format_of, site_templates

PROG = "xce-drift"


class _Parser(UsageParser):
    usage_code = codes.USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help=f"site-config folder (default: {SITE_HELP}, unless --desired "
                   "is given)")
    add_desired(p)
    add_live(p)
    add_format(p, FORMATS.names, "the report on stdout")
    p.add_argument("--out", action="append", default=[], type=Path, metavar="FILE",
                   help="also write the report to FILE, in the format its suffix names "
                   f"({', '.join(SUFFIXES)}); may be given several times")
    p.add_argument("--templates", type=Path, metavar="DIR", help="templates that replace the "
                   "bundled ones (default: the site's templates/drift/ when it exists)")
    add_workdir(p)
    add_state(p, " holding the drift ledger")
    p.add_argument("--no-record", action="store_true", help="do not write the drift ledger "
                   "(the store is still read, when there is one)")
    p.add_argument("--notify", action="store_true", help="mail what is new, changed or "
                   "resolved since the last notification (and the digest when due) as the "
                   "site's drift.notify says")
    p.add_argument("--dry-run", type=Path, metavar="DIR", help="with --notify: write the "
                   "messages into DIR as .eml files instead of sending them (nothing is "
                   "marked notified)")
    return p


def _notifier(args: argparse.Namespace, drift: CompiledDrift) -> notify.Notifier:
    """--notify (and --dry-run DIR), refused before anything is gathered when it cannot be."""
    if args.dry_run is not None and not args.notify:
        raise UserError([codes.problem(codes.USAGE, "--dry-run DIR goes with --notify",
                                       hint="add --notify, or leave out --dry-run")])
    if not args.notify:
        return notify.Notifier()
    if args.no_record:
        raise UserError([codes.problem(
            codes.USAGE, "--notify tells what the drift ledger has not told yet, so it "
            "records the run: leave out --no-record")])
    return notify.Notifier.of(drift, args.dry_run)


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
    notifier = _notifier(args, desired.drift)
    request = DriftRequest(site, args.desired, args.live, args.workdir, args.state,
                           record=not args.no_record)
    at = datetime.fromtimestamp(time.time(), UTC)
    found = detect(request, desired, notifier, templates, at)
    sys.stderr.writelines(f"{line}\n" for line in found.notice.said)
    shown = Shown(found.report, templates)
    _write(outputs, shown)
    sys.stdout.write(FORMATS.render(shown, args.format))
    problems = [*desired.warnings, *found.report.problems, *found.notice.problems]
    if problems:
        sys.stderr.write(render_problems(problems, Style.for_stream(sys.stderr)))
    if found.notice.failed:
        return EXIT_ERROR
    return EXIT_CHANGES if found.report.has_drift else EXIT_OK


def main(argv: list[str] | None = None) -> int:
    with gc_paused():  # two maps of half a million entries, no cycles: see gc_pause.py
        return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
