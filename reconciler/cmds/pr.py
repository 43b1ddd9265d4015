"""``xce-pr comment FILE…``: post the plan on the pull or merge request as one sticky comment.

The comment opens with a hidden marker (``<!-- xce-gitops:NAME -->``) and is updated on the
next push instead of added again. The forge, its API and the token come from the CI's own
environment (docs/pull-requests.md). Exit 0 posted, 1 error.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Mapping, Sequence

from compiler.cli.options import add_format
from compiler.cli.problem_render import render_text
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.core.canonical import dumps
from compiler.core.file_io import TEXT_CAP, Refused, read_input, too_large
from compiler.core.problems import Problems, Severity, UserError, Where
from compiler.core.textstyle import Style
from reconciler.pr import ci
from reconciler.pr.codes import CUT, HINTS, INPUT, USAGE
from reconciler.pr.forge import Forge, pull_of_commit
from reconciler.pr.github import GitHub
from reconciler.pr.gitlab import GitLab
from reconciler.pr.sticky import (
    DEFAULT_MARKER,
    MARKER_NAME,
    Body,
    Part,
    Posted,
    assemble,
    marker,
    post,
)

PROG = "xce-pr"
STDIN = "-"
DEFAULT_TIMEOUT = 30.0  # seconds for each request: a CI job should fail, not hang
_SHA = re.compile(r"[0-9A-Fa-f]{7,64}")


class _Parser(UsageParser):
    usage_code = USAGE


def _marker_name(text: str) -> str:
    if not MARKER_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a marker name: letters, digits, "
                                         "'.', '_' and '-', at most 64, e.g. plan or apply")
    return text


def _number(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pull request number")
    return int(text)


def _sha(text: str) -> str:
    if not _SHA.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not a commit's hexadecimal id")
    return text.lower()


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = 0
    if not 0 < value <= 3600:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds (0 to 3600)")
    return value


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    c = sub.add_parser("comment", help="create or update the sticky comment",
                       description="Post FILEs as the pull request's sticky comment: updated "
                       "if one with the marker is there, else created.")
    c.add_argument("files", nargs="+", metavar="FILE",
                   help="markdown to post, joined by a blank line; - reads standard input")
    c.add_argument("--marker", type=_marker_name, default=DEFAULT_MARKER, metavar="NAME",
                   help="which sticky comment: one per NAME and pull request (default: plan)")
    which = c.add_mutually_exclusive_group()
    which.add_argument("--pr", type=_number, metavar="N",
                       help="the pull/merge request's number (default: the CI's own)")
    which.add_argument("--commit", type=_sha, metavar="SHA",
                       help="comment on the pull request of this commit (open, else merged)")
    c.add_argument("--ci", choices=(ci.GITHUB, ci.GITLAB),
                   help="the forge (default: the CI this job runs in)")
    c.add_argument("--timeout", type=_seconds, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                   help=f"how long to wait for each answer (default: {DEFAULT_TIMEOUT:g})")
    add_format(c, ("text", "json"), "what was posted")
    return p


def read_parts(files: Sequence[str]) -> list[Part]:
    """Each FILE's text (UTF-8), all of them before anything is sent."""
    if list(files).count(STDIN) > 1:
        raise UserError([HINTS.problem(USAGE, "- (standard input) is given twice", PROG,
                                       "give - once; it can be read only once")])
    problems = Problems()
    parts = []
    for name in files:
        try:
            if name == STDIN:
                parts.append(Part("standard input", _stdin_text()))
            else:
                parts.append(Part(name, read_input(name, TEXT_CAP).decode()))
        except Refused as err:
            problems.add(err.problem)
        except OSError as err:
            problems.error(INPUT, f"cannot be read: {err.strerror or err}", HINTS[INPUT],
                           Where(name))
        except UnicodeDecodeError as err:
            problems.error(INPUT, f"is not UTF-8 text (byte {err.start})", HINTS[INPUT],
                           Where("standard input" if name == STDIN else name))
    if problems.has_errors:
        raise UserError(problems.items)
    return parts


def _stdin_text() -> str:
    """Standard input, at most ``TEXT_CAP`` of it: ``< /dev/zero`` fails rather than reading
    until memory runs out."""
    stream = getattr(sys.stdin, "buffer", None)  # None: a text stream in its place (tests)
    data: bytes | str = (stream.read(TEXT_CAP.size + 1) if stream is not None
                         else sys.stdin.read(TEXT_CAP.size + 1))
    if len(data) > TEXT_CAP.size:
        raise too_large("standard input", TEXT_CAP)
    return data.decode() if isinstance(data, bytes) else data


def open_forge(settings: ci.Settings, timeout: float) -> Forge:
    return GitHub(settings, timeout) if settings.forge == ci.GITHUB else GitLab(settings, timeout)


def _report(posted: Posted, body: Body, forge: Forge, args: argparse.Namespace) -> None:
    """"Created/Updated comment URL" (or the JSON of it); a cut body warns on stderr."""
    warnings = [] if not body.left_out else [HINTS.problem(
        CUT, f"the comment was cut at {forge.label}'s limit of {forge.body_limit:,} "
        f"characters: the last {body.left_out:,} were left out (the comment says so)", PROG,
        severity=Severity.WARNING)]
    if warnings:
        sys.stderr.write(render_text(warnings, Style.for_stream(sys.stderr)))
    action = "created" if posted.created else "updated"
    if args.format == "json":
        sys.stdout.write(dumps({
            "action": action, "forge": forge.label.lower(), "pull": posted.pull,
            "marker": args.marker, "comment": {"id": posted.comment.id,
                                               "url": posted.comment.url},
            "left_out": body.left_out, "problems": [w.to_json() for w in warnings],
        }).decode())
    else:
        sys.stdout.write(f"{action.capitalize()} comment {posted.comment.url}\n")


def _body(argv: list[str] | None, environ: Mapping[str, str]) -> int:
    args = parser().parse_args(argv)
    parts = read_parts(args.files)
    settings = ci.detect(environ, args.ci)
    forge = open_forge(settings, args.timeout)
    if args.pr is not None:
        pull = args.pr
    elif args.commit is not None:
        pull = pull_of_commit(forge, args.commit)
    else:
        pull = ci.pull_from_environment(settings)
    mark = marker(args.marker)
    body = assemble(parts, mark, forge.body_limit, forge.label)
    _report(post(forge, pull, body, mark), body, forge, args)
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv, os.environ))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
