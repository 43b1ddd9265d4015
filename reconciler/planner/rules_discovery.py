"""Discovered hosts (PR-4): a host that joined although no entry expects it.

The site's discovery policy (settings.discovery, discovery_policy.py) decides per host:
``report`` lists it as an orphan, ``reject`` turns it away, ``admit`` claims it — with the
group the policy names (``attributes.group``, and the group's features and mounts from the
desired ``host-group/<g>``) and the policy's counters, each a ``create`` that the apply
runs after the admit. An admitted host stays out of config; every later plan holds it to
the policy as config would hold a host (its group's attributes, its counters), so its
counters are neither deleted as unclaimed nor left pending as a leaving host's.
"""

from __future__ import annotations

from typing import Any

from compiler.contract.supply_map import Entry
from compiler.contract.vocabulary import EntryKind, HostState, Policy, Source
from reconciler.plan.model import FieldChange, Verb
from reconciler.planner.builder import Builder, with_state
from reconciler.planner.rules_generic import plan_generic, plan_update

# What an admitted host takes from its group's entry: what the group's own hosts carry.
_FROM_GROUP = ("features", "mounts")


def _host_name(entry_id: str) -> str:
    return entry_id.partition("/")[2]


def plan_discovered(b: Builder, live: Entry) -> None:
    """Joined but unknown: the site's discovery policy decides."""
    discovery = b.settings.discovery
    name = _host_name(live.id)
    policy = discovery.policy_for(name)
    reason = f"joined but not in config (discovered); {discovery.why(name)}"
    if policy == Policy.REPORT:
        b.note("orphans", live, reason)
    elif policy == Policy.ADMIT:
        _admit(b, live, reason)
    else:
        b.act(Verb.REJECT, live, reason, before=live, after=None, claim=True, unacted="orphans",
              orphan=True)


def _attributes(b: Builder, live: Entry) -> dict[str, Any]:
    """The host's attributes once admitted: its own, with the policy's group."""
    group = b.settings.discovery.group
    attrs = dict(live.attributes)
    if group is None:
        return attrs
    attrs["group"] = group
    entry = b.desired.get(f"host-group/{group}")  # there: settings were checked against it
    for key in _FROM_GROUP:
        value = entry.attributes.get(key) if entry is not None else None
        if value:
            attrs[key] = value
        else:
            attrs.pop(key, None)
    return attrs


def _admit(b: Builder, live: Entry, reason: str) -> None:
    attrs = _attributes(b, live)
    changes = tuple(FieldChange(f"attributes.{k}", live.attributes.get(k), attrs.get(k))
                    for k in sorted(attrs.keys() | live.attributes.keys())
                    if attrs.get(k) != live.attributes.get(k))
    owner = b.settings.owner
    if live.owner != owner:
        extra = {"attributes": attrs} if changes else {}
        if b.act(Verb.ADMIT, live, reason, before=live, claim=True, unacted="orphans",
                 after=with_state(live, live.state, owner=owner, **extra), changes=changes):
            _counters(b, live)
        return
    if changes:  # admitted before, under another group (or none): as the policy says now
        b.act(Verb.UPDATE, live, f"admitted host: {reason}", before=live,
              after=with_state(live, live.state, attributes=attrs), changes=changes)
    _counters(b, live)


def _counter(host: Entry, name: str, amount: int, owner: str) -> Entry:
    location = host.id
    return Entry(f"counter/{name}@{location}", EntryKind.COUNTER.value,
                 HostState.AVAILABLE.value, Source.DISCOVERED.value, host.provider, location,
                 amount, {}, {}, owner)


def _counters(b: Builder, host: Entry) -> None:
    """The policy's counters on an admitted host: created (after the admit: the counter's
    location is the host), or updated to the policy's amount."""
    owner = b.settings.owner
    for name, amount in sorted(b.settings.discovery.counters.items()):
        wanted = _counter(host, name, amount, owner)
        have = b.read(wanted.id)
        if have is None:
            b.act(Verb.CREATE, wanted, f"counter of admitted host {host.id} (discovery policy)",
                  before=None, after=wanted.to_json())
        else:
            plan_update(b, wanted, have)


def _admitted_host(b: Builder, counter: Entry) -> Entry | None:
    """The host ``counter`` sits on if the discovery policy has admitted it, else None."""
    location = counter.location or counter.id.partition("@")[2]
    if not location.startswith("host/") or location in b.desired:
        return None
    host = b.read(location)
    if host is None or host.source != "discovered" or host.owner != b.settings.owner:
        return None
    return host if b.settings.discovery.policy_for(_host_name(host.id)) == Policy.ADMIT else None


def plan_counter(b: Builder, desired: Entry | None, live: Entry | None) -> None:
    """A counter no config claims may be an admitted host's: the host's decision keeps the
    ones the policy names (``_counters``); one it does not name is deleted at once, as a
    counter dropped from a group's config is. Every other counter: plan_generic."""
    host = None
    if desired is None and live is not None and b.settings.discovery.policy == Policy.ADMIT:
        host = _admitted_host(b, live)  # (``otherwise`` never admits)
    if host is None:
        plan_generic(b, desired, live)
        return
    assert live is not None
    name = _host_name(live.id).partition("@")[0]
    if name not in b.settings.discovery.counters:
        b.act(Verb.DELETE, live, f"the discovery policy names no counter {name!r} for "
              f"admitted host {host.id}", before=live, after=None, unacted="orphans")
