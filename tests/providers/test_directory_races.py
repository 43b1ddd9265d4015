"""The directory provider under real concurrent changes: it never leaves its volume and
never fails as a whole because a user moved something while it worked."""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

import reconciler.providers.safe_fs as safe_fs
from reconciler.protocol import ErrorCode
from tests.providers.directory_site import Site
from tests.providers.kit import inventory

RACE_SECONDS = 1.5

# What the tool reached through {path}, by device:inode, and the directory {path} names
# (readlink: what the kernel says it is, where realpath would resolve that name once more,
# racing the swap on its own).
QUOTA_TOOL = """#!/bin/sh
log=$1; path=$4
printf '%s %s\\n' "$(stat -L -c %d:%i -- "$path")" "$(readlink -- "$path")" >> "$log"
"""


@contextmanager
def running(loop: Callable[[threading.Event], None]) -> Iterator[None]:
    """Run ``loop(stop)`` in a thread for the duration of the block."""
    stop = threading.Event()
    thread = threading.Thread(target=loop, args=(stop,), daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(10)


def swapper(root: Path, outside: Path) -> Callable[[threading.Event], None]:
    """Swap the volume's top for a symbolic link to ``outside`` every few milliseconds."""
    aside = root.with_name(root.name + ".real")

    def loop(stop: threading.Event) -> None:
        while not stop.is_set():
            os.rename(root, aside)
            os.symlink(outside, root)
            time.sleep(0.002)
            os.unlink(root)
            os.rename(aside, root)
            time.sleep(0.002)

    return loop


@dataclass(frozen=True, slots=True)
class QuotaRace:
    """A volume whose quota tool logs the device:inode and path it reached, and a decoy
    folder ``outside`` that a swapper puts in the volume's place."""

    site: Site
    outside: Path
    log: Path

    @classmethod
    def made(cls, root: Path) -> QuotaRace:
        outside = root / "outside"
        outside.mkdir(parents=True)
        tool, log = root / "quota.sh", root / "reached.log"
        tool.write_text(QUOTA_TOOL)
        template = ["/bin/sh", str(tool), str(log), "{subject}", "{kib}", "{path}"]
        return cls(Site(root, {"quota_backend": "command", "quota_command": template}),
                   outside, log)

    def reached(self) -> list[list[str]]:
        """Each run of the tool: the volume it reached (device:inode) and its path."""
        text = self.log.read_text() if self.log.exists() else ""
        return [line.split(" ", 1) for line in text.splitlines()]

    def elsewhere(self, volume: str) -> list[list[str]]:
        """The runs that reached anything but ``volume`` (the decoy, another folder)."""
        return [r for r in self.reached() if r[0] != volume or r[1].startswith(str(self.outside))]


def volume_of(path: Path) -> str:
    st = path.stat()
    return f"{st.st_dev}:{st.st_ino}"


@pytest.mark.skipif(shutil.which("readlink") is None, reason="needs coreutils")
def test_the_quota_tool_only_ever_reaches_the_verified_volume(tmp_path: Path) -> None:
    race = QuotaRace.made(tmp_path)
    site, outside = race.site, race.outside
    volume = volume_of(site.root)
    done, refused = 0, 0
    with running(swapper(site.root, outside)):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            reply = site.request("create", entry={"id": f"quota/shared/user/u{site.ops}",
                                                  "amount": 1 << 20})
            if reply.ok:
                done += 1
            else:  # the top was a link (or missing) when the provider looked: refused
                assert reply.error is not None
                assert reply.error.code is ErrorCode.FAILED_PRECONDITION, reply.to_json()
                refused += 1
    assert site.root.is_dir() and not site.root.is_symlink()
    reached = race.reached()
    assert done >= 5 and refused >= 1 and len(reached) >= done  # the race really ran
    elsewhere = race.elsewhere(volume)
    assert elsewhere == [], f"{len(elsewhere)} of {len(reached)} runs left the volume"


def test_inventory_and_evict_survive_job_dirs_made_renamed_and_removed_meanwhile(
    tmp_path: Path,
) -> None:
    """Workers create, rename and remove job directories all the time on a live volume:
    each evict of what the last inventory saw removes it, finds it gone, or refuses."""
    site = Site(tmp_path)
    users = [f"user{i}" for i in range(6)]
    for user in users:
        site.put(f"volume-dir/shared/{user}")

    def churn(stop: threading.Event) -> None:
        n = 0
        while not stop.is_set():
            user = site.root / users[n % len(users)]
            job = user / f"{n % 40}"
            try:
                (job / "out").mkdir(parents=True)
                (job / "out" / "log").write_text("x")
                job.rename(user / f"moved{n % 40}")
                shutil.rmtree(user / f"moved{n % 40}")
            except OSError:
                pass  # the eviction took it first
            n += 1

    outcomes: set[str] = set()
    with running(churn):
        deadline = time.monotonic() + RACE_SECONDS
        while time.monotonic() < deadline:
            for entry in inventory(site.t).values():
                if entry["kind"] == "job-dir":
                    user, job = entry["id"].split("/")[2:]
                    reply = site.evict(user, job, entry)
                    outcomes.add("ok" if reply.ok else str(reply.error and reply.error.code))
    assert "ok" in outcomes <= {"ok", ErrorCode.FAILED_PRECONDITION.value}, outcomes
    assert site.provider.state.asides("shared") == []
    assert not list(site.root.glob("*/.xce-expired-*"))


def test_inventory_leaves_out_a_user_dir_removed_while_it_is_listed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Removed between the listing and its lstat: it is gone, so it is not reported, and
    the rest of the inventory is (it used to fail as a whole, making the provider unknown)."""
    site = Site(tmp_path)
    for user in ("alice", "bob"):
        site.put(f"volume-dir/shared/{user}")
    real = safe_fs.lstat_at

    def lstat(parent_fd: int, name: str) -> os.stat_result | None:
        if name == "bob" and (site.root / "bob").exists():
            os.rmdir(site.root / "bob")
        return real(parent_fd, name)

    monkeypatch.setattr(safe_fs, "lstat_at", lstat)
    assert sorted(inventory(site.t)) == ["volume-dir/shared/alice", "volume/shared"]
