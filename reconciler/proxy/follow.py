"""What this proxy serves: the applied configuration it follows (N2a).

A proxy does not read the site repository: every ``xce-apply`` records the bindings and the
proxies' scoped allowlists it applied in the store, and each proxy follows the latest. It
serves the providers its entry in the bindings names, active or standby, that run in a
proxy (``via: proxy``); a provider added to it is taken up, one removed is released. A proxy
the applied configuration does not name refuses to serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from compiler.contract.bindings import BindingError, Bindings, ProxySettings
from compiler.core.secrets import Redactor
from reconciler.proxy import codes
from reconciler.proxy.allowlist import Allowlist
from reconciler.state import StateStore
from reconciler.state.proxy_records import AppliedConfig


@dataclass(frozen=True, slots=True)
class Served:
    """What one applied configuration gives this proxy to serve."""

    seq: int
    bindings: Bindings  # the applied bindings, site-relative params under the workdir
    preferred: Mapping[str, bool]  # provider -> this proxy is its configured active
    allowlist: Allowlist
    settings: ProxySettings = field(default_factory=ProxySettings)
    redactor: Redactor = field(default_factory=Redactor)  # every bound secret's value

    @property
    def providers(self) -> tuple[str, ...]:
        return tuple(sorted(self.preferred))


@dataclass(frozen=True, slots=True)
class Change:
    """How what this proxy serves changed between two applied configurations."""

    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    rebound: tuple[str, ...] = ()  # served before and after, with another binding


def served_by(config: AppliedConfig, proxy: str, workdir: Path) -> Served:
    """What ``proxy`` serves under ``config``; refuses (NOT_IN_CONFIG) a proxy it does not
    name and (BAD_CONFIG) bindings this version cannot read."""
    try:
        bindings = Bindings.from_json(config.bindings, workdir)
    except BindingError as err:
        raise codes.error(codes.BAD_CONFIG, f"the applied configuration {config.seq} of site "
                          f"{config.site!r} has bindings this proxy cannot read: {err}",
                          proxy) from None
    mine = bindings.proxies.get(proxy)
    if mine is None:
        known = ", ".join(sorted(bindings.proxies)) or "none"
        raise codes.error(codes.NOT_IN_CONFIG, f"proxy {proxy!r} is not in the configuration "
                          f"site {config.site!r} last applied (seq {config.seq}, by "
                          f"{config.applied_by}); its proxies: {known}", proxy)
    proxied = set(bindings.proxied())
    preferred = {name: False for name in mine.standby if name in proxied}
    preferred.update({name: True for name in mine.active if name in proxied})
    return Served(config.seq, bindings, preferred,
                  Allowlist.from_section(proxy, config.allowlists),
                  bindings.proxy_settings, bindings.redactor())


def compare(old: Served | None, new: Served) -> Change:
    """What ``new`` adds, removes and binds anew against ``old`` (None: nothing served)."""
    before = set(old.providers) if old is not None else set()
    after = set(new.providers)
    rebound = sorted(name for name in before & after if old is not None
                     and old.bindings.written.get(name) != new.bindings.written.get(name))
    return Change(tuple(sorted(after - before)), tuple(sorted(before - after)), tuple(rebound))


class Follower:
    """Follows the latest applied configuration of a site for one proxy."""

    def __init__(self, store: StateStore, proxy: str, site: str | None, workdir: Path) -> None:
        self.store = store
        self.proxy = proxy
        self.site = site  # None: the only site the store holds, once one is recorded
        self.workdir = workdir
        self.current: Served | None = None

    def poll(self) -> Change | None:
        """The change since the last poll, or None when there is no new configuration
        (or none yet: the first apply after proxies were turned on records it)."""
        site = self.site or self._only_site()
        if site is None:
            return None
        config = self.store.applied_config(site)
        if config is None or (self.current is not None and config.seq == self.current.seq):
            return None
        self.site = site
        new = served_by(config, self.proxy, self.workdir)
        change = compare(self.current, new)
        self.current = new
        return change

    def _only_site(self) -> str | None:
        sites = self.store.config_sites()
        if len(sites) > 1:
            raise codes.error(codes.WHICH_SITE, f"the state store holds the applied "
                              f"configurations of {len(sites)} sites ({', '.join(sites)}); "
                              "which one does this proxy serve?", self.proxy)
        return sites[0] if sites else None


def describe(served: Served) -> Mapping[str, Any]:
    """The fields a log line gives of what is served."""
    return {"config_seq": served.seq,
            "active": [n for n in served.providers if served.preferred[n]],
            "standby": [n for n in served.providers if not served.preferred[n]]}
