"""The digest of a dataset, defined once so the site, the provider and tests agree.

- A single file: ``sha256:`` + the SHA-256 of its bytes.
- A directory: ``sha256:`` + the SHA-256 of one line per regular file below it,
  ``<relative path>\\0<hex sha256 of the file>\\n``, in the byte order of the relative
  paths (``/``-separated, UTF-8). Empty directories, names of directories and file
  modes are not part of it; a symbolic link or special file anywhere makes the tree
  no dataset at all (``DatasetError``), because its content would depend on its target.

Walking opens every directory and file relative to its parent with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Iterable, Iterator
from pathlib import Path

from reconciler.providers.safe_fs import DIR_FLAGS

CHUNK = 1 << 20
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC


class DatasetError(ValueError):
    """A tree that cannot be a dataset (a link or special file inside), or a missing path."""


def walk_tree(
    dir_fd: int, prefix: str = "", strict: bool = True
) -> Iterator[tuple[str, int, str, os.stat_result]]:
    """``(relative path, parent fd, name, lstat)`` for every directory and regular file.

    Directories come before their contents; the parent fd is valid until the next item.
    A link or special file raises ``DatasetError`` (``strict``) or is skipped.
    """
    with os.scandir(dir_fd) as it:
        items = sorted(it, key=lambda e: e.name)
    for item in items:
        rel = prefix + item.name
        st = item.stat(follow_symlinks=False)
        if stat.S_ISREG(st.st_mode):
            yield rel, dir_fd, item.name, st
        elif stat.S_ISDIR(st.st_mode):
            yield rel, dir_fd, item.name, st
            sub_fd = os.open(item.name, DIR_FLAGS, dir_fd=dir_fd)
            try:
                yield from walk_tree(sub_fd, rel + "/", strict)
            finally:
                os.close(sub_fd)
        elif strict:
            what = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "a special file"
            raise DatasetError(f"{rel} is {what}; a dataset holds only regular files")


def hash_fd(fd: int) -> str:
    """Hex SHA-256 of everything readable from ``fd``."""
    h = hashlib.sha256()
    while chunk := os.read(fd, CHUNK):
        h.update(chunk)
    return h.hexdigest()


def file_hex(dir_fd: int | None, name: str | Path) -> str:
    fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
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
    try:
        st = os.lstat(path)
    except OSError as err:
        raise DatasetError(f"{path}: {err.strerror}") from None
    if stat.S_ISREG(st.st_mode):
        return "sha256:" + file_hex(None, path)
    if not stat.S_ISDIR(st.st_mode):
        raise DatasetError(f"{path} is not a regular file or directory")
    fd = os.open(path, DIR_FLAGS)
    try:
        return combine(
            (rel, file_hex(parent, name))
            for rel, parent, name, st in walk_tree(fd)
            if stat.S_ISREG(st.st_mode)
        )
    finally:
        os.close(fd)
