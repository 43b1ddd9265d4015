"""``xce-proxy run NAME --state URL``: run the providers bound to proxy NAME, on this host.

A long-running service, one per proxy of proxies.yaml, on the host the proxy names. It opens
no port to be called on: it connects out to the site's state store, follows the
configuration the last apply recorded there, holds a lease for each provider it serves
(active or standby), publishes their inventories, and answers the calls applies queue for
them within its scoped allowlist. Secrets resolve in its own environment only. SIGTERM or
SIGINT releases its leases (a standby takes over at once) and exits 0. ``xce-proxy unit NAME``
prints a systemd unit that runs it (docs/proxies.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from compiler.cli.options import add_state, add_workdir
from compiler.cli.runner import EXIT_OK, UsageParser, product_version, run_cli
from compiler.contract.build_files import STATE_FILE
from reconciler.proxy import codes
from reconciler.proxy.context import Context, Identity
from reconciler.proxy.daemon import Daemon
from reconciler.proxy.follow import Follower
from reconciler.proxy.logs import LOG_FORMATS, EventLog
from reconciler.proxy.metrics import Metrics, parse_address, serve_metrics
from reconciler.proxy.unit import ENV_FILE, PROG, USER, unit_text
from reconciler.state import open_store


class _Parser(UsageParser):
    usage_code = codes.USAGE


def _common(p: argparse.ArgumentParser) -> None:
    """What ``run`` and ``unit`` share: where the proxy finds its store, site and files."""
    p.add_argument("name", help="the proxy's name, as proxies.yaml gives it")
    add_state(p, " the proxy connects out to (the site's, shared with xce-apply)")
    p.add_argument("--site", metavar="KEY",
                   help="the site whose applied configuration to follow (default: the only "
                   "site the store holds one for)")
    add_workdir(p, last="the current folder: this host's root for the providers' relative "
                "paths")
    p.add_argument("--metrics", metavar="HOST:PORT",
                   help="serve Prometheus metrics (/metrics) and a health check (/healthz) "
                   "on this local address (default: none)")
    p.add_argument("--log-format", choices=LOG_FORMATS, default="json",
                   help="one line per event on stderr: json for log shippers, text for "
                   "people (default: json)")


def parser() -> argparse.ArgumentParser:
    p = _Parser(prog=PROG, description=__doc__.split("\n\n")[0] if __doc__ else None)
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)
    _common(sub.add_parser("run", help="run the proxy until SIGTERM or SIGINT"))
    unit = sub.add_parser("unit", help="print a systemd unit that runs the proxy")
    _common(unit)
    unit.add_argument("--env-file", type=Path, metavar="FILE", default=ENV_FILE,
                      help=f"the unit's EnvironmentFile, holding the secrets (default: "
                      f"{ENV_FILE})")
    unit.add_argument("--user", default=USER,
                      help=f"the system user the service runs as (default: {USER})")
    return p


def _run(args: argparse.Namespace, workdir: Path) -> int:
    address = parse_address(args.metrics) if args.metrics else None
    stopping = threading.Event()

    def stop(signum: int, frame: Any) -> None:
        stopping.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, stop)
    metrics = Metrics()
    with open_store(args.state, workdir / STATE_FILE) as store:
        server = serve_metrics(metrics, address) if address else None
        try:
            log = EventLog(args.name, args.log_format)
            me = Identity.here(args.name)
            log.event("started", instance=me.instance, store=store.label, workdir=str(workdir),
                      version=product_version())
            ctx = Context(store, me, log, metrics, workdir)
            return Daemon(ctx, Follower(store, args.name, args.site, workdir)).run(stopping)
        finally:
            if server is not None:
                server.shutdown()


def _unit(args: argparse.Namespace, workdir: Path) -> int:
    if args.metrics:
        parse_address(args.metrics)
    options = [*(["--site", args.site] if args.site else []),
               *(["--metrics", args.metrics] if args.metrics else []),
               "--log-format", args.log_format]
    sys.stdout.write(unit_text(args.name, args.state, options, workdir, args.env_file,
                               args.user, product_version()))
    return EXIT_OK


def _body(argv: list[str] | None) -> int:
    args = parser().parse_args(argv)
    workdir = (args.workdir or Path.cwd()).resolve()
    return _run(args, workdir) if args.command == "run" else _unit(args, workdir)


def main(argv: list[str] | None = None) -> int:
    return run_cli(PROG, lambda: _body(argv))


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
