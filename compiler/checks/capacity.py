"""Amounts that must fit: quotas within a volume or pool, dataset copies within a cache."""

from __future__ import annotations

from collections import defaultdict

from compiler.checks.index import Index
from compiler.model.document import SiteDocument
from compiler.model.pools import LicensePool
from compiler.problems import Problems, Where
from compiler.units import format_size

BAD_LOCATION_CODES = ("XCE301", "XCE304")  # unknown name, not a location


def check_quotas(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """Per target and scope (user / project), the sum of limits must fit the capacity."""
    sums: dict[tuple[str, str, str], int] = defaultdict(int)
    first: dict[tuple[str, str, str], Where] = {}
    for q in doc.quotas:
        kind, target = q.item.target
        for grant in q.item.grants():
            key = (kind, target, grant.scope)
            sums[key] += grant.limit
            first.setdefault(key, q.where)
    for (kind, name, scope), total in sorted(sums.items()):
        loc = (index.volumes if kind == "volume" else index.pools).items.get(name)
        if loc is None or getattr(loc.item, "overcommit", False):
            continue
        if isinstance(loc.item, LicensePool):  # a count, borrowing included
            field, cap = "amount", loc.item.amount + (loc.item.borrow.max if loc.item.borrow else 0)
            shown = (str(total), str(cap))
        else:  # a volume or a storage pool: bytes
            field, cap = "capacity", loc.item.capacity
            shown = (format_size(total), format_size(cap))
        if total > cap:
            problems.error(
                "XCE401",
                f"{scope} quotas on {kind} '{name}' add up to {shown[0]}, more than its "
                f"capacity {shown[1]}",
                "lower the quotas, raise the capacity, or declare 'overcommit: true' on the volume"
                if kind == "volume"
                else "lower the quotas or raise the pool's capacity",
                first[(kind, name, scope)],
                also=[loc.where.child(field)],
            )


def check_caches(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """Runs after the reference checks: a copy whose location is already reported as unknown
    or malformed gets no second "no cache there" error."""
    bad_locations = {p.where for p in problems if p.code in BAD_LOCATION_CODES}
    used: dict[str, int] = defaultdict(int)
    for d in doc.datasets:
        for i, copy in enumerate(d.item.copies):
            cache = index.caches.items.get(copy.location)
            at = d.where.child("copies", i)
            if cache is None:
                if (
                    copy.location in index.caches  # an invalid cache, already reported
                    or not copy.location
                    or at.child("location") in bad_locations
                ):
                    continue
                problems.error(
                    "XCE305",
                    f"no cache is declared at '{copy.location}' for a copy of "
                    f"{d.item.name}@{d.item.version}",
                    f"add a 'caches:' item for {copy.location} with its capacity and provider",
                    at.child("location"),
                )
                continue
            if cache.item.provider != copy.provider:
                problems.error(
                    "XCE411",
                    f"copy uses provider '{copy.provider}' but the cache at '{copy.location}' is "
                    f"held by '{cache.item.provider}'",
                    f"use provider: {cache.item.provider}",
                    at.child("provider"),
                )
            used[copy.location] += d.item.size
    for location, total in sorted(used.items()):
        cache = index.caches.items[location]
        if total > cache.item.capacity:
            problems.error(
                "XCE402",
                f"dataset copies at '{location}' need {format_size(total)}, more than its cache "
                f"capacity {format_size(cache.item.capacity)}",
                "raise the cache capacity or remove copies from this location",
                cache.where.child("capacity"),
            )


def check_warnings(doc: SiteDocument, problems: Problems) -> None:
    for v in doc.volumes:
        if not v.item.mounted_by:
            problems.warning(
                "XCE501",
                f"volume '{v.item.name}' is mounted by no host group",
                "list the groups that mount it under 'mounted_by:'; no job can use it otherwise",
                v.where.child("name"),
            )
    for d in doc.datasets:
        if not d.item.copies:
            problems.warning(
                "XCE502",
                f"dataset {d.item.name}@{d.item.version} has no copy",
                "add 'copies:' so jobs can find it at a location",
                d.where.child("name"),
            )
