"""``xce-init DIR``: create a new site-config repository.

A small valid site (or the full example site with ``--example``), a README for its admins,
a .gitignore, its snapshot-tested policy reviews (tests/, with their first snapshots), a
place for the pipeline files (ci/), all in one first git commit. DIR must be new or empty.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from compiler.cli_runner import EXIT_OK, UsageParser, run_cli
from compiler.scaffold import codes
from compiler.scaffold.create import scaffold

PROG = "xce-init"


class _Parser(UsageParser):
    usage_code = codes.USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="Create a new site-config repository (git) in DIR, a new or empty folder: "
        "a small valid site, a README, a .gitignore and the site's snapshot tests.",
    )
    p.add_argument("dir", type=Path, metavar="DIR", help="the folder to create (new, or empty)")
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
    return p


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    created = scaffold(args.dir, args.site_name, args.example)
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
