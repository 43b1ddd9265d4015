"""Publishing a user directory to a host or host group, and a read-only publish that holds.

A publication (CSI's ControllerPublishVolume) records that ``<root>/<user>`` is used at a
location (``host/<name>`` or ``group/<name>``) with an access mode, checked against the
volume's CSI access mode and the directory's other publications; its reply carries the
``context`` a node side needs to mount it (the path, and whether read-only: C3).

A *read-only* publish is also enforced on the files themselves, with no mount and no root
trick: it takes the write bits off the directory and every directory and regular file
below it, recording each item's bits in the provider's state *before* taking them (so a
publish killed halfway loses nothing), and the last read-only unpublish gives exactly
those bits back to the same files (by device and inode). Directories are done top down
and each one loses its write bits before it is listed, so nothing new appears in a
directory once it has been listed. The walk never follows a link and never leaves the
tree: each directory is opened relative to its parent with ``O_NOFOLLOW``, each file with
``O_PATH | O_NOFOLLOW`` (no open of a FIFO or device) and changed through
``/proc/self/fd/N``, which names the opened file itself. Refused, with nothing left
changed: a file with several hard links (its other names may lie outside the volume), a
filesystem mounted inside, a tree deeper than ``MAX_DEPTH``, a directory it cannot list.

What it cannot stop (docs/providers.md): root; the owner giving the bits back with
``chmod`` (the inventory then says ``read_only_intact: false`` for the directory itself,
and publishing again takes them again); a file already open for writing before the
publish; links, FIFOs and sockets, which hold no data of their own, keep their modes.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from reconciler.protocol import ErrorCode, ProviderError, PublishParams
from reconciler.providers.directory_cleanup import MAX_DEPTH
from reconciler.providers.directory_state import DirectoryState, Frozen, Volume
from reconciler.providers.safe_fs import lstat_at, open_dir_at, refused, walk_dirs

WRITE_BITS = 0o222
PATH_FLAGS = os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC
READ_ONLY, READ_WRITE = "read-only", "read-write"


def proc_path(fd: int) -> str:
    return f"/proc/self/fd/{fd}"


def access_conflict(mode: object, pubs: Mapping[str, str], location: str,
                    access: str) -> str | None:
    """Why the volume's CSI access mode (``spec.access_mode``) or the directory's other
    publications forbid publishing it to ``location`` with ``access``; None if nothing does."""
    others = {loc: a for loc, a in sorted(pubs.items()) if loc != location}
    writers = [loc for loc, a in others.items() if a == READ_WRITE]
    readers = [loc for loc, a in others.items() if a == READ_ONLY]
    return (_mode_conflict(mode, location, access, shared=bool(others), writers=writers)
            or _publication_conflict(access, writers, readers))


def _mode_conflict(mode: object, location: str, access: str, *, shared: bool,
                   writers: list[str]) -> str | None:
    """Why the volume's CSI access mode forbids this publish (``shared``: the directory is
    published elsewhere too); None if it does not."""
    if access == READ_WRITE and mode in ("single-node-reader-only", "multi-node-reader-only"):
        return f"the volume's access mode is {mode}"
    if isinstance(mode, str) and mode.startswith("single-node") and (
            not location.startswith("host/") or shared):
        return f"the volume's access mode is {mode}: one host at a time"
    if access == READ_WRITE and mode == "multi-node-single-writer" and writers:
        return f"the volume's access mode is {mode} and it is published read-write to {writers[0]}"
    return None


def _publication_conflict(access: str, writers: list[str], readers: list[str]) -> str | None:
    """Why the directory's other publications forbid this one: a read-only publish takes
    the writes of every location away, so it shares with no writer; None if they do not."""
    if access == READ_ONLY and writers:
        return f"it is published read-write to {writers[0]}; a read-only publish would take " \
               "that location's writes away (unpublish it first)"
    if access == READ_WRITE and readers:
        return f"it is published read-only to {readers[0]}, which must not see it change"
    return None


class Freezer:
    """Takes the write bits off one user directory's tree, recording each first."""

    def __init__(self, state: DirectoryState, volume: str, user: str, shown: str) -> None:
        if not os.path.isdir("/proc/self/fd"):
            raise refused("a read-only publish needs /proc (to change each file it opened "
                          "rather than a name that could be swapped)")
        self.state, self.volume, self.user, self.shown = state, volume, user, shown

    def freeze(self, top_fd: int) -> None:
        self._dir(top_fd, "", 0, os.fstat(top_fd).st_dev)

    def _record(self, items: list[Frozen]) -> None:
        if items:
            self.state.put_frozen(self.volume, self.user, items)

    def _dir(self, fd: int, rel: str, depth: int, dev: int) -> None:
        here = f"{self.shown}/{rel}".rstrip("/")
        st = os.fstat(fd)
        if st.st_dev != dev:
            raise refused(f"{here} is another filesystem mounted inside; a read-only publish "
                          "does not cross into it")
        if st.st_mode & WRITE_BITS:
            self._record([Frozen(rel, st.st_dev, st.st_ino, st.st_mode & WRITE_BITS)])
            os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~WRITE_BITS)
        with os.scandir(fd) as it:  # no write bits: nothing new can appear in it now
            names = sorted(item.name for item in it)
        files: list[tuple[str, os.stat_result]] = []
        dirs: list[str] = []
        for name in names:
            child = lstat_at(fd, name)
            if child is None:
                continue
            if stat.S_ISDIR(child.st_mode):
                dirs.append(name)
            elif stat.S_ISREG(child.st_mode):
                if child.st_nlink > 1:
                    raise refused(f"{here}/{name} has {child.st_nlink} hard links; a read-only "
                                  "publish would change its other names too, which may lie "
                                  "outside the volume")
                if child.st_mode & WRITE_BITS:
                    files.append((name, child))
        self._record([Frozen(_join(rel, n), s.st_dev, s.st_ino, s.st_mode & WRITE_BITS)
                      for n, s in files])
        for name, child in files:
            _set_bits(fd, name, Frozen("", child.st_dev, child.st_ino, 0), add=False)
        for name in dirs:
            if depth >= MAX_DEPTH:
                raise refused(f"{here}/{name} is more than {MAX_DEPTH} levels deep")
            sub = open_dir_at(fd, name, f"{here}/{name}")
            try:
                self._dir(sub, _join(rel, name), depth + 1, dev)
            finally:
                os.close(sub)


def _join(rel: str, name: str) -> str:
    return f"{rel}/{name}" if rel else name


def _set_bits(parent_fd: int, name: str, item: Frozen, add: bool) -> int:
    """Take the write bits off ``name`` (``add``: give ``item.bits`` back) if it is still the
    same directory or regular file (device and inode); 1 if it was changed, else 0."""
    try:
        fd = os.open(name, PATH_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        return 0
    try:
        st = os.fstat(fd)
        same = (st.st_dev, st.st_ino) == (item.dev, item.ino)
        if not same or not (stat.S_ISDIR(st.st_mode) or stat.S_ISREG(st.st_mode)):
            return 0
        mode = stat.S_IMODE(st.st_mode)
        os.chmod(proc_path(fd), mode | item.bits if add else mode & ~WRITE_BITS)
        return 1
    finally:
        os.close(fd)


def thaw(state: DirectoryState, volume: str, user: str, top_fd: int, shown: str) -> int:
    """Give back the write bits a read-only publish took, to the same items only; how
    many were given back. A part of the tree removed or replaced meanwhile is left alone."""
    restored = 0
    by_parent: dict[str, list[Frozen]] = {}
    for item in state.frozen(volume, user):
        if item.path:
            by_parent.setdefault(item.path.rpartition("/")[0], []).append(item)
        else:
            st = os.fstat(top_fd)
            if (st.st_dev, st.st_ino) == (item.dev, item.ino):
                os.fchmod(top_fd, stat.S_IMODE(st.st_mode) | item.bits)
                restored += 1
    for parent, items in sorted(by_parent.items()):
        try:
            with walk_dirs(top_fd, parent.split("/") if parent else [], Path(shown)) as fd:
                restored += sum(_set_bits(fd, i.path.rpartition("/")[2], i, add=True)
                                for i in items)
        except ProviderError:
            continue  # that part of the tree is gone or became a link: nothing to give back
    state.drop_frozen(volume, user)
    return restored


def publish_dir(state: DirectoryState, vol: Volume, user: str, fd: int, req: PublishParams,
                shown: str) -> dict[str, Any]:
    """Publish the user directory open at ``fd``; the reply's details. Publishing again
    the same way converges (a read-only publish takes back bits given back meanwhile)."""
    access = req.access or READ_WRITE
    pubs = state.publications(vol.name).get(user, {})
    if pubs.get(req.location, access) != access:
        raise ProviderError(ErrorCode.ALREADY_EXISTS,
                            f"{req.id} is published {pubs[req.location]} to {req.location}; "
                            f"unpublish it before publishing it {access} there")
    why = access_conflict((vol.declared.get("spec") or {}).get("access_mode"), pubs,
                          req.location, access)
    if why is not None:
        raise refused(f"{req.id} cannot be published {access} to {req.location}: {why}")
    frozen_before = READ_ONLY in pubs.values()
    state.put_publication(vol.name, user, req.location, access)
    if access == READ_ONLY:
        try:
            Freezer(state, vol.name, user, shown).freeze(fd)
        except BaseException:
            if not frozen_before:  # leave nothing changed: give back what was taken
                thaw(state, vol.name, user, fd, shown)
            if req.location not in pubs:
                state.drop_publication(vol.name, user, req.location)
            raise
    path = f"{vol.path.rstrip('/')}/{user}"
    return {"published": {"location": req.location, "access": access},
            "context": {"path": path, "readonly": access == READ_ONLY}}


def unpublish_dir(state: DirectoryState, vol: Volume, user: str, fd: int | None,
                  location: str, shown: str) -> dict[str, Any]:
    """Remove one publication; the last read-only one gives the write bits back
    (``fd`` None: the directory is gone, only the records are dropped)."""
    pubs = state.publications(vol.name).get(user, {})
    access = pubs.get(location)
    if access is None:
        return {"unpublished": None, "already_absent": True}
    restored = 0
    if access == READ_ONLY and list(pubs.values()).count(READ_ONLY) == 1:
        if fd is None:
            state.drop_frozen(vol.name, user)
        else:
            restored = thaw(state, vol.name, user, fd, shown)
    state.drop_publication(vol.name, user, location)
    return {"unpublished": {"location": location, "access": access}, "already_absent": False,
            "restored": restored}


def held_mode(state: DirectoryState, volume: str, user: str, fd: int, mode: int) -> int:
    """The mode to give a user directory that an update sets to ``mode``: while it is
    published read-only, without write bits, which are recorded to be given back later."""
    if READ_ONLY not in state.publications(volume).get(user, {}).values():
        return mode
    st = os.fstat(fd)
    state.put_frozen(volume, user, [Frozen("", st.st_dev, st.st_ino, mode & WRITE_BITS)],
                     merge=False)
    return mode & ~WRITE_BITS
