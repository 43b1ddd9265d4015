"""``xce-status``: a site's state as the state store holds it — proxies, provider leases, the
applied configuration and last apply, published inventories, queued calls, refusals, open
drift and plans waiting for review. Read only: nothing is compiled, no provider is started,
and a store that does not exist is refused, never created. Exit 0; 1: an error.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from compiler.cli.options import add_as_of, add_format, add_state, add_workdir
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import store_file
from compiler.core.textstyle import Style
from reconciler.state import ENV_URL, StateStore, chosen_store, open_store
from reconciler.state.urls import PostgresTarget, parse_target
from reconciler.status import codes
from reconciler.status.gather import gather, site_key
from reconciler.status.render import FORMATS

PROG = "xce-status"


class _Parser(UsageParser):
    usage_code = codes.USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("site", nargs="?", type=Path, default=None,
                   help=f"site-config folder, where the store is by default (default: "
                   f"{SITE_HELP}, unless --state, --workdir or ${ENV_URL} names the store)")
    add_state(p, " to read (never created)")
    add_workdir(p)
    p.add_argument("--site-key", metavar="KEY", help="the site's key in the store (default: "
                   "the only site the store holds an applied configuration of)")
    add_format(p, FORMATS.names, "the status")
    add_as_of(p, "measure every age")
    return p


def _default_store(args: argparse.Namespace) -> Path:
    return store_file(args.workdir, bool(args.state or os.environ.get(ENV_URL)), args.site,
                      hint="run it in the site's folder, or pass the folder, "
                      "--state or --workdir")


def _open(args: argparse.Namespace) -> StateStore:
    """The store, refused when it is a file that is not there: opening would create it."""
    chosen = chosen_store(args.state, _default_store(args))
    target = parse_target(chosen)
    if not isinstance(target, PostgresTarget) and not target.path.is_file():
        raise codes.error(codes.NO_STORE, f"there is no state store at {target.path}: no "
                          "apply, plan or proxy of this site has used it", str(target.path))
    return open_store(chosen, Path(), env={})


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    with _open(args) as store:
        status = gather(store, site_key(store, args.site_key), args.as_of)
    sys.stdout.write(FORMATS.render(status, args.format, Style.for_stream(sys.stdout)))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
