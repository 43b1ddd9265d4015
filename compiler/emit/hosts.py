"""Host groups, hosts, provisioned instances and per-host counters (PR-4)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from compiler.checks.hosts import HostTable
from compiler.contract.supply_map import EMPTY, Entry
from compiler.contract.vocabulary import PRESENT, EntryKind, HostState
from compiler.core.hostlist import compress
from compiler.emit.context import EmitContext
from compiler.model.document import Located, SiteDocument
from compiler.model.hosts import HostGroup, HostOverride, topology_of
from compiler.model.site import Site

Attributes = dict[str, object]
Copies = dict[str, list[str]]  # location -> sorted name@version of the copies there


def emit_hosts(
    doc: SiteDocument, site: Site, table: HostTable, mounts: dict[str, list[str]], ctx: EmitContext,
    copies: Copies,
) -> None:
    """Every host group that has members, each followed by its hosts' entries. ``copies``
    (location → ``name@version`` list) is the locality of groups and of hosts with copies
    of their own."""
    own = copies if any(loc.startswith("host/") for loc in copies) else {}
    for loc in doc.host_groups:
        hosts = table.members.get(loc.item.name)
        if hosts is not None:
            _emit_group(loc, hosts, site, table, mounts.get(loc.item.name, []), ctx,
                        (copies.get(f"group/{loc.item.name}"), own))


def _emit_group(
    loc: Located[HostGroup],
    hosts: list[str],
    site: Site,
    table: HostTable,
    group_mounts: list[str],
    ctx: EmitContext,
    copies: tuple[list[str] | None, Copies],
) -> None:
    """The group's entry, then the hosts it wants (all, or a provisioned group's first n),
    all from the group's item but for hosts with an override. ``copies``: the group's own
    datasets, and every host's that has copies of its own (empty when no host has)."""
    g = loc.item
    ctx.at(loc.where)
    defaults = site.defaults.host
    features = sorted(set(defaults.features) | set(g.features))
    group_attrs: Attributes = {"hosts": compress(hosts) if hosts else "", "features": features}
    if group_mounts:
        group_attrs["mounts"] = group_mounts
    if copies[0]:
        group_attrs["datasets"] = copies[0]
    wanted, source, spec, provisioning = _provisioning(g, hosts, site.join_deadline)
    group_attrs.update(provisioning)
    ctx.controlled(f"host-group/{g.name}", EntryKind.HOST_GROUP, attributes=group_attrs)
    base = _base_attributes(g, features, group_mounts)
    counters = {**defaults.counters, **g.counters}
    _emit_members(loc, wanted, source, spec, base, counters, _host_overrides(g, table), ctx,
                  copies[1])


def _provisioning(
    g: HostGroup, hosts: list[str], join_deadline: int
) -> tuple[list[str], str, Attributes, Attributes]:
    """The hosts wanted, their source, their spec and the group's provisioning attributes."""
    prov = g.provisioned
    if prov is None:
        return hosts, "config", {"join_deadline": join_deadline}, {}
    n = prov.count if prov.count is not None else (prov.min or 0)
    deadline = prov.join_deadline if prov.join_deadline is not None else join_deadline
    spec: Attributes = {"join_deadline": deadline, "template": prov.template}
    max_hosts = prov.max if prov.max is not None else len(hosts)
    return hosts[:n], "provisioned", spec, {"provider": prov.provider, "max_hosts": max_hosts}


def _base_attributes(g: HostGroup, features: list[str], group_mounts: list[str]) -> Attributes:
    """The attributes every host of the group shares, shared by reference until overridden."""
    attrs: Attributes = {"group": g.name, "features": features}
    topology = topology_of(g)
    if topology:
        attrs["topology"] = topology
    if group_mounts:
        attrs["mounts"] = group_mounts
    return attrs


Overrides = dict[str, tuple[list[HostOverride], str]]


def _host_overrides(group: HostGroup, table: HostTable) -> Overrides:
    """Overrides per host, in the order written (later ones win), and the hostlist key of
    the last one: the host's own item."""
    per_host: dict[str, list[HostOverride]] = defaultdict(list)
    last: dict[str, str] = {}
    for expr, names in table.overrides.get(group.name, {}).items():
        ov = group.overrides[expr]
        for name in names:
            per_host[name].append(ov)
            last[name] = expr
    return {name: (ovs, last[name]) for name, ovs in per_host.items()}


def _overridden(
    attrs: Attributes, counters: dict[str, int], overrides: Sequence[HostOverride]
) -> tuple[Attributes, dict[str, int]]:
    """One host's attributes and counters once its overrides apply (copies, never in place)."""
    for ov in overrides:
        attrs = dict(attrs)
        if ov.features is not None:
            attrs["features"] = sorted(set(ov.features))
        topology = topology_of(ov)
        if topology:  # merged over the group's key by key
            here = attrs.get("topology")
            attrs["topology"] = {**(here if isinstance(here, dict) else {}), **topology}
        counters = {**counters, **ov.counters}
    return attrs, counters


def _emit_members(
    loc: Located[HostGroup],
    wanted: list[str],
    source: str,
    spec: Attributes,
    base: Attributes,
    counters: dict[str, int],
    overrides: Overrides,
    ctx: EmitContext,
    own: Copies,
) -> None:
    """Each host, its instance if provisioned, and its counters: the bulk of a big site,
    so entries are built positionally with a bound ``append``. A host with an override
    comes from the override's item, every other host from the group's; a host with copies
    of its own (``own``) gets its ``datasets``, the others keep sharing the group's dict."""
    g = loc.item
    add, controller, owner, prov = ctx.entries.append, ctx.controller, ctx.owner, g.provisioned
    # the vocabulary's values once, not an Enum lookup per entry (millions on a large site)
    host, instance = EntryKind.HOST.value, EntryKind.INSTANCE.value
    counter = EntryKind.COUNTER.value
    available, present = HostState.AVAILABLE.value, PRESENT.value
    for h in wanted:
        ovs = overrides.get(h)
        if ovs:
            attrs, host_counters = _overridden(base, counters, ovs[0])
            ctx.at(loc.where, "overrides", ovs[1])
        else:
            attrs, host_counters = base, counters
        location = f"host/{h}"
        if own and location in own:
            attrs = {**attrs, "datasets": own[location]}
        add(Entry(location, host, available, source, controller, None, None, attrs, spec, owner))
        if prov is not None:
            instance_spec = {"template": prov.template, "group": g.name,
                             "join_deadline": spec["join_deadline"]}
            add(Entry(f"instance/{h}", instance, available, "provisioned", prov.provider, None,
                      None, {"group": g.name}, instance_spec, owner))
        for name, amount in host_counters.items():
            add(Entry(f"counter/{name}@{location}", counter, present, "config", controller,
                      location, amount, EMPTY, EMPTY, owner))
        if ovs:
            ctx.at(loc.where)
