"""A provider that lost everything after an apply is caught even when its generation
restarted (its map file deleted): the state store remembers the site was applied."""

from __future__ import annotations

from pathlib import Path

import pytest

import reconciler.cli.apply as apply_cli
import reconciler.cli.plan as plan_cli
from tests.e2e.workspace import SCENARIOS, SITES, materialize


def test_map_file_deleted_after_apply_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    site = materialize(tmp_path / "site", SITES / "base", SCENARIOS / "fresh_site" / "site-config")
    workdir = tmp_path / "work"
    args = [str(site), "--workdir", str(workdir)]
    assert apply_cli.main([*args, "--auto-approve", "--format", "json"]) == 0
    assert plan_cli.main(args) == 0  # in sync
    capsys.readouterr()
    for db in (workdir / "providers" / "controller").glob("map.sqlite*"):
        db.unlink()  # the controller map is gone; a new one starts at generation 0
    assert plan_cli.main(args) == 1
    assert "XCE753" in capsys.readouterr().out  # the guard, named in the plan output
    (workdir / "state.sqlite").unlink()  # without the store's memory it looks like a new site
    assert plan_cli.main(args) == 2
