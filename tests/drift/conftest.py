"""Fixtures of the drift tests: the state-store targets (real SQLite and PostgreSQL, from
tests/state), the drifted world built once per session, and xce-drift run against it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.drift.world import drifted_world, run_drift
from tests.e2e.workspace import CliRun, Workspace
from tests.state.conftest import pg_admin, pg_target, sqlite_target, store, target

__all__ = ["pg_admin", "pg_target", "sqlite_target", "store", "target"]

Drift = Callable[..., CliRun]


@pytest.fixture(scope="session")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    """The applied site after an admin, a user, another site and config made it drift,
    with the cloud account down (tests/drift/world.py). xce-drift never changes it."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        yield drifted_world(tmp_path_factory.mktemp("drift-world"), monkeypatch)


@pytest.fixture
def drift(world: Workspace, tmp_path: Path, capsys: pytest.CaptureFixture[str],
          monkeypatch: pytest.MonkeyPatch) -> Drift:
    """``xce-drift`` on the world, with this test's own state store unless one is given."""
    def run(*args: str) -> CliRun:
        state = () if "--state" in args else ("--state", str(tmp_path / "state.sqlite"))
        return run_drift(world, capsys, monkeypatch, *state, *args)

    return run
