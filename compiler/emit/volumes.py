"""Shared volumes, per-user directories and quotas (PR-6 refinement, N8, N12)."""

from __future__ import annotations

from collections import defaultdict

from compiler.emit.context import EmitContext
from compiler.model.document import SiteDocument
from compiler.supply_map import Entry


def mounts_by_group(doc: SiteDocument) -> dict[str, list[str]]:
    """Which volumes each host group mounts: an L1 attribute of its hosts."""
    out: dict[str, set[str]] = defaultdict(set)
    for v in doc.volumes:
        for group in v.item.mounted_by:
            out[group].add(v.item.name)
    return {g: sorted(names) for g, names in out.items()}


def emit_volumes(doc: SiteDocument, ctx: EmitContext) -> None:
    volumes = {v.item.name: v.item for v in doc.volumes}
    users: dict[str, set[str]] = {name: set(v.users) for name, v in volumes.items()}
    quotas = ((*q.item.target, g) for q in doc.quotas for g in q.item.grants())
    for kind, target, (scope, subject, limit, _) in quotas:
        if kind == "volume" and target in volumes:
            v = volumes[target]
            if scope == "user":
                users[target].add(subject)
            ctx.add(
                Entry(
                    f"quota/{target}/{scope}/{subject}",
                    "quota",
                    "available",
                    "config",
                    v.provider,
                    f"volume/{target}",
                    limit,
                    spec={"scope": scope, "subject": subject, "path": v.path},
                    owner=ctx.owner,
                )
            )
        elif kind == "pool":
            ctx.controlled(
                f"quota/{target}/{scope}/{subject}",
                "quota",
                limit,
                location=f"pool/{target}",
                spec={"scope": scope, "subject": subject},
            )
    for name, v in volumes.items():
        spec: dict[str, object] = {
            "path": v.path,
            "access_mode": v.access_mode,
            "mode": v.root.mode,
            "owner": v.root.owner,
            "group": v.root.group,
        }
        if v.retention is not None:
            spec["retention"] = v.retention
        attrs: dict[str, object] = {"mounted_by": sorted(v.mounted_by)}
        used_by = v.used_by.model_dump(exclude_defaults=True)
        if used_by:
            attrs["used_by"] = {k: sorted(x) for k, x in used_by.items()}
        ctx.add(
            Entry(
                f"volume/{name}",
                "volume",
                "available",
                "config",
                v.provider,
                None,
                v.capacity,
                attrs,
                spec,
                ctx.owner,
            )
        )
        for user in sorted(users[name]):
            ctx.add(
                Entry(
                    f"volume-dir/{name}/{user}",
                    "volume-dir",
                    "available",
                    "config",
                    v.provider,
                    f"volume/{name}",
                    None,
                    spec={"path": f"{v.path}/{user}", "mode": v.user_dirs.mode, "owner": user},
                    owner=ctx.owner,
                )
            )
