"""``xce-lock list | release NAME``: see who holds the apply locks, and free a stuck one.

A lock whose lease expired, or whose holder's process on this host is gone, is released
without question; a live one only with ``--force`` (the runner holding it may still be
changing things, and its epoch would be fenced off anyway by the next apply).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from compiler.cli.options import add_format, add_state, add_workdir
from compiler.cli.runner import EXIT_OK, UsageParser, run_cli
from compiler.cli.site_locate import FOUND_HELP as SITE_HELP
from compiler.cli.site_locate import store_file
from compiler.contract.build_files import WORKDIR
from compiler.core.canonical import dumps
from compiler.core.problems import Problem, UserError
from compiler.core.times import format_utc
from reconciler.apply.codes import LOCK_IS_LIVE, LOCK_NOT_FOUND, USAGE
from reconciler.apply.locking import dead_here
from reconciler.state import ENV_URL, Lock, StateStore, open_store

PROG = "xce-lock"


class _Parser(UsageParser):
    usage_code = USAGE


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    p.add_argument("--site", type=Path,
                   help=f"site-config folder; the workdir defaults to <site>/{WORKDIR} "
                   f"(default: {SITE_HELP})")
    add_workdir(p)
    add_state(p, " holding the apply locks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    listing = sub.add_parser("list", help="the locks and who holds them")
    add_format(listing, ("text", "json"), "the locks")
    release = sub.add_parser("release", help="release a lock whose runner is gone")
    release.add_argument("name", help="the lock's name, e.g. apply/hpc-east")
    release.add_argument("--force", action="store_true",
                         help="release it even though its lease is still valid")
    return p


def state_of(lock: Lock, now: datetime) -> str:
    """``held``, ``expired`` (lease ran out) or ``dead`` (its process here is gone)."""
    if lock.expires <= now:
        return "expired"
    return "dead" if dead_here(lock) else "held"


def _lock_json(lock: Lock, now: datetime) -> dict[str, object]:
    return {"name": lock.name, "holder": lock.holder, "host": lock.host, "job_id": lock.job_id,
            "acquired": format_utc(lock.acquired, "offset"),
            "expires": format_utc(lock.expires, "offset"), "state": state_of(lock, now)}


def render_list(locks: Sequence[Lock], fmt: str, now: datetime) -> str:
    rows = [_lock_json(lock, now) for lock in locks]
    if fmt == "json":
        return dumps({"locks": rows}).decode()
    if not rows:
        return "No locks are held.\n"
    columns = ("name", "state", "holder", "host", "job_id", "acquired", "expires")
    table = [[c.upper().replace("_ID", "") for c in columns],
             *[[str(r[c] or "-") for c in columns] for r in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(len(columns))]
    return "".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True))
                   .rstrip() + "\n" for row in table)


def release(store: StateStore, name: str, force: bool, now: datetime) -> Lock:
    """Release ``name``; a live lease needs ``force``. Returns the lock that was removed."""
    lock = store.get_lock(name)
    if lock is None:
        known = ", ".join(x.name for x in store.list_locks()) or "none"
        raise UserError([Problem(LOCK_NOT_FOUND, f"no lock named {name!r} is held",
                                 f"locks held now: {known} (see xce-lock list)", subject=name)])
    if state_of(lock, now) == "held" and not force:
        job = f", CI job {lock.job_id}" if lock.job_id else ""
        raise UserError([Problem(
            LOCK_IS_LIVE, f"lock {name!r} is held by {lock.holder} (host {lock.host}{job}) "
            f"with a lease until {format_utc(lock.expires, 'offset')}",
            "make sure that runner is gone (its apply may still be running), then run "
            f"xce-lock release --force {name}", subject=name)])
    if force:
        return store.force_release(name) or lock
    store.release(name, lock.holder)  # only if still that holder's: never a new runner's lock
    return lock


def _default_store(args: argparse.Namespace) -> Path:
    return store_file(args.workdir, bool(args.state or os.environ.get(ENV_URL)), args.site,
                      hint="run it in the site's folder, or pass --site, "
                      "--workdir or --state")


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    now = datetime.now(UTC)
    with open_store(args.state, _default_store(args)) as store:
        if args.command == "list":
            sys.stdout.write(render_list(store.list_locks(), args.format, now))
        else:
            gone = release(store, args.name, args.force, now)
            sys.stdout.write(f"Released lock {gone.name!r} (was held by {gone.holder} on host "
                             f"{gone.host}).\n")
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
