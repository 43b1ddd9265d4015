"""Deleting a user's directory that holds data: only with destroy permission, end to end
through xce-plan --out and xce-apply (the provider refuses a delete without it)."""

from __future__ import annotations

from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.plan as plan_cli
from tests.e2e.workspace import SCENARIOS, SITES, materialize

SCENARIO = SCENARIOS / "user_removed_destroy" / "site-config"


def _bob_leaves(site: Path) -> None:
    storage = site / "storage.yaml"
    text = storage.read_text().replace("users: [alice, bob]", "users: [alice]")
    storage.write_text(text.replace("{alice: 10GiB, bob: 20GiB}", "{alice: 10GiB}"))


@pytest.mark.parametrize("destroy", [True, False])
def test_user_data_is_deleted_only_with_destroy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], destroy: bool
) -> None:
    site = materialize(tmp_path / "site", SITES / "base", SCENARIO)
    work = tmp_path / "work"
    common = [str(site), "--workdir", str(work)]
    assert apply_cli.main([*common, "--auto-approve"]) == 0
    bob = work / "fs" / "shared" / "bob"
    (bob / "job-17").mkdir()
    (bob / "job-17" / "out").write_text("results\n")
    _bob_leaves(site)
    plan_file = tmp_path / "plan.json"
    flags = ["--destroy"] if destroy else []
    assert plan_cli.main([*common, "--out", str(plan_file), *flags]) == 2
    capsys.readouterr()
    rc = apply_cli.main([str(plan_file), "--site", str(site), "--workdir", str(work)])
    out = capsys.readouterr()
    assert rc == 0, out.out + out.err
    assert bob.exists() is not destroy
    assert plan_cli.main(common) == (0 if destroy else 2)
