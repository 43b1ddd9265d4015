"""The systemd unit that runs one proxy as a service (``xce-proxy unit NAME …``).

The unit holds no secret: a password in the ``--state`` URL is left out (the driver reads
PGPASSWORD), and the providers' ``env:`` secrets come from the ``EnvironmentFile``, a file
only root reads, which the admin writes beside it (docs/proxies.md). ``KillSignal=SIGTERM``
lets the proxy release its leases, so the standby takes over at once; ``Restart=on-failure``
starts it again after a crash or while the store cannot be opened.
"""

from __future__ import annotations

import shlex
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

from reconciler.state.urls import without_password

PROG = "xce-proxy"
STOP_SECONDS = 120  # how long systemd waits for the call in hand to finish on SIGTERM


ENV_FILE = Path("/etc/xce/proxy.env")  # one proxy per host: its secrets and store URL
USER = "xce-proxy"  # the system user the service runs as (docs/proxies.md)


def _executable() -> str:
    """This xce-proxy's absolute path, for ExecStart (systemd wants one): the running
    command's when it is xce-proxy, else the one on PATH."""
    running = Path(sys.argv[0])
    if running.name == PROG and running.is_file():
        return str(running.resolve())
    return shutil.which(PROG) or PROG


def _quoted(args: Sequence[str]) -> str:
    """A command line as systemd reads it: shell-style quotes, ``%`` doubled (a path
    setting takes no quotes: only its ``%`` is doubled)."""
    return " ".join(shlex.quote(arg) for arg in args).replace("%", "%%")


def unit_text(proxy: str, state: str | None, options: Sequence[str], workdir: Path,
              env_file: Path, user: str, version: str) -> str:
    """The unit of proxy ``proxy``: ``xce-proxy run NAME --state STATE`` (its password left
    out; without it, $XCE_STATE_URL from the EnvironmentFile) with ``options`` (--site,
    --metrics, --log-format) in ``workdir``, as ``user``."""
    store = ["--state", without_password(state)] if state else []
    command = [_executable(), "run", proxy, *store, "--workdir", str(workdir), *options]
    return f"""\
# The xce-gitops proxy {proxy!r} as a service (printed by xce-proxy unit, xce-gitops {version}).
# Install: save as /etc/systemd/system/xce-proxy@{proxy}.service, then
#   systemctl daemon-reload && systemctl enable --now xce-proxy@{proxy}
# No secret belongs in this file. Put the providers' env: secrets (and XCE_STATE_URL,
# PGPASSWORD for a PostgreSQL store) in {env_file}, owned by root, mode 0600: systemd
# reads it before it drops to the user {user} (docs/proxies.md).
[Unit]
Description=xce-gitops proxy {proxy} (runs the providers bound to it)
Wants=network-online.target
After=network-online.target

[Service]
Type=simple
User={user}
ExecStart={_quoted(command)}
WorkingDirectory={str(workdir).replace("%", "%%")}
EnvironmentFile=-{str(env_file).replace("%", "%%")}
Restart=on-failure
RestartSec=5
KillSignal=SIGTERM
TimeoutStopSec={STOP_SECONDS}

[Install]
WantedBy=multi-user.target
"""
