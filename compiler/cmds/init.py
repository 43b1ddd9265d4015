"""``xce-init DIR``: create a new site-config repository; ``xce-init --print-ci KIND``: print
one pipeline file for a repository that exists.

A small valid site (or the full example site with ``--example``), a README for its admins,
a .gitignore, its snapshot-tested policy reviews (tests/, with their first snapshots), the
pipeline file of its CI (``--ci``) and its pre-commit hook, all in one first git commit.
DIR must be new or empty.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.site_repo import codes
from compiler.site_repo.create import scaffold
from compiler.site_repo.pipeline import (
    CI_KINDS,
    DEFAULT_BRANCH,
    DEFAULT_HOOK,
    HOOKS,
    PATHS,
    PRINTABLE,
    Pipeline,
    branch_name,
    site_folder,
)

PROG = "xce-init"
# options that make a new repository, and those that shape a printed file
_CREATING = {"example": "--example", "site_name": "--site-name", "ci": "--ci"}
_PRINTING = {"site": "--site", "branch": "--branch", "notify": "--notify"}


class _Parser(UsageParser):
    usage_code = codes.USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Create a new site-config repository (git) in DIR, a new or empty folder: "
        "a small valid site, a README, a .gitignore, the site's snapshot tests, the pipeline "
        "file of its CI and its pre-commit hook. With --print-ci, print one pipeline file for "
        "a repository that exists instead.",
    )
    p.add_argument("dir", type=Path, nargs="?", metavar="DIR",
                   help="the folder to create (new, or empty)")
    which = p.add_mutually_exclusive_group()
    which.add_argument(
        "--example",
        action="store_true",
        help="the full example site (hpc-east, about a thousand hosts) instead of a small one",
    )
    which.add_argument(
        "--site-name",
        metavar="NAME",
        help="the site's name, the owner tag of all its entries (default: DIR's name)",
    )
    p.add_argument("--ci", choices=CI_KINDS, help="the pipeline file to write: "
                   f"{PATHS['github']} (github, the default), {PATHS['gitlab']} (gitlab) or "
                   f"none; {PATHS['pre-commit']} is written in each case")
    p.add_argument("--hook", choices=HOOKS, default=DEFAULT_HOOK,
                   help="how the pre-commit hook gets xce-compile: python (the default) installs "
                   "the pinned release from your package index; system runs the xce-compile "
                   "installed where you commit, for a site that installs xce-gitops from a "
                   "wheel (no index holds it)")
    printing = p.add_argument_group("printing a pipeline file for an existing repository")
    printing.add_argument("--print-ci", choices=PRINTABLE, metavar="KIND",
                          help="print the file of KIND (github, gitlab or pre-commit) on "
                          "stdout, and write nothing; no DIR")
    printing.add_argument("--site", metavar="PATH",
                          help="with --print-ci: the site folder, relative to the repository's "
                          "top (default: .)")
    printing.add_argument("--branch", metavar="NAME", help="with --print-ci github: the branch "
                          f"pull requests go to and that is applied (default: {DEFAULT_BRANCH})")
    printing.add_argument("--notify", action="store_true", help="with --print-ci github|gitlab: "
                          "the nightly drift check mails the admins (xce-drift --notify), for a "
                          "site with drift.notify settings")
    return p


def _given(args: argparse.Namespace, options: dict[str, str]) -> list[str]:
    """The options of ``options`` (dest -> option) that were given."""
    return [option for name, option in options.items() if getattr(args, name) not in (None, False)]


def _check_usage(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """DIR and the options that make a repository, or --print-ci and its own: never both."""
    creating, printing = _given(args, _CREATING), _given(args, _PRINTING)
    if args.print_ci is None:
        if args.dir is None:
            p.error("the following arguments are required: DIR")
        if printing:
            p.error(f"argument {printing[0]}: only with --print-ci")
    elif args.dir is not None or creating:
        p.error("argument --print-ci: it prints a file and creates nothing: leave out "
                + (creating[0] if creating else "DIR"))


def _print_ci(args: argparse.Namespace) -> int:
    """The file on stdout, nothing else: ``xce-init --print-ci github > …`` is the file."""
    pipeline = Pipeline(
        ci=args.print_ci,
        site=site_folder(args.site or "."),
        branch=branch_name(args.branch or DEFAULT_BRANCH, "--branch"),
        notify=args.notify,
        hook=args.hook,
    )
    sys.stdout.write(pipeline.render(args.print_ci))
    return EXIT_OK


def _body(argv: list[str] | None) -> int:
    p = parser()
    args = p.parse_args(argv)
    _check_usage(p, args)
    if args.print_ci is not None:
        return _print_ci(args)
    created = scaffold(args.dir, args.site_name, args.example, args.ci or "github", args.hook)
    here = created.target.resolve() == Path.cwd().resolve()
    cd = "" if here else f"cd {shlex.quote(str(created.target))} && "
    sys.stdout.write(
        f"created the site-config repository {created.target} for site {created.site_name}: "
        f"{created.files} files, commit {created.commit[:12]}\n"
        f"next: {cd}xce-compile . && xce-plan . && pytest\n"
    )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
