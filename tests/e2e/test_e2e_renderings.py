"""What a reviewer reads: ``xce-plan`` text and markdown, end to end, for two scenarios
(a provider down while a host drains; a host that joined before config added it)."""

from __future__ import annotations

from pathlib import Path

import pytest
from syrupy.assertion import SnapshotAssertion

from tests.e2e.scenario import build, load_scenario
from tests.e2e.workspace import run_plan

SNAPSHOT_SCENARIOS = ("provider_failing", "host_joined_early")


@pytest.mark.parametrize("name", SNAPSHOT_SCENARIOS)
def test_text_and_markdown(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                           monkeypatch: pytest.MonkeyPatch,
                           snapshot: SnapshotAssertion) -> None:
    scenario = load_scenario(name)
    ws = build(scenario, tmp_path, monkeypatch)
    for fmt in ("text", "markdown"):
        run = run_plan(ws, capsys, monkeypatch, "--format", fmt, *scenario.plan_args)
        assert run.code == scenario.expected["exit"]
        assert str(tmp_path) not in run.out  # nothing machine-specific in the snapshot
        assert run.out == snapshot(name=fmt)


def test_unknown_entries_are_never_called_in_sync(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing planned because a provider did not report is not "no changes"."""
    ws = build(load_scenario("volume_symlinked"), tmp_path, monkeypatch)
    for fmt in ("text", "markdown"):
        run = run_plan(ws, capsys, monkeypatch, "--format", fmt)
        assert run.code == 1
        assert "matches the configuration" not in run.out
        assert "Plan: 0 to add, 0 to change, 0 to destroy." in run.out
        assert "Unknown" in run.out
