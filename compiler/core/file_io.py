"""One way to read an input file, and one to write an output file, for every command.

A command's input is a path someone typed or a file found in a folder, so it may be a
named pipe (whose ``open`` waits for a writer for ever), a device (``/dev/zero`` reads
without end), a folder, or far larger than any sane input. ``read_input`` opens with
``O_NONBLOCK`` (never waits), checks the *opened* descriptor with ``fstat`` (a link is
followed, and what it leads to is judged), refuses anything but a regular file, and reads
at most the cap of its kind of input (``Cap``), named once here. Failures of the system
(no such file, permission) stay ``OSError``, so each command names them with its own code;
what this module refuses is a ``Refused`` error with the codes below.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from compiler.core import codes
from compiler.core.private import FILE_MODE, private_dir
from compiler.core.problems import Problem, UserError, Where
from compiler.core.units import SIZE_UNITS, format_size

FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC
CHUNK = 1 << 20  # read past the size fstat gave in steps of this (a file that grows, /proc)


@dataclass(frozen=True, slots=True)
class Cap:
    """The most bytes one kind of input may hold, and that kind, as a message names it."""

    size: int
    what: str


# A live map of a million hosts is ~1.4 GB; its plan and its compiled map are of that order.
MAP_CAP = Cap(4 * SIZE_UNITS["GiB"], "a supply map, live map or plan file")
# Site files list host groups by hostlist: even a large site's files are a few megabytes.
SITE_FILE_CAP = Cap(64 * SIZE_UNITS["MiB"], "a site-config or policy file")
# A PR comment body (a forge keeps at most 1,000,000 characters), a CI event's JSON.
TEXT_CAP = Cap(16 * SIZE_UNITS["MiB"], "a comment or CI event file")
# A token, a password, a key in PEM: a few kilobytes.
SECRET_CAP = Cap(SIZE_UNITS["MiB"], "a secret file")

# What a file that is not a regular file is, in words (xce-digest and the dataset-copy
# provider say it the same way).
KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISDIR, "a folder"), (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
)
NOT_READ = ("give a regular file (or a link to one): a pipe or a device is never read, since "
            "it could make the command wait, or read, for ever")


def kind_of(mode: int) -> str:
    """What a file that is not a regular file is, in words."""
    return next((what for test, what in KINDS if test(mode)), "a special file")


class Refused(UserError):
    """A path refused for what it is (a FIFO, a device, too large): one problem naming it.
    A UserError, so it ends a command that does not catch it with that problem."""

    def __init__(self, problem: Problem) -> None:
        super().__init__([problem])
        self.problem = problem


def _what_it_is(path: str | Path, mode: int) -> str:
    """``a character device``, or ``a symbolic link to /dev/zero, a character device``."""
    kind = kind_of(mode)
    try:
        return f"a symbolic link to {os.readlink(path)}, {kind}"
    except OSError:  # not a link
        return kind


def not_a_file(path: str | Path, shown: str, mode: int) -> Refused:
    return Refused(Problem(codes.NOT_A_REGULAR_FILE,
                           f"is {_what_it_is(path, mode)}, not a regular file", NOT_READ,
                           Where(shown)))


def too_large(shown: str, cap: Cap, size: int | None = None) -> Refused:
    holds = f" (it holds {format_size(size)})" if size is not None else ""
    return Refused(Problem(codes.INPUT_TOO_LARGE,
                           f"is larger than {format_size(cap.size)}, the most {cap.what} may "
                           f"hold{holds}",
                           "check that this is the right file: no input of this kind is "
                           "anywhere near that size", Where(shown)))


def _open(path: str | Path, shown: str) -> int:
    """Open without waiting; a socket cannot be opened at all (ENXIO): say what it is."""
    try:
        return os.open(path, FLAGS)
    except OSError as err:
        if err.errno in (errno.ENXIO, errno.EOPNOTSUPP):
            try:
                mode = os.stat(path).st_mode
            except OSError:
                raise err from None
            if not stat.S_ISREG(mode):
                raise not_a_file(path, shown, mode) from None
        raise


def _read_at_most(fd: int, expected: int, cap: Cap, shown: str) -> bytes:
    """Everything up to EOF, or ``too_large`` once more than ``cap.size`` bytes came."""
    parts: list[bytes] = []
    total = 0
    want = expected + 1  # one more than fstat said: EOF then costs no second read
    while chunk := os.read(fd, want):
        parts.append(chunk)
        total += len(chunk)
        if total > cap.size:
            raise too_large(shown, cap)
        want = CHUNK
    return b"".join(parts)


def read_input(path: str | Path, cap: Cap, shown: str | None = None) -> bytes:
    """The bytes of the regular file at ``path`` (``shown`` names it in problems; default
    the path): never waits, never reads more than ``cap``. Raises ``Refused`` for anything
    but a regular file, or a larger one; ``OSError`` when it cannot be opened or read."""
    label = str(path) if shown is None else shown
    fd = _open(path, label)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise not_a_file(path, label, st.st_mode)
        if st.st_size > cap.size:
            raise too_large(label, cap, st.st_size)
        return _read_at_most(fd, st.st_size, cap, label)
    finally:
        os.close(fd)


def check_replaceable(path: Path) -> None:
    """A file about to be written in place of ``path`` may replace only a regular file (or
    a link to one): a device, FIFO, socket or folder there is refused (as root, writing the
    plan to /dev/full would otherwise replace the device node)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return  # nothing there, or a link to nothing: the link is replaced
    except OSError:
        return  # the write itself reports what is wrong with the place
    if not stat.S_ISREG(mode):
        raise Refused(Problem(codes.OUT_NOT_A_FILE,
                              f"is {_what_it_is(path, mode)}: only a regular file is ever "
                              "replaced by an output", "write to a new file, or to a regular "
                              "file that may be replaced", Where(str(path))))


def write_atomic(path: Path, data: bytes, mode: int = 0o644) -> None:
    """Write via a temporary file and rename, so a reader never sees half a file; every
    ``--out`` writes this way. Only a regular file is ever replaced (``check_replaceable``:
    a device, FIFO or folder at ``path`` is ``Refused``)."""
    check_replaceable(path)
    if mode & ~FILE_MODE:
        path.parent.mkdir(parents=True, exist_ok=True)
    else:  # a private file (a saved plan): the folders made for it are private too
        private_dir(path.parent)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            os.fchmod(fh.fileno(), mode)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise
