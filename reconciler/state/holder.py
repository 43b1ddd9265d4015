"""The identity a runner puts on its locks and runs, readable by the person who finds it."""

from __future__ import annotations

import getpass
import os
import secrets
import socket
from collections.abc import Mapping

from reconciler.state.store import Holder

# CI systems that name the job running us; the first one set wins
CI_JOB_VARIABLES = ("CI_JOB_ID", "GITHUB_RUN_ID")


def current_holder(env: Mapping[str, str] | None = None) -> Holder:
    """``user@host:pid/xxxxxx`` — unique per call, so two runs in one process differ too."""
    env = os.environ if env is None else env
    host = socket.gethostname() or "localhost"
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no passwd entry, as in some containers
        user = f"uid{os.getuid()}"
    job_id = next((env[v] for v in CI_JOB_VARIABLES if env.get(v)), None)
    return Holder(f"{user}@{host}:{os.getpid()}/{secrets.token_hex(3)}", host, job_id)
