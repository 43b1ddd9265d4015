"""A scenario's world in a temporary folder: the site-config, the workdir, the clock.

Scenarios run the real CLIs (``xce-plan``, ``xce-map``) in-process through their
``main()``, so the site is materialized into tmp (a shared base site overlaid with the
scenario's own files) and every provider keeps its state under the tmp workdir.
"""

from __future__ import annotations

import os
import pwd
import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

import reconciler.cmds.plan as plan_cli

E2E = Path(__file__).resolve().parent
SITES = E2E / "sites"
SCENARIOS = E2E / "scenarios"


def tokens() -> dict[str, str]:
    """Placeholders in site YAML that depend on the machine running the tests."""
    return {
        "@USER@": pwd.getpwuid(os.geteuid()).pw_name,  # owner of what the tests create
        "@PYTHON@": sys.executable,
        "@E2E@": str(E2E),
    }


def fill_tokens(text: str) -> str:
    for token, value in tokens().items():
        text = text.replace(token, value)
    return text


def materialize(dest: Path, *layers: Path) -> Path:
    """Copy each layer onto ``dest`` in order (a later file replaces an earlier one) and
    fill the placeholders of every YAML file."""
    dest.mkdir(parents=True, exist_ok=True)
    for layer in layers:
        if layer.is_dir():
            shutil.copytree(layer, dest, dirs_exist_ok=True)
    for path in sorted(dest.rglob("*.y*ml")):
        path.write_text(fill_tokens(path.read_text()))
    return dest


@dataclass(slots=True)
class Workspace:
    """Where one scenario runs; ``clock`` shifts the planner's "now" (join deadlines)."""

    site: Path
    workdir: Path
    clock: float = 0.0
    env: dict[str, str] = field(default_factory=dict)
    epoch: int = 0  # fencing epoch of the last apply made by the scenario driver

    def now(self) -> float:
        return time.time() + self.clock

    def plan_argv(self, *args: str) -> list[str]:
        return [str(self.site), "--workdir", str(self.workdir), *args]


@contextmanager
def planning(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The scenario's environment and clock while a CLI or provider runs."""
    with monkeypatch.context() as m:
        for key, value in ws.env.items():
            m.setenv(key, value)
        shifted = SimpleNamespace(time=lambda: time.time() + ws.clock)
        m.setattr(plan_cli, "time", shifted)  # only xce-plan's own clock moves
        yield


@dataclass(frozen=True, slots=True)
class CliRun:
    code: int
    out: str
    err: str


def run_cli_main(main: Callable[[list[str]], int], ws: Workspace,
                 capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                 *args: str) -> CliRun:
    """``COMMAND <site> --workdir <tmp> ARGS`` through its main(), output captured."""
    capsys.readouterr()
    with planning(ws, monkeypatch):
        code = main(ws.plan_argv(*args))
    out, err = capsys.readouterr()
    return CliRun(code, out, err)


def run_plan(ws: Workspace, capsys: pytest.CaptureFixture[str],
             monkeypatch: pytest.MonkeyPatch, *args: str) -> CliRun:
    """``xce-plan <site> --workdir <tmp> ARGS``."""
    return run_cli_main(plan_cli.main, ws, capsys, monkeypatch, *args)
