"""Host groups, hosts, provisioned instances and per-host counters (PR-4)."""

from __future__ import annotations

from collections import defaultdict

from compiler.checks.hosts import HostTable
from compiler.emit.context import EmitContext
from compiler.hostlist import compress
from compiler.model.document import SiteDocument
from compiler.model.hosts import HostGroup, HostOverride
from compiler.model.site import Site
from compiler.supply_map import Entry


def _host_overrides(group: HostGroup, table: HostTable) -> dict[str, list[HostOverride]]:
    """Overrides per host, in the order written (later ones win)."""
    per_host: dict[str, list[HostOverride]] = defaultdict(list)
    for expr, names in table.overrides.get(group.name, {}).items():
        ov = group.overrides[expr]
        for name in names:
            per_host[name].append(ov)
    return per_host


def emit_hosts(
    doc: SiteDocument, site: Site, table: HostTable, mounts: dict[str, list[str]], ctx: EmitContext
) -> None:
    defaults = site.defaults.host
    add, controller, owner = ctx.entries.append, ctx.controller, ctx.owner
    for loc in doc.host_groups:
        g = loc.item
        hosts = table.members.get(g.name)
        if hosts is None:
            continue
        group_mounts = mounts.get(g.name, [])
        counters = {**defaults.counters, **g.counters}
        features = sorted(set(defaults.features) | set(g.features))
        base_attrs: dict[str, object] = {"group": g.name, "features": features}
        if g.rack:
            base_attrs["rack"] = g.rack
        if g.switch:
            base_attrs["switch"] = g.switch
        if group_mounts:
            base_attrs["mounts"] = group_mounts
        group_attrs: dict[str, object] = {
            "hosts": compress(hosts) if hosts else "",
            "features": features,
        }
        if group_mounts:
            group_attrs["mounts"] = group_mounts
        prov = g.provisioned
        wanted = hosts
        source = "config"
        spec: dict[str, object] = {"join_deadline": site.join_deadline}
        if prov is not None:
            n = prov.count if prov.count is not None else (prov.min or 0)
            wanted = hosts[:n]
            source = "provisioned"
            deadline = prov.join_deadline if prov.join_deadline is not None else site.join_deadline
            spec = {"join_deadline": deadline, "template": prov.template}
            group_attrs["provider"] = prov.provider
            group_attrs["max_hosts"] = prov.max if prov.max is not None else len(hosts)
        ctx.controlled(f"host-group/{g.name}", "host-group", attributes=group_attrs)
        overrides = _host_overrides(g, table)
        for h in wanted:
            attrs, host_counters = base_attrs, counters
            for ov in overrides.get(h, ()):
                attrs = dict(attrs)
                if ov.features is not None:
                    attrs["features"] = sorted(set(ov.features))
                if ov.rack is not None:
                    attrs["rack"] = ov.rack
                if ov.switch is not None:
                    attrs["switch"] = ov.switch
                host_counters = {**host_counters, **ov.counters}
            add(
                Entry(
                    f"host/{h}",
                    "host",
                    "available",
                    source,
                    controller,
                    None,
                    None,
                    attrs,
                    spec,
                    owner,
                )
            )
            if prov is not None:
                add(
                    Entry(
                        f"instance/{h}",
                        "instance",
                        "available",
                        "provisioned",
                        prov.provider,
                        None,
                        None,
                        {"group": g.name},
                        {
                            "template": prov.template,
                            "group": g.name,
                            "join_deadline": spec["join_deadline"],
                        },
                        owner,
                    )
                )
            location = f"host/{h}"
            for name, amount in host_counters.items():  # the bulk of a big site: kept lean
                add(
                    Entry(
                        f"counter/{name}@{location}",
                        "counter",
                        "available",
                        "config",
                        controller,
                        location,
                        amount,
                        {},
                        {},
                        owner,
                    )
                )
