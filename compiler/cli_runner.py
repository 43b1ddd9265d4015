"""The three kinds of failure every command distinguishes.

A user's mistake is one clear message (UserError, exit 1); a failing provider is named by
the reconciler through a Problem; a bug of ours prints one line and the path of a file
that holds the full traceback, never the traceback itself.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import traceback
from collections.abc import Callable
from typing import NoReturn

from compiler.problem_render import render_text
from compiler.problems import Problem, UserError
from compiler.textstyle import Style


class UsageParser(argparse.ArgumentParser):
    """Usage mistakes are user errors (exit 1), never argparse's exit 2, which a CI job
    reads as "changes" (Terraform's -detailed-exitcode). A command sets its own code."""

    usage_code = "XCE007"

    def error(self, message: str) -> NoReturn:
        raise UserError(
            [Problem(self.usage_code, message, f"see '{self.prog} --help'", subject=self.prog)]
        )


EXIT_OK = 0
EXIT_ERROR = 1
EXIT_CHANGES = 2
EXIT_STALE = 3


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


def run_cli(prog: str, body: Callable[[], int]) -> int:
    """Run a command body, turning every failure into one of the three documented shapes."""
    try:
        return body()
    except UserError as err:
        sys.stderr.write(render_text(err.problems, Style.for_stream(sys.stderr)))
        return EXIT_ERROR
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog}: interrupted\n")
        return 130
    except BrokenPipeError:
        return EXIT_ERROR
    except Exception as exc:
        path = write_crash_report(prog, exc)
        sys.stderr.write(
            f"{prog}: internal error ({type(exc).__name__}); this is a bug in xce-gitops. "
            f"Full traceback: {path}\n"
        )
        return EXIT_ERROR
