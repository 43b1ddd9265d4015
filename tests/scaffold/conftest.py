"""Running the editable checkout's console scripts as a site admin's shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BIN = Path(sys.executable).parent  # the dev venv's console scripts: xce-init, pytest, …


def run_editable(
    args: list[str], cwd: Path, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """A console script of the dev venv, run in ``cwd`` with ``env`` added to this process's
    environment minus this pytest run's own PYTEST_* variables."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
    full["PATH"] = os.pathsep.join([str(BIN), full.get("PATH", "")])
    full.update(env)
    return subprocess.run(
        args, cwd=cwd, env=full, capture_output=True, text=True, timeout=300, check=False
    )
