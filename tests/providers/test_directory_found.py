"""Issue 21: a user directory made by hand is found, not made, until it is adopted.

The provider reports it as it is (its real mode and owner) and untagged, so a plan never
touches it; ``adopt_dir`` (``xce-adopt PROVIDER volume-dir/V/U``) tags it without changing
anything on disk, and from then on an update of the site's owner sets its mode and owner.
Run as root, the directory is made root-owned (the issue's case) and given to a real
account; otherwise only its mode is checked, the owner being recorded as pending.
"""

from __future__ import annotations

import os
import pwd
import re
import stat
from pathlib import Path

import pytest

from reconciler.protocol import ErrorCode, ProviderError
from tests.providers.directory_site import Site
from tests.providers.kit import OWNER, inventory

ROOT = os.geteuid() == 0


def some_user() -> pwd.struct_passwd:
    """An account other than root with a path-safe name, to give a directory to as root."""
    return next(p for p in pwd.getpwall()
                if p.pw_uid != 0 and re.fullmatch(r"[a-z_][a-z0-9_-]*", p.pw_name))


@pytest.fixture
def site(tmp_path: Path) -> Site:
    return Site(tmp_path)


def by_hand(site: Site, user: str, mode: int = 0o755) -> Path:
    """What an admin does before the apply: ``mkdir`` and ``chmod`` (root-owned as root)."""
    folder = site.root / user
    folder.mkdir()
    folder.chmod(mode)
    return folder


def test_a_hand_made_directory_is_reported_as_found(site: Site) -> None:
    by_hand(site, "alice")
    found = inventory(site.t)["volume-dir/shared/alice"]
    assert found.get("owner") is None  # no owner tag: found, not made by this provider
    assert found["spec"]["mode"] == "0755"
    assert found["spec"]["owner"] == pwd.getpwuid(os.geteuid()).pw_name
    assert "owner_applied" not in found["spec"]  # its real owner, nothing pending
    made = site.put("volume-dir/shared/bob")["entry"]
    assert made["owner"] == OWNER and inventory(site.t)["volume-dir/shared/bob"]["owner"] == OWNER


def test_adopting_tags_it_and_changes_nothing_on_disk(site: Site) -> None:
    folder = by_hand(site, "alice")
    before = folder.stat()
    adopted = site.provider.adopt_dir("shared", "alice", OWNER)
    assert (adopted.id, adopted.shown, adopted.already) == (
        "volume-dir/shared/alice", str(folder), False)
    assert adopted.found.spec["mode"] == "0755"
    after = folder.stat()
    assert (after.st_mode, after.st_uid, after.st_gid) == (
        before.st_mode, before.st_uid, before.st_gid)
    assert inventory(site.t)["volume-dir/shared/alice"]["owner"] == OWNER
    assert site.provider.adopt_dir("shared", "alice", OWNER).already


def test_once_adopted_an_update_sets_its_mode_and_owner(site: Site) -> None:
    user = some_user().pw_name if ROOT else "alice"
    folder = by_hand(site, user)
    site.provider.adopt_dir("shared", user, OWNER)
    entry = site.put(f"volume-dir/shared/{user}", "update",
                     spec={"mode": "0700", "owner": user})["entry"]
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert entry["spec"]["owner"] == user and entry["owner"] == OWNER
    if ROOT:  # given for real: no longer root's
        assert folder.stat().st_uid == pwd.getpwnam(user).pw_uid
        assert "owner_applied" not in entry["spec"]
    else:
        assert entry["spec"]["owner_applied"] is False


def test_adopting_what_is_not_there_or_not_ours_is_refused(site: Site) -> None:
    with pytest.raises(ProviderError, match="does not exist") as missing:
        site.provider.adopt_dir("shared", "alice", OWNER)
    assert missing.value.code is ErrorCode.NOT_FOUND
    (site.tmp / "elsewhere").mkdir()
    (site.root / "mallory").symlink_to(site.tmp / "elsewhere")
    with pytest.raises(ProviderError, match="symbolic link") as link:
        site.provider.adopt_dir("shared", "mallory", OWNER)
    assert link.value.code is ErrorCode.FAILED_PRECONDITION
    site.put("volume-dir/shared/bob")
    with pytest.raises(ProviderError, match="co-managed entries are never touched"):
        site.provider.adopt_dir("shared", "bob", "site/other")
    with pytest.raises(ProviderError, match="not managed by provider"):
        site.provider.adopt_dir("scratch", "alice", OWNER)
    with pytest.raises(ProviderError, match="no owner tag"):
        site.provider.adopt_dir("shared", "bob", "")
    tags = site.provider.ledger.tags()
    assert "volume-dir/shared/alice" not in tags and "volume-dir/shared/mallory" not in tags
    assert tags["volume-dir/shared/bob"] == OWNER
