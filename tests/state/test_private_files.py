"""Nobody but the owner reads what the tool keeps: plans, owners, the journal, ledgers
(issue 19 §7), whatever the umask — checked on every file a real plan, apply and drift run
of the example site leave in the workdir, and on the saved plan."""

from __future__ import annotations

import shutil
import stat
from pathlib import Path

import pytest

import reconciler.cmds.apply as apply_cli
import reconciler.cmds.drift as drift_cli
import reconciler.cmds.plan as plan_cli
from compiler.contract.build_files import BUILD_DIR, COMPILED_FILES, MANIFEST
from tests.conftest import EXAMPLE_SITE

# the data the example's providers manage for jobs (volumes, dataset copies), with the
# modes jobs need; under the private workdir only because the example keeps them there
MANAGED = ("fs", "caches")
# the example's host groups, made small: the files are the same, the apply is quick
FEWER_HOSTS = {"cn[0001-0512]": "cn[0001-0004]", "cn[0513-0960]": "cn[0513-0514]",
               "bm[01-48]": "bm[01-02]", "gn[001-032]": "gn[001-002]"}


def small_site(root: Path) -> Path:
    site = root / "site"
    shutil.copytree(EXAMPLE_SITE, site, ignore=shutil.ignore_patterns(".xce"))
    for hosts in (site / "hosts").glob("*.yaml"):
        text = hosts.read_text()
        for many, few in FEWER_HOSTS.items():
            text = text.replace(f"hosts: {many}", f"hosts: {few}")
        hosts.write_text(text)
    return site


def mode(path: Path) -> int:
    return stat.S_IMODE(path.lstat().st_mode)


def exposed(path: Path, top: Path) -> bool:
    """Whether a user in the file's group, or any other user, can read ``path``: it grants
    them read and every folder from ``top`` down to it lets them through."""
    folders = [top, *(p for p in path.parents if p.is_relative_to(top) and p != top)]
    return any(mode(path) & read and all(mode(f) & through for f in folders)
               for read, through in ((stat.S_IRGRP, stat.S_IXGRP), (stat.S_IROTH, stat.S_IXOTH)))


def test_nothing_the_tool_keeps_is_readable_by_others(tmp_path: Path, umask: int) -> None:
    site = small_site(tmp_path)
    plan = tmp_path / "plans" / "new" / "plan.json"  # folders the tool makes for it
    assert plan_cli.main([str(site), "--out", str(plan)]) == 2
    assert apply_cli.main([str(plan), "--site", str(site)]) == 0
    assert drift_cli.main([str(site), "--out", str(tmp_path / "drift.json")]) == 0
    assert plan_cli.main([str(site), "--out", str(plan)]) == 0
    workdir = site / ".xce"

    assert (mode(plan), mode(plan.parent), mode(plan.parent.parent)) == (0o600, 0o700, 0o700)
    everything = sorted(workdir.rglob("*"))
    assert [str(p) for p in everything if exposed(p, workdir)] == []
    kept = [p for p in everything if p.relative_to(workdir).parts[0] not in MANAGED]
    ours = [p for p in kept if p.suffix == ".sqlite" or p.name == "stderr.log"]
    assert {p.relative_to(workdir).as_posix() for p in ours} >= {
        "state.sqlite", "providers/controller/map.sqlite",
        "providers/shared-fs/opledger.sqlite", "providers/shared-fs/directory.sqlite",
        "providers/gpu-cache/dataset.sqlite"}
    assert {str(p): mode(p) for p in ours} == dict.fromkeys(map(str, ours), 0o600)
    folders = [workdir, *(p for p in kept if p.is_dir())]
    assert {str(p): mode(p) for p in folders} == dict.fromkeys(map(str, folders), 0o700)


def test_drift_refuses_to_write_over_a_compiler_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``xce-drift --out build/drift.json`` replaced the compiled drift rules (issue 19 §7)."""
    monkeypatch.chdir(tmp_path)
    site = small_site(tmp_path)
    build = tmp_path / BUILD_DIR
    from compiler.cmds.compile import main as compile_main

    assert compile_main([str(site), "--out", str(build)]) == 0
    before = {p.name: p.read_bytes() for p in build.iterdir()}
    assert set(before) == {*COMPILED_FILES, MANIFEST}  # the names the refusal knows
    for out in ("build/drift.json", "build/manifest.json", "build/allowlists.json"):
        assert drift_cli.main([str(site), "--no-record", "--out", out]) == 1
        err = capsys.readouterr().err
        assert f"{out}: error[XCE850]: --out names a compiler output" in err
        assert "--out build/drift-report" in err
    # --desired: the folder of the compiled map is a build folder, manifest or not
    (build / "manifest.json").unlink()
    desired = ["--desired", str(build / "supply-map.json"), "--no-record"]
    assert drift_cli.main([*desired, "--out", str(build / "bindings.json")]) == 1
    assert "xce-compile writes bindings.json into" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in build.iterdir()} == {
        k: v for k, v in before.items() if k != "manifest.json"}
    # another name in the build folder is written
    assert drift_cli.main([*desired, "--out", str(build / "drift-report.json")]) == 2
    assert (build / "drift-report.json").exists()
