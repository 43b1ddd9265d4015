"""What the scheduler reads of the shared volumes (N15, N9): which volume a job uses (one
claim per queue, profile or project, at most one default), whether the access mode
fits the hosts that mount it and the job directories it holds, and that no volume's
folder, nor a dataset cache's, lies inside another's (XCE429)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from compiler.checks.hosts import HostTable
from compiler.checks.index import Index
from compiler.contract.provider_params import DatasetCopyParams, DirectoryParams
from compiler.contract.vocabulary import EntryKind
from compiler.core import codes
from compiler.core.problems import Problems, Where
from compiler.model.document import Located, SiteDocument
from compiler.model.hosts import HostGroup
from compiler.model.volumes import Volume

SINGLE_NODE = frozenset({"single-node-writer", "single-node-reader-only"})
READER_ONLY = frozenset({"single-node-reader-only", "multi-node-reader-only"})
_CLAIMS = (("queues", "queue"), ("profiles", "application profile"), ("projects", "project"))


def check_volumes(doc: SiteDocument, index: Index, hosts: HostTable, problems: Problems) -> None:
    """Each volume once: a name defined twice is reported already (XCE302), and its second
    definition would only echo here."""
    volumes = [v for v in doc.volumes if index.volumes.items.get(v.item.name) is v]
    _check_claims(volumes, problems)
    _check_default(volumes, problems)
    first_quota: dict[str, Where] = {}
    for q in doc.quotas:
        kind, target = q.item.target
        if kind == EntryKind.VOLUME:
            first_quota.setdefault(target, q.where)
    _check_nested_volumes(volumes, problems)
    _check_cache_roots(doc, volumes, problems)
    for v in volumes:
        if v.item.access_mode in SINGLE_NODE:
            _check_single_node(v, index, hosts, problems)
        if v.item.access_mode in READER_ONLY:
            _check_writes(v, first_quota.get(v.item.name), problems)


def _claims(v: Located[Volume]) -> Iterator[tuple[tuple[str, str], Where]]:
    """Each (what, name) the volume claims, at its first place in ``used_by`` (a name
    written twice in one list is one claim)."""
    for field, what in _CLAIMS:
        first: dict[str, int] = {}
        for i, name in enumerate(getattr(v.item.used_by, field)):
            first.setdefault(name, i)
        for name, i in first.items():
            yield (what, name), v.where.child("used_by", field, i)


def _check_claims(volumes: list[Located[Volume]], problems: Problems) -> None:
    """A job's queue, profile or project names one volume: two claims would leave the
    scheduler to guess. Reported at the later claim, the first under ``also``."""
    seen: dict[tuple[str, str], tuple[str, Where]] = {}
    for v in volumes:
        for key, where in _claims(v):
            first = seen.setdefault(key, (v.item.name, where))
            if first[0] == v.item.name:
                continue
            what, name = key
            problems.error(
                codes.CLAIMED_TWICE,
                f"{what} '{name}' is claimed by volume '{v.item.name}' and already by volume "
                f"'{first[0]}': its jobs would not know which volume to use",
                f"remove '{name}' from one of the two volumes' used_by; a job that no volume "
                "claims uses the default volume (default: true)",
                where,
                also=[first[1]],
            )


def _check_default(volumes: list[Located[Volume]], problems: Problems) -> None:
    defaults = [v for v in volumes if v.item.default]
    for v in defaults[1:]:
        problems.error(
            codes.TWO_DEFAULT_VOLUMES,
            f"volume '{v.item.name}' is the default volume, and so is volume "
            f"'{defaults[0].item.name}': a site has at most one",
            "keep 'default: true' on one volume",
            v.where.child("default"),
            also=[defaults[0].where.child("default")],
        )


def _most_hosts(group: HostGroup, members: int) -> int:
    """How many hosts of the group may exist at once: all its names, or for a provisioned
    group the ones its count or max allows."""
    prov = group.provisioned
    if prov is None:
        return members
    most = prov.count if prov.count is not None else prov.max
    return members if most is None else min(most, members)


def _check_single_node(
    v: Located[Volume], index: Index, hosts: HostTable, problems: Problems
) -> None:
    """A single-node volume is attached to one host at a time (CSI): the groups that mount
    it may hold one host in all. Unknown groups are reported by the reference checks."""
    counted = []
    for name in dict.fromkeys(v.item.mounted_by):
        group = index.groups.items.get(name)
        if group is not None:
            counted.append((name, _most_hosts(group.item, len(hosts.members.get(name, [])))))
    total = sum(n for _, n in counted)
    if total <= 1:
        return
    shown = ", ".join(f"'{name}' ({n:,} host{'s' * (n != 1)})" for name, n in counted)
    groups = "host group" + "s" * (len(counted) > 1)
    problems.error(
        codes.SINGLE_NODE_SHARED,
        f"volume '{v.item.name}' is {v.item.access_mode}, but {total:,} hosts mount it: "
        f"{groups} {shown}",
        "a single-node volume is attached to one host at a time: mount it from a one-host "
        "group, or use multi-node-multi-writer (or multi-node-single-writer: one writer)",
        v.where.child("access_mode"),
        also=[v.where.child("mounted_by")],
    )


def _check_writes(v: Located[Volume], quota: Where | None, problems: Problems) -> None:
    """Job directories are written by jobs: a reader-only volume cannot hold any, so it can
    have neither users (their directories) nor quotas (which give users directories too)."""
    vol = v.item
    has = []
    also = []
    if vol.users:
        has.append("user directories (users: " + ", ".join(vol.users[:3])
                   + (f" and {len(vol.users) - 3:,} more" if len(vol.users) > 3 else "") + ")")
        also.append(v.where.child("users"))
    if quota is not None:
        has.append("quotas")
        also.append(quota)
    if not has:
        return
    problems.error(
        codes.READ_ONLY_WITH_DIRS,
        f"volume '{vol.name}' is {vol.access_mode}, but it has {' and '.join(has)}: job "
        "directories need writes",
        "use multi-node-multi-writer for a volume that holds job directories, or remove its "
        "users and quotas (a reader-only volume serves data to read)",
        v.where.child("access_mode"),
        also=also,
    )


@dataclass(frozen=True, slots=True)
class _Folder:
    """A folder the site gives one owner: a volume's, or a dataset cache's root."""

    what: str  # "volume 'shared'", "the cache of provider 'gpu-cache'"
    absolute: bool  # else under the proxy's working folder
    parts: tuple[str, ...]
    where: Where

    @property
    def shown(self) -> str:
        text = "/".join(self.parts)
        return "/" + text if self.absolute else f"<workdir>/{text}"

    def meets(self, other: _Folder) -> bool:
        """One is the other, or inside it (relative and absolute folders never compare)."""
        n = min(len(self.parts), len(other.parts))
        return self.absolute == other.absolute and self.parts[:n] == other.parts[:n]


def folder_parts(path: str) -> tuple[str, ...]:
    """A path's folders once normalised: ``/a/b/../c/`` is ``a, c``; ``//a`` is ``a``."""
    out: list[str] = []
    for part in path.split("/"):
        if part == "..":
            if out:
                out.pop()
        elif part not in ("", "."):
            out.append(part)
    return tuple(out)


def _overlap(later: _Folder, first: _Folder) -> str:
    """How ``later`` meets ``first``, in words naming both."""
    if later.parts == first.parts:
        return f"{later.what} ({later.shown}) is the same folder as {first.what}"
    if len(later.parts) > len(first.parts):
        return f"{later.what} ({later.shown}) is inside {first.what} ({first.shown})"
    return f"{later.what} ({later.shown}) contains {first.what} ({first.shown})"


def _report_overlaps(
    folders: list[_Folder], against: list[_Folder], why: str, problems: Problems
) -> None:
    """Each folder that meets one before it (or, with ``against``, one of those), at the
    later one with the earlier under ``also``."""
    for i, folder in enumerate(folders):
        for first in [*against, *folders[:i]]:
            if folder.meets(first):
                problems.error(
                    codes.PATHS_OVERLAP,
                    f"{_overlap(folder, first)}: {why}",
                    "give each its own folder, neither inside the other "
                    "(/shared/xce and /shared/xce-sub, not /shared/xce and /shared/xce/sub)",
                    folder.where,
                    also=[first.where],
                )
                break


def _check_nested_volumes(volumes: list[Located[Volume]], problems: Problems) -> None:
    """As jobs see them: a volume inside another would get the outer one's user
    directories, quotas and retention clean-up over its own."""
    folders = [
        _Folder(f"volume '{v.item.name}'", True, folder_parts(v.item.path), v.where.child("path"))
        for v in volumes
    ]
    _report_overlaps(folders, [], "the outer volume's clean-up and quotas would reach the "
                     "inner one's files", problems)


def _check_cache_roots(
    doc: SiteDocument, volumes: list[Located[Volume]], problems: Problems
) -> None:
    """On disk: a dataset-copy provider's cache root inside a volume (``<base>/<path>`` of
    its directory provider), or inside another cache, would have its copies cleaned up or
    reported by the other owner."""
    stored = []
    for v in volumes:
        params = doc.params.get(v.item.provider)
        if isinstance(params, DirectoryParams):
            parts = folder_parts(params.base) + folder_parts(v.item.path)
            stored.append(_Folder(f"volume '{v.item.name}'", params.base.startswith("/"), parts,
                                  v.where.child("path")))
    caches = []
    for p in doc.providers:
        params = doc.params.get(p.item.name)
        if isinstance(params, DatasetCopyParams):
            root = params.cache_root or f"cache/{p.item.name}"
            given = ("params", "cache_root") if params.cache_root else ("name",)
            where = p.where.child(*given)
            caches.append(_Folder(f"the cache of provider '{p.item.name}'", root.startswith("/"),
                                  folder_parts(root), where))
    _report_overlaps(caches, stored, "a dataset cache needs a folder that no volume or other "
                     "cache holds", problems)
