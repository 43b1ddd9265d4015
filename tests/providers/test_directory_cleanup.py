"""The retention clean-up on real trees: it never removes a tree in which anything changed
within the retention, never follows a link while looking, says what it removed and why,
and finishes what a killed clean-up left."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import reconciler.providers.directory_cleanup as directory_cleanup
import reconciler.providers.safe_fs as safe_fs
from reconciler.protocol import ErrorCode, Request
from reconciler.providers.directory_cleanup import ASIDE_PREFIX, MAX_DEPTH, Cleaner, Newest
from reconciler.providers.directory_state import Aside
from tests.providers.directory_site import DAY, Clock, Site
from tests.providers.kit import OWNER
from tests.providers.test_directory import fingerprint

MINUTE = 60


@pytest.fixture
def site(tmp_path: Path) -> Site:
    site = Site(tmp_path)
    site.put("volume-dir/shared/carol")
    return site


@pytest.fixture
def clock(site: Site) -> Clock:
    """Everything made by the test is three days old to the provider."""
    return Clock(site, 3 * DAY)


def job(site: Site, name: str, user: str = "carol") -> Path:
    """``<user>/<name>/out/log`` and ``<user>/<name>/in.txt``."""
    root = site.root / user / name
    (root / "out").mkdir(parents=True)
    (root / "out" / "log").write_text("step 1\n")
    (root / "in.txt").write_text("input\n")
    return root


def listing(site: Site, user: str = "carol") -> list[str]:
    return sorted(p.name for p in (site.root / user).iterdir())


def no_asides_left(site: Site) -> None:
    assert site.provider.state.asides("shared") == []
    assert not [p for p in site.root.rglob(f"{ASIDE_PREFIX}*")]


def test_a_job_dir_is_kept_while_a_file_inside_was_written_within_the_retention(
    site: Site, clock: Clock
) -> None:
    """The reproduction: <user>/<jobid> three days old, out/ written a minute ago."""
    live, idle = job(site, "4711"), job(site, "4650")
    (live / "out" / "result.txt").write_text("written a minute ago\n")
    clock.set_age(live / "out" / "result.txt", MINUTE)
    result = site.cleanup(retention=DAY)
    assert listing(site) == ["4711"]
    assert (live / "out" / "result.txt").read_text() == "written a minute ago\n"
    assert [r["path"] for r in result["removed"]] == ["carol/4650"]
    [kept] = result["kept"]
    assert kept["path"] == "carol/4711" and "carol/4711/out/result.txt changed" in kept["reason"]
    assert (result["removed_count"], result["kept_count"]) == (1, 1)
    assert not idle.exists()
    no_asides_left(site)


@pytest.mark.parametrize("fresh", ["out/deep/er", "out/log", "out/in.lnk", "out/pipe", "out"])
def test_a_change_to_any_kind_of_entry_anywhere_keeps_the_tree(
    site: Site, clock: Clock, fresh: str
) -> None:
    """A deep folder, a file, a link (itself, not its target), a FIFO, or a folder whose
    entry was removed (only its own mtime shows that) changed a minute ago."""
    root = job(site, "4711")
    (root / "out" / "deep" / "er").mkdir(parents=True)
    (root / "out" / "in.lnk").symlink_to("../../gone")
    os.mkfifo(root / "out" / "pipe")
    clock.set_age(root / fresh, MINUTE)
    result = site.cleanup(retention=DAY)
    assert listing(site) == ["4711"] and result["removed_count"] == 0
    assert result["kept"] == [{"path": "carol/4711", "reason": f"carol/4711/{fresh} changed "
                               f"at {directory_cleanup.iso(clock.now() - MINUTE)}"}]


def test_a_backdated_mtime_does_not_hide_a_recent_change(site: Site, clock: Clock) -> None:
    """``touch -d`` sets an mtime back but cannot set the ctime: the ctime counts."""
    root = job(site, "4711")
    (root / "out" / "log").write_text("written just now, then backdated\n")
    for path in [root, *root.rglob("*")]:
        clock.set_age(path, 10 * DAY)
    clock.offset = 0  # really now: every ctime is seconds old
    assert site.cleanup(retention=DAY)["removed_count"] == 0
    assert (root / "out" / "log").exists()


def test_the_walk_never_follows_a_link(site: Site, clock: Clock, tmp_path: Path) -> None:
    """A link to a live folder outside does not keep an idle job, nor is anything behind it
    touched; links in place of user or job directories are left alone."""
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "busy.log").write_text("live elsewhere\n")
    clock.set_age(outside / "sub" / "busy.log", MINUTE)
    root = job(site, "4650")
    (root / "out" / "data").symlink_to(outside)
    (site.root / "carol" / "4651").symlink_to(outside)  # an old-looking link as a job
    clock.set_age(site.root / "carol" / "4651", 10 * DAY)
    (site.root / "mallory").symlink_to(outside)  # a linked user dir: its "jobs" are outside
    before = fingerprint(outside)
    result = site.cleanup(retention=DAY)
    assert [r["path"] for r in result["removed"]] == ["carol/4650"]
    assert listing(site) == ["4651"] and (site.root / "carol" / "4651").is_symlink()
    assert fingerprint(outside) == before


def test_the_reply_says_what_was_removed_and_why(site: Site, clock: Clock) -> None:
    for name in ("100", "101", "102"):
        job(site, name)
    result = site.cleanup(retention=DAY)
    assert [r["path"] for r in result["removed"]] == ["carol/100", "carol/101", "carol/102"]
    first = result["removed"][0]["last_change"]
    assert first.endswith("Z") and first < directory_cleanup.iso(clock.now() - DAY)
    [warning] = result["warnings"]
    assert warning.startswith("removed 3 job directories of volume 'shared' in which nothing "
                              "had changed within the retention of 86400 s (since ")
    assert f"carol/100 ({first})" in warning
    assert site.cleanup(retention=DAY) == {
        "entry": result["entry"], "removed": [], "removed_count": 0, "kept": [],
        "kept_count": 0, "skipped": [], "skipped_count": 0, "vanished_count": 0,
        "warnings": []}


def test_a_tree_too_deep_to_check_is_kept(site: Site, clock: Clock) -> None:
    root = job(site, "4711")
    deep = root.joinpath(*["d"] * (MAX_DEPTH + 1))
    deep.mkdir(parents=True)
    result = site.cleanup(retention=DAY)
    assert listing(site) == ["4711"] and deep.is_dir()
    [skipped] = result["skipped"]
    assert skipped["path"] == "carol/4711" and f"more than {MAX_DEPTH} levels" in skipped["reason"]
    assert "left 1 directory it could not check or remove" in result["warnings"][0]


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root")
def test_a_tree_with_another_filesystem_mounted_inside_is_kept(site: Site, clock: Clock) -> None:
    mnt = job(site, "4711") / "scratch"
    mnt.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "none", str(mnt)], capture_output=True,
                      check=False).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        (mnt / "data").write_text("on another filesystem\n")
        result = site.cleanup(retention=DAY)
        assert (mnt / "data").exists() and result["removed_count"] == 0
        assert "another filesystem mounted inside" in result["skipped"][0]["reason"]
    finally:  # wherever a wrong clean-up may have moved it
        for mounted in (site.root / "carol").glob("*/scratch"):
            subprocess.run(["umount", str(mounted)], check=False)


def test_a_user_dir_replaced_by_a_file_while_listed_is_skipped(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    job(site, "100")
    site.put("volume-dir/shared/dave")
    real = directory_cleanup.open_dir_at

    def swap_dave(parent_fd: int, name: str, shown: str) -> int:
        if name == "dave":  # listed as a directory, a file by the time it is opened
            os.rmdir(site.root / "dave")
            (site.root / "dave").write_text("not a directory\n")
        return real(parent_fd, name, shown)

    monkeypatch.setattr(directory_cleanup, "open_dir_at", swap_dave)
    result = site.cleanup(retention=DAY)
    assert result["removed_count"] == 1
    assert result["skipped"] == [{"path": "dave", "reason": "dave is not a directory; refusing "
                                  "to follow or change it"}]


def test_on_the_real_clock_idle_trees_go_and_a_tree_just_written_stays(site: Site) -> None:
    """No clock games: setting a tree aside changes its own ctime, which must not count."""
    live, idle = job(site, "4711"), job(site, "4650")
    time.sleep(1.2)
    (live / "out" / "log").write_text("step 2\n")
    result = site.cleanup(retention=1)
    assert listing(site) == ["4711"] and not idle.exists()
    assert [r["path"] for r in result["removed"]] == ["carol/4650"]


def test_cleanup_needs_a_retention(tmp_path: Path) -> None:
    site = Site(tmp_path)
    site.put("volume/scratch", spec={"path": "/scratch"})
    message = site.refused("update", ErrorCode.FAILED_PRECONDITION, action="cleanup",
                           entry={"id": "volume/scratch"})
    assert "retention" in message


# --- races, injected at fixed points on the real filesystem ----------------------------------

def on_check(monkeypatch: pytest.MonkeyPatch, hooks: dict[tuple[str, int], Callable[[], Any]]
             ) -> None:
    """Run ``hooks[(path, n)]`` right after the ``n``-th walk of the job ``path`` (1: the
    check, 2: the re-check of the tree set aside)."""
    real = directory_cleanup.newest_change
    seen: dict[str, int] = {}

    def walk(fd: int, path: str, depth: int = 0, own_ctime: bool = True) -> Newest:
        found = real(fd, path, depth, own_ctime)
        if depth == 0:
            seen[path] = seen.get(path, 0) + 1
            hook = hooks.get((path, seen[path]))
            if hook is not None:
                hook()
        return found

    monkeypatch.setattr(directory_cleanup, "newest_change", walk)


def test_a_file_written_between_the_check_and_the_rename_keeps_the_tree(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = job(site, "4711")
    def job_writes() -> None:
        (root / "out" / "late").write_text("!")
        clock.set_age(root / "out" / "late", 0)  # written now, to the provider's clock

    on_check(monkeypatch, {("carol/4711", 1): job_writes})
    result = site.cleanup(retention=DAY)
    assert listing(site) == ["4711"] and (root / "out" / "late").read_text() == "!"
    [kept] = result["kept"]
    assert "carol/4711/out/late changed" in kept["reason"]
    assert "while being cleaned up" in kept["reason"]
    no_asides_left(site)


def after_rename(monkeypatch: pytest.MonkeyPatch, hook: Callable[[Path], Any]) -> None:
    """Run ``hook(tree set aside)`` right after the clean-up renamed a job aside."""
    real = Cleaner._settle

    def settle(self: Cleaner, user_fd: int, aside: Aside, *rest: Any) -> None:
        hook(Path(f"/proc/self/fd/{user_fd}", aside.aside))
        real(self, user_fd, aside, *rest)

    monkeypatch.setattr(Cleaner, "_settle", settle)


def test_a_write_through_a_held_directory_after_the_rename_keeps_the_tree(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A running job holds its output folder open and writes once the tree is set aside."""
    root = job(site, "4711")
    held = os.open(root / "out", os.O_RDONLY | os.O_DIRECTORY)
    def job_writes(_: Path) -> None:
        fd = os.open("late", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=held)
        os.utime(fd, (clock.now(), clock.now()))  # written now, to the provider's clock
        os.close(fd)

    after_rename(monkeypatch, job_writes)
    try:
        result = site.cleanup(retention=DAY)
    finally:
        os.close(held)
    assert listing(site) == ["4711"] and (root / "out" / "late").exists()
    assert result["removed_count"] == 0
    assert "carol/4711/out/late changed" in result["kept"][0]["reason"]
    no_asides_left(site)


def test_a_tree_changed_while_set_aside_and_recreated_meanwhile_is_kept_aside(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    job(site, "4711")

    def job_goes_on(aside: Path) -> None:
        (aside / "out" / "late").write_text("!")
        clock.set_age(aside / "out" / "late", 0)
        (site.root / "carol" / "4711").mkdir()  # mkdir -p by its absolute path

    after_rename(monkeypatch, job_goes_on)
    result = site.cleanup(retention=DAY)
    [aside] = [p for p in listing(site) if p.startswith(ASIDE_PREFIX)]
    assert listing(site) == sorted(["4711", aside])
    assert (site.root / "carol" / aside / "out" / "late").exists()
    [skipped] = result["skipped"]
    assert skipped["reason"].startswith(f"kept as carol/{aside}: ")
    assert "a new carol/4711 appeared meanwhile" in skipped["reason"]
    assert site.provider.state.asides("shared") == []


def test_directories_removed_or_renamed_while_listed_are_skipped_and_counted(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    for user in ("alice", "bob", "dave", "erin"):
        site.put(f"volume-dir/shared/{user}")
    for name in ("1", "2", "3"):
        job(site, name, "alice")
    job(site, "9", "erin")
    # bob: gone between the volume's listing and its lstat
    real_lstat = safe_fs.lstat_at

    def lstat(parent_fd: int, name: str) -> os.stat_result | None:
        if name == "bob" and (site.root / "bob").exists():
            os.rmdir(site.root / "bob")
        return real_lstat(parent_fd, name)

    monkeypatch.setattr(safe_fs, "lstat_at", lstat)
    # while alice/1 is checked: alice/2 is removed, alice/3 renamed, dave removed
    on_check(monkeypatch, {("alice/1", 1): lambda: (
        subprocess.run(["rm", "-r", str(site.root / "alice" / "2"), str(site.root / "dave")],
                       check=True),
        (site.root / "alice" / "3").rename(site.root / "alice" / "3-renamed"))})
    result = site.cleanup(retention=DAY)
    assert result["vanished_count"] == 4  # bob, dave, alice/2, alice/3
    assert [r["path"] for r in result["removed"]] == ["alice/1", "erin/9"]
    assert listing(site, "alice") == ["3-renamed"]
    assert "skipped 4 user or job directories removed or renamed while the clean-up listed " \
           "them" in result["warnings"]


def reopened(tmp_path: Path) -> Site:
    """The provider started again over the same workdir, as a new process would."""
    site = Site(tmp_path)  # replays its volume create from the op ledger
    site.ops = 100  # op ids of its own from here on
    Clock(site, 3 * DAY)
    return site


def killed(*_: Any) -> None:
    raise KeyboardInterrupt  # a BaseException: as abrupt as a kill, for this call


def cleanup_killed(site: Site) -> None:
    """Run a clean-up that the hook kills, on the provider itself: the transport would run
    it in a worker thread, where the simulated kill would only end that thread."""
    request = Request("update", op_id="killed", epoch=1, owner=OWNER, params={
        "action": "cleanup", "entry": {"id": "volume/shared", "spec": {"retention": DAY}}})
    with pytest.raises(KeyboardInterrupt):
        site.provider.handle(request)


@pytest.mark.parametrize("written", [False, True])
def test_a_cleanup_killed_after_setting_a_tree_aside_is_settled_next_time(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch, written: bool
) -> None:
    """Killed right after the rename: next time the idle tree is removed, and one its job
    wrote to meanwhile gets its name back."""
    root = job(site, "100")
    after_rename(monkeypatch, killed)
    cleanup_killed(site)
    monkeypatch.undo()
    [aside] = site.provider.state.asides("shared")
    assert listing(site) == [aside.aside] and aside.removing_since is None
    if written:
        os.utime(site.root / "carol" / aside.aside / "out" / "log", (clock.now(),) * 2)
    site.t.close()
    again = reopened(site.tmp)
    result = again.cleanup(retention=DAY)
    if written:
        assert listing(again) == ["100"] and (root / "out" / "log").exists()
        assert [k["path"] for k in result["kept"]] == ["carol/100"]
    else:
        assert listing(again) == [] and [r["path"] for r in result["removed"]] == ["carol/100"]
    no_asides_left(again)


def test_a_cleanup_killed_while_removing_finishes_the_removal(
    site: Site, clock: Clock, monkeypatch: pytest.MonkeyPatch
) -> None:
    job(site, "100")

    def rmtree_killed_halfway(name: str, dir_fd: int) -> None:
        os.unlink(f"{name}/in.txt", dir_fd=dir_fd)
        raise KeyboardInterrupt

    monkeypatch.setattr(directory_cleanup.shutil, "rmtree", rmtree_killed_halfway)
    cleanup_killed(site)
    monkeypatch.undo()
    [aside] = site.provider.state.asides("shared")
    assert aside.removing_since is not None and listing(site) == [aside.aside]
    site.t.close()
    again = reopened(site.tmp)
    result = again.cleanup(retention=DAY)  # its partial removal changed it: removed anyway
    assert listing(again) == [] and [r["path"] for r in result["removed"]] == ["carol/100"]
    no_asides_left(again)
