"""The directory provider's optional capabilities on real files: publish (read-only enforced
on the files themselves) and expand (a quota grows, through the real quota tool)."""

from __future__ import annotations

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
from typing import Any

import pytest

from reconciler.protocol import ErrorCode
from tests.helpers import succeeded
from tests.providers.directory_site import Site
from tests.providers.kit import REPO, inventory
from tests.providers.test_directory import QUOTA_TOOL, fingerprint

NOBODY = pwd.getpwnam("nobody")
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="acting as another user needs root")
ALICE = "volume-dir/shared/alice"


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def tree(site: Site, user: str = "alice") -> Path:
    """``<user>/1234/out/result.h5`` (0664) and ``<user>/notes.txt`` (0644), all writable."""
    site.put(f"volume-dir/shared/{user}", spec={"mode": "0750"})
    top = site.root / user
    (top / "1234" / "out").mkdir(parents=True)
    (top / "1234" / "out" / "result.h5").write_bytes(b"\x89HDF")
    os.chmod(top / "1234" / "out" / "result.h5", 0o664)
    (top / "notes.txt").write_text("notes\n")
    return top


def modes(top: Path) -> dict[str, int]:
    return {str(p.relative_to(top)): stat.S_IMODE(p.lstat().st_mode)
            for p in [top, *top.rglob("*")]}


def publish(site: Site, access: str = "read-only", location: str = "group/gpu",
            target: str = ALICE) -> dict[str, Any]:
    reply = site.request("publish", id=target, location=location, access=access)
    assert reply.ok, reply.to_json()
    return dict(reply.result)


def test_a_read_only_publish_takes_every_write_bit_and_its_unpublish_gives_them_back(
    site: Site,
) -> None:
    top = tree(site)
    before = modes(top)
    result = publish(site)
    assert result["context"] == {"path": "/shared/alice", "readonly": True}
    assert all(mode & 0o222 == 0 for mode in modes(top).values()), modes(top)
    assert {k: m | 0o222 for k, m in modes(top).items()} == {
        k: m | 0o222 for k, m in before.items()}  # nothing but write bits changed
    spec = inventory(site.t)[ALICE]["spec"]
    assert spec["mode"] == "0750"  # the mode it has again once unpublished: no drift
    assert spec["published"] == [{"location": "group/gpu", "access": "read-only"}]
    gave = site.request("unpublish", id=ALICE, location="group/gpu").result
    assert gave["restored"] == 5 and gave["already_absent"] is False
    assert modes(top) == before
    assert "published" not in inventory(site.t)[ALICE]["spec"]


def as_nobody(*script: str) -> list[str]:
    """Run each shell command as ``nobody``: "ok", "denied" (permission denied), or what
    else went wrong, so that a command failing for another reason does not pass."""
    outcomes = []
    for cmd in script:
        done = subprocess.run(["sh", "-c", cmd], user=NOBODY.pw_uid, group=NOBODY.pw_gid,
                              extra_groups=[], capture_output=True, text=True, check=False)
        denied = done.returncode != 0 and "Permission denied" in done.stderr
        outcomes.append("ok" if done.returncode == 0 else "denied" if denied else done.stderr)
    return outcomes


@pytest.fixture
def open_site() -> Iterator[Site]:
    """A site in a folder that ``nobody`` can reach (pytest's own tmp is root-only)."""
    where = Path(tempfile.mkdtemp(prefix="xce-publish-"))
    os.chmod(where, 0o755)
    made = Site(where)
    try:
        yield made
    finally:
        made.t.close()
        shutil.rmtree(where)


@ROOT_ONLY
def test_the_owner_cannot_write_a_read_only_directory(open_site: Site) -> None:
    site = open_site
    top = tree(site, "nobody")
    for path in [top, *top.rglob("*")]:
        os.chown(path, NOBODY.pw_uid, NOBODY.pw_gid)
    result, new = top / "1234" / "out" / "result.h5", top / "1234" / "out" / "new"
    writes = (f"echo more >> {result}", f"echo x > {new}", f"rm -f {top / 'notes.txt'}",
              f"mv {result} {top}/moved")
    publish(site, target="volume-dir/shared/nobody")
    assert as_nobody(*writes) == ["denied"] * 4  # every write refused, to the files' owner
    assert result.read_bytes() == b"\x89HDF" and not new.exists()
    # Its owner may give the bits back (a limit of mode bits): the inventory shows it ...
    assert as_nobody(f"chmod u+w {top}") == ["ok"]
    assert inventory(site.t)["volume-dir/shared/nobody"]["spec"]["read_only_intact"] is False
    publish(site, target="volume-dir/shared/nobody")  # ... and publishing again takes it back
    assert "read_only_intact" not in inventory(site.t)["volume-dir/shared/nobody"]["spec"]
    assert as_nobody(f"echo x > {top}/again") == ["denied"]
    site.request("unpublish", id="volume-dir/shared/nobody", location="group/gpu")
    assert as_nobody(*writes) == ["ok"] * 4


def test_a_hard_link_out_of_the_tree_refuses_the_publish_and_changes_nothing(
    site: Site, tmp_path: Path
) -> None:
    top = tree(site)
    outside = tmp_path / "passwd-like"
    outside.write_text("root:x:0:0\n")
    os.chmod(outside, 0o644)
    (top / "1234" / "out" / "zz").mkdir()
    os.link(outside, top / "1234" / "out" / "zz" / "linked")  # reached after the rest froze
    before, outside_before = fingerprint(top), fingerprint(outside)
    message = site.refused("publish", ErrorCode.FAILED_PRECONDITION, id=ALICE,
                           location="group/gpu", access="read-only")
    assert "has 2 hard links" in message
    assert fingerprint(top) == before and fingerprint(outside) == outside_before
    assert "published" not in inventory(site.t)[ALICE]["spec"]
    assert site.provider.state.frozen("shared", "alice") == []


def test_a_link_inside_is_never_followed_and_a_linked_user_dir_is_refused(
    site: Site, tmp_path: Path
) -> None:
    outside = tmp_path / "etc-like"
    outside.mkdir()
    (outside / "shadow").write_text("secret\n")
    os.chmod(outside / "shadow", 0o640)
    top = tree(site)
    (top / "to-etc").symlink_to(outside)
    (top / "to-shadow").symlink_to(outside / "shadow")
    untouched = fingerprint(outside)
    publish(site)
    assert fingerprint(outside) == untouched
    (site.root / "mallory").symlink_to(outside)
    for verb in ("publish", "unpublish"):
        message = site.refused(verb, ErrorCode.FAILED_PRECONDITION, id="volume-dir/shared/mallory",
                               location="group/gpu", access="read-only")
        assert "symbolic link" in message
    assert fingerprint(outside) == untouched


@pytest.mark.parametrize(("target", "location"), [
    ("volume-dir/shared/..", "group/gpu"),
    ("volume-dir/../etc", "group/gpu"),
    ("volume-dir/shared/a/b", "group/gpu"),
    (ALICE, "/etc"),
    (ALICE, "group/../../etc"),
    (ALICE, "volume/shared"),
    (ALICE, "host/"),
])
def test_ids_and_locations_that_could_climb_out_are_invalid(
    site: Site, target: str, location: str
) -> None:
    tree(site)
    before = fingerprint(site.tmp / "fs")
    site.refused("publish", ErrorCode.INVALID_ARGUMENT, id=target, location=location,
                 access="read-only")
    assert fingerprint(site.tmp / "fs") == before


def test_publications_follow_the_volumes_access_mode(site: Site) -> None:
    tree(site)

    def refused(code: ErrorCode, access: str, location: str) -> str:
        return site.refused("publish", code, id=ALICE, location=location, access=access)

    site.put("volume/shared", verb="update",
             spec={"path": "/shared", "access_mode": "multi-node-reader-only"})
    assert "multi-node-reader-only" in refused(ErrorCode.FAILED_PRECONDITION, "read-write",
                                               "group/gpu")
    site.put("volume/shared", verb="update",
             spec={"path": "/shared", "access_mode": "single-node-writer"})
    assert "one host at a time" in refused(ErrorCode.FAILED_PRECONDITION, "read-write",
                                           "group/gpu")
    publish(site, "read-write", "host/gn001")
    assert "one host at a time" in refused(ErrorCode.FAILED_PRECONDITION, "read-write",
                                           "host/gn002")
    assert "unpublish it before" in refused(ErrorCode.ALREADY_EXISTS, "read-only", "host/gn001")
    site.request("unpublish", id=ALICE, location="host/gn001")
    site.put("volume/shared", verb="update",
             spec={"path": "/shared", "access_mode": "multi-node-single-writer"})
    publish(site, "read-write", "group/gpu")
    assert "published read-write to group/gpu" in refused(
        ErrorCode.FAILED_PRECONDITION, "read-write", "group/cpu")
    assert "take that location's writes away" in refused(
        ErrorCode.FAILED_PRECONDITION, "read-only", "group/cpu")
    publish(site, "read-write", "group/gpu")  # the same publish again converges


def test_a_published_directory_is_neither_deleted_nor_evicted_from(site: Site) -> None:
    top = tree(site)
    publish(site)
    for target in (ALICE, "volume/shared"):
        message = site.refused("delete", ErrorCode.FAILED_PRECONDITION, id=target, destroy=True)
        assert "unpublish" in message and "group/gpu" in message
    reply = site.evict("alice", "1234", site.job_dir("alice", "1234"))
    assert reply.error is not None and "published read-only" in reply.error.message
    assert (top / "1234" / "out" / "result.h5").exists()
    site.request("unpublish", id=ALICE, location="group/gpu")
    assert not succeeded(site.evict("alice", "1234"))["already_absent"]
    assert not (top / "1234").exists() and (top / "notes.txt").exists()


def test_an_update_keeps_a_read_only_directory_read_only(site: Site) -> None:
    top = tree(site)
    publish(site)
    site.put(ALICE, verb="update", spec={"mode": "0770"})
    assert stat.S_IMODE(top.stat().st_mode) == 0o550  # the new mode, still without write bits
    assert inventory(site.t)[ALICE]["spec"]["mode"] == "0770"
    site.request("unpublish", id=ALICE, location="group/gpu")
    assert stat.S_IMODE(top.stat().st_mode) == 0o770


def test_unpublish_of_what_is_not_published_or_gone_succeeds(site: Site) -> None:
    top = tree(site)
    assert site.request("unpublish", id=ALICE, location="group/gpu").result[
        "already_absent"] is True
    publish(site, location="host/gn001")
    publish(site, location="group/gpu")  # a second read-only publication shares the freeze
    site.request("unpublish", id=ALICE, location="host/gn001")
    assert modes(top)["notes.txt"] == 0o444  # still published read-only to group/gpu
    shutil.rmtree(top)  # removed by hand (root) while published
    result = site.request("unpublish", id=ALICE, location="group/gpu").result
    assert result["entry"] is None and result["already_absent"] is False
    assert site.provider.state.publications("shared") == {}
    assert site.provider.state.frozen("shared", "alice") == []


def quota_site(tmp_path: Path) -> tuple[Site, Path]:
    tool, log = tmp_path / "setquota.py", tmp_path / "calls.log"
    tool.write_text(QUOTA_TOOL)
    template = [sys.executable, str(tool), str(log), "{scope}", "{subject}", "{kib}", "{path}"]
    return Site(tmp_path, {"quota_backend": "command", "quota_command": template}), log


def test_expand_grows_a_directorys_quota_through_the_quota_tool(tmp_path: Path) -> None:
    site, log = quota_site(tmp_path)
    tree(site)
    site.put("quota/shared/user/alice", amount=1 << 20)
    grown = site.request("expand", id=ALICE, required_bytes=2 << 20).result
    assert (grown["capacity_bytes"], grown["expanded"]) == (2 << 20, True)
    assert grown["entry"]["id"] == "quota/shared/user/alice"
    kept = site.request("expand", id="quota/shared/user/alice", required_bytes=1).result
    assert (kept["capacity_bytes"], kept["expanded"]) == (2 << 20, False)  # never shrinks
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls == [["user", "alice", "1024", str(site.root)],
                     ["user", "alice", "2048", str(site.root)]]  # the tool ran once more only
    assert inventory(site.t)["quota/shared/user/alice"]["amount"] == 2 << 20


def test_expand_refuses_what_it_cannot_grow(site: Site, tmp_path: Path) -> None:
    tree(site)
    site.put("quota/shared/project/climate", amount=1000)
    cases = [
        (ErrorCode.NOT_FOUND, {"id": ALICE, "required_bytes": 10}, "is not set"),
        (ErrorCode.NOT_FOUND, {"id": "volume-dir/shared/zed", "required_bytes": 10},
         "does not exist"),
        (ErrorCode.INVALID_ARGUMENT, {"id": "quota/shared/project/climate",
                                      "required_bytes": 10, "limit_bytes": 500}, "never shrinks"),
        (ErrorCode.RESOURCE_EXHAUSTED, {"id": "quota/shared/project/climate",
                                        "required_bytes": 1 << 62}, "volume 'shared' holds"),
        (ErrorCode.UNIMPLEMENTED, {"id": "volume/shared", "required_bytes": 10},
         "for volume entries, only for quota, volume-dir"),
        (ErrorCode.INVALID_ARGUMENT, {"id": "quota/shared/project/..", "required_bytes": 10},
         "not path-safe"),
        (ErrorCode.INVALID_ARGUMENT, {"id": ALICE, "required_bytes": -1}, "whole number"),
    ]
    for code, params, words in cases:
        assert words in site.refused("expand", code, **params), params
    (site.root / "mallory").symlink_to(tmp_path)
    site.put("quota/shared/user/mallory", amount=1000)
    assert "symbolic link" in site.refused("expand", ErrorCode.FAILED_PRECONDITION,
                                           id="volume-dir/shared/mallory", required_bytes=10)
    assert inventory(site.t)["quota/shared/project/climate"]["amount"] == 1000


KILLED_PUBLISH = """
import os, sys
sys.path.insert(0, sys.argv[1])
from pathlib import Path
import reconciler.providers.directory_publish as publish
from reconciler.protocol import Request
from reconciler.providers.registry import open_provider

real, calls = publish._set_bits, []
def dies_on_the_second_file(*args, **kw):
    calls.append(1)
    if len(calls) == 2:
        os._exit(9)  # killed: no clean-up, no rollback
    return real(*args, **kw)
publish._set_bits = dies_on_the_second_file
t = open_provider("shared-fs", {"kind": "directory", "params": {}}, Path(sys.argv[2]))
t.call(Request("publish", op_id="killed", epoch=1, owner="site/test", params={
    "id": "volume-dir/shared/alice", "location": "group/gpu", "access": "read-only"}))
"""


def test_a_publish_killed_halfway_loses_no_write_bit(tmp_path: Path) -> None:
    site = Site(tmp_path)
    top = tree(site)
    for i in range(3):
        (top / f"more{i}.txt").write_text("x")
    before = modes(top)
    site.t.close()
    done = subprocess.run([sys.executable, "-c", KILLED_PUBLISH, str(REPO), str(tmp_path)],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 9, done.stderr
    assert modes(top) != before  # it was killed after taking some bits
    again = Site(tmp_path)
    again.ops = site.ops  # new op_ids: the first provider used these
    assert again.request("unpublish", id=ALICE, location="group/gpu").ok
    assert modes(top) == before
