"""``build/bindings.json``: the site's providers and proxies as the typed ``Bindings``.

Each provider's binding is what the reconciler needs to reach it: its kind, its params (a
built-in kind's as its model validated them, an external one's as written), its secrets
as references, its limits, and the proxy that serves it (the first that lists it as
active) with the others on standby. A site that declares no controller-map provider gets
the embedded one (``SiteDocument.controller``) with the language's defaults. The providers
``site.proxies.serve`` names (``all``: every one with an active proxy) run ``via`` their
proxy, and the site's proxy timings go with them (``ProxySettings``).
"""

from __future__ import annotations

from compiler.contract.bindings import Bindings, ProviderBinding, ProxyBinding, ProxySettings
from compiler.model.document import SiteDocument
from compiler.model.providers import Provider
from compiler.model.site import ProxiesSetting


def _binding(doc: SiteDocument, p: Provider, proxy: str | None, standbys: list[str],
             proxied: bool) -> ProviderBinding:
    """A built-in's params as its model validated them; an external provider's as written."""
    parsed = doc.params.get(p.name)
    return ProviderBinding(
        kind=p.kind,
        params=p.params if parsed is None else parsed,
        command=None if p.command is None else tuple(p.command),
        secrets=dict(p.credentials),
        account=p.account,
        timeout=p.timeout,
        max_reply_bytes=p.max_reply_bytes,
        proxy=proxy,
        standbys=tuple(sorted(standbys)),
        via="proxy" if proxied and proxy is not None else "in-process",
    )


def _served(setting: ProxiesSetting | None, name: str) -> bool:
    """Whether ``site.proxies.serve`` runs provider ``name`` in its proxy (the checks made
    sure a named one has a proxy; ``all`` takes those that have one)."""
    if setting is None or setting.serve == "none":
        return False
    return setting.serve == "all" or name in setting.serve


def _proxy_settings(setting: ProxiesSetting | None) -> ProxySettings:
    if setting is None:
        return ProxySettings()
    return ProxySettings(setting.inventory_max_age, setting.publish_interval, setting.lease_ttl)


def _embedded_controller() -> ProviderBinding:
    """The controller-map provider of a site that declares none, with the defaults."""
    fields = Provider.model_fields
    return ProviderBinding(kind="controller-map", params={}, timeout=fields["timeout"].default,
                           max_reply_bytes=fields["max_reply_bytes"].default)


def build_bindings(doc: SiteDocument) -> Bindings:
    """Every provider's binding and every proxy, as bindings.json holds them."""
    active: dict[str, str] = {}
    standbys: dict[str, list[str]] = {}
    proxies: dict[str, ProxyBinding] = {}
    for px in doc.proxies:
        proxy = px.item
        proxies[proxy.name] = ProxyBinding(proxy.host, tuple(sorted(proxy.active)),
                                           tuple(sorted(proxy.standby)))
        for name in proxy.active:
            active.setdefault(name, proxy.name)
        for name in proxy.standby:
            standbys.setdefault(name, []).append(proxy.name)
    setting = doc.site.item.proxies if doc.site is not None else None
    providers = {
        loc.item.name: _binding(doc, loc.item, active.get(loc.item.name),
                                standbys.get(loc.item.name, []), _served(setting, loc.item.name))
        for loc in doc.providers
    }
    providers.setdefault(doc.controller, _embedded_controller())
    return Bindings.of(providers, proxies, _proxy_settings(setting))
