"""Host groups, hosts, provisioned instances and per-host counters (PR-4)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

from compiler.checks.hosts import HostTable
from compiler.emit.context import EmitContext
from compiler.hostlist import compress
from compiler.model.document import Located, SiteDocument
from compiler.model.hosts import HostGroup, HostOverride
from compiler.model.site import Site
from compiler.supply_map import Entry

Attributes = dict[str, object]


def emit_hosts(
    doc: SiteDocument, site: Site, table: HostTable, mounts: dict[str, list[str]], ctx: EmitContext
) -> None:
    """Every host group that has members, each followed by its hosts' entries."""
    for loc in doc.host_groups:
        hosts = table.members.get(loc.item.name)
        if hosts is not None:
            _emit_group(loc, hosts, site, table, mounts.get(loc.item.name, []), ctx)


def _emit_group(
    loc: Located[HostGroup],
    hosts: list[str],
    site: Site,
    table: HostTable,
    group_mounts: list[str],
    ctx: EmitContext,
) -> None:
    """The group's entry, then the hosts it wants (all, or a provisioned group's first n),
    all from the group's item but for hosts with an override."""
    g = loc.item
    ctx.at(loc.where)
    defaults = site.defaults.host
    features = sorted(set(defaults.features) | set(g.features))
    group_attrs: Attributes = {"hosts": compress(hosts) if hosts else "", "features": features}
    if group_mounts:
        group_attrs["mounts"] = group_mounts
    wanted, source, spec, provisioning = _provisioning(g, hosts, site.join_deadline)
    group_attrs.update(provisioning)
    ctx.controlled(f"host-group/{g.name}", "host-group", attributes=group_attrs)
    base = _base_attributes(g, features, group_mounts)
    counters = {**defaults.counters, **g.counters}
    _emit_members(loc, wanted, source, spec, base, counters, _host_overrides(g, table), ctx)


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
    if g.rack:
        attrs["rack"] = g.rack
    if g.switch:
        attrs["switch"] = g.switch
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
        if ov.rack is not None:
            attrs["rack"] = ov.rack
        if ov.switch is not None:
            attrs["switch"] = ov.switch
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
) -> None:
    """Each host, its instance if provisioned, and its counters: the bulk of a big site,
    so entries are built positionally with a bound ``append``. A host with an override
    comes from the override's item, every other host from the group's."""
    g = loc.item
    add, controller, owner, prov = ctx.entries.append, ctx.controller, ctx.owner, g.provisioned
    for h in wanted:
        ovs = overrides.get(h)
        if ovs:
            attrs, host_counters = _overridden(base, counters, ovs[0])
            ctx.at(loc.where, "overrides", ovs[1])
        else:
            attrs, host_counters = base, counters
        location = f"host/{h}"
        add(Entry(location, "host", "available", source, controller, None, None, attrs, spec,
                  owner))
        if prov is not None:
            instance_spec = {"template": prov.template, "group": g.name,
                             "join_deadline": spec["join_deadline"]}
            add(Entry(f"instance/{h}", "instance", "available", "provisioned", prov.provider,
                      None, None, {"group": g.name}, instance_spec, owner))
        for name, amount in host_counters.items():
            add(Entry(f"counter/{name}@{location}", "counter", "available", "config",
                      controller, location, amount, {}, {}, owner))
        if ovs:
            ctx.at(loc.where)
