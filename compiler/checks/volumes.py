"""What the scheduler reads of the shared volumes (N15, N9): which volume a job uses (one
claim per queue, profile or project, at most one default) and whether the access mode
fits the hosts that mount it and the job directories it holds."""

from __future__ import annotations

from collections.abc import Iterator

from compiler import codes
from compiler.checks.hosts import HostTable
from compiler.checks.index import Index
from compiler.model.document import Located, SiteDocument
from compiler.model.hosts import HostGroup
from compiler.model.volumes import Volume
from compiler.problems import Problems, Where

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
        if kind == "volume":
            first_quota.setdefault(target, q.where)
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
