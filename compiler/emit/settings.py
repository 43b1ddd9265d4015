"""``settings`` of the compiled map: the site's planning policy as the reconciler reads it
(compiler/contract/settings.py, which holds the defaults).

Only what the site wrote is written, beside a few keys always present, so that a map's
bytes and digest stay what they were when a new setting (with its default) is added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from compiler.contract.settings import Settings
from compiler.contract.vocabulary import DiscoveryPolicy, Policy
from compiler.model.discovery import Discovery
from compiler.model.document import Located, SiteDocument
from compiler.model.hosts import HostGroup
from compiler.model.site import Settle, Site


def _optional(site: Site) -> dict[str, Any]:
    """The settings written only when not the default."""
    out: dict[str, Any] = {}
    if site.unreviewed_apply != "refuse":
        out["unreviewed_apply"] = site.unreviewed_apply
    if site.settle != Settle():
        out["settle"] = site.settle.model_dump()
    provisioning = site.provisioning.model_dump(exclude_none=True)
    if provisioning:
        out["provisioning"] = provisioning
    return out


def discovery_setting(
    discovery: DiscoveryPolicy | Discovery, groups: Iterable[Located[HostGroup]],
    default_counters: Mapping[str, int],
) -> str | dict[str, Any]:
    """``settings.discovery`` of the compiled map: the word as written (so the maps of sites
    that write one stay byte for byte what they were), or the mapping with its defaults
    filled in: ``otherwise`` when there are names, and the counters resolved (the policy's,
    else the group's own over the site's defaults, as the group's hosts get them)."""
    if isinstance(discovery, str):
        return discovery
    out: dict[str, Any] = {"policy": discovery.policy}
    if discovery.names:
        out["names"] = list(discovery.names)
        out["otherwise"] = discovery.otherwise or Policy.REPORT.value
    if discovery.group is not None:
        out["group"] = discovery.group
    counters = discovery.counters
    if counters is None and discovery.group is not None:
        group = next((g.item for g in groups if g.item.name == discovery.group), None)
        counters = {**default_counters, **group.counters} if group is not None else {}
    if counters:
        out["counters"] = dict(sorted(counters.items()))
    return out if len(out) > 1 else discovery.policy


def shared_accounts(doc: SiteDocument) -> list[str]:
    """Providers in a cloud account shared with others (P5): their unclaimed instances that
    carry our owner tag are reported, never released."""
    return sorted(p.item.name for p in doc.providers if p.item.account == "shared")


def emit_settings(site: Site, doc: SiteDocument) -> Settings:
    """The planning policy that travels with the compiled map (``doc``: for the host group
    a discovery policy admits into, and the providers in shared accounts)."""
    return Settings({
        "site": site.name,
        "owner": f"site/{site.name}",
        "discovery": discovery_setting(site.discovery, doc.host_groups,
                                       site.defaults.host.counters),
        "join_deadline": site.join_deadline,
        "release_orphans": site.release_orphans,
        "management": dict(sorted(site.management.items())),
        "safety": site.safety.model_dump(exclude_none=True, exclude_defaults=True),
        "protected": sorted(site.protected),
        **_optional(site),
        "shared_accounts": shared_accounts(doc),
    })
