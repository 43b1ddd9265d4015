"""Issue 19 §4: an unmounted volume is not an empty one.

A volume or cache root is trusted only with the marker its provider wrote there: a root
emptied and made again (an unmounted mount point), one with another root's marker, one
with a marker from another filesystem, one gone entirely — each makes the inventory fail
(so the live map has the provider's entries unknown, never absent) and nothing is created
under it, until an admin adopts it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from reconciler.cmds import adopt as adopt_cli
from reconciler.cmds import apply as apply_cli
from reconciler.cmds import plan as plan_cli
from reconciler.live import gather_live
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.root_marker import MARKER
from tests.apply.small_site import write_site
from tests.helpers import call
from tests.providers.directory_site import Site
from tests.providers.kit import OWNER, inventory
from tests.providers.test_dataset_copy import LOC, Cache, make_tree

LOOKS_UNMOUNTED = "the volume looks unmounted"
USERS = ("alice", "bob")


@pytest.fixture
def site(tmp_path: Path) -> Site:
    made = Site(tmp_path)
    for user in USERS:
        made.put(f"volume-dir/shared/{user}")
    made.put("quota/shared/user/alice", amount=1000)
    return made


def remount_empty(root: Path) -> None:
    """What an unmounted volume leaves: its mount point, an empty folder."""
    shutil.rmtree(root)
    root.mkdir()


def edit_marker(folder: Path, **fields: str) -> None:
    marker = folder / MARKER
    doc = json.loads(marker.read_text())
    marker.chmod(0o644)
    marker.write_text(json.dumps({**doc, **fields}))


def assert_unmounted(site: Site, why: str) -> None:
    """Inventory and every change under the root are refused, saying why; nothing is made."""
    held = sorted(p.name for p in site.root.iterdir()) if site.root.exists() else None
    reply = call(site.t, "inventory")
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    for text in (why, LOOKS_UNMOUNTED, "xce-adopt shared-fs shared", str(site.root)):
        assert text in reply.error.message, reply.error.message
    asks = [("create", {"entry": {"id": "volume-dir/shared/carol"}}),
            ("create", {"entry": {"id": "volume-dir/shared/alice"}}),
            ("create", {"entry": {"id": "volume/shared", "spec": {"path": "/shared"}}}),
            ("update", {"entry": {"id": "quota/shared/user/alice", "amount": 5}}),
            ("delete", {"id": "volume-dir/shared/bob", "destroy": True})]
    for verb, params in asks:
        message = site.refused(verb, ErrorCode.FAILED_PRECONDITION, **params)
        assert why in message and LOOKS_UNMOUNTED in message, (verb, params, message)
    after = sorted(p.name for p in site.root.iterdir()) if site.root.exists() else None
    assert after == held  # nothing created under it (nor the root made again)


def test_a_new_volume_root_is_made_with_its_marker(site: Site) -> None:
    mark = json.loads((site.root / MARKER).read_text())
    assert mark["root"] == "volume/shared" and len(mark["id"]) == 32
    assert mark == json.loads(site.provider.ledger.root_mark("volume/shared") or "")
    assert sorted(inventory(site.t)) == sorted(
        ["volume/shared", "volume-dir/shared/alice", "volume-dir/shared/bob",
         "quota/shared/user/alice"])


def test_a_root_emptied_and_made_again_is_unknown_not_empty(site: Site, tmp_path: Path) -> None:
    """The issue's case: the 20 user directories are not re-created on the bare mount point."""
    remount_empty(site.root)
    assert_unmounted(site, "has no root marker (.xce-root) of volume/shared")
    assert list(site.root.iterdir()) == []
    bindings = {"providers": {"shared-fs": {"kind": "directory", "params": {}}}, "proxies": {}}
    live = gather_live(bindings, tmp_path, OWNER).live
    assert LOOKS_UNMOUNTED in live.unknown["shared-fs"]  # unknown, so nothing is planned
    assert not [e for e in live.entries if e.startswith(("volume", "quota"))]


def test_a_root_whose_marker_names_another_volume(site: Site) -> None:
    site.put("volume/scratch", spec={"path": "/scratch"})
    (site.root / MARKER).unlink()
    shutil.copy(site.tmp / "fs" / "scratch" / MARKER, site.root / MARKER)
    assert_unmounted(site, "holds the root marker of volume/scratch, not of volume/shared")


def test_a_marker_from_another_filesystem(site: Site) -> None:
    edit_marker(site.root, fs="fsid:123456789abcdef")
    assert_unmounted(site, "its root marker was written on filesystem fsid:123456789abcdef, "
                     "but the folder is on filesystem ")


def test_a_marker_this_provider_did_not_write(site: Site) -> None:
    """A copy of another site's (or provider's) volume: same name, same filesystem."""
    edit_marker(site.root, id="0" * 32)
    assert_unmounted(site, f"its root marker (id {'0' * 32}) is not the one this provider "
                     "recorded")


def test_a_root_missing_entirely_is_never_made_again(site: Site) -> None:
    shutil.rmtree(site.root)
    assert_unmounted(site, f"{site.root} does not exist, but this provider created or "
                     "adopted it")
    assert not site.root.exists()


def test_an_existing_folder_is_not_taken_for_a_new_volume(site: Site) -> None:
    (site.tmp / "fs" / "home").mkdir()
    message = site.refused("create", ErrorCode.FAILED_PRECONDITION,
                           entry={"id": "volume/home", "spec": {"path": "/home"}})
    assert "has no root marker (.xce-root) of volume/home" in message
    assert "xce-adopt shared-fs home" in message
    assert list((site.tmp / "fs" / "home").iterdir()) == []


def test_adopting_the_root_makes_it_trusted_again(site: Site) -> None:
    remount_empty(site.root)
    adopted = site.provider.adopt("shared", None, OWNER)
    assert adopted.was is not None and "has no root marker" in adopted.was
    assert json.loads((site.root / MARKER).read_text())["id"] == adopted.mark.id
    assert sorted(inventory(site.t)) == ["quota/shared/user/alice", "volume/shared"]
    site.put("volume-dir/shared/alice")  # a plan re-creates the directories now
    assert (site.root / "alice").is_dir()


def test_adopting_a_missing_root_or_another_owners_volume_is_refused(site: Site) -> None:
    shutil.rmtree(site.root)
    with pytest.raises(ProviderError, match="there is nothing to adopt") as missing:
        site.provider.adopt("shared", None, OWNER)
    assert missing.value.code is ErrorCode.NOT_FOUND
    site.root.mkdir()
    with pytest.raises(ProviderError, match="owned by 'site/test', not 'site/other'"):
        site.provider.adopt("shared", None, "site/other")
    assert not (site.root / MARKER).exists()


def test_a_root_whose_making_was_killed_is_made_again_or_trusted(tmp_path: Path) -> None:
    """A root is made under a temporary name and renamed into place with its marker: a kill
    leaves no root or a marked one, never an unmarked one (which reads as unmounted)."""
    site = Site(tmp_path)
    ledger = site.provider.ledger
    mark = json.loads(ledger.root_mark("volume/shared") or "")
    pending = json.dumps({**mark, "pending": True})
    ledger.record_root_mark("volume/shared", pending)  # killed after the rename
    assert "volume/shared" in inventory(site.t)
    assert json.loads(ledger.root_mark("volume/shared") or "") == mark  # confirmed
    shutil.rmtree(site.root)  # killed before the rename: a leftover, no root
    (tmp_path / "fs" / ".xce-new-shared-0badf00d").mkdir()
    ledger.record_root_mark("volume/shared", pending)
    assert "volume/shared" not in inventory(site.t)  # never made: not "unmounted"
    site.put("volume/shared", spec={"path": "/shared"})
    assert sorted(p.name for p in (tmp_path / "fs").iterdir()) == ["shared"]
    assert json.loads((site.root / MARKER).read_text())["id"] != mark["id"]


def test_deleting_a_volume_keeps_its_marker_until_it_goes(site: Site) -> None:
    site.put("volume/empty", spec={"path": "/empty"})
    empty = site.tmp / "fs" / "empty"
    assert sorted(p.name for p in empty.iterdir()) == [MARKER]
    refused = site.refused("delete", ErrorCode.FAILED_PRECONDITION, id="volume/shared")
    assert "holds data" in refused and (site.root / MARKER).is_file()
    assert site.request("delete", id="volume/empty").ok  # only its marker: no destroy needed
    assert not empty.exists() and site.provider.ledger.root_mark("volume/empty") is None


# --- the dataset cache --------------------------------------------------------------------


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    c = Cache(tmp_path)
    make_tree(c.src / "imagenet")
    return c


def assert_cache_unmounted(cache: Cache, why: str) -> None:
    held = cache.listing()
    reply = call(cache.t, "inventory")
    assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
    for text in (why, LOOKS_UNMOUNTED, "xce-adopt cache-gpu"):
        assert text in reply.error.message, reply.error.message
    for reply in (cache.stage("era5@1", "imagenet"),
                  cache.request("delete", action="evict", id=f"dataset-copy/imagenet@3@{LOC}")):
        assert reply.error is not None and reply.error.code is ErrorCode.FAILED_PRECONDITION
        assert why in reply.error.message
    assert cache.listing() == held


def test_a_new_cache_holds_nothing_until_its_first_stage_makes_it(cache: Cache) -> None:
    assert not cache.root.exists() and inventory(cache.t) == {}
    assert call(cache.t, "capacity").result["used"] == 0
    assert call(cache.t, "probe").result["ready"] is True
    assert cache.stage("imagenet@3", "imagenet").ok
    assert json.loads((cache.root / MARKER).read_text())["root"] == "cache/cache-gpu"


def test_a_cache_emptied_and_made_again_is_unknown(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet").ok
    remount_empty(cache.root)
    assert_cache_unmounted(cache, "has no root marker (.xce-root) of cache/cache-gpu")
    cache.adopt()
    assert cache.states() == {}  # adopted: the copy is truly gone, and a stage may make it
    assert cache.stage("imagenet@3", "imagenet").ok


def test_a_cache_with_a_foreign_marker_or_none_at_all(cache: Cache) -> None:
    assert cache.stage("imagenet@3", "imagenet").ok
    edit_marker(cache.root, fs="dev:ffff")
    assert_cache_unmounted(cache, "was written on filesystem dev:ffff")
    edit_marker(cache.root, fs=cache.recorded_mark()["fs"], root="cache/cache-cpu")
    assert_cache_unmounted(cache, "holds the root marker of cache/cache-cpu")
    shutil.rmtree(cache.root)
    assert_cache_unmounted(cache, "does not exist, but this provider created or adopted it")
    assert not cache.root.exists()


# --- xce-adopt, end to end ----------------------------------------------------------------


def test_xce_adopt_is_the_step_that_lets_a_plan_fill_a_root_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's reproduction on the small site: after the mount point is emptied the plan
    creates nothing; after ``xce-adopt`` it re-creates the user directories."""
    monkeypatch.chdir(tmp_path)
    for name in ("XCE_STATE_URL", "XCE_WORKDIR"):
        monkeypatch.delenv(name, raising=False)
    write_site(tmp_path / "site")
    assert apply_cli.main(["site", "--auto-approve"]) == 0
    root = tmp_path / "site" / ".xce" / "fs" / "shared" / "xce"
    remount_empty(root)
    capsys.readouterr()
    assert plan_cli.main(["site"]) == 1  # a provider did not report: an error, no change
    out, err = capsys.readouterr()
    assert "create   volume-dir" not in out and "Plan: 0 to add" in out
    assert LOOKS_UNMOUNTED in out + err and "xce-adopt shared-fs shared" in out + err
    assert list(root.iterdir()) == []

    for argv, code in ((["controller"], "XCE728"), (["nope"], "XCE728"), ([], "XCE729"),
                       (["shared-fs"], "XCE728"), (["shared-fs", "scratch"], "XCE727")):
        assert adopt_cli.main(["--site", "site", *argv]) == 1
        assert f"error[{code}]" in capsys.readouterr().err, argv
    assert not (root / MARKER).exists()

    assert adopt_cli.main(["--site", "site", "shared-fs", "volume/shared"]) == 0
    out = capsys.readouterr().out
    assert f"adopted {Path('site/.xce/fs/shared/xce')} as the root of volume/shared" in out
    assert "before: " in out and "has no root marker" in out
    assert plan_cli.main(["site"]) == 2
    out = capsys.readouterr().out
    assert "create   volume-dir/shared/alice" in out and "create   volume-dir/shared/bob" in out
