"""A provider that lost everything after an apply is caught even when its generation
restarted (its map file deleted): the state store remembers the generation it reported
(lower now: unknown, XCE714) and that the site was applied (accepted anyway: XCE753)."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.map as map_cli
import reconciler.cmds.plan as plan_cli
from tests.e2e.workspace import SCENARIOS, SITES, Workspace, materialize, run_plan


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
    assert plan_cli.main([*args, "--format", "json"]) == 1
    out, err = capsys.readouterr()
    plan = orjson.loads(out)
    assert plan["actions"] == [] and plan["summary"]["unknown"] == 26  # nothing recreated
    assert "XCE714" in err and "generation 0, lower than generation 26" in err
    assert plan_cli.main([*args, "--accept-generation", "controller"]) == 1
    assert "XCE716" in capsys.readouterr().err  # its generation accepted, its loss is not
    assert plan_cli.main([*args, "--accept-generation", "controller", "--accept-shrink",
                          "controller"]) == 1
    assert "XCE753" in capsys.readouterr().out  # accepted: the guard, named in the plan output
    assert plan_cli.main(args) == 1  # the accepted generation is the record now
    assert "XCE714" not in capsys.readouterr().err
    (workdir / "state.sqlite").unlink()  # without the store's memory it looks like a new site
    assert plan_cli.main(args) == 2


def test_a_restored_map_backup_is_not_trusted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 8 §1: the controller map is restored from a backup taken before the hosts
    joined. Read as the present, its hosts never joined and their deadline is past, so
    their instances would be released: the cloud machines of running hosts. Its generation
    is lower than the one the state store recorded, so it is unknown instead."""
    site = materialize(tmp_path / "site", SITES / "base", SCENARIOS / "fresh_site" / "site-config")
    ws = Workspace(site=site, workdir=tmp_path / "work")
    assert apply_cli.main([*ws.plan_argv(), "--auto-approve"]) == 0
    map_file = ws.workdir / "providers" / "controller" / "map.sqlite"
    backup = tmp_path / "map-backup.sqlite"
    shutil.copyfile(map_file, backup)
    for event in ("join", "available"):
        argv = ["--site", str(site), "--workdir", str(ws.workdir), "report", event,
                "cn[01-04],gn[01-02],burst[01-02]"]
        assert map_cli.main(argv) == 0
    assert run_plan(ws, capsys, monkeypatch).code == 0  # in sync; records the generation
    for suffix in ("-wal", "-shm"):
        Path(f"{map_file}{suffix}").unlink(missing_ok=True)
    shutil.copyfile(backup, map_file)
    ws.clock = 3600.0  # an hour later: past the burst hosts' join deadline (5m)

    run = run_plan(ws, capsys, monkeypatch, "--format", "json")
    assert run.code == 1
    plan = orjson.loads(run.out)
    assert plan["actions"] == []
    assert "XCE714" in run.err and "lower than generation" in run.err
    reasons = {n["entry"]: n["reason"] for n in plan["unknown"]}
    assert "inventory generation" in reasons["host/burst01"]

    (ws.workdir / "state.sqlite").unlink()  # the control: without the record …
    run = run_plan(ws, capsys, monkeypatch, "--format", "json")
    released = [a["entry"] for a in orjson.loads(run.out)["actions"] if a["action"] == "release"]
    assert released == ["instance/burst01", "instance/burst02"]  # … the backup is believed
