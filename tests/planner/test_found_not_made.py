"""Issue 21: a user directory made by hand is never a silent "No changes" (XCE757).

A desired user directory found untagged with another mode or owner than site-config's is
co-managed — never chmod-ed nor chown-ed — and a warning naming it, each field (found and
desired) and the adopt command. ``xce-adopt PROVIDER volume-dir/V/U`` makes it ours and the
next apply corrects it (Terraform's ``import``). The end-to-end test runs the real CLIs on
the small site over real directories: run as root, the directory is root-owned (the
issue's case) and given to a real account; otherwise only the mode is corrected.
"""

from __future__ import annotations

import os
import pwd
import stat
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from compiler.contract.supply_map import Entry, SupplyMap
from compiler.core.problems import Severity
from reconciler.cmds import adopt as adopt_cli
from reconciler.cmds import apply as apply_cli
from reconciler.cmds import plan as plan_cli
from reconciler.plan import codes
from reconciler.plan.model import Plan
from reconciler.planner import make_plan
from tests.apply.small_site import write_site
from tests.providers.test_directory_found import ROOT, some_user

OWNER = "site/t"
ALICE = "volume-dir/shared/alice"
ADOPT = f"xce-adopt fs {ALICE}"


def user_dir(tag: str | None = None, **spec: Any) -> Entry:
    """Alice's directory: ``tag`` its owner tag (None: found, not made), ``spec`` what
    differs from site-config's."""
    return Entry(ALICE, "volume-dir", "available", provider="fs", owner=tag,
                 source="config" if tag == OWNER else "provisioner",
                 spec={"path": "/shared/alice", "mode": "0700", "owner": "alice", **spec})


def plan_of(live: Entry, targets: tuple[str, ...] = ()) -> Plan:
    desired = SupplyMap({ALICE: user_dir(OWNER)}, owner=OWNER)
    return make_plan(desired, SupplyMap({ALICE: live}), now=0.0, targets=targets)


def found(plan: Plan) -> list[str]:
    return [p.message + " | " + p.hint for p in plan.problems if p.code == codes.FOUND_NOT_MADE]


def test_a_found_directory_that_differs_is_a_warning_with_its_fields_and_adopt_path() -> None:
    plan = plan_of(user_dir(mode="0755", owner="root"))
    assert not plan.actions and [n.entry for n in plan.co_managed] == [ALICE]
    (problem,) = [p for p in plan.problems if p.code == codes.FOUND_NOT_MADE]
    assert problem.severity is Severity.WARNING and problem.subject == ALICE
    for text in (f"{ALICE} (/shared/alice)", "carries no owner tag",
                 "spec.mode is 0755, site-config says 0700",
                 "spec.owner is root, site-config says alice"):
        assert text in problem.message, problem.message
    assert ADOPT in problem.hint


@pytest.mark.parametrize(("live", "why"), [
    (user_dir(), "found as site-config wants it: nothing to say"),
    (user_dir(OWNER, mode="0755"), "ours: updated, not warned about"),
    (user_dir("site/other", mode="0755"), "another site's: co-managed, not adoptable"),
])
def test_only_an_untagged_directory_that_differs_is_warned_about(live: Entry, why: str) -> None:
    plan = plan_of(live)
    assert found(plan) == [], why
    assert bool(plan.actions) == (live.owner == OWNER), why


def test_a_directory_left_out_by_target_is_not_warned_about() -> None:
    live = user_dir(mode="0755")
    assert found(plan_of(live, (ALICE,)))
    assert found(plan_of(live, ("volume-dir/shared/bob",))) == []

def test_only_user_directories_are_warned_about() -> None:
    volume = Entry("volume/shared", "volume", "available", "provisioner", provider="fs",
                   spec={"path": "/shared", "mode": "0755"})
    desired = SupplyMap({volume.id: replace(volume, owner=OWNER, spec={"mode": "0700"})},
                        owner=OWNER)
    plan = make_plan(desired, SupplyMap({volume.id: volume}), now=0.0)
    assert [n.entry for n in plan.co_managed] == [volume.id] and found(plan) == []


# --- end to end: xce-plan, xce-adopt, xce-apply on real directories -----------------------


def site_wanting(site: Path, users: str) -> None:
    storage = site / "storage.yaml"
    text = storage.read_text().replace("{alice: 1TiB, bob: 2TiB}", "{bob: 2TiB}")
    storage.write_text(text.replace("users: [alice, bob]", f"users: [{users}]")
                       .replace("users: [bob]", f"users: [{users}]"))


def in_folder(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Commands run in ``folder`` with the small site's embedded defaults (no state URL or
    workdir from the environment)."""
    monkeypatch.chdir(folder)
    for name in ("XCE_STATE_URL", "XCE_WORKDIR"):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], main: Any, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_hand_made_directory_is_warned_adopted_and_corrected(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    in_folder(tmp_path, monkeypatch)
    user = some_user().pw_name if ROOT else "alice"
    site = write_site(tmp_path / "site")
    site_wanting(site, "bob")
    assert apply_cli.main(["site", "--auto-approve"]) == 0
    folder = site / ".xce" / "fs" / "shared" / "xce" / user
    folder.mkdir()  # by hand, before the apply: mode 0755, root's when run as root
    folder.chmod(0o755)
    made = folder.stat()
    site_wanting(site, f"{user}, bob")
    entry = f"volume-dir/shared/{user}"

    code, out = run(capsys, plan_cli.main, "site")
    assert code == 0 and "No changes" not in out, out
    me = next((p.pw_name for p in pwd.getpwall() if p.pw_uid == made.st_uid), made.st_uid)
    for text in (f"{entry}: warning[{codes.FOUND_NOT_MADE}]", "spec.mode is 0755, site-config "
                 f"says 0700; spec.owner is {me}, site-config says {user}",
                 f"xce-adopt shared-fs {entry}", "yet not in sync"):
        assert text in out, out
    assert os.stat(folder).st_mode == made.st_mode  # never chmod-ed by a plan

    code, out = run(capsys, adopt_cli.main, "--site", "site", "shared-fs", entry)
    assert code == 0 and f"adopted {Path('site/.xce/fs/shared/xce') / user} as {entry}" in out
    assert "found: mode 0755" in out and f"site-config: mode 0700, owner {user}" in out
    now = os.stat(folder)  # adopting changes nothing on disk
    assert (now.st_mode, now.st_uid, now.st_mtime_ns) == (made.st_mode, made.st_uid,
                                                          made.st_mtime_ns)
    code, out = run(capsys, plan_cli.main, "site")
    assert code == 2 and f"update   {entry}" in out and codes.FOUND_NOT_MADE not in out, out

    assert apply_cli.main(["site", "--auto-approve"]) == 0
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    if ROOT:
        assert folder.stat().st_uid == some_user().pw_uid
    code, out = run(capsys, plan_cli.main, "site")
    assert code == 0 and "No changes" in out, out


def test_xce_adopt_refuses_a_directory_config_does_not_want(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    in_folder(tmp_path, monkeypatch)
    write_site(tmp_path / "site")
    assert apply_cli.main(["site", "--auto-approve"]) == 0
    (tmp_path / "site/.xce/fs/shared/xce/carol").mkdir()
    capsys.readouterr()
    for argv, code in ((["shared-fs", "volume-dir/shared/carol"], "XCE727"),
                       (["shared-fs", "volume-dir/shared/dave"], "XCE727"),
                       (["controller", "volume-dir/shared/alice"], "XCE728"),
                       (["shared-fs", "volume-dir/shared"], "XCE728")):
        rc, out = run(capsys, adopt_cli.main, "--site", "site", *argv)
        assert rc == 1 and f"error[{code}]" in out, (argv, out)
    rc, out = run(capsys, adopt_cli.main, "--site", "site", "shared-fs", ALICE)
    assert rc == 0 and "was managed already" in out, out
