"""The three kinds of failure every command distinguishes, and what every parser offers.

A user's mistake is one clear message (UserError, exit 1); a failing provider is named by
the reconciler through a Problem; a bug of ours prints one line and the path of a file
that holds the full traceback, never the traceback itself. A run asked for ``--format
json|markdown|github`` gets that document on stdout however it ends — the problems, a
usage mistake, or the crash — so a CI job's JSON consumer or PR comment always has one.
Output that cannot be written (stdout closed or full, a character its encoding lacks) is
one line on stderr too, never a traceback (``compiler.cli.std_streams``).
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import os
import sys
import tempfile
import traceback
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar
from functools import cache
from importlib import metadata
from typing import Any, NoReturn

from compiler import __version__
from compiler.cli.problem_render import FORMATS, render, render_text
from compiler.cli.std_streams import OutputFailed, guarded
from compiler.core import codes
from compiler.core.problems import Problem, UserError
from compiler.core.textstyle import Style

DISTRIBUTION = "xce-gitops"
TEXT = "text"
# the --format a run asked for, noted by its parser before parsing can fail (run_cli resets)
_requested: ContextVar[str] = ContextVar("xce_requested_format", default=TEXT)


@cache
def product_version() -> str:
    """The installed distribution's version (this source tree's, when run uninstalled)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return __version__


class _Version(argparse.Action):
    """``--version``: ``PROG (xce-gitops X.Y.Z)``; looked up only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS,
                         nargs=0, help=kwargs.get("help"))

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: object, option_string: str | None = None) -> NoReturn:
        sys.stdout.write(f"{parser.prog.split()[0]} ({DISTRIBUTION} {product_version()})\n")
        parser.exit(0)


class UsageParser(argparse.ArgumentParser):
    """Usage mistakes are user errors (exit 1), never argparse's exit 2, which a CI job
    reads as "changes" (Terraform's -detailed-exitcode). A command sets its own code.

    Every parser (sub-parsers too) answers ``--version``, and notes the ``--format`` asked
    for before it parses, so even a usage mistake is reported in that format."""

    usage_code = codes.USAGE

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.description:  # often a module docstring's first paragraph: no ``literals``
            self.description = self.description.replace("``", "")
        if self.add_help:  # not a parents=[…] fragment, whose options the child copies
            self.add_argument("--version", action=_Version,
                              help="print the command's name and xce-gitops version, and exit")

    # one signature for typeshed's three overloads: it only looks at the arguments first
    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: Any = None) -> tuple[Any, list[str]]:
        argv = sys.argv[1:] if args is None else list(args)
        asked = _format_in(argv)
        if asked is not None and asked in _format_choices(self):
            _requested.set(asked)
        return super().parse_known_args(argv, namespace)

    def error(self, message: str) -> NoReturn:
        raise UserError(
            [Problem(self.usage_code, message, f"see '{self.prog} --help'", subject=self.prog)]
        )


def _format_in(argv: Sequence[str]) -> str | None:
    """The value of ``--format X`` / ``--format=X`` in ``argv`` (the last one wins)."""
    found = None
    for i, arg in enumerate(argv):
        if arg == "--":
            break
        if arg == "--format" and i + 1 < len(argv):
            found = argv[i + 1]
        elif arg.startswith("--format="):
            found = arg.partition("=")[2]
    return found


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    """A parser and all its sub-parsers."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _parsers(sub)


def _format_choices(parser: argparse.ArgumentParser) -> set[str]:
    """The documents any ``--format`` of this command offers besides text."""
    return {str(choice) for p in _parsers(parser) for a in p._actions
            if "--format" in a.option_strings for choice in a.choices or ()
            if choice != TEXT and choice in FORMATS.names}


EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2
EXIT_STALE = 3
EXIT_UNREVIEWED = 4  # xce-apply --reviewed: no reviewed plan matches the config


class Refusal(UserError):
    """A user error that ends the command with an exit code of its own (EXIT_UNREVIEWED),
    so a CI job tells this refusal from a failure; reported like every UserError."""

    def __init__(self, problems: Sequence[Problem], exit_code: int) -> None:
        super().__init__(problems)
        self.exit_code = exit_code


def write_crash_report(prog: str, exc: BaseException) -> str:
    """Write the full traceback to a file and return its path."""
    directory = os.environ.get("XCE_CRASH_DIR") or tempfile.gettempdir()
    os.makedirs(directory, exist_ok=True)
    fd, path = tempfile.mkstemp(prefix=f"{prog}-crash-", suffix=".txt", dir=directory)
    with os.fdopen(fd, "w") as fh:
        fh.write(f"{prog} internal error; please report it with this file.\n\n")
        fh.write("argv: " + " ".join(sys.argv) + "\n\n")
        fh.write("".join(traceback.format_exception(exc)))
    return path


# What the system says of a path itself, whichever file of the command meets it: the path
# was given (or made from one given), so it is the user's to change, never a bug.
_PATH_ERRNOS = {errno.ENAMETOOLONG: "it is longer than the system takes",
                errno.ELOOP: "its symbolic links lead round in a loop"}


def _unusable_path(exc: BaseException) -> Problem | None:
    """An OSError about a path the system cannot use (a 3,000-folder site path, a loop of
    links) as a problem naming the path (shortened: it may be thousands of characters)."""
    if not isinstance(exc, OSError) or exc.errno not in _PATH_ERRNOS:
        return None
    path = os.fsdecode(exc.filename) if exc.filename is not None else "(a path given)"
    shown = path if len(path) <= 120 else f"{path[:50]}…{path[-50:]}"
    return Problem(codes.PATH_UNUSABLE, f"cannot use this path of {len(path):,} characters: "
                   f"{_PATH_ERRNOS[exc.errno]}", "give a shorter path (a relative one, or a "
                   "link to the folder), or one whose links end", subject=shown)


def _report(problems: Sequence[Problem]) -> None:
    """Problems that end a run: as text on stderr, and as the document asked for."""
    sys.stderr.write(render_text(problems, Style.for_stream(sys.stderr)))
    _document(problems)


def _document(problems: Sequence[Problem]) -> None:
    """The problems as the document the run asked for, on stdout (text goes to stderr)."""
    fmt = _requested.get()
    if fmt != TEXT:
        sys.stdout.write(render(problems, fmt))


def run_cli(prog: str, body: Callable[[], int]) -> int:
    """Run a command body, turning every failure into one of the three documented shapes;
    its output is written, or failing to write it is one clear line (``std_streams``)."""
    token = _requested.set(TEXT)
    try:
        with guarded() as writable:
            if not writable:
                return _stdout_closed(prog)
            try:
                code = _run(prog, body)
                sys.stdout.flush()
                return code
            except OutputFailed as failure:
                return _output_failed(prog, failure)
            except SystemExit:  # --help, --version: what they wrote must reach its reader
                try:
                    sys.stdout.flush()
                except OutputFailed as failure:
                    raise SystemExit(_output_failed(prog, failure)) from None
                raise
    finally:
        _requested.reset(token)


def _stdout_closed(prog: str) -> int:
    """Nothing of the command runs: its result would have nowhere to go."""
    with contextlib.suppress(OSError, AttributeError):
        sys.stderr.write(render_text([Problem(
            codes.OUTPUT_FAILED, "standard output is closed: the command's result would "
            "have nowhere to go, so it did not run",
            "give it an output: > FILE, or > /dev/null to discard it", subject=prog)]))
    return EXIT_ERROR


def _output_failed(prog: str, failure: OutputFailed) -> int:
    """Standard output (or error) failed mid-run: say so on stderr when it can take it;
    a pipe whose reader left ends quietly, as ``head`` expects of a writer."""
    if not failure.reader_left:
        with contextlib.suppress(OutputFailed, OSError):
            sys.stderr.write(render_text([Problem(
                codes.OUTPUT_FAILED, f"{failure}; the output is incomplete",
                "write it where there is room (another file system, or a pipe that reads "
                "to the end)", subject=prog)]))
    return EXIT_ERROR


def _run(prog: str, body: Callable[[], int]) -> int:
    """The body, and what each kind of failure prints; ``OutputFailed`` is run_cli's."""
    try:
        return body()
    except OutputFailed:
        raise
    except UserError as err:
        _report(err.problems)
        return err.exit_code if isinstance(err, Refusal) else EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    except Exception as exc:
        unusable = _unusable_path(exc)
        if unusable is not None:
            _report([unusable])
            return EXIT_ERROR
        path = write_crash_report(prog, exc)
        what = f"internal error ({type(exc).__name__}); this is a bug in xce-gitops"
        sys.stderr.write(f"{prog}: {what}. Full traceback: {path}\n")
        _document([Problem(codes.INTERNAL, what, f"report it with the file {path}, which holds "
                           "the full traceback", subject=prog)])
        return EXIT_ERROR
