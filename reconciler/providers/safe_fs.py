"""Filesystem steps that never follow a symbolic link.

Every step opens the next path component relative to an already-open directory with
``O_NOFOLLOW | O_DIRECTORY`` and then works on the file descriptor (``fchmod``,
``fchown``), so a symlink planted anywhere below the trusted base (a user pointing
``<root>/alice`` at ``/etc``) is refused and its target is never touched, even if it is
swapped in between two steps.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from reconciler.protocol import ErrorCode, ProviderError

DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

assert shutil.rmtree.avoids_symlink_attacks, "needs the fd-based rmtree (Linux, BSD)"


def refused(message: str) -> ProviderError:
    return ProviderError(ErrorCode.FAILED_PRECONDITION, message)


@contextmanager
def open_trusted_dir(path: Path, what: str) -> Iterator[int]:
    """Open a directory from configuration (the base, a cache root); it may be a link."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as err:
        raise refused(f"{what} {path} is not an accessible directory: {err.strerror}") from None
    try:
        yield fd
    finally:
        os.close(fd)


def lstat_at(parent_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.lstat(name, dir_fd=parent_fd)
    except FileNotFoundError:
        return None


def open_dir_at(parent_fd: int, name: str, shown: str) -> int:
    """Open ``name`` below ``parent_fd`` as a directory; a symlink or file is refused."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=parent_fd)
    except FileNotFoundError:
        raise ProviderError(ErrorCode.NOT_FOUND, f"{shown} does not exist") from None
    except OSError as err:
        if err.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise
    st = lstat_at(parent_fd, name)
    what = "a symbolic link" if st is not None and stat.S_ISLNK(st.st_mode) else "not a directory"
    raise refused(f"{shown} is {what}; refusing to follow or change it") from None


@contextmanager
def walk_dirs(
    base_fd: int, parts: Sequence[str], shown: Path, create_mode: int | None = None
) -> Iterator[int]:
    """Open ``base/parts…`` component by component (creating missing ones if asked)."""
    fd = os.dup(base_fd)
    try:
        for i, part in enumerate(parts):
            if create_mode is not None:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(part, create_mode, dir_fd=fd)
            shown_here = shown.joinpath(*parts[: i + 1])
            next_fd = open_dir_at(fd, part, str(shown_here))
            os.close(fd)
            fd = next_fd
        yield fd
    finally:
        os.close(fd)


def remove_dir_at(parent_fd: int, name: str, shown: str, destroy: bool) -> bool:
    """Remove a directory below ``parent_fd`` without following links.

    An empty directory is removed; one with content only when ``destroy`` is set.
    Returns False when there was nothing to remove.
    """
    st = lstat_at(parent_fd, name)
    if st is None:
        return False
    if not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise refused(f"{shown} is {kind}; refusing to remove it (check it by hand)")
    try:
        os.rmdir(name, dir_fd=parent_fd)
        return True
    except OSError as err:
        if err.errno not in (errno.ENOTEMPTY, errno.EEXIST):
            raise
    if not destroy:
        raise refused(f"{shown} holds data; delete it only with params.destroy = true")
    shutil.rmtree(name, dir_fd=parent_fd)
    return True


def subdirs(
    dir_fd: int, vanished: list[str] | None = None
) -> Iterator[tuple[str, os.stat_result]]:
    """Real subdirectories (never symbolic links) of an open directory, with their lstat.

    One removed or renamed between the listing and its lstat is left out, and its name
    added to ``vanished``: on a live volume users do that all the time.
    """
    with os.scandir(dir_fd) as it:
        names = [item.name for item in it if item.is_dir(follow_symlinks=False)]
    for name in names:
        st = lstat_at(dir_fd, name)
        if st is None:
            if vanished is not None:
                vanished.append(name)
        elif stat.S_ISDIR(st.st_mode):
            yield name, st


def octal_mode(value: object, default: int, what: str) -> int:
    """A mode from a spec: ``"0700"``, ``"700"`` or an int; only permission bits."""
    if value is None:
        return default
    mode = -1
    if isinstance(value, str) and value.isdigit():
        with contextlib.suppress(ValueError):
            mode = int(value, 8)
    elif isinstance(value, int) and not isinstance(value, bool):
        mode = value
    if not 0 <= mode <= 0o7777:
        raise ProviderError(ErrorCode.INVALID_ARGUMENT, f"{what} {value!r} is not an octal mode")
    return mode


def mode_text(mode: int) -> str:
    return f"{stat.S_IMODE(mode):04o}"
