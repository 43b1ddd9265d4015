"""The directory provider on real directories: modes, owners, quotas, retention, attacks."""

from __future__ import annotations

import grp
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from reconciler.protocol import ErrorCode
from reconciler.providers.directory import DirectoryProvider
from reconciler.providers.registry import open_provider
from reconciler.transports import BuiltinTransport
from tests.helpers import call, ok
from tests.providers.directory_site import DAY, Site
from tests.providers.kit import OWNER, REPO, inventory


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """An /etc-like directory outside the volume that an attacker points links at."""
    etc = tmp_path / "etc-like"
    etc.mkdir(mode=0o755)
    (etc / "passwd").write_text("root:x:0:0\n")
    os.chmod(etc / "passwd", 0o644)
    return etc


def fingerprint(path: Path) -> list[tuple[str, int, int, int]]:
    """Mode, owner and size of everything in a tree, to prove it was not touched."""
    out = []
    for p in sorted([path, *path.rglob("*")]):
        st = p.lstat()
        out.append((str(p), st.st_mode, st.st_uid, st.st_size))
    return out


ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
NOBODY = pwd.getpwnam("nobody")
NOBODY_GROUP = grp.getgrgid(NOBODY.pw_gid).gr_name


@ROOT_ONLY
def test_volume_root_is_root_owned_with_the_spec_mode(site: Site) -> None:
    os.chown(site.root, NOBODY.pw_uid, NOBODY.pw_gid)  # adopted from someone else
    os.chmod(site.root, 0o777)
    site.put("volume/shared", verb="update", spec={"path": "/shared", "mode": "0751"})
    st = site.root.lstat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o751, 0, 0)
    entry = inventory(site.t)["volume/shared"]
    assert entry["spec"] == {"path": "/shared", "mode": "0751", "owner": "root",
                             "group": "root", "retention": DAY}
    assert entry["amount"] == os.statvfs(site.root).f_blocks * os.statvfs(site.root).f_frsize


@ROOT_ONLY
def test_volume_root_gets_the_owner_and_group_config_names(site: Site) -> None:
    site.put("volume/shared", verb="update",
             spec={"path": "/shared", "owner": "nobody", "group": "root"})
    st = site.root.lstat()
    assert (st.st_uid, st.st_gid) == (NOBODY.pw_uid, 0)
    spec = inventory(site.t)["volume/shared"]["spec"]
    assert (spec["owner"], spec["group"]) == ("nobody", "root")
    os.chown(site.root, 0, NOBODY.pw_gid)  # an admin's chgrp is drift the plan sees
    assert inventory(site.t)["volume/shared"]["spec"]["group"] == NOBODY_GROUP


@ROOT_ONLY
def test_user_dir_is_0700_and_owned_by_a_resolvable_user(site: Site) -> None:
    result = site.put("volume-dir/shared/nobody", spec={"owner": "nobody"})
    st = (site.root / "nobody").lstat()
    assert (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) == (0o700, NOBODY.pw_uid,
                                                                NOBODY.pw_gid)
    assert "warnings" not in result
    assert inventory(site.t)["volume-dir/shared/nobody"]["spec"] == {
        "path": "/shared/nobody", "mode": "0700", "owner": "nobody"}


def test_unresolvable_owner_is_recorded_not_applied(site: Site) -> None:
    result = site.put("volume-dir/shared/zed-nouser")
    assert "user 'zed-nouser' does not resolve to a uid" in result["warnings"][0]
    assert (site.root / "zed-nouser").lstat().st_uid == os.geteuid()
    spec = inventory(site.t)["volume-dir/shared/zed-nouser"]["spec"]
    assert spec["owner"] == "zed-nouser" and spec["owner_applied"] is False


@pytest.fixture
def new_user() -> Iterator[str]:
    """A name that resolves only once the test adds it as a real system user."""
    name = f"xce{os.getpid()}"
    yield name
    subprocess.run(["userdel", name], capture_output=True, check=False)


@ROOT_ONLY
@pytest.mark.skipif(shutil.which("useradd") is None, reason="needs useradd")
def test_a_recorded_owner_is_applied_once_the_user_exists(site: Site, new_user: str) -> None:
    entry_id = f"volume-dir/shared/{new_user}"
    assert "warnings" in site.put(entry_id)
    assert inventory(site.t)[entry_id]["spec"]["owner_applied"] is False
    subprocess.run(["useradd", "--no-create-home", new_user], check=True, capture_output=True)
    # The inventory now shows the real owner, so the plan updates the directory …
    assert inventory(site.t)[entry_id]["spec"] == {
        "path": f"/shared/{new_user}", "mode": "0700", "owner": "root"}
    assert "warnings" not in site.put(entry_id, verb="update")
    # … and the update gives it to the user.
    assert (site.root / new_user).lstat().st_uid == pwd.getpwnam(new_user).pw_uid
    assert inventory(site.t)[entry_id]["spec"]["owner"] == new_user


def test_an_unprivileged_provider_records_every_owner_it_cannot_apply() -> None:
    """As an ordinary user (root drops to nobody first): the example site runs anywhere."""
    workdir = Path(tempfile.mkdtemp(prefix="xce-unprivileged-"))  # nobody can reach /tmp
    try:
        done = subprocess.run(
            [sys.executable, str(Path(__file__).with_name("unprivileged.py")), str(REPO),
             str(workdir)], capture_output=True, check=True, timeout=60)
    finally:
        shutil.rmtree(workdir)
    out = json.loads(done.stdout)
    assert out["uid"] != 0
    for entry_id, reply in out["replies"].items():
        assert reply["ok"], reply
        [warning] = reply["result"]["warnings"]
        assert "the intended owner is recorded (owner_applied: false)" in warning, entry_id
    assert "may not give it to 'root'" in out["replies"]["volume/shared"]["result"]["warnings"][0]
    specs = {e["id"]: e["spec"] for e in out["inventory"]["result"]["entries"]}
    # It may not look into zed-nouser/2, so it cannot know it is idle: it is kept.
    jobs = [f"job-dir/shared/zed-nouser/{n}" for n in ("1", "2")]
    assert specs.pop(jobs[1])["unchecked"] == "zed-nouser/2 cannot be opened (Permission denied)"
    assert "unchecked" not in specs.pop(jobs[0])
    assert out["evicts"][jobs[0]]["result"]["already_absent"] is False
    assert out["evicts"][jobs[1]]["error"]["code"] == "FAILED_PRECONDITION"
    assert "never evicted" in out["evicts"][jobs[1]]["error"]["message"]
    # What config asked for, so the next plan has nothing it could not fix anyway.
    assert specs == {
        "volume/shared": {"path": "/shared", "mode": "0751", "owner": "root", "group": "root",
                          "owner_applied": False},
        "volume-dir/shared/root": {"path": "/shared/root", "mode": "0700", "owner": "root",
                                   "owner_applied": False},
        "volume-dir/shared/zed-nouser": {"path": "/shared/zed-nouser", "mode": "0700",
                                         "owner": "zed-nouser", "owner_applied": False},
    }


def test_symlink_planted_as_user_dir_is_refused_and_target_untouched(
    site: Site, outside: Path
) -> None:
    (site.root / "alice").symlink_to(outside)
    before = fingerprint(outside)
    for verb in ("create", "update"):
        message = site.refused(verb, ErrorCode.FAILED_PRECONDITION,
                               entry={"id": "volume-dir/shared/alice", "spec": {"mode": "0777"}})
        assert "symbolic link" in message
    site.refused("delete", ErrorCode.FAILED_PRECONDITION, id="volume-dir/shared/alice",
                 destroy=True)
    assert fingerprint(outside) == before
    assert (site.root / "alice").is_symlink()
    assert "volume-dir/shared/alice" not in inventory(site.t)


def test_symlink_inside_the_volume_path_is_never_followed(tmp_path: Path, outside: Path) -> None:
    site = Site(tmp_path)
    (tmp_path / "fs" / "project").symlink_to(outside)
    before = fingerprint(outside)
    message = site.refused("create", ErrorCode.FAILED_PRECONDITION,
                           entry={"id": "volume/proj", "spec": {"path": "/project/vol"}})
    assert "project is a symbolic link" in message
    assert fingerprint(outside) == before and not (outside / "vol").exists()


@pytest.mark.parametrize(
    "entry_id",
    [
        "volume-dir/shared/..",
        "volume-dir/shared/.",
        "volume-dir/shared/-rf",
        "volume-dir/shared/a\0b",
        "volume-dir/shared/",
        "volume-dir/shared/a/b",
        "volume-dir/shared/bad\nname",
        "volume-dir/../etc",
        "quota/shared/user/-x",
        "volume/..",
    ],
)
def test_names_that_are_not_path_safe_are_invalid(site: Site, entry_id: str) -> None:
    before = fingerprint(site.tmp / "fs")
    site.refused("create", ErrorCode.INVALID_ARGUMENT,
                 entry={"id": entry_id, "amount": 1, "spec": {"path": "/x"}})
    assert fingerprint(site.tmp / "fs") == before


def test_volume_path_that_climbs_out_is_invalid(site: Site) -> None:
    site.refused("create", ErrorCode.INVALID_ARGUMENT,
                 entry={"id": "volume/evil", "spec": {"path": "/shared/../../etc"}})


def test_user_dir_with_data_is_deleted_only_with_destroy(site: Site) -> None:
    site.put("volume-dir/shared/bob")
    (site.root / "bob" / "job1").mkdir()
    (site.root / "bob" / "job1" / "out").write_text("results")
    message = site.refused("delete", ErrorCode.FAILED_PRECONDITION, id="volume-dir/shared/bob")
    assert "destroy" in message and (site.root / "bob" / "job1" / "out").exists()
    result = site.request("delete", id="volume-dir/shared/bob", destroy=True).result
    assert result == {"entry": None, "deleted": "volume-dir/shared/bob", "already_absent": False}
    assert not (site.root / "bob").exists()
    again = site.request("delete", id="volume-dir/shared/bob").result
    assert again["already_absent"] is True


def test_quota_ledger_backend(site: Site) -> None:
    site.put("quota/shared/project/climate", amount=10 << 30)
    entry = inventory(site.t)["quota/shared/project/climate"]
    assert entry["amount"] == 10 << 30 and entry["location"] == "volume/shared"
    assert entry["spec"] == {"scope": "project", "subject": "climate", "path": "/shared"}
    site.put("quota/shared/project/climate", verb="update", amount=5 << 30)
    assert inventory(site.t)["quota/shared/project/climate"]["amount"] == 5 << 30
    site.request("delete", id="quota/shared/project/climate")
    assert "quota/shared/project/climate" not in inventory(site.t)


QUOTA_TOOL = """
import json, os, sys
log, *args = sys.argv[1:]
if args[1] == "broken":
    sys.stderr.write("setquota: quota not enabled on this filesystem\\n")
    sys.exit(1)
path = args.pop()
with open(log, "a") as fh:  # the directory {path} names
    fh.write(json.dumps([*args, os.readlink(path)]) + "\\n")
"""


def test_quota_command_backend_runs_the_tool(tmp_path: Path) -> None:
    tool, log = tmp_path / "setquota.py", tmp_path / "calls.log"
    tool.write_text(QUOTA_TOOL)
    template = [sys.executable, str(tool), str(log), "{scope}", "{subject}", "{kib}", "{path}"]
    site = Site(tmp_path, {"quota_backend": "command", "quota_command": template})
    site.put("quota/shared/user/alice", amount=1024 * 1024 + 1)
    site.request("delete", id="quota/shared/user/alice")
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    root = str(site.root)
    assert calls == [["user", "alice", "1025", root], ["user", "alice", "0", root]]
    message = site.refused("create", ErrorCode.FAILED_PRECONDITION,
                           entry={"id": "quota/shared/user/broken", "amount": 1})
    assert "quota not enabled" in message and f"on {root} " in message
    assert "quota/shared/user/broken" not in inventory(site.t)


def test_quota_needs_a_known_volume_and_a_byte_amount(site: Site) -> None:
    message = site.refused("create", ErrorCode.FAILED_PRECONDITION,
                           entry={"id": "quota/nowhere/user/alice", "amount": 1})
    assert "create volume/nowhere first" in message
    site.refused("create", ErrorCode.INVALID_ARGUMENT,
                 entry={"id": "quota/shared/user/alice", "amount": "10G"})
    site.refused("create", ErrorCode.INVALID_ARGUMENT,
                 entry={"id": "quota/shared/group/alice", "amount": 1})


def test_reusing_an_op_id_for_another_request_is_refused(site: Site) -> None:
    ok(site.t, "create", op_id="same", epoch=1, params={"entry": {"id": "volume-dir/shared/u1"}})
    reply = call(site.t, "create", op_id="same", epoch=1,
                 params={"entry": {"id": "volume-dir/shared/u2"}})
    assert reply.error is not None and reply.error.code is ErrorCode.INVALID_ARGUMENT
    assert not (site.root / "u2").exists()


def test_a_change_without_op_id_is_refused(site: Site) -> None:
    reply = call(site.t, "create", epoch=1, params={"entry": {"id": "volume-dir/shared/u1"}})
    assert reply.error is not None and reply.error.code is ErrorCode.INVALID_ARGUMENT


def test_configured_volumes_are_reported_once_adopted(tmp_path: Path) -> None:
    """A configured volume's folder existed before the provider: it is unknown (its root has
    no marker) until adopted, then reported, before any create."""
    (tmp_path / "fs" / "home" / "dave").mkdir(parents=True)
    t = open_provider("fs2", {"kind": "directory", "params": {"volumes": {"home": "/home"}}},
                      tmp_path)
    reply = call(t, "inventory")
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    assert "has no root marker" in reply.error.message
    assert "xce-adopt fs2 home" in reply.error.message
    assert isinstance(t, BuiltinTransport) and isinstance(t.provider, DirectoryProvider)
    t.provider.adopt("home", None, OWNER)
    assert sorted(inventory(t)) == ["volume-dir/home/dave", "volume/home"]


def test_another_owners_quota_is_neither_deleted_nor_grown(site: Site) -> None:
    """Issue 19 §5: a request of site/other deleted quota/shared/user/dave."""
    ok(site.t, "create", op_id="untagged", epoch=1, owner="",  # a directory no site owns
       params={"entry": {"id": "volume-dir/shared/dave"}})
    site.put("quota/shared/user/dave", amount=1000)  # … but its quota is site/test's
    asks = [("delete", {"id": "quota/shared/user/dave"}),
            ("expand", {"id": "volume-dir/shared/dave", "required_bytes": 4096})]
    for n, (verb, params) in enumerate(asks):
        reply = call(site.t, verb, op_id=f"other{n}", epoch=1, owner="site/other", params=params)
        assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
        assert "quota/shared/user/dave is owned by 'site/test', not 'site/other'" in (
            reply.error.message)
    assert inventory(site.t)["quota/shared/user/dave"]["amount"] == 1000
