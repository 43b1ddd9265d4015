"""Starting and stopping provider processes so that a timeout kills the whole tree.

Each provider runs in its own session (process group): a shell script that forks a
``sleep`` or a helper dies with it, and no stray process keeps a pipe open.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from reconciler.protocol import ErrorCode, ProviderError
from reconciler.transports.base import named_error


def _beside_us(program: str) -> str:
    """A bare program name is looked up beside this Python first, then on PATH: commands
    installed with xce-gitops (in the same virtual environment) run without activating it,
    and ``python3 -m MODULE`` runs with the Python that runs xce-gitops (as ``npx`` prefers
    a project's own programs)."""
    if os.sep in program:
        return program
    local = Path(sys.executable).parent / program
    if local.is_file() and os.access(local, os.X_OK):
        return str(local)
    return shutil.which(program) or program


def spawn(
    provider: str, command: Sequence[str], stderr: int | IO[bytes], cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """Start a provider command; a missing or non-executable command is UNAVAILABLE."""
    if not command:
        raise named_error(provider, ErrorCode.INVALID_ARGUMENT, "has an empty command")
    command = [_beside_us(command[0]), *command[1:]]
    try:
        return subprocess.Popen(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=cwd,
            close_fds=True,
            start_new_session=True,
        )
    except FileNotFoundError:
        raise named_error(
            provider, ErrorCode.UNAVAILABLE, f"could not start: command not found: {command[0]}"
        ) from None
    except OSError as err:
        raise named_error(
            provider, ErrorCode.UNAVAILABLE, f"could not start {command[0]}: {err.strerror}"
        ) from None


def kill_tree(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the provider's process group and reap it."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        proc.kill()
    with contextlib.suppress(subprocess.TimeoutExpired):  # unkillable (D state): give up
        proc.wait(timeout=5)


def write_some(fd: int, data: memoryview) -> memoryview | None:
    """What is left of ``data`` after one write to a non-blocking pipe; None once the
    reader has closed it."""
    try:
        return data[os.write(fd, data):]
    except BlockingIOError:
        return data
    except BrokenPipeError:
        return None


def exit_detail(returncode: int, stderr: bytes = b"") -> str:
    """'exited with status 2: <last stderr line>' or 'was killed by signal 9'."""
    if returncode < 0:
        text = f"was killed by signal {-returncode}"
    else:
        text = f"exited with status {returncode}"
    lines = [ln for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    if lines:
        last = lines[-1].strip()
        text += f": {last[:200]}"
    return text


def unavailable(provider: str, detail: str) -> ProviderError:
    return named_error(provider, ErrorCode.UNAVAILABLE, detail)
