"""Host groups expanded to hosts: hostlist errors, hosts in two groups, overrides, counts."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from compiler.core import codes
from compiler.core.hostlist import HostlistError, compress, parse
from compiler.core.problems import Problems, Where
from compiler.model.document import Located
from compiler.model.hosts import HostGroup

_HOSTLIST_CODES = {
    "syntax": codes.HOSTLIST_SYNTAX,
    "descending": codes.HOSTLIST_DESCENDING,
    "too-large": codes.HOSTLIST_TOO_LARGE,
}


@dataclass(slots=True)
class HostTable:
    """Each group's hosts in order, each host's group, and each host's override names;
    ``unread`` the hosts of groups that were not validated (they count as defined)."""

    members: dict[str, list[str]] = field(default_factory=dict)
    group_of: dict[str, str] = field(default_factory=dict)
    overrides: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    unread: set[str] = field(default_factory=set)

    def location_exists(self, host: str) -> bool:
        return host in self.group_of or host in self.unread


def _expand(expr: str, where: Where, problems: Problems) -> list[str] | None:
    """The hosts of a hostlist, once each; a host written twice is a warning (a typo, or a
    copy of a line that should have changed), never silently the same host."""
    try:
        hostlist = parse(expr)
    except HostlistError as err:
        problems.error(
            _HOSTLIST_CODES[err.reason],
            f"bad hostlist '{expr}': {err.message} (at character {err.offset + 1})",
            "write Slurm hostlists such as cn[0001-1024] or gpu[01-08,10]",
            where,
        )
        return None
    repeated = hostlist.repeated()
    if repeated:
        problems.warning(
            codes.HOST_REPEATED,
            f"hostlist '{expr}' names {len(repeated)} host(s) more than once: "
            f"{compress(repeated)}",
            "write each host once; if another host was meant, fix its name",
            where,
        )
    return list(hostlist.nodes)


def _unread_hosts(items: Iterable[Any]) -> set[str]:
    """Hosts of host groups that were not validated (or whose file failed at its top): a
    reference to one is no error of its own."""
    hosts: set[str] = set()
    for item in items:
        expr = item.get("hosts") if isinstance(item, dict) else None
        if isinstance(expr, str):
            try:
                hosts.update(parse(expr).nodes)
            except HostlistError:
                continue  # the group's own problem, reported with it or on the next run
    return hosts


def expand_hosts(
    groups: list[Located[HostGroup]], problems: Problems, unread: Iterable[Any] = ()
) -> HostTable:
    table = HostTable(unread=_unread_hosts(unread))
    clashes: dict[tuple[str, str], list[str]] = defaultdict(list)
    first_where: dict[str, Where] = {}
    for loc in groups:
        g = loc.item
        first_where.setdefault(g.name, loc.where)
        if g.name in table.members:
            continue  # a duplicate definition, already reported
        hosts: list[str] = []
        if g.hosts:
            hosts = _expand(g.hosts, loc.where.child("hosts"), problems) or []
        elif g.provisioned is None:
            problems.warning(
                codes.GROUP_WITHOUT_HOSTS,
                f"host group '{g.name}' has no hosts",
                "add 'hosts: <hostlist>' or remove the group",
                loc.where.child("name"),
            )
        table.members[g.name] = hosts
        for h in hosts:
            other = table.group_of.get(h)
            if other is None:
                table.group_of[h] = g.name
            else:
                clashes[(other, g.name)].append(h)
        _check_overrides(loc, set(hosts), table, problems)
        _check_provisioned(loc, len(hosts), problems)
    for (a, b), hosts in sorted(clashes.items()):
        problems.error(
            codes.HOST_IN_TWO_GROUPS,
            f"{len(hosts)} host(s) are in both '{a}' and '{b}': {compress(hosts)}",
            "a host belongs to exactly one group; remove them from one of the hostlists",
            first_where[b].child("hosts"),
            also=[first_where[a].child("hosts")],
        )
    return table


def _check_overrides(
    loc: Located[HostGroup], hosts: set[str], table: HostTable, problems: Problems
) -> None:
    g = loc.item
    per_group: dict[str, list[str]] = {}
    for expr in g.overrides:
        where = loc.where.child("overrides", expr).at_key()
        names = _expand(expr, where, problems)
        if names is None:
            continue
        missing = [n for n in names if n not in hosts]
        if missing:
            problems.error(
                codes.OVERRIDE_NOT_IN_GROUP,
                f"override names host(s) not in group '{g.name}': {compress(missing)}",
                "overrides apply only to the group's own hosts; fix the name or the hostlist",
                where,
            )
        per_group[expr] = [n for n in names if n in hosts]
    table.overrides[g.name] = per_group


def _check_provisioned(loc: Located[HostGroup], n_hosts: int, problems: Problems) -> None:
    p = loc.item.provisioned
    if p is None:
        return
    # The key that asks for the most hosts is the one to point at: 'count' excludes
    # 'min'/'max', and 'min' <= 'max' is already validated.
    key = next((k for k in ("count", "max", "min") if getattr(p, k) is not None), None)
    if key is None:
        return
    wanted: int = getattr(p, key)
    if wanted > n_hosts:
        problems.error(
            codes.TOO_FEW_HOSTS,
            f"provisioned group '{loc.item.name}' asks for up to {wanted} hosts ('{key}') but "
            f"its hostlist names {n_hosts}",
            "list at least as many host names in 'hosts:' as 'count'/'max' allows",
            loc.where.child("provisioned", key),
        )
