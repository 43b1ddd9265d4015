"""The applied config the proxies follow: recorded by every apply, compared by every plan.

A proxy serves under the latest config an apply recorded (its bindings and the proxies'
scoped allowlists), never under one only compiled: a config is reviewed before it is
applied. So ``xce-apply`` records it under the site's lock before any call — also when it
has nothing to change, which is how a site that turned proxies on bootstraps them — and a
plan whose proxies follow no config, or another one, says so beside the unknown providers.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.contract.bindings import Bindings
from compiler.core.problems import Problem, Severity
from compiler.core.times import format_utc
from reconciler.relay.codes import HINTS, NO_APPLIED_CONFIG, OLDER_CONFIG
from reconciler.relay.open import Relay
from reconciler.state import StateStore


def record_config(store: StateStore, site: str, bindings: Bindings,
                  allowlists: Mapping[str, Any], applied_by: str) -> int:
    """Record ``bindings`` and the proxies' ``allowlists`` as the site's applied config; its
    sequence number (the latest one's when nothing changed)."""
    return store.record_config(site, bindings.to_json(), dict(allowlists), applied_by)


def config_problems(relay: Relay, bindings: Bindings,
                    allowlists: Mapping[str, Any]) -> list[Problem]:
    """Warnings when the proxies follow no applied config, or one other than this."""
    proxied = ", ".join(f"'{name}'" for name in bindings.proxied())
    applied = relay.store.applied_config(relay.site)
    if applied is None:
        return [HINTS.problem(NO_APPLIED_CONFIG, (
            f"provider(s) {proxied} run only inside proxies, and no xce-apply has recorded "
            f"the config of site '{relay.site}' in the state store {relay.store.label}: the "
            "proxies refuse to serve until one has, so these providers are unknown"),
            relay.site, severity=Severity.WARNING)]
    if applied.bindings == bindings.to_json() and applied.allowlists == dict(allowlists):
        return []
    when = format_utc(applied.applied)
    return [HINTS.problem(OLDER_CONFIG, (
        f"the proxies of provider(s) {proxied} follow the config applied as #{applied.seq} "
        f"({when}, by {applied.applied_by}), whose bindings or proxy allowlists differ "
        "from the ones planned here"), relay.site, severity=Severity.WARNING)]
