"""Walking a job directory's tree, and evicting it kill-safely (N14).

One walk (``walk_tree``) gives what both the inventory and an eviction need: the newest
mtime *or ctime* of every directory, file, link and special file in the tree (``touch
-d`` can set an mtime back, never a ctime) and its disk usage (``st_blocks``, each inode
once, as ``du``). It opens each directory relative to its parent with ``O_NOFOLLOW`` and
never follows a link; what it cannot see (unreadable, deeper than ``MAX_DEPTH``, another
filesystem mounted inside, swapped while walked) it names in ``Tree.unchecked``.

An eviction (``Eviction``, the plan's ``evict``) removes ``<user>/<job>`` only if nothing
in it changed after the plan saw it (the live entry's ``spec.last_write``). Against a job
that writes while the provider decides, the tree is first renamed aside within its user
directory (``.xce-expired-<random>``: atomic, and from then on no path lookup reaches it),
walked again, and removed only if still unchanged; otherwise it is renamed back. Each
aside is recorded in the provider's state *before* the rename, so an eviction killed
halfway is settled by the next eviction on the volume (its own retry finishes it). What
remains open: a process that already holds a descriptor or working directory inside a
tree idle since the plan and writes between the second walk and the removal.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from compiler.core.times import format_utc
from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.directory_state import Aside, DirectoryState
from reconciler.providers.safe_fs import DIR_FLAGS, lstat_at, open_dir_at, refused

ASIDE_PREFIX = ".xce-expired-"
MAX_DEPTH = 128  # levels below a job directory a walk looks into; deeper is unchecked


@dataclass(frozen=True, slots=True, order=True)
class Newest:
    """The newest change found in a tree: when (seconds since the epoch), and where."""

    when: float
    path: str


@dataclass(slots=True)
class Tree:
    """What one walk of a tree found."""

    newest: Newest
    blocks: int = 0  # 512-byte blocks, each inode counted once
    unchecked: str | None = None  # why part of the tree could not be seen (the first reason)
    dirs: list[tuple[str, ...]] = field(default_factory=list)  # down to the levels asked for

    @property
    def usage(self) -> int:
        """Disk usage in bytes, as ``du`` counts it."""
        return self.blocks * 512


def changed(st: os.stat_result) -> float:
    return max(st.st_mtime, st.st_ctime)


def walk_tree(fd: int, path: str, *, own_ctime: bool = True, record: int = 0) -> Tree:
    """Walk the tree open at ``fd`` (called ``path``), itself included.

    ``own_ctime=False`` leaves out the top's ctime, which renaming it aside has just set;
    ``record`` keeps the relative paths of the directories that many levels down."""
    walk = _Walk(os.fstat(fd).st_dev, record, path)
    walk.directory(fd, path, (), own_ctime)
    return walk.tree


class _Walk:
    def __init__(self, dev: int, record: int, path: str) -> None:
        self.dev, self.record = dev, record
        self.tree = Tree(Newest(0.0, path))
        self.linked: set[tuple[int, int]] = set()  # files with several names, counted once

    def unchecked(self, why: str) -> None:
        if self.tree.unchecked is None:
            self.tree.unchecked = why

    def add(self, st: os.stat_result, path: str, when: float) -> None:
        if st.st_nlink > 1 and not stat.S_ISDIR(st.st_mode):
            if (st.st_dev, st.st_ino) in self.linked:
                return  # its blocks, and its ctime, counted under its other name
            self.linked.add((st.st_dev, st.st_ino))
        self.tree.blocks += st.st_blocks
        if when > self.tree.newest.when:
            self.tree.newest = Newest(when, path)

    def directory(self, fd: int, path: str, rel: tuple[str, ...], own_ctime: bool = True
                  ) -> None:
        for name, is_dir in self.listing(fd, path):
            sub = f"{path}/{name}"
            if is_dir:
                self.below(fd, name, sub, (*rel, name))
                continue
            try:
                st = lstat_at(fd, name)
            except OSError as err:  # listable, not searchable
                self.unchecked(f"{sub} cannot be examined ({err.strerror})")
                continue
            if st is not None:  # one removed meanwhile: its parent's mtime says so
                self.add(st, sub, changed(st))
        st = os.fstat(fd)  # after the listing: an entry made or removed meanwhile shows here
        self.add(st, path, changed(st) if own_ctime else st.st_mtime)

    def listing(self, fd: int, path: str) -> list[tuple[str, bool]]:
        try:
            with os.scandir(fd) as it:
                return [(item.name, item.is_dir(follow_symlinks=False)) for item in it]
        except OSError as err:  # no permission to read or search it
            self.unchecked(f"{path} cannot be listed ({err.strerror})")
            return []

    def below(self, parent_fd: int, name: str, path: str, rel: tuple[str, ...]) -> None:
        if len(rel) > MAX_DEPTH:
            self.unchecked(f"{path} is more than {MAX_DEPTH} levels deep")
            return
        try:
            fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
        except FileNotFoundError:
            return  # removed meanwhile: its parent's mtime says so
        except OSError as err:  # swapped for a link or a file, or unreadable
            self.unchecked(f"{path} cannot be opened as a directory ({err.strerror})")
            return
        try:
            if os.fstat(fd).st_dev != self.dev:
                self.unchecked(f"{path} is another filesystem mounted inside")
                return
            if len(rel) <= self.record:
                self.tree.dirs.append(rel)
            self.directory(fd, path, rel)
        finally:
            os.close(fd)


@dataclass(frozen=True, slots=True)
class Target:
    """The job directory an eviction removes, and the newest change the plan saw in it."""

    volume: str
    user: str
    job: str
    seen: int  # the live entry's spec.last_write (whole seconds)

    @property
    def path(self) -> str:
        return f"{self.user}/{self.job}"

    def why_kept(self, tree: Tree, during: str = "") -> str | None:
        """Why ``tree`` must not go: part of it unseen, or written after the plan saw it."""
        if tree.unchecked is not None:
            return f"{self.path} cannot be seen fully{during}: {tree.unchecked}"
        if int(tree.newest.when) > self.seen:
            return (f"{tree.newest.path} was written at {format_utc(tree.newest.when)}{during}, "
                    f"after the plan saw it (last write {format_utc(self.seen)})")
        return None


@contextmanager
def user_dir(root_fd: int, user: str) -> Iterator[int | None]:
    """``<root>/<user>`` opened without following a link; None when it is gone."""
    try:
        fd = open_dir_at(root_fd, user, user)
    except ProviderError as err:
        if err.code is ErrorCode.NOT_FOUND:
            yield None
            return
        raise
    try:
        yield fd
    finally:
        os.close(fd)


class Eviction:
    """One evict on one volume: settles what an earlier eviction left aside, then removes
    the target tree. A refusal is FAILED_PRECONDITION; the reply says what went."""

    def __init__(self, state: DirectoryState, target: Target) -> None:
        self.state, self.target = state, target
        self.warnings: list[str] = []

    def run(self, root_fd: int) -> dict[str, Any]:
        removed: float | None = None
        for aside in self.state.asides(self.target.volume):  # left by an eviction killed
            when = self._resume(root_fd, aside)
            removed = when if when is not None else removed
        if removed is None:
            with user_dir(root_fd, self.target.user) as user_fd:
                removed = None if user_fd is None else self._evict(user_fd)
        reply: dict[str, Any] = {"already_absent": removed is None}
        if removed is not None:
            reply["last_change"] = format_utc(removed)
        if self.warnings:
            reply["warnings"] = self.warnings
        return reply

    def _evict(self, user_fd: int) -> float | None:
        """Remove the target if nothing in it changed after the plan saw it: when it last
        changed, or None when it is not there."""
        t = self.target
        try:
            fd = open_dir_at(user_fd, t.job, t.path)
        except ProviderError as err:
            if err.code is ErrorCode.NOT_FOUND:
                return None
            raise  # a link or a file where the job directory was: never followed
        except OSError as err:
            raise refused(f"{t.path} cannot be opened ({err.strerror}): kept") from None
        try:
            st, tree = os.fstat(fd), walk_tree(fd, t.path)
        finally:
            os.close(fd)
        why = t.why_kept(tree)
        if why is not None:
            raise refused(f"{why}: kept; plan again")
        aside = Aside(t.volume, t.user, ASIDE_PREFIX + os.urandom(6).hex(), t.job)
        self.state.put_aside(aside)  # before the rename: no aside is ever forgotten
        try:
            os.rename(t.job, aside.aside, src_dir_fd=user_fd, dst_dir_fd=user_fd)
        except OSError as err:
            self.state.drop_aside(aside)
            if isinstance(err, FileNotFoundError):
                return None
            raise refused(f"{t.path} cannot be renamed aside ({err.strerror}): kept") from None
        return self._settle(user_fd, aside, (st.st_dev, st.st_ino))

    def _resume(self, root_fd: int, aside: Aside) -> float | None:
        """Settle an aside an earlier eviction left: finish a removal it had decided,
        decide the target's own again, put any other back (its plan is unknown here)."""
        mine = (aside.user, aside.job) == (self.target.user, self.target.job)
        with user_dir(root_fd, aside.user) as user_fd:
            if user_fd is None or lstat_at(user_fd, aside.aside) is None:
                self.state.drop_aside(aside)  # removed before the kill, or by its user
                return None
            if aside.removing_since is not None or mine:
                when = self._settle(user_fd, aside, None)
                if not mine:
                    self.warnings.append(f"finished removing {aside.user}/{aside.job}, which "
                                         "an eviction killed halfway had set aside")
                return when if mine else None
            self.warnings.append(self._put_back(
                user_fd, aside, "an eviction was killed before it had decided; plan again"))
        return None

    def _settle(self, user_fd: int, aside: Aside, ident: tuple[int, int] | None) -> float:
        """Remove a directory set aside if it is still unchanged (when it last changed),
        else put it back and refuse."""
        since = aside.removing_since
        if since is None:
            verdict = self._recheck(user_fd, aside, ident)
            if isinstance(verdict, str):
                raise refused(f"{self._put_back(user_fd, aside, verdict)}; plan again")
            since = verdict.newest.when
            aside = replace(aside, removing_since=since)
            self.state.put_aside(aside)  # decided: a killed eviction finishes the removal
        try:
            shutil.rmtree(aside.aside, dir_fd=user_fd)  # fd-based: never follows a link
        except FileNotFoundError:
            pass  # its user removed it meanwhile
        except OSError as err:
            raise ProviderError(ErrorCode.INTERNAL, f"{aside.user}/{aside.job} was not removed "
                                f"completely ({err.strerror}); the rest, {aside.user}/"
                                f"{aside.aside}, goes with the next eviction on this volume"
                                ) from None
        self.state.drop_aside(aside)
        return since

    def _recheck(self, user_fd: int, aside: Aside, ident: tuple[int, int] | None
                 ) -> Tree | str:
        """The walk of a directory set aside, or why it must be kept."""
        path = f"{aside.user}/{aside.job}"
        try:
            fd = open_dir_at(user_fd, aside.aside, path)
        except ProviderError as err:
            return f"it changed while being evicted: {err.message}"
        except OSError as err:
            return f"it cannot be opened ({err.strerror})"
        try:
            st = os.fstat(fd)
            if ident is not None and (st.st_dev, st.st_ino) != ident:
                return f"{path} was replaced while being evicted"
            tree = walk_tree(fd, path, own_ctime=False)
        finally:
            os.close(fd)
        return self.target.why_kept(tree, ", while being evicted") or tree

    def _put_back(self, user_fd: int, aside: Aside, reason: str) -> str:
        """Give a directory set aside its name back; what happened, for the reply."""
        path = f"{aside.user}/{aside.job}"
        self.state.drop_aside(aside)
        if lstat_at(user_fd, aside.job) is not None:
            return (f"kept as {aside.user}/{aside.aside}: {reason}, and a new {path} "
                    "appeared meanwhile")
        try:
            os.rename(aside.aside, aside.job, src_dir_fd=user_fd, dst_dir_fd=user_fd)
        except FileNotFoundError:
            return f"{path} was removed by its user while set aside"
        except OSError as err:
            return (f"kept as {aside.user}/{aside.aside}: {reason} (cannot be renamed back: "
                    f"{err.strerror})")
        return f"{path} kept: {reason}"
