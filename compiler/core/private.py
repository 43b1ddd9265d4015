"""Files and folders that only their owner may read, whatever the umask.

The state store, the providers' ledgers and state folders and saved plans hold what will be
done to a site, its owner tags and its journal: on a shared admin host or CI runner nobody
else may read them. Each is created here, a file 0600 in folders created 0700 (SQLite makes
its ``-wal`` and ``-shm`` files with the mode of their database). A folder that already
exists keeps its mode: it may be one the user chose, such as ``/tmp`` or the current folder.
A file of ours that exists is made 0600 (an older xce-gitops left them 0644), as the
providers' stderr logs are.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

FILE_MODE = 0o600
DIR_MODE = 0o700
_GROUP_OTHERS = 0o077


def private_dir(path: Path) -> Path:
    """Create ``path`` and each missing parent 0700; return ``path``."""
    missing: list[Path] = []
    current = path
    while not current.is_dir() and current.parent != current:
        missing.append(current)
        current = current.parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if folder.is_dir():  # made meanwhile by another runner, 0700 as well
                continue
            raise
        os.chmod(folder, DIR_MODE)  # exact: a umask such as 0277 takes bits away
    return path


def private_file(path: Path, *, create: bool = True) -> Path:
    """Create ``path`` empty (in a folder made by ``private_dir``) unless it exists, and make
    it 0600 if it is ours; ``create=False`` only tightens a file that exists. Return it."""
    if not create and not path.exists():
        return path
    private_dir(path.parent)
    fd = os.open(path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, FILE_MODE)
    try:
        restrict(fd)
    finally:
        os.close(fd)
    return path


def restrict(fd: int) -> None:
    """Make the open file 0600 when it is a regular file of ours that others may read."""
    st = os.fstat(fd)
    if stat.S_ISREG(st.st_mode) and st.st_uid == os.geteuid() and st.st_mode & _GROUP_OTHERS:
        os.fchmod(fd, FILE_MODE)
