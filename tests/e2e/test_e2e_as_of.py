"""``xce-plan --as-of``: a preview of a later plan, which is never saved nor recorded."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.e2e.scenario import build, load_scenario
from tests.e2e.workspace import run_plan


def test_a_preview_plans_for_its_time_and_says_so(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Just applied, no host has joined yet: within its join deadline now, an orphan two
    hours on, which only the preview shows."""
    ws = build(load_scenario("user_added"), tmp_path, monkeypatch)
    now = run_plan(ws, capsys, monkeypatch, "--format", "json")
    later = run_plan(ws, capsys, monkeypatch, "--format", "json", "--as-of", "+2h")
    assert "A preview as of " in later.err and "A preview" not in now.err
    orphans = {n["entry"] for n in orjson.loads(later.out)["orphans"]}
    assert not orjson.loads(now.out)["orphans"] and orphans


@pytest.mark.parametrize("args", [["--as-of", "+2h", "--out", "p.xce"],
                                  ["--as-of", "+2h", "--record"],
                                  ["--as-of", "next tuesday"]])
def test_a_preview_is_never_saved_and_its_time_must_read(
        args: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    ws = build(load_scenario("fresh_site"), tmp_path, monkeypatch)
    run = run_plan(ws, capsys, monkeypatch, *args)
    assert run.code == 1 and "--as-of" in run.err and "Traceback" not in run.err
    assert not (tmp_path / "p.xce").exists()
