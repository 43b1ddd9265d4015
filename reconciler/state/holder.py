"""The identity a runner puts on its locks and runs, readable by the person who finds it."""

from __future__ import annotations

import getpass
import hashlib
import os
import re
import secrets
import socket
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from reconciler.state.store import Holder

# CI systems that name the job running us; the first one set wins
CI_JOB_VARIABLES = ("CI_JOB_ID", "GITHUB_RUN_ID")
# "user@host:pid/" then the scope (8 hex digits) and a random part
_PID_IN_SCOPE = re.compile(r":(\d+)/([0-9a-f]{8})[0-9a-f]+$")


def current_holder(env: Mapping[str, str] | None = None) -> Holder:
    """``user@host:pid/<scope><random>`` — unique per call, so two runs in one process differ."""
    env = os.environ if env is None else env
    host = socket.gethostname() or "localhost"
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = f"uid{os.getuid()}"
    job_id = next((env[v] for v in CI_JOB_VARIABLES if env.get(v)), None)
    name = f"{user}@{host}:{os.getpid()}/{process_scope()}{secrets.token_hex(3)}"
    return Holder(name, host, job_id)


@cache
def process_scope() -> str:
    """8 hex digits naming this boot of the kernel and this pid namespace.

    A pid names one process only within both: containers that share a host name (host
    networking) each count their own pids. Where neither can be read, the scope is the
    same for every process, and the host name alone decides.
    """
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text().strip()
    except OSError:
        boot = ""
    try:
        pids = os.readlink("/proc/self/ns/pid")  # "pid:[4026531836]"
    except OSError:
        pids = ""
    return hashlib.sha256(f"{boot}|{pids}".encode()).hexdigest()[:8]


def pid_in_this_scope(holder: str) -> int | None:
    """The pid in a holder name written by ``current_holder`` in this scope, else None."""
    match = _PID_IN_SCOPE.search(holder)
    if match is None or match.group(2) != process_scope():
        return None
    return int(match.group(1))
