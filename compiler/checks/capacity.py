"""Amounts that must fit: quotas within a volume or pool, dataset copies within a cache."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from compiler.checks.index import Index
from compiler.contract.vocabulary import EntryKind
from compiler.core import codes
from compiler.core.problems import Problems, Where
from compiler.core.types import NO_UNIT, WrittenAsSize
from compiler.core.units import format_size
from compiler.model.document import SiteDocument
from compiler.model.pools import LicensePool
from compiler.model.quotas import Grant
from compiler.model.volumes import Volume

BAD_LOCATION_CODES = (codes.UNKNOWN_NAME, codes.NOT_A_LOCATION)


# How many of the quotas already using a capacity a message names, the largest first.
NAMED_USERS = 3


@dataclass(frozen=True, slots=True)
class _Capacity:
    """What a quota target holds: its amount, the key that sets it, and how to show amounts."""

    amount: int
    field: str
    unit: Callable[[int], str]
    what: str  # "the volume's capacity", "the pool's seats"


def _capacity_of(item: Any) -> _Capacity:
    if isinstance(item, LicensePool):  # a count, borrowing included
        borrowed = item.borrow.max if item.borrow else 0
        return _Capacity(item.amount + borrowed, "amount", str, "the pool's seat count")
    what = "the volume's capacity" if isinstance(item, Volume) else "the pool's capacity"
    return _Capacity(item.capacity, "capacity", format_size, what)


def _used_by(grants: list[tuple[Grant, Where]], cap: _Capacity) -> str:
    """``alice (4TiB), bob (4TiB) and 3 more``: the quotas already there, largest first."""
    largest = sorted(grants, key=lambda g: (-g[0].limit, g[0].subject))
    named = ", ".join(f"{g.subject} ({cap.unit(g.limit)})" for g, _ in largest[:NAMED_USERS])
    rest = len(largest) - NAMED_USERS
    return named + (f" and {rest:,} more" if rest > 0 else "")


def _over(
    target: tuple[str, str, str], grants: list[tuple[Grant, Where]], cap: _Capacity
) -> tuple[int, str] | None:
    """The first quota, in file order, that the capacity cannot hold, and the message."""
    kind, name, scope = target
    used, i = 0, 0
    while used + grants[i][0].limit <= cap.amount:
        used += grants[i][0].limit
        i += 1
        if i == len(grants):
            return None
    grant = grants[i][0]
    total = sum(g.limit for g, _ in grants)
    head = (
        f"{scope} quota '{grant.subject}' ({cap.unit(grant.limit)}) on {kind} '{name}' does not "
        f"fit: {cap.what} {cap.unit(cap.amount)}"
    )
    if i:
        head += (
            f" is already used {cap.unit(used)} by the {scope} quotas before it: "
            f"{_used_by(grants[:i], cap)}"
        )
    else:
        head += " is less than this quota alone"
    over = total - cap.amount
    return i, f"{head}; all {scope} quotas add up to {cap.unit(total)}, {cap.unit(over)} too many"


def _seat_counts(target: tuple[str, str, str], grants: list[tuple[Grant, Where]],
                 problems: Problems) -> list[tuple[Grant, Where]]:
    """The quotas on a license pool that count seats; a limit written as a string ("16",
    "16GiB") is a size, never a number of seats (XCE107), and is left out of the sum."""
    _, name, scope = target
    counted = []
    for grant, where in grants:
        if not isinstance(grant.limit, WrittenAsSize):
            counted.append((grant, where))
            continue
        problems.error(
            codes.COUNT_NOT_A_NUMBER,
            f"{scope} quota '{grant.subject}' on license pool '{name}' is written as a string, "
            f"which is a size ({format_size(grant.limit)}): a license pool counts seats, and "
            f"{NO_UNIT}",
            "write the number of seats as a plain number, without quotes or a unit (16)",
            where,
        )
    return counted


def check_quotas(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """Per target and scope (user / project), the limits must fit the capacity together.
    Reported once per target and scope, at the first quota (in file order) that does not fit
    beside those before it, so the place named is where the capacity ran out."""
    grants: dict[tuple[str, str, str], list[tuple[Grant, Where]]] = defaultdict(list)
    for q in doc.quotas:
        kind, target = q.item.target
        for grant in q.item.grants():
            grants[(kind, target, grant.scope)].append((grant, q.where.child(*grant.ypath)))
    for key, listed in sorted(grants.items()):
        kind, name, _ = key
        loc = (index.volumes if kind == EntryKind.VOLUME else index.pools).items.get(name)
        if loc is None or getattr(loc.item, "overcommit", False):
            continue
        if isinstance(loc.item, LicensePool):
            listed = _seat_counts(key, listed, problems)
            if not listed:
                continue
        cap = _capacity_of(loc.item)
        found = _over(key, listed, cap)
        if found is None:
            continue
        i, message = found
        problems.error(
            codes.QUOTAS_OVER_CAPACITY,
            message,
            "lower this quota or those before it, raise the capacity, or declare "
            "'overcommit: true' on the volume"
            if kind == EntryKind.VOLUME
            else "lower this quota or those before it, or raise the pool's capacity",
            listed[i][1],
            also=[loc.where.child(cap.field)],
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
                    codes.NO_CACHE,
                    f"no cache is declared at '{copy.location}' for a copy of "
                    f"{d.item.name}@{d.item.version}",
                    f"add a 'caches:' item for {copy.location} with its capacity and provider",
                    at.child("location"),
                )
                continue
            if cache.item.provider != copy.provider:
                problems.error(
                    codes.COPY_PROVIDER_MISMATCH,
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
                codes.CACHE_OVER_CAPACITY,
                f"dataset copies at '{location}' need {format_size(total)}, more than its cache "
                f"capacity {format_size(cache.item.capacity)}",
                "raise the cache capacity or remove copies from this location",
                cache.where.child("capacity"),
            )


def check_warnings(doc: SiteDocument, problems: Problems) -> None:
    for v in doc.volumes:
        if not v.item.mounted_by:
            problems.warning(
                codes.VOLUME_NOT_MOUNTED,
                f"volume '{v.item.name}' is mounted by no host group",
                "list the groups that mount it under 'mounted_by:'; no job can use it otherwise",
                v.where.child("name"),
            )
    for d in doc.datasets:
        if not d.item.copies:
            problems.warning(
                codes.DATASET_WITHOUT_COPY,
                f"dataset {d.item.name}@{d.item.version} has no copy",
                "add 'copies:' so jobs can find it at a location",
                d.where.child("name"),
            )
