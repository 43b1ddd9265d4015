"""Provider bindings (``build/bindings.json``): which proxy runs which provider (PR-2, N2)."""

from __future__ import annotations

from typing import Any

from compiler.model.document import SiteDocument
from compiler.model.providers import Provider

IMPLICIT_CONTROLLER = "controller"


def controller_name(doc: SiteDocument) -> str:
    """The site's controller-map provider; an embedded one named 'controller' if none declared."""
    for p in doc.providers:
        if p.item.kind == "controller-map":
            return p.item.name
    return IMPLICIT_CONTROLLER


def _params(doc: SiteDocument, p: Provider) -> dict[str, Any]:
    """A built-in's params as its model validated them (sizes and durations in numbers),
    only the keys written; an external provider's as written, for its program to read."""
    parsed = doc.params.get(p.name)
    return p.params if parsed is None else parsed.model_dump(mode="json", exclude_unset=True)


def build_bindings(doc: SiteDocument) -> dict[str, Any]:
    active: dict[str, str] = {}
    standbys: dict[str, list[str]] = {}
    proxies: dict[str, Any] = {}
    for px in doc.proxies:
        proxies[px.item.name] = {
            "host": px.item.host,
            "active": sorted(px.item.active),
            "standby": sorted(px.item.standby),
        }
        for name in px.item.active:
            active.setdefault(name, px.item.name)
        for name in px.item.standby:
            standbys.setdefault(name, []).append(px.item.name)
    providers: dict[str, Any] = {}
    for loc in doc.providers:
        p = loc.item
        providers[p.name] = {
            "kind": p.kind,
            "command": p.command,
            "params": _params(doc, p),
            "secrets": dict(p.credentials),
            "account": p.account,
            "timeout": p.timeout,
            "max_reply_bytes": p.max_reply_bytes,
            "proxy": active.get(p.name),
            "standbys": sorted(standbys.get(p.name, [])),
        }
    name = controller_name(doc)
    if name not in providers:
        providers[name] = {
            "kind": "controller-map",
            "command": None,
            "params": {},
            "secrets": {},
            "account": None,
            "timeout": 30,
            "max_reply_bytes": Provider.model_fields["max_reply_bytes"].default,
            "proxy": None,
            "standbys": [],
        }
    return {"providers": providers, "proxies": proxies}
