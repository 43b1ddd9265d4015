"""Name indexes of everything a site defines, reporting duplicates with both places."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from compiler.core import codes
from compiler.core.problems import Problems
from compiler.model.document import Located, SiteDocument


@dataclass(slots=True)
class Namespace:
    """Defined names of one kind; ``invalid`` holds names of items that failed validation."""

    what: str
    items: dict[str, Located[Any]] = field(default_factory=dict)
    invalid: set[str] = field(default_factory=set)

    def known(self) -> set[str]:
        return set(self.items) | self.invalid

    def __contains__(self, name: str) -> bool:
        return name in self.items or name in self.invalid


def _collect(
    what: str,
    located: Iterable[Located[Any]],
    key: Callable[[Any], str],
    problems: Problems,
    invalid: set[str] | None = None,
) -> Namespace:
    ns = Namespace(what, invalid=set(invalid or ()))
    for loc in located:
        name = key(loc.item)
        first = ns.items.get(name)
        if first is not None:
            problems.error(
                codes.DEFINED_TWICE,
                f"{what} '{name}' is defined twice",
                "rename one of them or merge the two definitions",
                loc.where.child("name") if hasattr(loc.item, "name") else loc.where,
                also=[first.where.child("name") if hasattr(first.item, "name") else first.where],
            )
        else:
            ns.items[name] = loc
    return ns


@dataclass(slots=True)
class Index:
    groups: Namespace
    pools: Namespace
    datasets: Namespace
    caches: Namespace
    volumes: Namespace
    providers: Namespace
    proxies: Namespace
    counters: Namespace


def build_index(doc: SiteDocument, problems: Problems) -> Index:
    inv = doc.invalid_names
    return Index(
        groups=_collect(
            "host group", doc.host_groups, lambda i: i.name, problems, inv.get(("host_groups",))
        ),
        pools=_collect(
            "pool",
            [*doc.licenses, *doc.storage_pools],
            lambda i: i.name,
            problems,
            inv.get(("pools", "licenses"), set()) | inv.get(("pools", "storage"), set()),
        ),
        datasets=_collect("dataset", doc.datasets, lambda i: f"{i.name}@{i.version}", problems),
        caches=_collect(
            "cache at", doc.caches, lambda i: i.location, problems, inv.get(("caches",))
        ),
        volumes=_collect("volume", doc.volumes, lambda i: i.name, problems, inv.get(("volumes",))),
        providers=_collect(
            "provider", doc.providers, lambda i: i.name, problems, inv.get(("providers",))
        ),
        proxies=_collect("proxy", doc.proxies, lambda i: i.name, problems, inv.get(("proxies",))),
        counters=_collect("counter", doc.counters, lambda i: f"{i.name}@{i.location}", problems),
    )
