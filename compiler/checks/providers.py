"""Providers can hold what is bound to them, each is served by exactly one active proxy, and
``site.proxies`` runs in a proxy only providers that have one, with timings that hold."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from compiler.checks.index import Index
from compiler.contract.bindings import IMPLICIT_CONTROLLER
from compiler.contract.provider_params import EXTERNAL_KINDS, DatasetCopyParams
from compiler.core import codes
from compiler.core.names import did_you_mean, visible
from compiler.core.problems import Problems, Where
from compiler.core.units import duration_text
from compiler.model.document import Located, SiteDocument
from compiler.model.providers import Provider
from compiler.model.site import ProxiesSetting

# A proxy renews its leases several times per ttl (a third of it): under 3 s, less than a
# second between renewals, and one slow round trip to the store hands its providers over.
MIN_LEASE_TTL = 3

# What each use needs of the provider bound to it.
CAN_HOLD: dict[str, tuple[str, ...]] = {
    "volume": ("directory", *EXTERNAL_KINDS),
    "dataset copy": ("dataset-copy", *EXTERNAL_KINDS),
    "cache": ("dataset-copy", *EXTERNAL_KINDS),
    "provisioned group": EXTERNAL_KINDS,
    "license borrowing": EXTERNAL_KINDS,
}


def _kind_of(index: Index, name: str) -> str | None:
    loc = index.providers.items.get(name)
    return loc.item.kind if loc is not None else None


def _check_kind(index: Index, use: str, name: str, where: Where, problems: Problems) -> None:
    kind = _kind_of(index, name)
    if kind is None or kind in CAN_HOLD[use]:
        return
    problems.error(
        codes.WRONG_PROVIDER_KIND,
        f"provider '{name}' is of kind '{kind}', which cannot hold a {use}",
        f"bind a provider of kind {' or '.join(CAN_HOLD[use])}",
        where,
    )


def provider_uses(doc: SiteDocument) -> Iterator[tuple[str, str, Where]]:
    """Every place a provider is bound to something: (use, provider, where). The one list
    both the reference check and the kind check walk, so a new use cannot miss either."""
    for g in doc.host_groups:
        if g.item.provisioned is not None:
            at = g.where.child("provisioned", "provider")
            yield "provisioned group", g.item.provisioned.provider, at
    for lic in doc.licenses:
        if lic.item.borrow is not None:
            at = lic.where.child("borrow", "provider")
            yield "license borrowing", lic.item.borrow.provider, at
    for d in doc.datasets:
        for i, copy in enumerate(d.item.copies):
            yield "dataset copy", copy.provider, d.where.child("copies", i, "provider")
    for c in doc.caches:
        yield "cache", c.item.provider, c.where.child("provider")
    for v in doc.volumes:
        yield "volume", v.item.provider, v.where.child("provider")


def check_provider_kinds(doc: SiteDocument, index: Index, problems: Problems) -> None:
    for use, name, where in provider_uses(doc):
        _check_kind(index, use, name, where, problems)
    for p in doc.providers:
        _check_command(p, problems)
    maps = [p for p in doc.providers if p.item.kind == "controller-map"]
    taken = index.providers.items.get(IMPLICIT_CONTROLLER)
    if not maps and taken is not None:
        problems.error(
            codes.CONTROLLER_MAP_CLASH,
            f"provider '{IMPLICIT_CONTROLLER}' is of kind '{taken.item.kind}', but a site with no "
            "controller-map provider gets an embedded one of that name",
            "rename this provider, or declare the site's controller-map provider",
            taken.where.child("name"),
        )
    for extra in maps[1:]:
        problems.error(
            codes.CONTROLLER_MAP_CLASH,
            f"a second controller-map provider '{extra.item.name}'",
            "a site has one controller map; remove one of them",
            extra.where.child("kind"),
            also=[maps[0].where.child("kind")],
        )


def check_cache_locations(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """A dataset-copy provider keeps its copies at its ``params.location``; a cache bound to
    it elsewhere would have every copy staged under the wrong id (a typo there was silent)."""
    for cache in doc.caches:
        params = doc.params.get(cache.item.provider)
        if not isinstance(params, DatasetCopyParams) or params.location == cache.item.location:
            continue
        provider = index.providers.items[cache.item.provider]
        problems.error(
            codes.CACHE_LOCATION_MISMATCH,
            f"the cache at '{cache.item.location}' is held by '{cache.item.provider}', which "
            f"keeps its copies at '{params.location}' (its params.location)",
            f"set the provider's location to {cache.item.location}, or bind this cache to the "
            "provider of that location",
            cache.where.child("provider"),
            also=[provider.where.child("params", "location")],
        )


def _check_command(p: Located[Provider], problems: Problems) -> None:
    external = p.item.kind in EXTERNAL_KINDS
    if external and not p.item.command:
        problems.error(
            codes.COMMAND_MISMATCH,
            f"provider '{p.item.name}' of kind '{p.item.kind}' has no 'command'",
            "give the program to run as a list, e.g. command: [/opt/xce/providers/cloud]",
            p.where.child("kind"),
        )
    if not external and p.item.command:
        problems.error(
            codes.COMMAND_MISMATCH,
            f"built-in provider '{p.item.name}' ({p.item.kind}) takes no 'command'",
            "remove 'command:' or use kind exec/jsonl",
            p.where.child("command").at_key(),
        )


def _active_proxies(doc: SiteDocument, problems: Problems) -> dict[str, list[Located[Any]]]:
    """The proxies each provider is active on; a proxy that lists a provider as both active
    and standby is an error."""
    active: dict[str, list[Located[Any]]] = defaultdict(list)
    for px in doc.proxies:
        for name in px.item.active:
            active[name].append(px)
        for name in px.item.standby:
            if name in px.item.active:
                problems.error(
                    codes.TWO_ACTIVE_PROXIES,
                    f"proxy '{px.item.name}' lists provider '{name}' as both active and standby",
                    "a standby must be another proxy",
                    px.where.child("standby", px.item.standby.index(name)),
                )
    return active


def _named_by_invalid_proxies(doc: SiteDocument) -> set[str]:
    """Providers named active by a proxy that failed validation: they may be served, so
    their missing proxy is not reported on top of that proxy's error."""
    return {
        name
        for raw in doc.invalid_items.get(("proxies",), [])
        if isinstance(raw, dict) and isinstance(raw.get("active"), list)
        for name in raw["active"]
        if isinstance(name, str)
    }


def check_proxies(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """N2: exactly one active proxy per provider; the controller map needs none."""
    active = _active_proxies(doc, problems)
    maybe_served = _named_by_invalid_proxies(doc)
    for name, p in sorted(index.providers.items.items()):
        if p.item.kind == "controller-map":
            continue
        holders = active.get(name, [])
        if not holders and name not in maybe_served:
            problems.error(
                codes.NO_ACTIVE_PROXY,
                f"provider '{name}' is served by no active proxy",
                f"add '{name}' to the 'active:' list of one proxy",
                p.where.child("name"),
            )
        elif len(holders) > 1:
            names = ", ".join(h.item.name for h in holders)
            problems.error(
                codes.TWO_ACTIVE_PROXIES,
                f"provider '{name}' has {len(holders)} active proxies ({names})",
                "keep it active on one proxy and list it under 'standby:' on the others",
                holders[1].where.child("active"),
                also=[h.where.child("active") for h in holders[:1]],
            )


def check_proxy_setting(doc: SiteDocument, index: Index, problems: Problems) -> None:
    """``site.proxies``: ``serve`` names providers a proxy runs, and the lease and the
    inventory bound leave room for a late renewal or a late publish."""
    if doc.site is None:
        return
    setting = doc.site.item.proxies
    where = doc.site.where.child("proxies")
    if isinstance(setting.serve, list):
        _check_served(doc, index, setting.serve, where.child("serve"), problems)
    _check_timings(setting, where, problems)


def _check_served(doc: SiteDocument, index: Index, serve: list[str], where: Where,
                  problems: Problems) -> None:
    """Each name a provider (XCE431) run by a proxy (XCE432). A provider other than the
    controller map without an active proxy is XCE403 already, at the provider."""
    known = index.providers.known() | {doc.controller}
    served = {name for px in doc.proxies for name in px.item.active}
    served |= _named_by_invalid_proxies(doc)
    for i, name in enumerate(serve):
        shown = visible(name)
        if name not in known:
            problems.error(
                codes.PROXY_SERVE_UNKNOWN,
                f"site.proxies.serve: unknown provider '{shown}'",
                did_you_mean(name, known) or "name a provider of 'providers:', or write "
                "'serve: all' for every provider that has a proxy",
                where.child(i),
            )
        elif name == doc.controller and name not in served:
            problems.error(
                codes.PROXY_SERVE_NO_PROXY,
                f"site.proxies.serve: provider '{shown}' is the controller map, which no "
                "proxy runs: it runs in-process, in xce-plan and xce-apply",
                f"remove '{shown}' from serve ('serve: all' means every provider that has "
                "a proxy)",
                where.child(i),
            )


def _check_timings(setting: ProxiesSetting, where: Where, problems: Problems) -> None:
    """The lease outlives a late renewal (XCE433); a published inventory is not unknown
    after one late publish (XCE434)."""
    if setting.lease_ttl < MIN_LEASE_TTL:
        problems.error(
            codes.LEASE_TTL_TOO_SHORT,
            f"site.proxies.lease_ttl is {duration_text(setting.lease_ttl)}, under "
            f"{MIN_LEASE_TTL} s: a proxy renews its leases several times per ttl, so one slow "
            "round trip to the state store or a short pause would hand its providers to the "
            "standby",
            f"write lease_ttl: {MIN_LEASE_TTL}s or more (default 15s)",
            where.child("lease_ttl"),
        )
    age, interval = setting.inventory_max_age, setting.publish_interval
    if age < 2 * interval:
        written = "inventory_max_age" in setting.model_fields_set
        problems.error(
            codes.INVENTORY_AGE_TOO_SHORT,
            f"site.proxies.inventory_max_age ({duration_text(age)}) is under twice "
            f"publish_interval ({duration_text(interval)}): a published inventory is up to "
            "one interval old before it is replaced, so one late publish would make the "
            "provider unknown and stop every plan for its entries",
            f"write inventory_max_age: {2 * interval}s or more, or publish more often",
            where.child("inventory_max_age" if written else "publish_interval"),
            also=[where.child("publish_interval")] if written
            and "publish_interval" in setting.model_fields_set else [],
        )
