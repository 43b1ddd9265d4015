"""The eviction's safety on real trees: it never removes a tree written after the plan saw
it, not even while it evicts, never follows a link, and settles what a killed eviction
left aside."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import reconciler.providers.directory_cleanup as directory_cleanup
from reconciler.protocol import ErrorCode, Reply, Request
from reconciler.providers.directory_cleanup import ASIDE_PREFIX, Eviction, Tree
from reconciler.providers.directory_state import Aside
from tests.helpers import succeeded
from tests.providers.directory_site import Site
from tests.providers.kit import OWNER
from tests.providers.test_directory import fingerprint


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path)
    site.put("volume-dir/shared/carol")
    return site


def job(site: Site, name: str, user: str = "carol") -> Path:
    """``<user>/<name>/out/log`` and ``<user>/<name>/in``."""
    root = site.root / user / name
    (root / "out").mkdir(parents=True)
    (root / "out" / "log").write_text("step 1\n")
    (root / "in").write_text("input\n")
    return root


def listing(site: Site, user: str = "carol") -> list[str]:
    return sorted(p.name for p in (site.root / user).iterdir())


def no_asides_left(site: Site) -> None:
    assert site.provider.state.asides("shared") == []
    assert not [p for p in site.root.rglob(f"{ASIDE_PREFIX}*")]


def write_later(path: Path, seen: dict[str, Any], text: str = "!") -> None:
    """The job writes ``path`` a minute after the plan saw its directory."""
    path.write_text(text)
    later = seen["spec"]["last_write"] + 60
    os.utime(path, (later, later))


def kept(reply: Reply) -> str:
    assert not reply.ok and reply.error is not None, reply.to_json()
    assert reply.error.code is ErrorCode.FAILED_PRECONDITION, reply.to_json()
    return str(reply.error.message)


@pytest.mark.parametrize("fresh", ["out/deep/er", "out/log", "out/in.lnk", "out/pipe", "out"])
def test_a_change_to_any_kind_of_entry_anywhere_keeps_the_tree(site: Site, fresh: str) -> None:
    """A deep folder, a file, a link (itself, not its target), a FIFO, or a folder whose
    entry was removed (only its own mtime shows that) changed after the plan."""
    root = job(site, "4711")
    (root / "out" / "deep" / "er").mkdir(parents=True)
    (root / "out" / "in.lnk").symlink_to("../../gone")
    os.mkfifo(root / "out" / "pipe")
    seen = site.job_dir("carol", "4711")
    later = seen["spec"]["last_write"] + 60
    os.utime(root / fresh, (later, later), follow_symlinks=False)
    assert f"carol/4711/{fresh} was written at" in kept(site.evict("carol", "4711", seen))
    assert listing(site) == ["4711"]
    no_asides_left(site)


def test_links_in_place_of_a_job_or_user_directory_are_left_alone(
    site: Site, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "busy.log").write_text("elsewhere\n")
    (site.root / "carol" / "4651").symlink_to(outside)
    (site.root / "mallory").symlink_to(outside)  # a linked user dir: its "jobs" are outside
    (outside / "4652").mkdir()
    before = fingerprint(outside)
    seen = {"id": "job-dir/shared/carol/4651", "spec": {"last_write": 2**40}}
    assert "symbolic link" in kept(site.evict("carol", "4651", seen))
    mallory = {"id": "job-dir/shared/mallory/4652", "spec": {"last_write": 2**40}}
    assert "symbolic link" in kept(site.evict("mallory", "4652", mallory))
    assert fingerprint(outside) == before and (site.root / "carol" / "4651").is_symlink()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_a_tree_with_another_filesystem_mounted_inside_is_kept(site: Site) -> None:
    mnt = job(site, "4711") / "scratch"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(mnt)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "data").write_text("on another filesystem\n")
        seen = site.job_dir("carol", "4711")
        assert "another filesystem mounted inside" in seen["spec"]["unchecked"]
        seen["spec"].pop("unchecked")
        assert "another filesystem mounted inside" in kept(site.evict("carol", "4711", seen))
        assert (mnt / "data").exists()
    finally:  # wherever a wrong eviction may have moved it
        for mounted in (site.root / "carol").glob("*/scratch"):
            subprocess.run(["umount", str(mounted)], check=False)


# --- races, injected at fixed points on the real filesystem ----------------------------------

def on_walk(monkeypatch: pytest.MonkeyPatch, hooks: dict[int, Callable[[], Any]]) -> None:
    """Run ``hooks[n]`` right after the ``n``-th walk of the job (1: the check, 2: the
    re-check of the tree set aside)."""
    real = directory_cleanup.walk_tree
    seen = [0]

    def walk(fd: int, path: str, **how: Any) -> Tree:
        found = real(fd, path, **how)
        seen[0] += 1
        hook = hooks.get(seen[0])
        if hook is not None:
            hook()
        return found

    monkeypatch.setattr(directory_cleanup, "walk_tree", walk)


def test_a_file_written_between_the_check_and_the_rename_keeps_the_tree(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = job(site, "4711")
    seen = site.job_dir("carol", "4711")
    on_walk(monkeypatch, {1: lambda: write_later(root / "out" / "late", seen)})
    message = kept(site.evict("carol", "4711", seen))
    assert "carol/4711/out/late was written at" in message and "while being evicted" in message
    assert listing(site) == ["4711"] and (root / "out" / "late").read_text() == "!"
    no_asides_left(site)


def after_rename(monkeypatch: pytest.MonkeyPatch, hook: Callable[[Path], Any]) -> None:
    """Run ``hook(tree set aside)`` right after the eviction renamed the job aside."""
    real = Eviction._settle

    def settle(self: Eviction, user_fd: int, aside: Aside, *rest: Any) -> float:
        hook(Path(f"/proc/self/fd/{user_fd}", aside.aside))
        return real(self, user_fd, aside, *rest)

    monkeypatch.setattr(Eviction, "_settle", settle)


def test_a_write_through_a_held_directory_after_the_rename_keeps_the_tree(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running job holds its output folder open and writes once the tree is set aside."""
    root = job(site, "4711")
    seen = site.job_dir("carol", "4711")
    held = os.open(root / "out", os.O_RDONLY | os.O_DIRECTORY)

    def job_writes(_: Path) -> None:
        fd = os.open("late", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=held)
        later = seen["spec"]["last_write"] + 60
        os.utime(fd, (later, later))
        os.close(fd)

    after_rename(monkeypatch, job_writes)
    try:
        message = kept(site.evict("carol", "4711", seen))
    finally:
        os.close(held)
    assert "carol/4711/out/late was written at" in message
    assert listing(site) == ["4711"] and (root / "out" / "late").exists()
    no_asides_left(site)


def test_a_tree_changed_while_set_aside_and_recreated_meanwhile_is_kept_aside(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    job(site, "4711")
    seen = site.job_dir("carol", "4711")

    def job_goes_on(aside: Path) -> None:
        write_later(aside / "out" / "late", seen)
        (site.root / "carol" / "4711").mkdir()  # mkdir -p by its absolute path

    after_rename(monkeypatch, job_goes_on)
    message = kept(site.evict("carol", "4711", seen))
    [aside] = [p for p in listing(site) if p.startswith(ASIDE_PREFIX)]
    assert listing(site) == sorted(["4711", aside])
    assert (site.root / "carol" / aside / "out" / "late").exists()
    assert message.startswith(f"kept as carol/{aside}: ")
    assert "a new carol/4711 appeared meanwhile" in message
    assert site.provider.state.asides("shared") == []


def test_a_job_dir_swapped_for_another_after_the_check_is_kept(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = job(site, "4711")
    seen = site.job_dir("carol", "4711")

    def swap() -> None:
        root.rename(site.root / "carol" / "moved")
        job(site, "4711")

    on_walk(monkeypatch, {1: swap})
    assert "was replaced while being evicted" in kept(site.evict("carol", "4711", seen))
    assert listing(site) == ["4711", "moved"]
    no_asides_left(site)


# --- killed halfway --------------------------------------------------------------------------

def reopened(tmp_path: Path) -> Site:
    """The provider started again over the same workdir, as a new process would."""
    site = Site(tmp_path)  # replays its volume create from the op ledger
    site.ops = 100  # op ids of its own from here on
    return site


def killed(*_: Any) -> None:
    raise KeyboardInterrupt  # a BaseException: as abrupt as a kill, for this call


def evict_killed(site: Site, seen: dict[str, Any]) -> None:
    """Run an evict that the hook kills, on the provider itself: the transport would run
    it in a worker thread, where the simulated kill would only end that thread."""
    request = Request("delete", op_id="killed", epoch=1, owner=OWNER, params={
        "id": seen["id"], "entry": seen, "action": "evict", "destroy": True})
    with pytest.raises(KeyboardInterrupt):
        site.provider.handle(request)


@pytest.mark.parametrize("written", [False, True])
def test_an_evict_killed_after_setting_the_tree_aside_is_settled_by_its_retry(
    site: Site, monkeypatch: pytest.MonkeyPatch, written: bool
) -> None:
    """Killed right after the rename: the apply's retry (same op_id) removes the tree, or
    gives it its name back if its job wrote to it meanwhile."""
    root = job(site, "100")
    seen = site.job_dir("carol", "100")
    after_rename(monkeypatch, killed)
    evict_killed(site, seen)
    monkeypatch.undo()
    [aside] = site.provider.state.asides("shared")
    assert listing(site) == [aside.aside] and aside.removing_since is None
    if written:
        write_later(site.root / "carol" / aside.aside / "out" / "log", seen)
    site.t.close()
    again = reopened(site.tmp)
    reply = again.evict("carol", "100", seen, op_id="killed")
    if written:
        assert "after the plan saw it" in kept(reply)
        assert listing(again) == ["100"] and (root / "out" / "log").read_text() == "!"
    else:
        assert succeeded(reply)["already_absent"] is False and listing(again) == []
    no_asides_left(again)


def test_an_evict_killed_while_removing_is_finished_by_its_retry(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    job(site, "100")
    seen = site.job_dir("carol", "100")

    def rmtree_killed_halfway(name: str, dir_fd: int) -> None:
        os.unlink(f"{name}/in", dir_fd=dir_fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(shutil, "rmtree", rmtree_killed_halfway)
    evict_killed(site, seen)
    monkeypatch.undo()
    [aside] = site.provider.state.asides("shared")
    assert aside.removing_since is not None and listing(site) == [aside.aside]
    site.t.close()
    again = reopened(site.tmp)
    done = succeeded(again.evict("carol", "100", seen, op_id="killed"))
    assert done["already_absent"] is False and listing(again) == []  # decided: removed anyway
    no_asides_left(again)


def test_an_abandoned_aside_is_put_back_or_finished_by_the_next_evict_on_the_volume(
    site: Site, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No retry came (another plan): the next evict gives an undecided aside its name
    back (its plan is not known here) and finishes a decided removal."""
    job(site, "100"), job(site, "101"), job(site, "102")
    after_rename(monkeypatch, killed)
    evict_killed(site, site.job_dir("carol", "100"))
    monkeypatch.undo()
    # What an eviction of 101 killed in its removal leaves (another evict would settle 100):
    decided = Aside("shared", "carol", f"{ASIDE_PREFIX}0123456789ab", "101", 1.0)
    site.provider.state.put_aside(decided)
    (site.root / "carol" / "101").rename(site.root / "carol" / decided.aside)
    assert len(site.provider.state.asides("shared")) == 2
    done = succeeded(site.evict("carol", "102"))
    assert done["already_absent"] is False
    assert done["warnings"] == [
        "carol/100 kept: an eviction was killed before it had decided; plan again",
        "finished removing carol/101, which an eviction killed halfway had set aside"]
    assert listing(site) == ["100"] and (site.root / "carol" / "100" / "out" / "log").exists()
    no_asides_left(site)
