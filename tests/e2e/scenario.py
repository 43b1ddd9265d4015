"""A scenario folder: ``site-config/`` (laid over a base site), ``setup.yaml`` (how to build
the live state) and ``expected.yaml`` (the plan ``xce-plan`` must print)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.e2e.steps import run_steps
from tests.e2e.workspace import SCENARIOS, SITES, Workspace, materialize


def scenario_names() -> list[str]:
    return sorted(p.name for p in SCENARIOS.iterdir() if (p / "expected.yaml").is_file())


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    folder: Path
    setup: dict[str, Any]
    expected: dict[str, Any]

    @property
    def plan_args(self) -> list[str]:
        return [str(a) for a in self.setup.get("plan_args", ())]


def _yaml(path: Path) -> dict[str, Any]:
    doc = YAML(typ="safe").load(path.read_text()) if path.is_file() else None
    return doc if isinstance(doc, dict) else {}


def load_scenario(name: str) -> Scenario:
    folder = SCENARIOS / name
    return Scenario(name, folder, _yaml(folder / "setup.yaml"), _yaml(folder / "expected.yaml"))


def build(scenario: Scenario, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Workspace:
    """Materialize the site in tmp and run the setup steps: the world the plan will see."""
    site = materialize(tmp_path / "site-config", SITES / "base", scenario.folder / "site-config")
    ws = Workspace(site=site, workdir=tmp_path / "work")
    run_steps(ws, list(scenario.setup.get("steps", ())), monkeypatch)
    return ws
