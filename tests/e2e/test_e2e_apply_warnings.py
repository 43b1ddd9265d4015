"""Where the directory provider cannot chown, the apply report says so (the intended
owner is recorded, never silently dropped)."""

from __future__ import annotations

import json
import pwd
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
from tests.e2e.workspace import SCENARIOS, SITES, materialize


def test_unresolvable_owner_is_reported(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    try:
        pwd.getpwnam("alice")
        pytest.skip("a user 'alice' exists here, so her directory is really chowned")
    except KeyError:
        pass
    site = materialize(tmp_path / "site", SITES / "base", SCENARIOS / "fresh_site" / "site-config")
    args = [str(site), "--workdir", str(tmp_path / "work"), "--auto-approve"]
    assert apply_cli.main([*args, "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    warned = {o["entry"]: o["warnings"] for o in report["actions"] if o["warnings"]}
    assert "volume-dir/shared/alice" in warned
    assert "owner_applied: false" in warned["volume-dir/shared/alice"][0]
    assert "'alice' does not resolve" in warned["volume-dir/shared/alice"][0]
