"""Retention clean-up of job directories (N14) that never removes live outputs.

``<root>/<user>/<job>`` is removed only when nothing anywhere in its tree changed within
the retention: the newest mtime *or ctime* of every directory, file, link and special file
below it (``touch -d`` can set an mtime back, never a ctime). The walk opens each directory
relative to its parent with ``O_NOFOLLOW`` and never follows a link; a tree it cannot see
completely (unreadable, deeper than ``MAX_DEPTH``, another filesystem mounted inside, or
changed while walked) is kept and reported.

Against a job that writes while the clean-up decides, an idle tree is first renamed aside
within its user directory (``.xce-expired-<random>``: atomic, and from then on no path
lookup reaches it), walked again, and removed only if nothing changed; otherwise it is
renamed back. Each aside is recorded in the provider's state *before* the rename, so a
clean-up killed halfway settles it on the next run. What remains open: a process that
already holds a descriptor or working directory inside a tree idle for the whole
retention and writes in the moment between the second walk and the removal.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError
from reconciler.providers.directory_state import Aside, DirectoryState
from reconciler.providers.names import is_safe_name
from reconciler.providers.safe_fs import DIR_FLAGS, lstat_at, open_dir_at, subdirs

ASIDE_PREFIX = ".xce-expired-"
MAX_DEPTH = 128  # levels below a job directory the clean-up looks into; deeper is kept
MAX_LISTED = 1000  # directories named per list in a reply (all are counted)
MAX_WARNED = 20  # directories named per warning


class Unchecked(Exception):
    """A tree the clean-up cannot see completely: it is kept, and this says why."""


@dataclass(frozen=True, slots=True, order=True)
class Newest:
    """The newest change found in a tree: when (seconds since the epoch), and where."""

    when: float
    path: str


def changed(st: os.stat_result) -> float:
    return max(st.st_mtime, st.st_ctime)


def iso(when: float) -> str:
    return datetime.fromtimestamp(when, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def newest_change(fd: int, path: str, depth: int = 0, own_ctime: bool = True) -> Newest:
    """The newest mtime/ctime in the tree open at ``fd`` (called ``path``), itself included.

    ``own_ctime=False`` leaves out the top's ctime, which renaming it aside has just set.
    """
    dev = os.fstat(fd).st_dev
    newest = Newest(0.0, path)
    try:
        with os.scandir(fd) as it:
            items = [(item.name, item.is_dir(follow_symlinks=False)) for item in it]
        for name, is_dir in items:
            sub = f"{path}/{name}"
            if is_dir:
                newest = max(newest, _newest_below(fd, name, sub, depth + 1, dev))
            elif (st := lstat_at(fd, name)) is not None:  # one removed meanwhile: see below
                newest = max(newest, Newest(changed(st), sub))
    except OSError as err:  # no permission to read or search it
        raise Unchecked(f"{path} cannot be listed ({err.strerror})") from None
    st = os.fstat(fd)  # after the listing: an entry made or removed meanwhile shows here
    own = changed(st) if own_ctime else st.st_mtime
    return max(newest, Newest(own, path))


def _newest_below(parent_fd: int, name: str, path: str, depth: int, dev: int) -> Newest:
    if depth > MAX_DEPTH:
        raise Unchecked(f"{path} is more than {MAX_DEPTH} levels deep")
    try:
        fd = os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return Newest(0.0, path)  # removed meanwhile: its parent's mtime says so
    except OSError as err:  # swapped for a link or a file, or unreadable
        raise Unchecked(f"{path} cannot be opened as a directory ({err.strerror})") from None
    try:
        if os.fstat(fd).st_dev != dev:
            raise Unchecked(f"{path} is another filesystem mounted inside")
        return newest_change(fd, path, depth)
    finally:
        os.close(fd)


@dataclass
class Tally:
    """Directories of one outcome: all counted, the first ``MAX_LISTED`` kept to list."""

    items: list[dict[str, str]] = field(default_factory=list)
    count: int = 0

    def add(self, path: str, **why: str) -> None:
        self.count += 1
        if len(self.items) < MAX_LISTED:
            self.items.append({"path": path, **why})

    def warning(self, head: str, key: str) -> list[str]:
        """One warning line naming the first ``MAX_WARNED`` directories, or none."""
        if not self.count:
            return []
        named = "; ".join(f"{i['path']} ({i[key]})" for i in self.items[:MAX_WARNED])
        more = f"; and {self.count - MAX_WARNED} more" if self.count > MAX_WARNED else ""
        return [f"{head}: {named}{more}"]


class Cleaner:
    """One clean-up of one volume: what it removed, kept and skipped, and why."""

    def __init__(self, state: DirectoryState, volume: str, now: float, ttl: int,
                 frozen: Collection[str] = ()) -> None:
        self.state = state
        self.volume = volume
        self.frozen = frozen  # user directories published read-only: nothing in them goes
        self.ttl = ttl
        self.cutoff = now - ttl
        self.removed, self.kept, self.skipped = Tally(), Tally(), Tally()
        self.vanished = 0
        self.settled: set[tuple[str, str]] = set()  # (user, name) an earlier run set aside

    def run(self, root_fd: int) -> None:
        for aside in self.state.asides(self.volume):  # left by a clean-up killed halfway
            self._resume(root_fd, aside)
            self.settled |= {(aside.user, aside.job), (aside.user, aside.aside)}
        gone: list[str] = []
        for user, _ in sorted(subdirs(root_fd, gone)):
            if is_safe_name(user):
                self._user(root_fd, user)
        self.vanished += len(gone)

    def _user(self, root_fd: int, user: str) -> None:
        user_fd = self._open(root_fd, user, user)
        if user_fd is None:
            return
        try:
            gone: list[str] = []
            try:
                jobs = sorted(subdirs(user_fd, gone))
            except OSError as err:  # no permission to search it
                self.skipped.add(user, reason=f"kept: {user} cannot be listed ({err.strerror})")
                return
            for job, st in jobs:
                if changed(st) >= self.cutoff or (user, job) in self.settled:
                    continue
                if user in self.frozen:
                    self.skipped.add(f"{user}/{job}", reason=f"kept: {user} is published "
                                     "read-only (unpublish it to clean it up)")
                else:
                    self._job(user_fd, user, job)
            self.vanished += len(gone)
        finally:
            os.close(user_fd)

    def _open(self, parent_fd: int, name: str, path: str) -> int | None:
        """``name`` opened as a directory; None (counted) when it is gone, not one, or
        not readable."""
        try:
            return open_dir_at(parent_fd, name, path)
        except ProviderError as err:
            if err.code is ErrorCode.NOT_FOUND:
                self.vanished += 1
            else:
                self.skipped.add(path, reason=err.message)
        except OSError as err:
            self.skipped.add(path, reason=f"kept: {path} cannot be opened ({err.strerror})")
        return None

    def _job(self, user_fd: int, user: str, job: str) -> None:
        path = f"{user}/{job}"
        fd = self._open(user_fd, job, path)
        if fd is None:
            return
        try:
            st = os.fstat(fd)
            newest = newest_change(fd, path)
        except Unchecked as err:
            self.skipped.add(path, reason=f"kept: {err}")
            return
        finally:
            os.close(fd)
        if newest.when >= self.cutoff:
            self.kept.add(path, reason=f"{newest.path} changed at {iso(newest.when)}")
            return
        aside = Aside(self.volume, user, ASIDE_PREFIX + os.urandom(6).hex(), job)
        self.state.put_aside(aside)
        try:
            os.rename(job, aside.aside, src_dir_fd=user_fd, dst_dir_fd=user_fd)
        except OSError as err:
            self.state.drop_aside(aside)
            if isinstance(err, FileNotFoundError):
                self.vanished += 1
            else:
                self.skipped.add(path, reason=f"kept: cannot be renamed aside ({err.strerror})")
            return
        self._settle(user_fd, aside, (st.st_dev, st.st_ino))

    def _resume(self, root_fd: int, aside: Aside) -> None:
        user_fd = self._open(root_fd, aside.user, aside.user)
        if user_fd is None:
            self.state.drop_aside(aside)
            return
        try:
            if lstat_at(user_fd, aside.aside) is None:
                self.state.drop_aside(aside)  # removed before the kill, or by its user
            else:
                self._settle(user_fd, aside, None)
        finally:
            os.close(user_fd)

    def _settle(self, user_fd: int, aside: Aside, ident: tuple[int, int] | None) -> None:
        """Remove a directory set aside if it is still idle, else put it back."""
        path = f"{aside.user}/{aside.job}"
        since = aside.removing_since
        if since is None:
            verdict = self._recheck(user_fd, aside, ident)
            if isinstance(verdict, str):
                self._put_back(user_fd, aside, verdict)
                return
            since = verdict.when
            aside = replace(aside, removing_since=since)
            self.state.put_aside(aside)  # decided: a killed clean-up finishes the removal
        try:
            shutil.rmtree(aside.aside, dir_fd=user_fd)  # fd-based: never follows a link
        except FileNotFoundError:
            pass  # its user removed it meanwhile
        except OSError as err:
            self.skipped.add(path, reason=f"not removed completely ({err.strerror}); the rest, "
                             f"{aside.user}/{aside.aside}, is removed by the next clean-up")
            return
        self.state.drop_aside(aside)
        self.removed.add(path, last_change=iso(since))

    def _recheck(self, user_fd: int, aside: Aside, ident: tuple[int, int] | None
                 ) -> Newest | str:
        """The newest change of a directory set aside, or why it must be kept."""
        path = f"{aside.user}/{aside.job}"
        try:
            fd = open_dir_at(user_fd, aside.aside, path)
        except ProviderError as err:
            return f"it changed while being cleaned up: {err.message}"
        except OSError as err:
            return f"it cannot be opened ({err.strerror})"
        try:
            st = os.fstat(fd)
            if ident is not None and (st.st_dev, st.st_ino) != ident:
                return "it was replaced while being cleaned up"
            newest = newest_change(fd, path, own_ctime=False)
        except Unchecked as err:
            return str(err)
        finally:
            os.close(fd)
        if newest.when >= self.cutoff:
            return f"{newest.path} changed at {iso(newest.when)}, while being cleaned up"
        return newest

    def _put_back(self, user_fd: int, aside: Aside, reason: str) -> None:
        path = f"{aside.user}/{aside.job}"
        self.state.drop_aside(aside)
        if lstat_at(user_fd, aside.job) is not None:
            self.skipped.add(path, reason=f"kept as {aside.user}/{aside.aside}: {reason}, and a "
                             f"new {path} appeared meanwhile")
            return
        try:
            os.rename(aside.aside, aside.job, src_dir_fd=user_fd, dst_dir_fd=user_fd)
        except FileNotFoundError:
            self.vanished += 1
            return
        except OSError as err:
            self.skipped.add(path, reason=f"kept as {aside.user}/{aside.aside}: {reason} "
                             f"(cannot be renamed back: {err.strerror})")
            return
        self.kept.add(path, reason=reason)

    def report(self) -> dict[str, Any]:
        """The reply's details: each list, its count, and warnings the apply report shows."""
        warnings = [
            *self.removed.warning(
                f"removed {directories(self.removed.count, 'job ')} of volume "
                f"{self.volume!r} in which nothing had changed within the retention of "
                f"{self.ttl} s (since {iso(self.cutoff)})", "last_change"),
            *self.kept.warning(
                f"kept {directories(self.kept.count, 'job ')} older than the retention "
                "because something inside changed within it", "reason"),
            *self.skipped.warning(
                f"left {directories(self.skipped.count)} it could not check or remove",
                "reason"),
        ]
        if self.vanished:
            warnings.append(f"skipped {directories(self.vanished, 'user or job ')} removed "
                            "or renamed while the clean-up listed them")
        return {
            "removed": self.removed.items, "removed_count": self.removed.count,
            "kept": self.kept.items, "kept_count": self.kept.count,
            "skipped": self.skipped.items, "skipped_count": self.skipped.count,
            "vanished_count": self.vanished, "warnings": warnings,
        }


def directories(n: int, what: str = "") -> str:
    return f"{n} {what}{'directory' if n == 1 else 'directories'}"
