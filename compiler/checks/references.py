"""Every reference points at something defined: groups, providers, volumes, pools, locations."""

from __future__ import annotations

from compiler.checks.hosts import HostTable
from compiler.checks.index import Index, Namespace
from compiler.checks.providers import provider_uses
from compiler.core import codes
from compiler.core.names import did_you_mean, visible
from compiler.core.problems import Problems, Where
from compiler.model.document import SiteDocument

LOCATION_KINDS = ("site", "group", "pool", "host")


def _ref(ns: Namespace, name: str, where: Where, problems: Problems) -> bool:
    if name in ns:
        return True
    shown = visible(name)
    hint = did_you_mean(name, ns.known()) or f"define {ns.what} '{shown}' or fix the name"
    problems.error(codes.UNKNOWN_NAME, f"unknown {ns.what} '{shown}'", hint, where)
    return False


def check_location(
    text: str, where: Where, index: Index, hosts: HostTable, problems: Problems
) -> bool:
    """A location is ``site``, ``group/<g>``, ``pool/<p>`` or ``host/<h>``."""
    if text == "site":
        return True
    kind, sep, name = text.partition("/")
    if not sep or kind not in LOCATION_KINDS[1:] or not name:
        problems.error(
            codes.NOT_A_LOCATION,
            f"'{visible(text)}' is not a location",
            "write site, group/<name>, pool/<name> or host/<name>",
            where,
        )
        return False
    if kind == "group":
        return _ref(index.groups, name, where, problems)
    if kind == "pool":
        return _ref(index.pools, name, where, problems)
    if hosts.location_exists(name):
        return True
    hint = did_you_mean(name, hosts.group_of.keys()) or "hosts are defined by host_groups"
    problems.error(codes.UNKNOWN_NAME, f"unknown host '{visible(name)}'", hint, where)
    return False


def check_references(doc: SiteDocument, index: Index, hosts: HostTable, problems: Problems) -> None:
    prov = index.providers
    for _, name, where in provider_uses(doc):
        _ref(prov, name, where, problems)
    for c in doc.counters:
        check_location(c.item.location, c.where.child("location"), index, hosts, problems)
    for d in doc.datasets:
        for i, copy in enumerate(d.item.copies):
            check_location(
                copy.location, d.where.child("copies", i, "location"), index, hosts, problems
            )
    for cache in doc.caches:
        check_location(cache.item.location, cache.where.child("location"), index, hosts, problems)
    for v in doc.volumes:
        for i, group in enumerate(v.item.mounted_by):
            _ref(index.groups, group, v.where.child("mounted_by", i), problems)
    for q in doc.quotas:
        if q.item.volume is not None:
            _ref(index.volumes, q.item.volume, q.where.child("volume"), problems)
        if q.item.pool is not None:
            _ref(index.pools, q.item.pool, q.where.child("pool"), problems)
    for p in doc.proxies:
        for role in ("active", "standby"):
            for i, name in enumerate(getattr(p.item, role)):
                _ref(prov, name, p.where.child(role, i), problems)
