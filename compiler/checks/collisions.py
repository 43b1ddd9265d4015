"""Two definitions that would give one entry id: the map would keep one and drop the other.

Names are checked per namespace in ``index.py``; these are the ids built from more than one
name: a quota (``quota/<volume or pool>/<scope>/<subject>``, the same for a volume and a
pool of one name), a counter (``counter/<name>@<location>``, also given by host groups and
caches) and a dataset copy (``dataset-copy/<dataset>@<location>``).
"""

from __future__ import annotations

from compiler.checks.hosts import HostTable
from compiler.checks.index import Index
from compiler.contract.vocabulary import EntryKind
from compiler.core import codes
from compiler.core.problems import Problems, Where
from compiler.model.document import SiteDocument


def check_quota_ids(doc: SiteDocument, problems: Problems) -> None:
    seen: dict[tuple[str, str, str], tuple[str, Where]] = {}
    for q in doc.quotas:
        kind, target = q.item.target
        for grant in q.item.grants():
            where = q.where.child(*grant.ypath)
            key = (target, grant.scope, grant.subject)
            first = seen.get(key)
            if first is None:
                seen[key] = (kind, where)
                continue
            what = f"{grant.scope} '{grant.subject}'"
            if first[0] == kind:
                message = f"the quota of {what} on {kind} '{target}' is defined twice"
                hint = "keep one quota per user or project on a volume or pool"
            else:
                message = (
                    f"the quotas of {what} on volume '{target}' and on pool '{target}' would "
                    f"both be quota/{target}/{grant.scope}/{grant.subject}"
                )
                hint = "rename the volume or the pool: a quota's id names its target only"
            problems.error(codes.DEFINED_TWICE, message, hint, where.at_key(),
                           also=[first[1].at_key()])


def _host_counters(host: str, doc: SiteDocument, index: Index, hosts: HostTable) -> set[str]:
    """The counters a host gets from the site defaults, its group and its overrides."""
    group = index.groups.items.get(hosts.group_of.get(host, ""))
    if group is None:
        return set()
    names = set(group.item.counters)
    if doc.site is not None:
        names |= set(doc.site.item.defaults.host.counters)
    for expr, members in hosts.overrides.get(group.item.name, {}).items():
        if host in members:
            names |= set(group.item.overrides[expr].counters)
    return names


def check_counter_ids(
    doc: SiteDocument, index: Index, hosts: HostTable, problems: Problems
) -> None:
    """A custom counter may not repeat a host's own counter or a location's cache."""
    for c in doc.counters:
        name, location = c.item.name, c.item.location
        where = c.where.child("name")
        cache = index.caches.items.get(location)
        if name == "cache" and cache is not None:
            problems.error(
                codes.DEFINED_TWICE,
                f"counter 'cache@{location}' is defined twice: the cache at {location} is "
                "that counter (its capacity)",
                "rename this counter",
                where,
                also=[cache.where.child("location")],
            )
        kind, _, host = location.partition("/")
        if kind == EntryKind.HOST and name in _host_counters(host, doc, index, hosts):
            group = index.groups.items[hosts.group_of[host]]
            problems.error(
                codes.DEFINED_TWICE,
                f"counter '{name}@{location}' is defined twice: host group "
                f"'{group.item.name}' already gives {host} a '{name}' counter",
                "set it in the group's 'overrides:' for this host instead",
                where,
                also=[group.where.child("name")],
            )


def check_copy_ids(doc: SiteDocument, problems: Problems) -> None:
    for d in doc.datasets:
        first: dict[str, Where] = {}
        for i, copy in enumerate(d.item.copies):
            where = d.where.child("copies", i, "location")
            if copy.location not in first:
                first[copy.location] = where
                continue
            problems.error(
                codes.DEFINED_TWICE,
                f"two copies of {d.item.name}@{d.item.version} at '{copy.location}'",
                "a location holds one copy of a dataset; remove one",
                where,
                also=[first[copy.location]],
            )
