"""The digest of a dataset, defined once so the site, the provider and tests agree.

- A single file: ``sha256:`` + the SHA-256 of its bytes.
- A directory: ``sha256:`` + the SHA-256 of one line per regular file below it,
  ``<relative path>\\0<hex sha256 of the file>\\n``, in the byte order of the relative
  paths (``/``-separated, UTF-8). Empty directories, names of directories and file
  modes are not part of it; a symbolic link or special file anywhere makes the tree
  no dataset at all (``DatasetError``), because its content would depend on its target.

Walking opens every directory and file relative to its parent with ``O_NOFOLLOW`` and
``O_NONBLOCK`` (a FIFO's ``open`` would otherwise wait for a writer for ever), then checks
the *opened descriptor* with ``fstat``: whatever was swapped in after the listing is what
is refused.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path

from compiler.core.file_io import kind_of

CHUNK = 1 << 20
NODE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
ONLY = "a dataset holds only regular files and folders: replace or remove it"


class DatasetError(ValueError):
    """A tree that cannot be a dataset (a link or special file inside), or a path that
    cannot be read (missing, no permission)."""


def not_data(shown: str, mode: int) -> DatasetError:
    return DatasetError(f"{shown} is {kind_of(mode)}; {ONLY}")


def open_node(dir_fd: int | None, name: str | Path, shown: str) -> tuple[int, os.stat_result]:
    """Open a regular file or directory of a dataset, never following a link nor waiting on
    a FIFO or device; anything else is a ``DatasetError`` naming ``shown``."""
    try:
        fd = os.open(name, NODE_FLAGS, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ENOENT:
            raise DatasetError(f"{shown}: no such file or folder") from None
        try:  # a link (ELOOP) or a socket (ENXIO) cannot be opened: say what it is
            st = os.lstat(name, dir_fd=dir_fd)
        except OSError:
            st = None
        if st is not None and not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
            raise not_data(shown, st.st_mode) from None
        raise DatasetError(f"{shown}: {err.strerror}") from None
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return fd, st
    os.close(fd)
    raise not_data(shown, st.st_mode)


def changed_meanwhile(shown: str) -> DatasetError:
    return DatasetError(f"{shown} changed while being read; try again")


def open_as(dir_fd: int | None, name: str | Path, shown: str,
            is_kind: Callable[[int], bool]) -> int:
    """``open_node`` for a file or folder the listing said was a regular file
    (``stat.S_ISREG``) or a folder (``stat.S_ISDIR``): anything else changed meanwhile."""
    fd, st = open_node(dir_fd, name, shown)
    if not is_kind(st.st_mode):
        os.close(fd)
        raise changed_meanwhile(shown)
    return fd


def walk_tree(
    dir_fd: int, prefix: str = "", strict: bool = True
) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """``(relative path, parent fd, name, lstat)`` for every directory and regular file.

    Directories come before their contents; the parent fd is valid until the next item.
    A link or special file, or one that changes while walked, raises ``DatasetError``
    (``strict``) or is skipped (e.g. a copy evicted while the cache is measured).
    """
    with os.scandir(dir_fd) as it:
        items = sorted(it, key=lambda e: e.name)
    for item in items:
        rel = prefix + item.name
        try:
            st = item.stat(follow_symlinks=False)
        except FileNotFoundError:
            if strict:
                raise changed_meanwhile(rel) from None
            continue
        if stat.S_ISREG(st.st_mode):
            yield rel, dir_fd, item.name, st
        elif stat.S_ISDIR(st.st_mode):
            yield rel, dir_fd, item.name, st
            yield from _walk_below(dir_fd, item.name, rel, strict)
        elif strict:
            raise not_data(rel, st.st_mode)


def _walk_below(
    dir_fd: int, name: str, rel: str, strict: bool
) -> Iterator[tuple[str, int, str, os.stat_result]]:
    try:
        sub_fd = open_as(dir_fd, name, rel, stat.S_ISDIR)
    except DatasetError:
        if strict:
            raise
        return
    try:
        yield from walk_tree(sub_fd, rel + "/", strict)
    finally:
        os.close(sub_fd)


def hash_fd(fd: int) -> str:
    """Hex SHA-256 of everything readable from ``fd``."""
    h = hashlib.sha256()
    while chunk := os.read(fd, CHUNK):
        h.update(chunk)
    return h.hexdigest()


def file_hex(dir_fd: int | None, name: str | Path, shown: str | None = None) -> str:
    """Hex SHA-256 of a regular file (``shown`` names it in an error; default ``name``)."""
    fd = open_as(dir_fd, name, str(name) if shown is None else shown, stat.S_ISREG)
    try:
        return hash_fd(fd)
    finally:
        os.close(fd)


def combine(files: Iterable[tuple[str, str]]) -> str:
    """The directory digest from ``(relative path, hex file digest)`` pairs, in any order."""
    h = hashlib.sha256()
    for rel, hexdigest in sorted(files, key=lambda f: os.fsencode(f[0])):
        h.update(os.fsencode(rel) + b"\0" + hexdigest.encode() + b"\n")
    return "sha256:" + h.hexdigest()


def dataset_digest(path: str | Path) -> str:
    """``sha256:<hex>`` of a dataset file or directory, as defined above."""
    fd, st = open_node(None, path, str(path))
    try:
        if stat.S_ISREG(st.st_mode):
            return "sha256:" + hash_fd(fd)
        return combine(
            (rel, file_hex(parent, name, rel))
            for rel, parent, name, st in walk_tree(fd)
            if stat.S_ISREG(st.st_mode)
        )
    except DatasetError as err:
        raise DatasetError(f"{path}: {err}") from None
    finally:
        os.close(fd)
