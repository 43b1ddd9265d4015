"""Root markers: how a provider tells its volume or cache from an empty mount point.

A shared filesystem that is not mounted leaves its mount point behind: an empty folder on
the disk below. An inventory of it reports every user directory as gone, and a plan would
re-create them there — users' data on the wrong disk. So each root the directory and
dataset-copy providers create, or an admin adopts (``xce-adopt``), holds a marker file,
``.xce-root``: what the root holds (``volume/shared``, ``cache/gpu-cache``), the
filesystem it was written on, and a random id the provider also records in its own memory
(its ``OpLedger``). A root is trusted only when its marker is the one recorded, on the
filesystem it names. Anything else — no marker, another root's marker, a marker copied
from another filesystem, a recorded root that is gone — is FAILED_PRECONDITION saying the
root looks unmounted: the inventory fails, so the provider's entries are unknown (never
absent), and nothing is created under the root until it is mounted or adopted.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from reconciler.protocol import ProviderError
from reconciler.providers.opledger import OpLedger
from reconciler.providers.safe_fs import DIR_FLAGS, lstat_at, refused

MARKER = ".xce-root"
NEW_ROOT = ".xce-new-"  # a root being made: ``.xce-new-<name>-<random>`` beside it
MAX_MARKER_BYTES = 4096
_READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
_WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC


@dataclass(frozen=True, slots=True)
class RootMark:
    """What a marker says: the root it belongs to, its random id, its filesystem."""

    root: str  # what the root holds: "volume/<name>" or "cache/<provider>"
    id: str  # random; the provider's ledger keeps the same
    fs: str  # filesystem_id() of the root when the marker was written

    def to_text(self) -> str:
        return json.dumps({"root": self.root, "id": self.id, "fs": self.fs}, sort_keys=True)

    @staticmethod
    def from_text(text: str) -> RootMark | None:
        """The mark in ``text``; None when it is not one."""
        try:
            doc = json.loads(text)
        except ValueError:
            return None
        if not isinstance(doc, dict) or not all(
            isinstance(doc.get(key), str) and doc[key] for key in ("root", "id", "fs")
        ):
            return None
        return RootMark(doc["root"], doc["id"], doc["fs"])


@dataclass(frozen=True, slots=True)
class RootRef:
    """A root as the messages name it: what it holds, where it is, how to adopt it."""

    root: str
    shown: str
    adopt: str  # the command that adopts it, e.g. "xce-adopt shared-fs shared"


@dataclass(frozen=True, slots=True)
class Adopted:
    """What an adoption did: the root, its new mark, and why it was not trusted before
    (None: it already carried the recorded marker, which is now replaced)."""

    ref: RootRef
    mark: RootMark
    was: str | None


class Adoptable(Protocol):
    """A provider with roots an admin may adopt (``xce-adopt``)."""

    def adopt(self, target: str | None, entry: Mapping[str, Any] | None,
              owner: str) -> Adopted:
        """Mark the existing root of ``target`` (described by its desired ``entry``, if
        any) as this provider's, tagged with ``owner``."""

    def close(self) -> None: ...


def filesystem_id(fd: int) -> str:
    """The filesystem a directory is on: statvfs's ``f_fsid`` where it has one (ext4 derives
    it from the filesystem's UUID), else the device number."""
    fsid = os.fstatvfs(fd).f_fsid
    return f"fsid:{fsid:x}" if fsid else f"dev:{os.fstat(fd).st_dev:x}"


def _read(fd: int) -> RootMark | str | None:
    """The marker of an open root; None when there is none, or why it cannot be read."""
    try:
        mfd = os.open(MARKER, _READ_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as err:
        if err.errno == errno.ELOOP:
            return f"{MARKER} is a symbolic link"
        return f"{MARKER} cannot be read ({err.strerror})"
    try:
        if not stat.S_ISREG(os.fstat(mfd).st_mode):
            return f"{MARKER} is not a regular file"
        data = os.read(mfd, MAX_MARKER_BYTES + 1)
    finally:
        os.close(mfd)
    mark = RootMark.from_text(data.decode("utf-8", "replace"))
    if len(data) > MAX_MARKER_BYTES or mark is None:
        return f"{MARKER} is not a root marker"
    return mark


def _put(fd: int, mark: RootMark) -> None:
    """Write ``mark`` as the root's marker, atomically (a new file renamed over the old)."""
    tmp = f"{MARKER}.{os.urandom(6).hex()}.tmp"
    mfd = os.open(tmp, _WRITE_FLAGS, 0o444, dir_fd=fd)
    try:
        try:
            os.write(mfd, mark.to_text().encode() + b"\n")
            os.fsync(mfd)
        finally:
            os.close(mfd)
        os.rename(tmp, MARKER, src_dir_fd=fd, dst_dir_fd=fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=fd)
        raise
    os.fsync(fd)


def _unmounted(ref: RootRef, what: str) -> ProviderError:
    return refused(
        f"{what}: the volume looks unmounted (or another filesystem is mounted in its "
        f"place), so nothing is created in it and the provider's entries are unknown. Mount "
        f"the filesystem; if this folder is the root it should be, adopt it: {ref.adopt}"
    )


def _mismatch(found: RootMark | str | None, recorded: RootMark | None, ref: RootRef,
              fs: str) -> str | None:
    """Why the marker found in a root does not prove it is the one recorded, or None."""
    if found is None:
        return f"{ref.shown} has no root marker ({MARKER}) of {ref.root}"
    if isinstance(found, str):
        return f"{ref.shown}: its {found}"
    if found.root != ref.root:
        return f"{ref.shown} holds the root marker of {found.root}, not of {ref.root}"
    if found.fs != fs:
        return (f"{ref.shown}: its root marker was written on filesystem {found.fs}, but the "
                f"folder is on filesystem {fs} (a copy, or a remount that changed the id)")
    if recorded is None or found.id != recorded.id:
        theirs = "none" if recorded is None else recorded.id
        return (f"{ref.shown}: its root marker (id {found.id}) is not the one this provider "
                f"recorded (id {theirs})")
    return None


class RootMarks:
    """The roots a provider created or adopted: each checked against the mark its ledger
    recorded, written at the root's first create or at its adoption.

    A mark recorded while its root is being made is *pending* until the root is seen with
    it: a crash before the root is in place leaves no root (it may be made again), one
    after leaves the marked root (trusted, and the mark confirmed, at its next check).
    """

    def __init__(self, ledger: OpLedger) -> None:
        self.ledger = ledger

    def _row(self, root: str) -> tuple[RootMark | None, bool]:
        text = self.ledger.root_mark(root)
        if text is None:
            return None, False
        return RootMark.from_text(text), json.loads(text).get("pending") is True

    def _record(self, mark: RootMark, pending: bool = False) -> None:
        doc = json.loads(mark.to_text())
        self.ledger.record_root_mark(
            mark.root, json.dumps({**doc, "pending": True}, sort_keys=True) if pending
            else mark.to_text())

    def recorded(self, root: str) -> RootMark | None:
        return self._row(root)[0]

    def may_make(self, root: str) -> bool:
        """Whether a root that is not there may be made: never made (or its making never
        finished); a root made once and gone is never made again."""
        mark, pending = self._row(root)
        return mark is None or pending

    def make(self, parent_fd: int, name: str, mode: int, ref: RootRef) -> bool:
        """Make root ``name`` below ``parent_fd`` with its marker, at once: the folder is
        made under a temporary name, marked, and renamed into place, so no crash leaves an
        unmarked root (which reads as unmounted). False when ``name`` exists already."""
        if lstat_at(parent_fd, name) is not None:
            return False
        with os.scandir(parent_fd) as it:  # what a crash left: our name, so ours to remove
            stale = [e.name for e in it if e.name.startswith(f"{NEW_ROOT}{name}-")]
        for leftover in stale:
            shutil.rmtree(leftover, dir_fd=parent_fd)
        tmp = f"{NEW_ROOT}{name}-{os.urandom(4).hex()}"
        os.mkdir(tmp, mode, dir_fd=parent_fd)
        try:
            fd = os.open(tmp, DIR_FLAGS, dir_fd=parent_fd)
            try:
                mark = RootMark(ref.root, os.urandom(16).hex(), filesystem_id(fd))
                self._record(mark, pending=True)
                _put(fd, mark)
            finally:
                os.close(fd)
            os.rename(tmp, name, src_dir_fd=parent_fd, dst_dir_fd=parent_fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                shutil.rmtree(tmp, dir_fd=parent_fd)
            raise
        os.fsync(parent_fd)
        self._record(mark)
        return True

    def why_not(self, fd: int, ref: RootRef) -> str | None:
        """Why an open root is not proven to be ``ref``'s, or None when it is."""
        return _mismatch(_read(fd), self.recorded(ref.root), ref, filesystem_id(fd))

    def check(self, fd: int, ref: RootRef) -> None:
        """Refuse (FAILED_PRECONDITION) a root whose marker is not the one recorded."""
        mark, pending = self._row(ref.root)
        why = _mismatch(_read(fd), mark, ref, filesystem_id(fd))
        if why is not None:
            raise _unmounted(ref, why)
        if mark is not None and pending:
            self._record(mark)  # its making was interrupted after the root was in place

    def gone(self, ref: RootRef) -> ProviderError | None:
        """The error for a root that does not exist: none when it was never made (a new
        root), else "looks unmounted" — a recorded root vanishing is its mount point gone."""
        if self.may_make(ref.root):
            return None
        return _unmounted(ref, f"{ref.shown} does not exist, but this provider created or "
                          "adopted it")

    def mark(self, fd: int, ref: RootRef) -> RootMark:
        """Give the open root a new marker and record it: at its first create, or when an
        admin adopts it (any marker it had is replaced)."""
        mark = RootMark(ref.root, os.urandom(16).hex(), filesystem_id(fd))
        self._record(mark, pending=True)  # a crash now: the old marker no longer matches
        _put(fd, mark)
        self._record(mark)
        return mark

    def unmark(self, fd: int) -> None:
        """Take the marker out of a root about to be removed (put back by ``restore``)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(MARKER, dir_fd=fd)

    def restore(self, fd: int, ref: RootRef) -> None:
        """Put the recorded marker back into a root whose removal failed."""
        mark = self.recorded(ref.root)
        if mark is not None:
            _put(fd, mark)

    def forget(self, ref: RootRef) -> None:
        self.ledger.record_root_mark(ref.root, None)
