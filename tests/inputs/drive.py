"""Run commands one after another in this process and print how each ended, as JSON.

``python drive.py`` reads a JSON list of cases on stdin (``command``: a console script of
pyproject.toml, ``argv``, and optionally ``env`` to set and ``stdin``, a path to read as
standard input) and prints one ``{"status", "stderr"}`` per case. The command-level tests
run many cases in one process this way, under a timeout and a memory limit: a command that
waits on a FIFO or reads /dev/zero stops the run, which the test sees as a failure.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys
import tomllib
from collections.abc import Callable
from contextlib import ExitStack, redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS: dict[str, str] = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
    "scripts"]


def _main(command: str) -> Callable[[list[str]], int]:
    module, function = SCRIPTS[command].split(":")
    main: Callable[[list[str]], int] = getattr(importlib.import_module(module), function)
    return main


def run(case: dict[str, Any]) -> dict[str, Any]:
    """One case: its exit status and what it wrote on stderr."""
    raw = io.BytesIO()
    err, out = io.TextIOWrapper(raw, encoding="utf-8"), io.TextIOWrapper(io.BytesIO())
    saved_env, saved_stdin = dict(os.environ), sys.stdin
    os.environ.update(case.get("env", {}))
    try:
        with ExitStack() as stack:
            if "stdin" in case:
                sys.stdin = stack.enter_context(open(case["stdin"], encoding="utf-8"))
            with redirect_stdout(out), redirect_stderr(err):
                status = _main(case["command"])(case["argv"])
    finally:
        sys.stdin = saved_stdin
        os.environ.clear()
        os.environ.update(saved_env)
    err.flush()
    return {"status": status, "stderr": raw.getvalue().decode()}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    json.dump([run(case) for case in json.load(sys.stdin)], sys.stdout)
