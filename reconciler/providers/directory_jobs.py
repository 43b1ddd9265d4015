"""The job directories on a volume, as ``job-dir`` entries (issue 13 §1, N12, N13, N14).

Layout: ``<root>/<user>/<jobid>/{in,out,err}``; element ``<index>`` of an array job at
``<jobid>/<index>/…`` (N12: the scheduler's ``1234[7]`` is never a path, so no bracket
reaches the filesystem); attempt N ≥ 2 of a requeued job at ``<jobid>/attempt-N/…`` (or
``<jobid>/<index>/attempt-N/…``), beside the first attempt's outputs (N13). The worker
makes ``<jobid>/`` as the user; the provider only reports and evicts it. Anything else
in a user directory — a name that is not a job id, a dot-name, an eviction's
``.xce-expired-*`` aside — is the user's own and never reported.

Each job is walked once (``directory_cleanup.walk_tree``), without following a link,
for its disk usage, its newest change anywhere in the tree and its layout.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ClusterShell.RangeSet import RangeSet

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import PRESENT, EntryKind
from reconciler.protocol import ProviderError
from reconciler.providers.base import LIVE_SOURCE
from reconciler.providers.directory_cleanup import Newest, Tree, changed, user_dir, walk_tree
from reconciler.providers.names import invalid
from reconciler.providers.safe_fs import lstat_at, open_dir_at, refused

KIND = EntryKind.JOB_DIR.value
JOB_ID = re.compile(r"[0-9]{1,20}")  # a job id, and an array index below it
ATTEMPT = re.compile(r"attempt-([1-9][0-9]{0,8})")
NOT_MADE_HERE = ("job directories are made by the worker as the user; the provider only "
                 "reports and evicts them")


def job_id(value: str) -> str:
    """A job id from an entry id: decimal digits, else INVALID_ARGUMENT."""
    if not JOB_ID.fullmatch(value):
        raise invalid(f"job-dir id names a job id (decimal digits, an array's element "
                      f"being <jobid>/<index> on disk), got {value!r}")
    return value


def layout(dirs: Iterable[Sequence[str]]) -> tuple[str | None, int]:
    """The array elements present (as ranges, None if not an array) and the highest
    attempt, from a job's directories one and two levels down."""
    indices: list[str] = []
    attempt = 1
    for rel in dirs:
        element = JOB_ID.fullmatch(rel[0]) is not None
        if len(rel) == 1 and element:
            indices.append(str(int(rel[0])))
        m = ATTEMPT.fullmatch(rel[-1])
        if m is not None and (len(rel) == 1 or element):
            attempt = max(attempt, int(m[1]))
    return (str(RangeSet.fromlist(indices)) if indices else None), attempt


def job_entries(root_fd: int, provider: str, volume: str, vol_path: str, user: str
                ) -> list[Entry]:
    """The ``job-dir`` entries of ``<root>/<user>``; none when it cannot be listed."""
    try:
        with user_dir(root_fd, user) as fd:
            if fd is None:
                return []
            with os.scandir(fd) as it:
                names = sorted(i.name for i in it
                               if JOB_ID.fullmatch(i.name) and i.is_dir(follow_symlinks=False))
            found = ((name, job_tree(fd, f"{user}/{name}", name)) for name in names)
            return [job_entry(provider, volume, f"{vol_path.rstrip('/')}/{user}", user, name,
                              tree) for name, tree in found if tree is not None]
    except ProviderError:
        return []  # swapped for a link meanwhile: never followed
    except OSError:
        return []  # not listable by this provider: nothing it could report or evict


def job_tree(user_fd: int, path: str, name: str) -> Tree | None:
    """One walk of a job directory; None when it is gone or no directory any more."""
    try:
        fd = open_dir_at(user_fd, name, path)
    except ProviderError:
        return None
    except OSError as err:  # not searchable: only its own inode can be seen
        st = lstat_at(user_fd, name)
        if st is None:
            return None
        return Tree(Newest(changed(st), path), st.st_blocks,
                    f"{path} cannot be opened ({err.strerror})")
    try:
        return walk_tree(fd, path, record=2)
    finally:
        os.close(fd)


def job_entry(provider: str, volume: str, user_path: str, user: str, job: str, tree: Tree
              ) -> Entry:
    elements, attempt = layout(tree.dirs)
    spec: dict[str, object] = {"path": f"{user_path}/{job}", "user": user, "job": job}
    if elements is not None:
        spec["elements"] = elements
    spec["attempt"] = attempt
    spec["last_write"] = int(tree.newest.when)
    if tree.unchecked is not None:
        spec["unchecked"] = tree.unchecked
    return Entry(id=f"{KIND}/{volume}/{user}/{job}", kind=KIND, state=PRESENT.value,
                 source=LIVE_SOURCE, provider=provider, location=f"volume/{volume}",
                 amount=tree.usage, spec=spec)


def seen_last_write(params: Mapping[str, Any]) -> int:
    """``params.entry.spec.last_write`` of an evict: the newest change the plan saw."""
    entry = params.get("entry")
    spec = entry.get("spec") if isinstance(entry, Mapping) else None
    seen = spec.get("last_write") if isinstance(spec, Mapping) else None
    if not isinstance(seen, int) or isinstance(seen, bool):
        raise invalid("an evict of a job-dir carries the live entry the plan saw "
                      "(params.entry with spec.last_write, whole seconds)")
    if isinstance(spec, Mapping) and spec.get("unchecked"):
        raise refused(f"the plan saw this job directory unchecked ({spec['unchecked']}): a "
                      "tree that cannot be seen fully is never evicted")
    return seen
